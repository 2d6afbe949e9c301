/* Unit tests for userspace/control: messages over real SOCK_SEQPACKET
 * sockets (round trip, oversized, not JSON, the peer gone, a deadline, a
 * way out), the socket's trust checks (directory and file owners and
 * modes, a stale socket, a service not run by root) and the per-request
 * authorization (real and effective uid of the process to observe, read
 * from /proc by the code, set by the test with setresuid in children). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"
#include "userspace/control/control_server.h"
#include "userspace/log/clock.h"

#define NOBODY 65534

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv),
			 0);
	control_socket_room(sv[0]);
	control_socket_room(sv[1]);
}

static void test_round_trip(void **state)
{
	json_t *msg = json_pack("{s:s, s:i, s:[s,s]}", "request", "status", "n", 42, "argv", "a",
				"b"), *got = NULL;
	char err[256];
	int sv[2];

	(void)state;
	pair(sv);
	assert_int_equal(control_recv_msg(sv[1], &got, err, sizeof(err)), 0); /* none yet */
	assert_int_equal(control_send_msg(sv[0], msg, 1000), 0);
	assert_int_equal(control_recv_msg(sv[1], &got, err, sizeof(err)), 1);
	assert_true(json_equal(msg, got));
	json_decref(got);
	/* a message of almost CONTROL_MSG_MAX passes whole */
	{
		size_t n = CONTROL_MSG_MAX - 64;
		char *big = malloc(n + 1);

		memset(big, 'x', n);
		big[n] = '\0';
		json_object_set_new(msg, "big", json_string(big));
		free(big);
		assert_int_equal(control_send_msg(sv[0], msg, 1000), 0);
		assert_int_equal(control_recv_msg(sv[1], &got, err, sizeof(err)), 1);
		assert_true(json_equal(msg, got));
		json_decref(got);
	}
	json_decref(msg);
	close(sv[0]);
	close(sv[1]);
}

static void test_refusals(void **state)
{
	size_t n = CONTROL_MSG_MAX + 10;
	char *raw = malloc(n), err[256];
	json_t *msg = json_pack("{s:s}", "request", "status"), *got = NULL, *huge;
	int sv[2];

	(void)state;
	pair(sv);
	/* the sender refuses an oversized message */
	memset(raw, 'y', n - 1);
	raw[n - 1] = '\0';
	huge = json_pack("{s:s}", "x", raw);
	assert_int_equal(control_send_msg(sv[0], huge, 1000), -EMSGSIZE);
	json_decref(huge);
	/* the receiver drops one sent raw, and the next message still passes */
	raw[0] = '"';
	assert_int_equal(send(sv[0], raw, n, 0), (ssize_t)n);
	assert_int_equal(control_recv_msg(sv[1], &got, err, sizeof(err)), -EMSGSIZE);
	assert_non_null(strstr(err, "over the limit"));
	assert_null(got);
	assert_int_equal(send(sv[0], "not json", 8, 0), 8);
	assert_int_equal(control_recv_msg(sv[1], &got, err, sizeof(err)), -EBADMSG);
	assert_int_equal(send(sv[0], "[1,2]", 5, 0), 5);
	assert_int_equal(control_recv_msg(sv[1], &got, err, sizeof(err)), -EBADMSG);
	assert_int_equal(control_send_msg(sv[0], msg, 1000), 0);
	assert_int_equal(control_recv_msg(sv[1], &got, err, sizeof(err)), 1);
	assert_true(json_equal(msg, got));
	json_decref(got);
	/* the peer gone */
	close(sv[0]);
	assert_int_equal(control_recv_msg(sv[1], &got, err, sizeof(err)), -ECONNRESET);
	assert_int_equal(control_send_msg(sv[1], msg, 1000), -EPIPE);
	close(sv[1]);
	json_decref(msg);
	free(raw);
}

static int give_up(struct control_wait *w)
{
	char c;

	(void)!read(w->fd, &c, 1);
	return ++*(int *)w->ctx >= 2; /* the second time */
}

