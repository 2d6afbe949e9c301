/* run_observe — see run_observe.h. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/cli/run_observe.h"
#include "userspace/launch/run_signals.h"
#include "userspace/log/log.h"

/* without a pidfd, waitpid is polled this often */
#define WAITPID_POLL_MS 20

static void forward_signals(struct run_observe *ro)
{
	struct run_signal s;
	int err;

	while (run_signals_read(ro->signal_fd, &s) == 1) {
		err = run_signal_forward(&s, ro->pid);
		if (err == 1)
			pr_info("%s forwarded to the application", strsignal(s.signo));
		else if (!err)
			pr_info("%s not forwarded: the terminal sent it to the application too",
				strsignal(s.signo));
		else
			pr_warn("%s not forwarded to the application (pid %d): %s",
				strsignal(s.signo), (int)ro->pid, strerror(-err));
	}
}

int run_observe(struct run_observe *ro)
{
	int pidfd = (int)syscall(SYS_pidfd_open, ro->pid, 0), e = 0;
	pid_t got = 0;

	while (!e && got != ro->pid) {
		struct pollfd fds[2] = { { .fd = pidfd, .events = POLLIN },
					 { .fd = ro->signal_fd, .events = POLLIN } };

		if (poll(fds, 2, pidfd >= 0 ? -1 : WAITPID_POLL_MS) < 0 && errno != EINTR) {
			e = -errno;
			break;
		}
		if (fds[1].revents & POLLIN)
			forward_signals(ro);
		if (pidfd >= 0 && !(fds[0].revents & POLLIN))
			continue;
		do
			got = waitpid(ro->pid, &ro->status, pidfd >= 0 ? 0 : WNOHANG);
		while (got < 0 && errno == EINTR);
		if (got < 0)
			e = -errno;
	}
	if (pidfd >= 0)
		close(pidfd);
	return e;
}
