/* run_signals — see run_signals.h. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "userspace/launch/run_signals.h"

/* what a shell passes on, then every other signal whose default action
 * would end nunatak and orphan the application (SIGPIPE aside: ignored;
 * the synchronous ones, SEGV, BUS, FPE, ILL, TRAP, SYS: a bug of ours) */
static const int forwarded[] = {SIGINT,	   SIGTERM,   SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
				SIGWINCH,  SIGALRM,   SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
				SIGPWR,	   SIGIO,     SIGSTKFLT};

int run_signals_open(void)
{
	sigset_t set;
	size_t i;
	int fd, err, rt;

	sigemptyset(&set);
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	for (rt = SIGRTMIN; rt <= SIGRTMAX; rt++)
		sigaddset(&set, rt);
	err = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (err)
		return -err;
	signal(SIGPIPE, SIG_IGN);
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int run_signals_read(int fd, struct run_signal *s)
{
	struct signalfd_siginfo si;
	ssize_t n;

	do
		n = read(fd, &si, sizeof(si));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n != (ssize_t)sizeof(si))
		return -EIO;
	s->signo = (int)si.ssi_signo;
	s->code = si.ssi_code;
	s->sender = (pid_t)si.ssi_pid;
	return 1;
}

int run_signal_stops(int signo)
{
	return signo == SIGINT || signo == SIGTERM || signo == SIGHUP || signo == SIGQUIT;
}

int run_signal_forward(const struct run_signal *s, pid_t pid)
{
	/* the terminal signals the whole foreground process group, which
	 * the application shares with nunatak: it has its copy already */
	if (s->code == SI_KERNEL)
		return 0;
	/* one nunatak caused itself (SIGXFSZ of a write over RLIMIT_FSIZE
	 * comes as SI_USER from us): not the application's business */
	if (s->code == SI_USER && s->sender == getpid())
		return 0;
	if (kill(pid, s->signo))
		return -errno;
	return 1;
}
