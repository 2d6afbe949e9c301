/* Unit tests for userspace/slurm/munge_cred (munge_cred.h) against a REAL
 * munged: the one at $NUNATAK_TEST_MUNGE_SOCKET, else a private one this
 * test starts through tests/lib/munged.sh (its own key, socket and files in
 * a temporary directory; stopped at the end, and by munged.sh's watcher if
 * this process dies first). Without root (munged runs as the munge user)
 * or munge installed, every case is SKIPPED with the reason.
 *
 * Cases: success (the uid/gid munged vouches for, also another user's),
 * replayed, expired, another payload (-EPROTO), restricted to another uid,
 * root-only by default, garbage and tampered, munged unreachable
 * (-EHOSTUNREACH, quickly), bad arguments. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/slurm/munge_cred.h"

#define PAYLOAD "nunatak attach job=42"
#define START_TIMEOUT_MS 20000

extern char **environ;

static char sock[PATH_MAX];	  /* the munged under test ("" none) */
static char why_not[512];	  /* why none */
static char private_dir[PATH_MAX]; /* ours to stop ("" not ours) */
static char script[PATH_MAX];

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* tests/lib/munged.sh: $TESTS_LIB, else next to this binary's tree
 * (BUILD/tests/test_X -> tests/lib), else under the working directory; only
 * a file root or we own and nobody else can write (we run it as root) */
static int find_script(void)
{
	const char *lib = getenv("TESTS_LIB");
	char exe[PATH_MAX], *slash;
	struct stat st;
	ssize_t n;
	int i;

	for (i = 0; i < 3; i++) {
		script[0] = '\0';
		if (i == 0 && lib && *lib) {
			snprintf(script, sizeof(script), "%s/munged.sh", lib);
		} else if (i == 1) {
			n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
			if (n <= 0)
				continue;
			exe[n] = '\0';
			for (int up = 0; up < 3 && (slash = strrchr(exe, '/')); up++)
				*slash = '\0';
			snprintf(script, sizeof(script), "%s/tests/lib/munged.sh", exe);
		} else if (i == 2) {
			snprintf(script, sizeof(script), "tests/lib/munged.sh");
		}
		if (script[0] && !stat(script, &st) && S_ISREG(st.st_mode) &&
		    (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & 022))
			return 0;
	}
	return -ENOENT;
}

/* bash munged.sh ACTION DIR (fork + execve, an argv, no shell command
 * line); its stdout into out. The exit status, or -1 at the deadline. */
static int run_script(const char *action, char *out, size_t outlen, int timeout_ms)
{
	char *argv[] = {"bash", script, (char *)action, private_dir, NULL};
	char watch[64], *envp[512];
	size_t used = 0, e = 0;
	long long deadline = now_ms() + timeout_ms;
	int fds[2], status = -1;
	pid_t pid;

	snprintf(watch, sizeof(watch), "MUNGED_WATCH_PID=%d", (int)getpid());
	for (char **p = environ; *p && e < 510; p++)
		if (strncmp(*p, "MUNGED_WATCH_PID=", 17))
			envp[e++] = *p;
	envp[e++] = watch;
	envp[e] = NULL;
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		execve("/bin/bash", argv, envp);
		_exit(127);
	}
	close(fds[1]);
	if (out && outlen)
		out[0] = '\0';
	while (pid > 0) {
		struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
		long long left = deadline - now_ms();
		char buf[256];
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		n = read(fds[0], buf, sizeof(buf));
		if (n <= 0)
			break;
		if (out && used + n < outlen) {
			memcpy(out + used, buf, n);
			used += n;
			out[used] = '\0';
		}
	}
	close(fds[0]);
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(20000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int group_setup(void **state)
{
	const char *env = getenv("NUNATAK_TEST_MUNGE_SOCKET");
	char out[PATH_MAX + 16], tmpl[] = "/tmp/nunatak-munged-test.XXXXXX";
	int rc;

	(void)state;
	if (env && *env) {
		snprintf(sock, sizeof(sock), "%s", env);
		return 0;
	}
	if (geteuid() != 0) {
		snprintf(why_not, sizeof(why_not),
			 "needs root to start a private munged (or set NUNATAK_TEST_MUNGE_SOCKET)");
		return 0;
	}
	if (find_script()) {
		snprintf(why_not, sizeof(why_not),
			 "no trusted tests/lib/munged.sh (found by $TESTS_LIB, this binary's tree "
			 "or the working directory; it must be root's or ours and not writable by "
			 "others)");
		return 0;
	}
	if (!mkdtemp(tmpl)) {
		snprintf(why_not, sizeof(why_not), "mkdtemp: %s", strerror(errno));
		return 0;
	}
	chmod(tmpl, 0755); /* munged (the munge user) and other users' clients traverse it */
	snprintf(private_dir, sizeof(private_dir), "%s/munge", tmpl);
	rc = run_script("start", out, sizeof(out), START_TIMEOUT_MS);
	if (rc != 0) {
		snprintf(why_not, sizeof(why_not),
			 "%s start %s: %s (its message is above)", script, private_dir,
			 rc == 77 ? "cannot run here" : rc < 0 ? "timed out" : "failed");
		if (rc == 77 || rc == -1)
			return 0;
		fprintf(stderr, "munged.sh failed with %d\n", rc);
		return -1; /* munge is there and broken: a failure, not a skip */
	}
	out[strcspn(out, "\n")] = '\0';
	snprintf(sock, sizeof(sock), "%s", out);
	return 0;
}

static int group_teardown(void **state)
{
	char parent[PATH_MAX], *slash;

	(void)state;
	if (!private_dir[0])
		return 0;
	run_script("stop", NULL, 0, 15000);
	snprintf(parent, sizeof(parent), "%s", private_dir);
	slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	remove_tree(parent);
	return 0;
}

#define NEED_MUNGED() SKIP_UNLESS(sock[0], why_not)

static char *make_ok(const char *payload, int ttl)
{
	char err[512] = "", *cred = NULL;
	int ret = munge_cred_make(sock, payload, ttl, &cred, err, sizeof(err));

	if (ret)
		fail_msg("munge_cred_make: %d %s", ret, err);
	assert_non_null(cred);
	assert_int_equal(strncmp(cred, "MUNGE:", 6), 0);
	return cred;
}

static void test_success(void **state)
{
	uid_t uid = 12345;
	gid_t gid = 12345;
	char err[512] = "", *cred;

	(void)state;
	NEED_MUNGED();
	cred = make_ok(PAYLOAD, 60);
	assert_int_equal(munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)), 0);
	assert_int_equal(uid, getuid());
	assert_int_equal(gid, getgid());
	free(cred);
}

