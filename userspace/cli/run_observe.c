/* run_observe — see run_observe.h. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "userspace/agent/agent.h"
#include "userspace/cli/control.h"
#include "userspace/cli/run_observe.h"
#include "userspace/launch/run_signals.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

#define PUBLISH_INTERVAL_MS 1000
/* kernel exit reports of lingering processes are looked at this often */
#define LINGER_POLL_MS 50

struct loop {
	struct run_observe *ro;
	long long next_publish_ms;
	int pidfd, exited;
};

static void publish_when_due(struct loop *lp)
{
	long long now = clock_monotonic_ms();
	int err;

	if (now < lp->next_publish_ms)
		return;
	err = agent_publish(lp->ro->agent);
	if (err)
		pr_warn("publishing a batch failed: %s", strerror(-err));
	lp->next_publish_ms = now + PUBLISH_INTERVAL_MS;
}

static void on_signal(struct loop *lp)
{
	struct run_signal s;
	int err;

	while (run_signals_read(lp->ro->signal_fd, &s) == 1) {
		if (!lp->exited) {
			err = run_signal_forward(&s, lp->ro->pid);
			if (err == 1)
				pr_info("%s forwarded to the application", strsignal(s.signo));
			else if (!err)
				pr_info("%s not forwarded: the terminal sent it to the application "
					"too",
					strsignal(s.signo));
			else
				pr_warn("%s not forwarded to the application (pid %d): %s",
					strsignal(s.signo), (int)lp->ro->pid, strerror(-err));
		} else if (run_signal_stops(s.signo) && !lp->ro->stop_signo) {
			lp->ro->stop_signo = s.signo;
		}
	}
}

/* One wait of at most wait_ms on the application, the Agent and signals. */
static int wait_once(struct loop *lp, long long wait_ms)
{
	struct run_observe *ro = lp->ro;
	struct pollfd fds[3] = {
	    {.fd = lp->exited ? -1 : lp->pidfd, .events = POLLIN},
	    {.fd = agent_fd(ro->agent), .events = POLLIN},
	    {.fd = ro->signal_fd, .events = POLLIN},
	};
	pid_t got;

	if (wait_ms < 0)
		wait_ms = 0;
	if (!lp->exited && lp->pidfd < 0 && wait_ms > 20)
		wait_ms = 20; /* no pidfd: waitpid is polled */
	if (poll(fds, 3, (int)wait_ms) < 0 && errno != EINTR)
		return -errno;
	if (fds[1].revents & POLLIN)
		agent_process_events(ro->agent);
	if (fds[2].revents & POLLIN)
		on_signal(lp);
	if (lp->exited || (lp->pidfd >= 0 && !(fds[0].revents & POLLIN)))
		return 0;
	do
		got = waitpid(ro->pid, &ro->status, lp->pidfd >= 0 ? 0 : WNOHANG);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	lp->exited = got == ro->pid;
	return 0;
}

struct outlived {
	pid_t app;
	char list[512];
	int n;
};

static int name_outlived(pid_t pid, const char *comm, void *ctx)
{
	struct outlived *o = ctx;
	size_t len = strlen(o->list);

	/* a report lost or not read yet: the kernel knows better */
	if (pid == o->app || (kill(pid, 0) && errno == ESRCH))
		return 0;
	o->n++;
	if (len + 32 + strlen(comm) >= sizeof(o->list)) {
		if (!strstr(o->list, ", ..."))
			snprintf(o->list + len, sizeof(o->list) - len, ", ...");
		return 0;
	}
	snprintf(o->list + len, sizeof(o->list) - len, "%s%d%s%s%s", len ? ", " : "", (int)pid,
		 comm[0] ? " (" : "", comm, comm[0] ? ")" : "");
	return 0;
}

/* The Target's processes still alive but the application: their count,
 * named in o. */
static int count_outlived(struct run_observe *ro, struct outlived *o)
{
	memset(o, 0, sizeof(*o));
	o->app = ro->pid;
	agent_process_events(ro->agent);
	agent_for_each_live_process(ro->agent, name_outlived, o);
	return o->n;
}

/* Names what was cut short; the count of those still alive. */
static int outlived_degradation(struct run_observe *ro, long long ended_ms)
{
	struct outlived o;
	char message[768];

	if (!count_outlived(ro, &o))
		return 0;
	snprintf(message, sizeof(message),
		 "%d process%s of the Target outlived the application by %.1f s and %s observed "
		 "no further%s: %s",
		 o.n, o.n > 1 ? "es" : "", (clock_monotonic_ms() - ended_ms) / 1e3,
		 o.n > 1 ? "were" : "was", ro->stop_signo ? " (nunatak was interrupted)" : "",
		 o.list);
	agent_add_degradation(ro->agent, "processes-outlived", message,
			      "raise --linger to observe them until they exit, or have the "
			      "application wait for its children");
	return o.n;
}

int run_observe(struct run_observe *ro)
{
	struct loop lp = {.ro = ro, .next_publish_ms = clock_monotonic_ms() + PUBLISH_INTERVAL_MS};
	struct outlived o;
	long long ended_ms, linger_end;
	int err = 0;

	lp.pidfd = (int)syscall(SYS_pidfd_open, ro->pid, 0);
	while (!lp.exited && !err) {
		publish_when_due(&lp);
		err = wait_once(&lp, lp.next_publish_ms - clock_monotonic_ms());
	}
	if (lp.pidfd >= 0)
		close(lp.pidfd);
	if (err)
		return err;
	ended_ms = clock_monotonic_ms();
	linger_end = ended_ms + ro->linger_ms;
	while (!ro->stop_signo && clock_monotonic_ms() < linger_end && count_outlived(ro, &o)) {
		long long left = linger_end - clock_monotonic_ms();

		publish_when_due(&lp);
		wait_once(&lp, left < LINGER_POLL_MS ? left : LINGER_POLL_MS);
	}
	ro->outlived = outlived_degradation(ro, ended_ms);
	return 0;
}