static void test_request_waits(void **state)
{
	json_t *req = json_pack("{s:s}", "request", "status"), *reply = NULL, *ok;
	long long t0;
	char err[256];
	int sv[2], p[2], calls = 0;
	struct control_wait w = { .on_fd = give_up, .ctx = &calls };

	(void)state;
	pair(sv);
	/* nobody answers: bounded */
	t0 = clock_monotonic_ms();
	assert_int_equal(control_request(sv[0], req, &reply, 200, NULL, err, sizeof(err)),
			 -ETIMEDOUT);
	assert_true(clock_monotonic_ms() - t0 >= 190 && clock_monotonic_ms() - t0 < 2000);
	assert_non_null(strstr(err, "did not answer within 200 ms"));
	/* a way out: the second readable moment gives up */
	assert_int_equal(pipe(p), 0);
	w.fd = p[0];
	assert_int_equal(write(p[1], "ab", 2), 2);
	assert_int_equal(control_request(sv[0], req, &reply, 5000, &w, err, sizeof(err)), -EINTR);
	assert_int_equal(calls, 2);
	/* a deadline w brings closer */
	w.fd = -1;
	w.deadline_ms = clock_monotonic_ms() + 100;
	t0 = clock_monotonic_ms();
	assert_int_equal(control_request(sv[0], req, &reply, 5000, &w, err, sizeof(err)),
			 -ETIMEDOUT);
	assert_true(clock_monotonic_ms() - t0 < 1000);
	/* an answer waiting */
	ok = control_ok_reply(json_pack("{s:s}", "run_id", "abc"));
	assert_int_equal(control_send_msg(sv[1], ok, 1000), 0);
	assert_int_equal(control_request(sv[0], req, &reply, 1000, NULL, err, sizeof(err)), 0);
	assert_int_equal(control_reply_status(reply, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(reply, "run_id")), "abc");
	json_decref(reply);
	json_decref(ok);
	/* an error reply */
	ok = control_error_reply(-EPERM, "not yours: %d", 7);
	assert_int_equal(control_reply_status(ok, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "not yours: 7");
	json_decref(ok);
	/* the service gone while waited for */
	close(sv[1]);
	assert_int_equal(control_request(sv[0], req, &reply, 1000, NULL, err, sizeof(err)),
			 -ECONNRESET);
	close(sv[0]);
	close(p[0]);
	close(p[1]);
	json_decref(req);
}

struct dir {
	char root[128], sock[192];
};

static int setup_dir(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	strcpy(d->root, "/tmp/nunatak-test-control-XXXXXX");
	if (!mkdtemp(d->root) || chmod(d->root, 0755))
		return -1;
	snprintf(d->sock, sizeof(d->sock), "%s/agent.sock", d->root);
	*state = d;
	return 0;
}

static int teardown_dir(void **state)
{
	struct dir *d = *state;

	unlink(d->sock);
	rmdir(d->root);
	free(d);
	return 0;
}

static void test_connect_checks(void **state)
{
	struct dir *d = *state;
	char err[512];
	int lfd, fd, lfd2;

	SKIP_UNLESS(geteuid() == 0, "the socket owner checks need root (chown)");
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), -ENOENT);
	assert_int_equal(control_listen(d->sock, 0666, &lfd, err, sizeof(err)), 0);
	{
		struct stat st;

		assert_int_equal(stat(d->sock, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0666);
	}
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), 0);
	{
		struct control_peer p;
		int afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		assert_true(afd >= 0);
		assert_int_equal(control_peer_of(afd, &p), 0);
		assert_int_equal(p.pid, getpid());
		assert_int_equal(p.uid, 0);
		close(afd);
	}
	close(fd);
	/* one service per socket */
	assert_int_equal(control_listen(d->sock, 0666, &lfd2, err, sizeof(err)), -EADDRINUSE);
	/* a directory others can write */
	assert_int_equal(chmod(d->root, 0777), 0);
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chmod(d->root, 0755), 0);
	/* a directory or a socket file another user owns */
	assert_int_equal(chown(d->root, NOBODY, NOBODY), 0);
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "owned by another user"));
	assert_int_equal(chown(d->root, 0, 0), 0);
	assert_int_equal(lchown(d->sock, NOBODY, NOBODY), 0);
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not owned by root"));
	assert_int_equal(lchown(d->sock, 0, 0), 0);
	/* a stale socket: refused to connect, replaced by the next service */
	close(lfd);
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), -ECONNREFUSED);
	assert_int_equal(control_listen(d->sock, 0666, &lfd, err, sizeof(err)), 0);
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), 0);
	close(fd);
	close(lfd);
	unlink(d->sock);
	/* not a socket: neither used nor replaced */
	assert_int_equal(write_file(d->sock, "x"), 0);
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), -EPERM);
	assert_int_equal(control_listen(d->sock, 0666, &lfd, err, sizeof(err)), -EEXIST);
	unlink(d->sock);
	assert_int_equal(control_connect("relative.sock", &fd, err, sizeof(err)), -EINVAL);
}