/* fn run as the user nobody in a child; its int result (or -1000 - errno) */
static int as_nobody(int (*fn)(void *), void *ctx)
{
	struct passwd *pw = getpwnam("nobody");
	int status;
	pid_t pid;

	if (!pw)
		return -1000 - ENOENT;
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
			_exit(255);
		_exit(fn(ctx) & 0xff);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1000;
	return (signed char)WEXITSTATUS(status);
}

struct made {
	int fd; /* write end: the credential */
};

static int make_in_child(void *ctx)
{
	struct made *m = ctx;
	char err[512], *cred = NULL;

	if (munge_cred_make(sock, PAYLOAD, 60, &cred, err, sizeof(err)))
		return 1;
	if (write(m->fd, cred, strlen(cred)) != (ssize_t)strlen(cred))
		return 2;
	free(cred);
	return 0;
}

/* The uid is munged's: a credential nobody made decodes (as root) to
 * nobody's uid and gid, whatever the process claims. */
static void test_success_other_user(void **state)
{
	struct passwd *pw = getpwnam("nobody");
	char cred[1024] = "", err[512] = "";
	struct made m;
	int fds[2];
	ssize_t n;
	uid_t uid;
	gid_t gid;

	(void)state;
	NEED_MUNGED();
	SKIP_UNLESS(geteuid() == 0, "needs root to make a credential as another user");
	SKIP_UNLESS(pw, "no user 'nobody'");
	assert_int_equal(pipe(fds), 0);
	m.fd = fds[1];
	assert_int_equal(as_nobody(make_in_child, &m), 0);
	close(fds[1]);
	n = read(fds[0], cred, sizeof(cred) - 1);
	close(fds[0]);
	assert_true(n > 6);
	cred[n] = '\0';
	assert_int_equal(munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)), 0);
	assert_int_equal(uid, pw->pw_uid);
	assert_int_equal(gid, pw->pw_gid);
}

static void test_replayed(void **state)
{
	char err[512] = "", *cred;
	uid_t uid = 777;
	gid_t gid = 777;

	(void)state;
	NEED_MUNGED();
	cred = make_ok(PAYLOAD, 60);
	assert_int_equal(munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)), 0);
	uid = 777;
	gid = 777;
	assert_int_equal(munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)),
			 -EACCES);
	assert_non_null(strstr(err, "replayed"));
	assert_int_equal(uid, 777); /* untouched at an error */
	assert_int_equal(gid, 777);
	free(cred);
}

static void test_expired(void **state)
{
	char err[512] = "", *cred;
	uid_t uid;
	gid_t gid;

	(void)state;
	NEED_MUNGED();
	cred = make_ok(PAYLOAD, 1);
	sleep(2);
	assert_int_equal(munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)),
			 -EACCES);
	assert_non_null(strstr(err, "expired"));
	free(cred);
}

static void test_wrong_payload(void **state)
{
	const char *others[] = {"nunatak attach job=43", "nunatak attach job=4",
				"nunatak attach job=421", ""};
	char err[512] = "", *cred;
	uid_t uid;
	gid_t gid;
	size_t i;

	(void)state;
	NEED_MUNGED();
	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		cred = make_ok(others[i], 60);
		assert_int_equal(
		    munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)), -EPROTO);
		assert_non_null(strstr(err, "another request"));
		free(cred);
	}
}

