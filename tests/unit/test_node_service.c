/* Unit tests for userspace/agent/node_service: a real node service (its
 * Agent, its Aggregator thread, its control socket in a test directory)
 * served by a thread, asked by real clients over SOCK_SEQPACKET: the
 * requests refused (unknown, malformed, a pid that is not the caller's),
 * a Run started and ended (its directory, its manifest), status with
 * other users' Targets hidden, a client that goes away (its Run ends,
 * interrupted), and a stop that ends every Run. Unprivileged callers are
 * children that dropped to nobody before they connected. */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/node_service_fixture.h"
#include "userspace/agent/node_service.h"
#include "userspace/config/config.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"
#include "userspace/launch/launch.h"
#include "userspace/log/clock.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static const struct service_config *setup_service; /* the next setup's [service] */

static int setup(void **state)
{
	struct node_service_opts o = { .node = "test-node", .signal_fd = -1, .quiet = 1,
				       .service = setup_service };
	struct ns_fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || ns_fixture_start(fx, "/tmp/nunatak-test-ns-XXXXXX", &o))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct ns_fixture *fx = *state;

	ns_fixture_stop(fx);
	free(fx);
	return 0;
}

/* sends req (taken) and returns the reply (the caller's) */
static json_t *ask(int fd, json_t *req, int timeout_ms)
{
	json_t *reply = NULL;
	char err[512];
	int e;

	assert_non_null(req);
	e = control_request(fd, req, &reply, timeout_ms, NULL, err, sizeof(err));
	json_decref(req);
	if (e)
		fail_msg("no reply: %s", err);
	return reply;
}

/* sends req (taken) without waiting */
static int send_req(int fd, json_t *req)
{
	int e = control_send_msg(fd, req, 1000);

	json_decref(req);
	return e;
}

static json_t *start_req(const char *runs, pid_t pid)
{
	return json_pack("{s:s, s:{s:s, s:s, s:[s]}, s:s, s:s, s:n, s:s, s:i, s:b}", "request",
			 "run-start", "run", "name", "unit", "created", "2026-01-01T00:00:00Z",
			 "command", "sleep", "runs_dir", runs, "symbolizer", "", "target_exe",
			 "token", TOKEN, "pid", (int)pid, "mpi_events", 0);
}

