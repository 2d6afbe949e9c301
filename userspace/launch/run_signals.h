/* run_signals — the signals of `nunatak run`, read from one signalfd in
 * its poll loops, never by handlers.
 *
 * While the application runs nunatak forwards what a shell would (INT,
 * TERM, HUP, QUIT, USR1, USR2, WINCH), and every other signal whose
 * default action would end it and orphan the application (ALRM, VTALRM,
 * PROF, XCPU, XFSZ, PWR, IO, STKFLT, the real-time ones), and never dies
 * of one; a signal the
 * terminal sent to the whole foreground process group (Ctrl-C, Ctrl-\,
 * a resize: si_code SI_KERNEL) reached the application already and is not
 * sent twice. Once the application has ended, INT, TERM, HUP and QUIT
 * stop what nunatak still waits for (lingering processes, the finalize).
 *
 * Limitation: a kill(2) sent to the whole process group (kill -TERM
 * -PGID, timeout(1) without --foreground, a batch system such as Slurm's
 * scancel signalling every process of the job) reaches the application
 * directly, as a member of nunatak's group, AND reaches nunatak as SI_USER
 * exactly like a kill of nunatak's pid alone: nothing in the siginfo tells
 * the two apart, so nunatak forwards it and the application gets it twice.
 * An application that ends on the first is unaffected; one that counts
 * signals (a second SIGINT meaning "abort now") sees two. To deliver one,
 * signal nunatak's pid alone (kill -TERM PID, timeout --foreground). Not
 * fixed by running the application in a group of its own: Ctrl-C, Ctrl-Z
 * and terminal reads would then need nunatak to hand the terminal's
 * foreground group over (tcsetpgrp) as a shell does, which it does not.
 *
 * run_signals_open() must run before any thread exists (ZeroMQ's I/O
 * threads, the Aggregator's): the blocked mask is inherited, so that no
 * thread takes one of these signals' default action behind the signalfd.
 * It also ignores SIGPIPE: a closed stdout is an EPIPE the caller handles.
 * The application gets default dispositions and an empty mask back
 * (launch.h); so do the tools nunatak runs.
 */
#ifndef NUNATAK_LAUNCH_RUN_SIGNALS_H
#define NUNATAK_LAUNCH_RUN_SIGNALS_H

#include <sys/types.h>

/* A non-blocking, close-on-exec signalfd, or -errno. */
int run_signals_open(void);

struct run_signal {
	int signo;
	int code;     /* si_code: SI_USER (kill), SI_QUEUE, SI_KERNEL (terminal)... */
	pid_t sender; /* for SI_USER and SI_QUEUE */
};

/* 1 and *s filled, 0 when none is pending, -errno. */
int run_signals_read(int fd, struct run_signal *s);

/* 1 for INT, TERM, HUP and QUIT: what ends a wait once the application
 * has ended. */
int run_signal_stops(int signo);

/* Forwards s to pid as a shell would. 1 sent, 0 not sent (the terminal
 * sent it to pid's process group already), -errno of kill(2) (not sent:
 * ESRCH, pid is gone; EPERM). A kill of the whole group is sent again
 * (see the limitation above). */
int run_signal_forward(const struct run_signal *s, pid_t pid);

#endif