/* restricted to another uid: refused to root too */
static void test_restricted_to_another_uid(void **state)
{
	char err[512] = "", *cred = NULL;
	uid_t uid;
	gid_t gid;

	(void)state;
	NEED_MUNGED();
	assert_int_equal(munge_cred_make_for(sock, PAYLOAD, 60, getuid() + 4242, &cred, err,
					     sizeof(err)),
			 0);
	assert_int_equal(munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)),
			 -EACCES);
	assert_non_null(strstr(err, "unauthorized"));
	free(cred);
}

static char *root_only_cred;

static int check_in_child(void *ctx)
{
	char err[512];
	uid_t uid;
	gid_t gid;

	(void)ctx;
	return -munge_cred_check(sock, root_only_cred, PAYLOAD, &uid, &gid, err, sizeof(err));
}

/* munge_cred_make's credentials decode for root only */
static void test_root_only(void **state)
{
	(void)state;
	NEED_MUNGED();
	SKIP_UNLESS(geteuid() == 0, "needs root to decode as another user");
	root_only_cred = make_ok(PAYLOAD, 60);
	assert_int_equal(as_nobody(check_in_child, NULL), EACCES);
	free(root_only_cred);
}

static void test_garbage(void **state)
{
	const char *bad[] = {"", "not a credential", "MUNGE:", "MUNGE:AAAA:", "MUNGE:!!!!"};
	char err[512] = "", *cred;
	size_t i, mid;
	uid_t uid;
	gid_t gid;

	(void)state;
	NEED_MUNGED();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(
		    munge_cred_check(sock, bad[i], PAYLOAD, &uid, &gid, err, sizeof(err)), -EACCES);
		assert_non_null(strstr(err, "refused"));
	}
	/* tampered: one base64 character of the body changed */
	cred = make_ok(PAYLOAD, 60);
	mid = strlen(cred) / 2;
	cred[mid] = cred[mid] == 'A' ? 'B' : 'A';
	assert_int_equal(munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)),
			 -EACCES);
	free(cred);
}

static void test_unreachable(void **state)
{
	char err[512] = "", *cred = NULL, dir[] = "/tmp/nunatak-no-munged.XXXXXX", path[PATH_MAX];
	long long t0;
	uid_t uid;
	gid_t gid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/munge.socket.2", dir);
	t0 = now_ms();
	assert_int_equal(munge_cred_make(path, PAYLOAD, 60, &cred, err, sizeof(err)),
			 -EHOSTUNREACH);
	assert_null(cred);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "unreachable"));
	assert_int_equal(munge_cred_check(path, "MUNGE:xyz:", PAYLOAD, &uid, &gid, err,
					  sizeof(err)),
			 -EHOSTUNREACH);
	assert_non_null(strstr(err, path));
	print_message("munged unreachable: both calls failed in %lld ms\n", now_ms() - t0);
	assert_true(now_ms() - t0 < 10000);
	rmdir(dir);
}

#define THREADS 4
#define PER_THREAD 25

/* every thread makes and checks its own credentials: all succeed, each
 * decodes once (no context shared between calls) */
static void *make_and_check(void *arg)
{
	char err[512], *cred;
	intptr_t failures = 0;
	uid_t uid;
	gid_t gid;
	int i;

	(void)arg;
	for (i = 0; i < PER_THREAD; i++) {
		cred = NULL;
		if (munge_cred_make(sock, PAYLOAD, 60, &cred, err, sizeof(err)) ||
		    munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)) ||
		    uid != getuid() ||
		    munge_cred_check(sock, cred, PAYLOAD, &uid, &gid, err, sizeof(err)) != -EACCES)
			failures++;
		free(cred);
	}
	return (void *)failures;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];
	void *failures;
	int i;

	(void)state;
	NEED_MUNGED();
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, make_and_check, NULL), 0);
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], &failures), 0);
		assert_int_equal((intptr_t)failures, 0);
	}
}

static void test_bad_arguments(void **state)
{
	char err[512] = "", *cred = NULL;
	uid_t uid;
	gid_t gid;

	(void)state;
	assert_int_equal(munge_cred_make("relative.sock", PAYLOAD, 60, &cred, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(munge_cred_make(NULL, PAYLOAD, 0, &cred, err, sizeof(err)), -EINVAL);
	assert_int_equal(munge_cred_make(NULL, PAYLOAD, 3601, &cred, err, sizeof(err)), -EINVAL);
	assert_int_equal(munge_cred_make(NULL, NULL, 60, &cred, err, sizeof(err)), -EINVAL);
	assert_int_equal(munge_cred_check(NULL, NULL, PAYLOAD, &uid, &gid, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(munge_cred_check("x", "MUNGE:", PAYLOAD, &uid, &gid, NULL, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_success),
	    cmocka_unit_test(test_success_other_user),
	    cmocka_unit_test(test_replayed),
	    cmocka_unit_test(test_expired),
	    cmocka_unit_test(test_wrong_payload),
	    cmocka_unit_test(test_restricted_to_another_uid),
	    cmocka_unit_test(test_root_only),
	    cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_unreachable),
	    cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