/* a root-owned socket file whose listener dropped to nobody before
 * listen(): the credentials the client sees are nobody's */
static void test_connect_peer_not_root(void **state)
{
	struct dir *d = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char err[512];
	int s, fd, go[2], status;
	pid_t child;

	SKIP_UNLESS(geteuid() == 0, "needs root to drop to nobody");
	strcpy(sa.sun_path, d->sock);
	assert_int_equal(pipe(go), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
		    setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY) ||
		    listen(s, 4))
			_exit(1);
		(void)!write(go[1], "r", 1);
		pause(); /* until the parent kills it */
		_exit(0);
	}
	{
		char c;

		assert_int_equal(read(go[0], &c, 1), 1);
	}
	assert_int_equal(control_connect(d->sock, &fd, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not root"));
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	close(go[0]);
	close(go[1]);
	unlink(d->sock);
}

static void test_socket_path(void **state)
{
	(void)state;
	unsetenv("NUNATAK_AGENT_SOCKET");
	assert_string_equal(control_socket_path(NULL), CONTROL_SOCKET_DEFAULT);
	assert_string_equal(control_socket_path("/x/y.sock"), "/x/y.sock");
	setenv("NUNATAK_AGENT_SOCKET", "/tmp/z.sock", 1);
	assert_string_equal(control_socket_path("/x/y.sock"), "/tmp/z.sock");
	setenv("NUNATAK_AGENT_SOCKET", "", 1);
	assert_string_equal(control_socket_path("/x/y.sock"), "/x/y.sock");
	unsetenv("NUNATAK_AGENT_SOCKET");
}

/* how a child made by child_creds differs from nobody's plain process */
enum child_kind {
	PLAIN,		/* every uid and gid nobody's, dumpable */
	SETUID_LIKE,	/* effective uid root: a setuid-root program run by nobody */
	SAVED_ROOT,	/* saved uid root: a setuid program that dropped euid */
	SETGID_LIKE,	/* effective and saved gid 42: a setgid program */
	WITH_CAPS,	/* permitted capabilities kept (file capabilities) */
	NOT_DUMPABLE,	/* prctl(PR_SET_DUMPABLE, 0) */
};

/* a child of nobody's credentials changed as kind says, stopped until
 * killed */
static pid_t child_creds(enum child_kind kind)
{
	uid_t suid = kind == SAVED_ROOT ? 0 : NOBODY, euid = kind == SETUID_LIKE ? 0 : NOBODY;
	gid_t other = kind == SETGID_LIKE ? 42 : NOBODY;
	int p[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(p[0]);
		if (setgroups(0, NULL) || setresgid(NOBODY, other, other) ||
		    (kind == WITH_CAPS && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)) ||
		    setresuid(NOBODY, euid, suid) ||
		    /* a uid change made it not dumpable: as a user's own process */
		    prctl(PR_SET_DUMPABLE, kind != NOT_DUMPABLE, 0, 0, 0) ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)) /* a failed test: gone too */
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

static void reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* the refusal of pid to peer: -EPERM and its reason names what */
static void refused_for(const struct control_peer *peer, pid_t pid, const char *what)
{
	char err[512] = "";
	int e = control_may_observe(peer, pid, err, sizeof(err));

	if (e != -EPERM)
		fail_msg("pid %d for uid %u: %d, not -EPERM (wanted '%s')", (int)pid,
			 (unsigned)peer->uid, e, what);
	if (!strstr(err, what))
		fail_msg("refusal without '%s': %s", what, err);
}

static void test_may_observe(void **state)
{
	struct control_peer root = { .uid = 0 }, nobody = { .uid = NOBODY, .gid = NOBODY },
			    other = { .uid = 4242, .gid = NOBODY },
			    other_group = { .uid = NOBODY, .gid = 4242 };
	struct control_process_creds c;
	pid_t kids[NOT_DUMPABLE + 1], dead;
	char err[512];
	int k;

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "needs root to make processes of other uids");
	assert_int_equal(control_process_creds(getpid(), &c), 0);
	assert_int_equal(c.uid[0], getuid());
	assert_int_equal(c.uid[1], geteuid());
	assert_int_equal(c.gid[1], getegid());
	assert_int_equal(c.dump_owner, 0);
	assert_true(c.cap_permitted != 0);
	for (k = PLAIN; k <= NOT_DUMPABLE; k++)
		kids[k] = child_creds((enum child_kind)k);
	assert_int_equal(control_process_creds(kids[PLAIN], &c), 0);
	for (k = 0; k < 4; k++) {
		assert_int_equal(c.uid[k], NOBODY);
		assert_int_equal(c.gid[k], NOBODY);
	}
	assert_int_equal(c.cap_permitted, 0);
	assert_int_equal(c.dump_owner, NOBODY);
	assert_int_equal(control_may_observe(&nobody, kids[PLAIN], err, sizeof(err)), 0);
	refused_for(&other, kids[PLAIN], "(you are uid 4242, gid 65534): its real uid is 65534");
	refused_for(&other_group, kids[PLAIN], "its real gid is 65534, not yours (4242)");
	refused_for(&nobody, kids[SETUID_LIKE], "its effective uid is 0");
	/* red F2: what keeps the real and effective uid the user's */
	refused_for(&nobody, kids[SAVED_ROOT], "its saved uid is 0");
	refused_for(&nobody, kids[SETGID_LIKE], "its effective gid is 42");
	refused_for(&nobody, kids[WITH_CAPS], "it holds capabilities");
	refused_for(&nobody, kids[NOT_DUMPABLE], "not dumpable");
	refused_for(&nobody, getpid(), "its real uid is 0");
	for (k = PLAIN; k <= NOT_DUMPABLE; k++)
		assert_int_equal(control_may_observe(&root, kids[k], err, sizeof(err)), 0);
	for (k = PLAIN; k <= NOT_DUMPABLE; k++)
		reap(kids[k]);
	dead = kids[PLAIN]; /* reaped: no such process (pids are not reused this soon) */
	assert_int_equal(control_may_observe(&root, dead, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "does not exist"));
	assert_int_equal(control_may_observe(&root, 0, err, sizeof(err)), -ESRCH);
	assert_int_equal(control_may_observe(&root, -1, err, sizeof(err)), -ESRCH);
	/* what the service reads on a caller's word */
	{
		char path[] = "/tmp/nunatak-test-read-XXXXXX";
		int fd = mkstemp(path);
		struct control_peer nogroup = { .uid = NOBODY, .gid = 4242 };

		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(chmod(path, 0600), 0);
		assert_true(control_may_read(&root, path));
		assert_false(control_may_read(&nogroup, path));
		assert_int_equal(chmod(path, 0604), 0);
		assert_true(control_may_read(&nogroup, path));
		assert_int_equal(chown(path, NOBODY, 0), 0);
		assert_int_equal(chmod(path, 0004), 0);
		assert_false(control_may_read(&nogroup, path)); /* its owner has no read bit */
		assert_int_equal(chmod(path, 0400), 0);
		assert_true(control_may_read(&nogroup, path));
		assert_false(control_may_read(&nogroup, "/nonexistent/x"));
		assert_false(control_may_read(&root, "/tmp")); /* not a regular file */
		unlink(path);
	}
	assert_true(control_may_see(&root, 1000));
	assert_true(control_may_see(&nobody, NOBODY));
	assert_false(control_may_see(&nobody, 1000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_request_waits),
		cmocka_unit_test_setup_teardown(test_connect_checks, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_connect_peer_not_root, setup_dir, teardown_dir),
		cmocka_unit_test(test_socket_path),
		cmocka_unit_test(test_may_observe),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