static void test_refusals(void **state)
{
	struct ns_fixture *fx = *state;
	char err[512];
	int fd = ns_fixture_connect(fx);

	assert_int_equal(ns_fixture_code(ask(fd, json_pack("{s:s}", "request", "dance"), 2000), err,
					 sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "unknown request 'dance'"));
	assert_int_equal(ns_fixture_code(ask(fd, json_pack("{s:s}", "request", "run-start"), 2000),
					 err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
	    ns_fixture_code(ask(fd, start_req("relative", getpid()), 2000), err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "absolute"));
	assert_int_equal(
	    ns_fixture_code(ask(fd, start_req(fx->runs, 999999999), 2000), err, sizeof(err)),
	    -ESRCH);
	/* red F8 nit: a pid beyond a pid_t is refused, not truncated (to this
	 * process, here) */
	{
		json_t *req = start_req(fx->runs, getpid());

		json_object_set_new(req, "pid", json_integer(((json_int_t)1 << 32) + getpid()));
		assert_int_equal(ns_fixture_code(ask(fd, req, 2000), err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "(1 to 2147483647)"));
		req = start_req(fx->runs, getpid());
		json_object_set_new(req, "pid", json_integer(-5));
		assert_int_equal(ns_fixture_code(ask(fd, req, 2000), err, sizeof(err)), -EINVAL);
	}
	assert_int_equal(
	    ns_fixture_code(
		ask(fd, json_pack("{s:s, s:s}", "request", "run-end", "run_id", "nope"), 2000), err,
		sizeof(err)),
	    -ENOENT);
	/* not JSON: refused, the connection goes on */
	assert_int_equal(send(fd, "{{", 2, 0), 2);
	{
		json_t *reply = NULL;

		assert_int_equal(control_await(fd, &reply, 2000, NULL, err, sizeof(err)), 0);
		assert_int_equal(ns_fixture_code(reply, err, sizeof(err)), -EBADMSG);
	}
	assert_int_equal(ns_fixture_code(ask(fd, json_pack("{s:s}", "request", "status"), 3000),
					 err, sizeof(err)),
			 0);
	close(fd);
}

/* In a child as nobody: run-start for pid (ns_fixture_as_nobody) */
static int as_nobody_start(struct ns_fixture *fx, pid_t pid)
{
	return ns_fixture_as_nobody(fx, start_req(fx->runs, pid));
}

static void test_not_yours(void **state)
{
	struct ns_fixture *fx = *state;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	/* a root process (this one), asked by nobody: refused */
	assert_int_equal(as_nobody_start(fx, getpid()), EPERM);
	assert_int_equal(as_nobody_start(fx, 1), EPERM);
}

/* a running process of nobody's, changed as kind says (0 plain, 1 setgid
 * to group 42, 2 saved uid root, 3 permitted capabilities, 4 made not
 * dumpable), stopped until killed */
static pid_t nobody_process(int kind)
{
	gid_t g = kind == 1 ? 42 : NOBODY;
	int p[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(p[0]);
		if (setgroups(0, NULL) || setresgid(NOBODY, g, g) ||
		    (kind == 3 && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)) ||
		    setresuid(NOBODY, NOBODY, kind == 2 ? 0 : NOBODY) ||
		    prctl(PR_SET_DUMPABLE, kind != 4, 0, 0, 0) ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0))
			_exit(1);
		(void)!write(p[1], "r", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

/* red F2: nobody may not have observed a setgid program of theirs, one
 * with saved uid root, one holding capabilities, one not dumpable — all
 * with real and effective uid nobody's — while their plain one is */
static void test_not_debuggable(void **state)
{
	struct ns_fixture *fx = *state;
	int want[5] = {0, EPERM, EPERM, EPERM, EPERM};
	int status;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	snprintf(fx->runs, sizeof(fx->runs), "%s/nobody", fx->dir);
	assert_int_equal(mkdir(fx->runs, 0700), 0);
	assert_int_equal(chown(fx->runs, NOBODY, NOBODY), 0);
	strcat(fx->runs, "/runs");
	/* the plain one last: its Run holds TOKEN until it ends */
	for (int i = 1; i <= 5; i++) {
		int kind = i % 5;
		pid_t pid = nobody_process(kind);
		int got = as_nobody_start(fx, pid);

		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		if (got != want[kind])
			fail_msg("process of kind %d: run-start gave %d, not %d", kind, got,
				 want[kind]);
	}
}

/* a gated `sleep S` */
static void gated_sleep(struct launch *l, const char *seconds)
{
	char *argv[] = { "sleep", (char *)seconds, NULL };

	assert_int_equal(launch_prepare(l, "/bin/sleep", argv), 0);
}

static json_t *start_ok(int fd, struct ns_fixture *fx, pid_t pid, char *run_id)
{
	json_t *reply = ask(fd, start_req(fx->runs, pid), 10000);
	char err[512];

	if (control_reply_status(reply, err, sizeof(err)))
		fail_msg("run-start refused: %s", err);
	snprintf(run_id, 33, "%s", json_string_value(json_object_get(reply, "run_id")));
	assert_int_equal(strlen(run_id), 32);
	return reply;
}

static void test_run_start_end(void **state)
{
	struct ns_fixture *fx = *state;
	struct launch l;
	char run_id[33], err[512], path[PATH_MAX];
	json_t *reply, *st, *t;
	const char *run_dir;
	struct stat sb;
	int fd = ns_fixture_connect(fx), status;

	gated_sleep(&l, "0.3");
	reply = start_ok(fd, fx, l.pid, run_id);
	run_dir = json_string_value(json_object_get(reply, "run_dir"));
	assert_non_null(run_dir);
	assert_int_equal(strncmp(run_dir, fx->runs, strlen(fx->runs)), 0);
	assert_int_equal(stat(run_dir, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	assert_true(json_is_array(json_object_get(reply, "degradations")));
	json_decref(reply);
	/* status names the Target */
	st = ask(fd, json_pack("{s:s}", "request", "status"), 3000);
	assert_int_equal(control_reply_status(st, err, sizeof(err)), 0);
	t = json_array_get(json_object_get(json_object_get(st, "agent"), "targets"), 0);
	assert_non_null(t);
	assert_string_equal(json_string_value(json_object_get(t, "run_id")), run_id);
	json_decref(st);
	assert_int_equal(launch_release(&l), 0);
	assert_int_equal(waitpid(l.pid, &status, 0), l.pid);
	reply = ask(fd, json_pack("{s:s, s:s, s:i, s:s, s:i, s:i}", "request", "run-end", "run_id",
				  run_id, "exit_code", 0, "end", "2026-01-01T00:00:01Z",
				  "linger_ms", 1000, "symbolizer_budget_ms", 1000),
		    30000);
	assert_int_equal(control_reply_status(reply, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/manifest.json",
		 json_string_value(json_object_get(reply, "run_dir")));
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(json_array_size(json_object_get(reply, "outlived")), 0);
	json_decref(reply);
	/* the Run is gone from the Agent */
	st = ask(fd, json_pack("{s:s}", "request", "status"), 3000);
	assert_int_equal(json_array_size(json_object_get(json_object_get(st, "agent"), "targets")),
			 0);
	json_decref(st);
	close(fd);
}

/* a gated `sh -c "sleep S & exit 0"`: its sleep outlives it */
static void gated_leaver(struct launch *l, const char *seconds)
{
	char script[64];
	char *argv[] = { "sh", "-c", script, NULL };

	snprintf(script, sizeof(script), "sleep %s & exit 0", seconds);
	assert_int_equal(launch_prepare(l, "/bin/sh", argv), 0);
}

static void kill_outlived(json_t *reply)
{
	size_t i;
	json_t *o;

	json_array_foreach(json_object_get(reply, "outlived"), i, o)
		kill((pid_t)json_integer_value(json_object_get(o, "pid")), SIGKILL);
}

static json_t *end_req(const char *run_id, int linger_ms)
{
	return json_pack("{s:s, s:s, s:i, s:i, s:i}", "request", "run-end", "run_id", run_id,
			 "exit_code", 0, "linger_ms", linger_ms, "symbolizer_budget_ms", 1000);
}

/* run-end waits for the processes left, up to linger_ms, without holding
 * the loop (status answers meanwhile), and names those still alive */
static void test_linger_bounded(void **state)
{
	struct ns_fixture *fx = *state;
	struct launch l;
	char run_id[33], err[512];
	long long t0, took;
	json_t *reply, *st, *o;
	int fd = ns_fixture_connect(fx), other = ns_fixture_connect(fx), status;

	gated_leaver(&l, "30");
	json_decref(start_ok(fd, fx, l.pid, run_id));
	assert_int_equal(launch_release(&l), 0);
	assert_int_equal(waitpid(l.pid, &status, 0), l.pid);
	t0 = clock_monotonic_ms();
	assert_int_equal(send_req(fd, end_req(run_id, 1500)), 0);
	/* the loop still serves while the Run lingers */
	usleep(300 * 1000);
	st = ask(other, json_pack("{s:s}", "request", "status"), 1000);
	assert_int_equal(control_reply_status(st, err, sizeof(err)), 0);
	json_decref(st);
	assert_true(clock_monotonic_ms() - t0 < 1400);
	assert_int_equal(control_await(fd, &reply, 30000, NULL, err, sizeof(err)), 0);
	took = clock_monotonic_ms() - t0;
	assert_int_equal(control_reply_status(reply, err, sizeof(err)), 0);
	assert_true(took >= 1400);
	assert_true(took < 15000);
	assert_int_equal(json_array_size(json_object_get(reply, "outlived")), 1);
	o = json_array_get(json_object_get(reply, "outlived"), 0);
	assert_string_equal(json_string_value(json_object_get(o, "comm")), "sleep");
	assert_false(json_is_true(json_object_get(reply, "interrupted")));
	kill_outlived(reply);
	json_decref(reply);
	close(fd);
	close(other);
}

/* run-interrupt ends a long linger at once: the Run is finalized, said
 * interrupted; a run-interrupt of someone else's Run is refused */
static void test_interrupt_linger(void **state)
{
	struct ns_fixture *fx = *state;
	struct launch l;
	char run_id[33], err[512];
	long long t0;
	json_t *reply;
	int fd = ns_fixture_connect(fx), other = ns_fixture_connect(fx), status;

	gated_leaver(&l, "30");
	json_decref(start_ok(fd, fx, l.pid, run_id));
	assert_int_equal(launch_release(&l), 0);
	assert_int_equal(waitpid(l.pid, &status, 0), l.pid);
	assert_int_equal(send_req(fd, end_req(run_id, 60000)), 0);
	usleep(200 * 1000);
	/* another connection cannot end it */
	assert_int_equal(
	    ns_fixture_code(
		ask(other, json_pack("{s:s, s:s}", "request", "run-interrupt", "run_id", run_id),
		    2000),
		err, sizeof(err)),
	    -ENOENT);
	t0 = clock_monotonic_ms();
	assert_int_equal(send_req(fd, json_pack("{s:s, s:s}", "request", "run-interrupt", "run_id",
						run_id)), 0);
	/* the interrupt's own answer, then the end's */
	assert_int_equal(control_await(fd, &reply, 5000, NULL, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(reply, "reply")), "run-interrupt");
	json_decref(reply);
	assert_int_equal(control_await(fd, &reply, 20000, NULL, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(reply, "reply")), "run-end");
	assert_int_equal(control_reply_status(reply, err, sizeof(err)), 0);
	assert_true(json_is_true(json_object_get(reply, "interrupted")));
	assert_int_equal(json_array_size(json_object_get(reply, "outlived")), 1);
	assert_true(clock_monotonic_ms() - t0 < 15000);
	kill_outlived(reply);
	json_decref(reply);
	close(fd);
	close(other);
}

/* In a child as nobody: its own gated sleep observed, its Run ended; the
 * Run directory on stdout of the child (via a pipe). 0 or 100+. */
static int as_nobody_run(struct ns_fixture *fx, const char *runs, char *run_dir, size_t len)
{
	int p[2], status;
	pid_t child;
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	child = ns_fixture_fork_nobody(fx);
	if (!child) {
		json_t *reply = NULL;
		struct launch l;
		char err[512], run_id[33];
		const char *dir;
		int fd;

		close(p[0]);
		if (control_connect(fx->sock, &fd, err, sizeof(err)))
			_exit(100);
		gated_sleep(&l, "0.2");
		if (control_request(fd, start_req(runs, l.pid), &reply, 10000, NULL, err,
				    sizeof(err)) || control_reply_status(reply, err, sizeof(err))) {
			fprintf(stderr, "nobody's run-start: %s\n", err);
			_exit(101);
		}
		snprintf(run_id, sizeof(run_id), "%s",
			 json_string_value(json_object_get(reply, "run_id")));
		if (launch_release(&l) || waitpid(l.pid, &status, 0) != l.pid)
			_exit(102);
		if (control_request(fd, end_req(run_id, 1000), &reply, 30000, NULL, err,
				    sizeof(err)) || control_reply_status(reply, err, sizeof(err))) {
			fprintf(stderr, "nobody's run-end: %s\n", err);
			_exit(103);
		}
		dir = json_string_value(json_object_get(reply, "run_dir"));
		(void)!write(p[1], dir, strlen(dir));
		_exit(0);
	}
	close(p[1]);
	n = read(p[0], run_dir, len - 1);
	run_dir[n > 0 ? n : 0] = '\0';
	close(p[0]);
	return ns_fixture_exit_status(child);
}

/* a user's Run through the service: in their runs directory, theirs, 0700 */
static void test_user_run(void **state)
{
	struct ns_fixture *fx = *state;
	char runs[256], run_dir[PATH_MAX], path[PATH_MAX];
	struct stat sb;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	snprintf(runs, sizeof(runs), "%s/nobody", fx->dir);
	assert_int_equal(mkdir(runs, 0700), 0);
	assert_int_equal(chown(runs, NOBODY, NOBODY), 0);
	strcat(runs, "/runs");
	assert_int_equal(as_nobody_run(fx, runs, run_dir, sizeof(run_dir)), 0);
	assert_int_equal(strncmp(run_dir, runs, strlen(runs)), 0);
	assert_int_equal(stat(run_dir, &sb), 0);
	assert_int_equal(sb.st_uid, NOBODY);
	assert_int_equal(sb.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/manifest.json", run_dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_uid, NOBODY);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/pivot.sqlite", run_dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_uid, NOBODY);
}

/* nobody's status while root has a Run: no Target shown */
static int as_nobody_targets(struct ns_fixture *fx)
{
	pid_t child = ns_fixture_fork_nobody(fx);

	if (!child) {
		json_t *reply = NULL, *req = json_pack("{s:s}", "request", "status");
		char err[512];
		int fd;

		if (control_connect(fx->sock, &fd, err, sizeof(err)) ||
		    control_request(fd, req, &reply, 5000, NULL, err, sizeof(err)) ||
		    control_reply_status(reply, err, sizeof(err)))
			_exit(100);
		_exit((int)json_array_size(
		    json_object_get(json_object_get(reply, "agent"), "targets")));
	}
	return ns_fixture_exit_status(child);
}

static void test_status_hides_others(void **state)
{
	struct ns_fixture *fx = *state;
	struct launch l;
	char run_id[33];
	json_t *st;
	int fd = ns_fixture_connect(fx), status;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	gated_sleep(&l, "0");
	json_decref(start_ok(fd, fx, l.pid, run_id));
	st = ask(fd, json_pack("{s:s}", "request", "status"), 3000);
	assert_int_equal(json_array_size(json_object_get(json_object_get(st, "agent"), "targets")),
			 1);
	json_decref(st);
	assert_int_equal(as_nobody_targets(fx), 0);
	assert_int_equal(launch_release(&l), 0);
	waitpid(l.pid, &status, 0);
	close(fd); /* the Run ends, interrupted */
}

/* a client that goes away: its Run ends (interrupted) and leaves the Agent */
static void test_client_gone(void **state)
{
	struct ns_fixture *fx = *state;
	struct launch l;
	char run_id[33], path[PATH_MAX];
	long long until;
	json_t *reply, *st;
	struct stat sb;
	int fd = ns_fixture_connect(fx), watcher = ns_fixture_connect(fx), status, n = -1;

	gated_sleep(&l, "0");
	reply = start_ok(fd, fx, l.pid, run_id);
	snprintf(path, sizeof(path), "%s/manifest.json",
		 json_string_value(json_object_get(reply, "run_dir")));
	json_decref(reply);
	assert_int_equal(launch_release(&l), 0);
	waitpid(l.pid, &status, 0);
	close(fd);
	for (until = clock_monotonic_ms() + 20000; clock_monotonic_ms() < until && n;) {
		usleep(100 * 1000);
		st = ask(watcher, json_pack("{s:s}", "request", "status"), 3000);
		n = (int)json_array_size(json_object_get(json_object_get(st, "agent"), "targets"));
		json_decref(st);
	}
	assert_int_equal(n, 0);
	assert_int_equal(stat(path, &sb), 0);
	close(watcher);
}

/* node_service_stop with a Run open: the loop ends, the Run finalized */
static void test_stop_ends_runs(void **state)
{
	struct ns_fixture *fx = *state;
	struct launch l;
	char run_id[33];
	long long t0;
	json_t *reply = NULL;
	char err[512];
	int fd = ns_fixture_connect(fx), status;

	gated_sleep(&l, "0");
	json_decref(start_ok(fd, fx, l.pid, run_id));
	assert_int_equal(launch_release(&l), 0);
	waitpid(l.pid, &status, 0);
	t0 = clock_monotonic_ms();
	node_service_stop(fx->ns);
	/* the Run's end is told to its client */
	assert_int_equal(control_await(fd, &reply, 20000, NULL, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(reply, "reply")), "run-end");
	assert_true(json_is_true(json_object_get(reply, "interrupted")));
	json_decref(reply);
	pthread_join(fx->thread, NULL);
	assert_int_equal(fx->result, 0);
	assert_true(clock_monotonic_ms() - t0 < NODE_SERVICE_STOP_WAIT_MS);
	/* the socket is gone */
	assert_int_equal(access(fx->sock, F_OK), -1);
	/* teardown joins again: a new thread that returns at once */
	assert_int_equal(pthread_create(&fx->thread, NULL, ns_fixture_serve, fx), 0);
	close(fd);
}

/* ms a status request on a new connection takes */
static long long status_latency_ms(struct ns_fixture *fx)
{
	long long t0 = clock_monotonic_ms();
	char err[512];
	int fd = ns_fixture_connect(fx);

	assert_int_equal(ns_fixture_code(ask(fd, json_pack("{s:s}", "request", "status"), 10000),
					 err, sizeof(err)),
			 0);
	close(fd);
	return clock_monotonic_ms() - t0;
}

/* red F3: a client that sends status requests and never reads the replies
 * fills its socket; the loop does not wait for it (it is dropped), and
 * another client's status stays fast */
static void test_non_reader_does_not_stall(void **state)
{
	struct ns_fixture *fx = *state;
	long long end, worst = 0;
	char text[] = "{\"request\":\"status\"}";
	int fd = ns_fixture_connect(fx), sent = 0, gone = 0;

	end = clock_monotonic_ms() + 4000;
	while (clock_monotonic_ms() < end) {
		ssize_t n = send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
			gone = 1;
			break;
		}
		if (n > 0)
			sent++;
		else
			usleep(1000);
		if (sent % 200 == 0) {
			long long l = status_latency_ms(fx);

			worst = l > worst ? l : worst;
		}
	}
	for (int i = 0; i < 5; i++) {
		long long l = status_latency_ms(fx);

		worst = l > worst ? l : worst;
	}
	print_message("non-reader: %d requests sent, %s; worst status latency %lld ms\n", sent,
		      gone ? "dropped" : "not dropped", worst);
	assert_true(worst < 1000);
	close(fd);
}

/* red F3: one uid holds at most NS_MAX_CLIENTS_PER_UID connections; root
 * is not limited */
static int as_nobody_connections(struct ns_fixture *fx, int n)
{
	pid_t child = ns_fixture_fork_nobody(fx);

	if (!child) {
		json_t *reply = NULL;
		char err[512];
		int fds[64], ok = 0;

		for (int i = 0; i < n && i < 64; i++) {
			if (control_connect(fx->sock, &fds[i], err, sizeof(err)))
				continue;
			if (!control_request(fds[i], json_pack("{s:s}", "request", "status"), &reply,
					     5000, NULL, err, sizeof(err)) &&
			    !control_reply_status(reply, err, sizeof(err)))
				ok++;
			json_decref(reply);
			reply = NULL;
		}
		_exit(ok);
	}
	return ns_fixture_exit_status(child);
}

static void test_connections_per_uid(void **state)
{
	struct ns_fixture *fx = *state;
	int fds[40];

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	assert_int_equal(as_nobody_connections(fx, 20), 16);
	for (int i = 0; i < 40; i++)
		fds[i] = ns_fixture_connect(fx);
	assert_true(status_latency_ms(fx) < 5000); /* root's 41st */
	for (int i = 0; i < 40; i++)
		close(fds[i]);
}

/* red F4: with an Aggregator that does not answer, status requests do not
 * hold the loop: five pipelined on one connection and one on another are
 * all answered within about one wait (1 s), each naming the silent
 * Aggregator */
static void test_status_silent_aggregator(void **state)
{
	struct ns_fixture *fx = *state;
	json_t *reply = NULL;
	char err[512];
	long long t0;
	int fd;

	fd = ns_fixture_connect(fx);
	t0 = clock_monotonic_ms();
	for (int i = 0; i < 5; i++)
		assert_int_equal(send_req(fd, json_pack("{s:s}", "request", "status")), 0);
	assert_true(status_latency_ms(fx) < 1800);
	for (int i = 0; i < 5; i++) {
		json_t *aggs;

		assert_int_equal(control_await(fd, &reply, 5000, NULL, err, sizeof(err)), 0);
		aggs = json_object_get(reply, "aggregators");
		assert_int_equal(json_array_size(aggs), 1);
		assert_non_null(strstr(json_string_value(json_object_get(json_array_get(aggs, 0),
									  "error")) ?: "",
				       "did not answer"));
		json_decref(reply);
	}
	print_message("6 status requests with a silent aggregator: %lld ms\n",
		      clock_monotonic_ms() - t0);
	assert_true(clock_monotonic_ms() - t0 < 2500);
	close(fd);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", "..", the DIR's own */
}

static long long thread_cpu_ms(pthread_t t)
{
	struct timespec ts;
	clockid_t cid;

	assert_int_equal(pthread_getcpuclockid(t, &cid), 0);
	assert_int_equal(clock_gettime(cid, &ts), 0);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* red F5: with no descriptor left to accept with, the loop does not spin
 * on the listening socket (it rests), and accepts again once there are */
static void test_out_of_descriptors(void **state)
{
	struct ns_fixture *fx = *state;
	struct rlimit old, low;
	long long cpu0, cpu;
	int ready[2], go[2], status;
	pid_t child;
	char c;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) { /* once told: 30 connections held for 2 s */
		char err[512];
		int fd;

		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (int i = 0; i < 30; i++)
			if (control_connect(fx->sock, &fd, err, sizeof(err)))
				_exit(1);
		(void)!write(ready[1], "r", 1);
		sleep(2);
		_exit(0);
	}
	low.rlim_cur = (rlim_t)open_fds() + 6;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(ready[0], &c, 1), 1);
	usleep(200000);
	cpu0 = thread_cpu_ms(fx->thread);
	usleep(1000000);
	cpu = thread_cpu_ms(fx->thread) - cpu0;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(waitpid(child, &status, 0), child);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	print_message("the loop out of descriptors: %lld ms of CPU in 1 s\n", cpu);
	assert_true(cpu < 300);
	assert_true(status_latency_ms(fx) < 2000); /* accepting again */
}

static char *silent_endpoints[] = { "tcp://127.0.0.1:9" }; /* discard: nothing listens */
static const struct service_config silent_service = { .present = 1,
						      .aggregators = silent_endpoints,
						      .n_aggregators = 1 };

static int setup_silent(void **state)
{
	int e;

	setup_service = &silent_service;
	e = setup(state);
	setup_service = NULL;
	return e;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_yours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_debuggable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_non_reader_does_not_stall, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connections_per_uid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_descriptors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_silent_aggregator, setup_silent,
						teardown),
		cmocka_unit_test_setup_teardown(test_user_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_start_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_hides_others, setup, teardown),
		cmocka_unit_test_setup_teardown(test_linger_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interrupt_linger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_ends_runs, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
