/* run_observe — `nunatak run`'s one poll loop while the application and
 * then its lingering processes live: the Agent's kernel reports, a Batch
 * every second, and signals (run_signals.h).
 *
 * The application runs to its end, whatever signals nunatak gets (they
 * are forwarded to it). Then processes of the Target that outlive it
 * (double fork, setsid, nohup) stay observed until they exit, or until
 * the linger bound, or until a stop signal (INT, TERM, HUP, QUIT); those
 * still alive then are named in a processes-outlived Degradation. The
 * last Batch is left to the caller (agent_finish()).
 */
#ifndef NUNATAK_CLI_RUN_OBSERVE_H
#define NUNATAK_CLI_RUN_OBSERVE_H

#include <sys/types.h>

struct agent;

struct run_observe {
	struct agent *agent;
	pid_t pid;     /* the application, released from its gate */
	int signal_fd; /* run_signals_open() */
	int linger_ms; /* after the application ended; 0: not at all */
	/* out */
	int status;	/* the application's wait status */
	int stop_signo; /* a stop signal that came after the application ended, or 0 */
	int outlived;	/* processes still alive at the linger bound */
};

/* 0, or -errno when the application could not be waited for (status is
 * then meaningless). A failed Batch is said, never fatal. */
int run_observe(struct run_observe *ro);

#endif
