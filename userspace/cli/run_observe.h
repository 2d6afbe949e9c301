/* run_observe — `nunatak run`'s wait for the application: its exit (a
 * pidfd, or waitpid polled) and signals (run_signals.h), in one poll loop.
 *
 * The application runs to its end, whatever signals nunatak gets (they
 * are forwarded to it, as a shell would). Its processes that outlive it
 * are the node service's to wait for (run-end's linger); the sampling is
 * the node service's too (a daemon, or the embedded one in a thread).
 */
#ifndef NUNATAK_CLI_RUN_OBSERVE_H
#define NUNATAK_CLI_RUN_OBSERVE_H

#include <sys/types.h>

struct run_observe {
	pid_t pid;     /* the application, released from its gate */
	int signal_fd; /* run_signals_open() */
	/* out */
	int status; /* the application's wait status */
};

/* 0, or -errno when the application could not be waited for (status is
 * then meaningless). */
int run_observe(struct run_observe *ro);

#endif
