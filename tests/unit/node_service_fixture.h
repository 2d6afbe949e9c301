/* node_service_fixture — what the tests of the node service share: a real
 * node service (its Agent, BPF loaded, its control socket in a directory
 * of the test's) served by a thread, and real clients over SOCK_SEQPACKET,
 * unprivileged ones being children that dropped to nobody before they
 * connected. Header-only, static inline (each test is one translation
 * unit); include after cmocka.h and test_helpers.h.
 */
#ifndef NUNATAK_TESTS_NODE_SERVICE_FIXTURE_H
#define NUNATAK_TESTS_NODE_SERVICE_FIXTURE_H

#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/agent/node_service.h"
#include "userspace/control/control_client.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"

#define NOBODY 65534

struct ns_fixture {
	char dir[128];	/* the test's directory (removed at the end) */
	char sock[192]; /* <dir>/agent.sock: the control socket */
	char runs[192]; /* <dir>/runs: a runs_dir for the test's Runs */
	struct node_service *ns;
	pthread_t thread;
	int result; /* node_service_run's, once the thread ended */
};

static inline void *ns_fixture_serve(void *arg)
{
	struct ns_fixture *f = arg;

	f->result = node_service_run(f->ns);
	return NULL;
}

/* f's directory made from template ("...XXXXXX", 0755), a node service of
 * o there (o->control_path: f->sock) served by a thread: 0, or -1 said on
 * stderr */
static inline int ns_fixture_start(struct ns_fixture *f, const char *template,
				   struct node_service_opts *o)
{
	char err[1024];

	snprintf(f->dir, sizeof(f->dir), "%s", template);
	if (!mkdtemp(f->dir) || chmod(f->dir, 0755))
		return -1;
	snprintf(f->sock, sizeof(f->sock), "%s/agent.sock", f->dir);
	snprintf(f->runs, sizeof(f->runs), "%s/runs", f->dir);
	o->control_path = f->sock;
	f->ns = node_service__new(o, err, sizeof(err));
	if (!f->ns) {
		fprintf(stderr, "node_service__new: %s\n", err);
		return -1;
	}
	return pthread_create(&f->thread, NULL, ns_fixture_serve, f) ? -1 : 0;
}

/* the service stopped, its thread joined, it and f's directory gone */
static inline void ns_fixture_stop(struct ns_fixture *f)
{
	node_service_stop(f->ns);
	pthread_join(f->thread, NULL);
	node_service__free(f->ns);
	remove_tree(f->dir);
}

/* a client connected to f's socket (the caller closes it) */
static inline int ns_fixture_connect(const struct ns_fixture *f)
{
	char err[512];
	int fd;

	if (control_connect(f->sock, &fd, err, sizeof(err)))
		fail_msg("connect: %s", err);
	return fd;
}

/* the code of a reply (taken), its message in err */
static inline int ns_fixture_code(json_t *reply, char *err, size_t len)
{
	int e = control_reply_status(reply, err, len);

	json_decref(reply);
	return e;
}

/* this process as nobody's own (dumpable as nobody, as a process of a user
 * who logged in is: the uid change made it not): 0 or -1 */
static inline int ns_fixture_become_nobody(void)
{
	return setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		       setresuid(NOBODY, NOBODY, NOBODY) || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
		   ? -1
		   : 0;
}

/* fork()ed: 0 in the child, nobody's already (ns_fixture_become_nobody;
 * it exits 100 when it cannot be); the child's pid in the parent.
 * The child mallocs, and under ASan (GCC 12's libasan takes no lock of its
 * allocator around fork) a child forked while the service's thread was in
 * malloc waits for that lock forever: the service is asked its status
 * first, and given 20 ms to be back in its poll, before the fork. */
static inline pid_t ns_fixture_fork_nobody(const struct ns_fixture *f)
{
	json_t *req = json_pack("{s:s}", "request", "status"), *reply = NULL;
	char err[512];
	pid_t child;
	int fd = ns_fixture_connect(f);

	assert_int_equal(control_request(fd, req, &reply, 5000, NULL, err, sizeof(err)), 0);
	json_decref(req);
	json_decref(reply);
	close(fd);
	usleep(20000);
	child = fork();

	assert_true(child >= 0);
	if (!child && ns_fixture_become_nobody())
		_exit(100);
	return child;
}

/* the exit status of child, which must exit (not die of a signal) */
static inline int ns_fixture_exit_status(pid_t child)
{
	int status;

	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* In a child as nobody: req (taken) asked of f's service; the reply's
 * code as exit status (0 granted, else the errno; a refusal said on
 * stderr), 100+ when the exchange itself failed. */
static inline int ns_fixture_as_nobody(const struct ns_fixture *f, json_t *req)
{
	pid_t child = ns_fixture_fork_nobody(f);

	if (!child) {
		json_t *reply = NULL;
		char err[512];
		int fd, e;

		if (control_connect(f->sock, &fd, err, sizeof(err)))
			_exit(101);
		if (control_request(fd, req, &reply, 8000, NULL, err, sizeof(err)))
			_exit(102);
		e = control_reply_status(reply, err, sizeof(err));
		if (e)
			fprintf(stderr, "nobody's request refused: %s\n", err);
		_exit(-e);
	}
	json_decref(req);
	return ns_fixture_exit_status(child);
}

#endif
