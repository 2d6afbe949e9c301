/* run_backend — see run_backend.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "userspace/agent/node_service.h"
#include "userspace/cli/run_backend.h"
#include "userspace/control/control_client.h"

/* the embedded service, once told to stop with no Run left */
#define JOIN_TIMEOUT_MS 2000

int run_backend_daemon(struct run_backend *b, const char *configured)
{
	char err[1024];
	int e;

	b->socket_path = control_socket_path(configured);
	e = control_connect(b->socket_path, &b->fd, err, sizeof(err));
	if (e && e != -ENOENT && e != -ECONNREFUSED)
		fprintf(stderr, "nunatak: %s; observing in-process instead\n", err);
	return e;
}

static void *service_thread(void *arg)
{
	node_service_run(arg);
	return NULL;
}

int run_backend_embedded(struct run_backend *b, const struct config *cfg, const char *node,
			 int unwinder)
{
	struct node_service_opts o = { .node = node, .cfg = cfg, .signal_fd = -1, .quiet = 1,
				       .unwinder = unwinder };
	char err[2048] = "";
	int sv[2], e;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv)) {
		e = -errno;
		fprintf(stderr, "nunatak: cannot start the agent: %s; the application was not "
				"run: free descriptors (ulimit -n) and run it again\n", strerror(-e));
		return e;
	}
	b->ns = node_service__new(&o, err, sizeof(err));
	if (!b->ns) {
		e = -errno;
		fprintf(stderr, "nunatak: %s; the application was not run: free memory and run it "
				"again (-v says more)\n", err);
		goto fail;
	}
	e = node_service_add_client(b->ns, sv[1]);
	sv[1] = -1;
	if (!e)
		e = -pthread_create(&b->thread, NULL, service_thread, b->ns);
	if (e) {
		fprintf(stderr, "nunatak: cannot start the agent's thread: %s; the application "
				"was not run: raise the process limit (ulimit -u) or free memory\n",
			strerror(-e));
		goto fail;
	}
	b->thread_started = 1;
	b->embedded = 1;
	b->fd = sv[0];
	return 0;
fail:
	close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	node_service__free(b->ns);
	b->ns = NULL;
	return e;
}

void run_backend_close(struct run_backend *b)
{
	struct timespec deadline;

	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	if (!b->ns)
		return;
	if (b->thread_started) {
		node_service_stop(b->ns);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += JOIN_TIMEOUT_MS / 1000;
		b->thread_stuck = pthread_timedjoin_np(b->thread, NULL, &deadline) != 0;
		b->thread_started = 0;
	}
	if (b->thread_stuck)
		return; /* what it uses is left to the process exit */
	node_service__free(b->ns);
	b->ns = NULL;
	b->embedded = 0;
}
