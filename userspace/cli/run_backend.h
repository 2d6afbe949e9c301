/* run_backend — the node service `nunatak run` talks to: the local
 * nunatakd through its control socket, or, without one (or when it
 * refuses), a node service of its own in a thread, reached over a
 * socketpair with the same protocol (the embedded mode: BPF in-process as
 * root, the bpf-denied Degradation as a user).
 */
#ifndef NUNATAK_CLI_RUN_BACKEND_H
#define NUNATAK_CLI_RUN_BACKEND_H

#include <pthread.h>

struct config;
struct node_service;

struct run_backend {
	int fd;	      /* the control connection; -1 none */
	int embedded; /* 1: ns runs in thread */
	struct node_service *ns;
	pthread_t thread;
	int thread_started, thread_stuck;
	const char *socket_path;
};

#define RUN_BACKEND_INIT { .fd = -1 }

/* Connects to the daemon at control_socket_path(configured). 0, or
 * -errno: -ENOENT / -ECONNREFUSED (no daemon: nothing said), another
 * (the socket is not trusted, ...: said on stderr, with that the run
 * goes on in-process). */
int run_backend_daemon(struct run_backend *b, const char *configured);

/* The embedded node service, started in a thread (run_signals_open()
 * must have run), walking user Stacks with unwinder (enum
 * sample_unwinder). 0 or -errno (said on stderr). */
int run_backend_embedded(struct run_backend *b, const struct config *cfg, const char *node,
			 int unwinder);

/* Closes the connection; the embedded service is stopped and joined
 * (bounded): thread_stuck says it did not stop (left to the process exit). */
void run_backend_close(struct run_backend *b);

#endif
