/* Unit tests for userspace/launch/tool: output captured and bounded, the
 * timeout honoured (the tool and what it started killed and reaped), the
 * argument vector passed verbatim (no shell sees it), stdin and stderr on
 * /dev/null, no descriptor leaked, and tool_resolve_trusted() on missing,
 * non-executable and untrusted tools; tool_spawn() puts stdin, stdout and
 * stderr where asked even when they are 0, 1, 2 shuffled (nunatak started
 * with them closed), refuses a bare name; tool_reap() kills at its
 * deadline. Real programs from /bin. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
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
#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"

static long long elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000LL + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* no child of this process is left, zombie or running */
static void assert_no_child_left(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* @pid is gone or a zombie (reparented, being reaped), within 2 s */
static void assert_dead(pid_t pid)
{
	char path[64], stat[256];
	int tries;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (tries = 0; tries < 200; tries++) {
		FILE *f = fopen(path, "r");
		char *paren;

		if (!f)
			return;
		paren = fgets(stat, sizeof(stat), f) ? strrchr(stat, ')') : NULL;
		fclose(f);
		if (paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'))
			return;
		usleep(10000);
	}
	fail_msg("process %d still alive", (int)pid);
}

static void test_output_captured(void **state)
{
	char *argv[] = {"echo", "hello", "world", NULL}, out[256];
	struct tool_result res;

	(void)state;
	assert_int_equal(tool_run("/bin/echo", argv, 5000, out, sizeof(out), &res), 0);
	assert_string_equal(out, "hello world\n");
	assert_int_equal(res.out_len, 12);
	assert_false(res.truncated);
	assert_true(WIFEXITED(res.status));
	assert_int_equal(WEXITSTATUS(res.status), 0);

	/* the exit status comes back; stderr is not captured; stdin is empty */
	char *fails[] = {"sh", "-c", "echo on-stderr >&2; cat; exit 7", NULL};
	assert_int_equal(tool_run("/bin/sh", fails, 5000, out, sizeof(out), &res), 0);
	assert_string_equal(out, "");
	assert_int_equal(WEXITSTATUS(res.status), 7);
	assert_no_child_left();
}

static void test_argv_verbatim(void **state)
{
	static const char *const hostile[] = {
	    "x'; touch /tmp/nunatak-test-tool-marker; '",
	    "$(touch /tmp/nunatak-test-tool-marker)",
	    "`touch /tmp/nunatak-test-tool-marker`",
	    "a; b | c && d > /tmp/nunatak-test-tool-marker",
	    "\"quoted\" \\ back\\slash * ?",
	};
	char out[512], want[512];
	struct tool_result res;
	size_t i;

	(void)state;
	unlink("/tmp/nunatak-test-tool-marker");
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		char *argv[] = {"printf", "%s|", (char *)hostile[i], NULL};

		assert_int_equal(tool_run("/usr/bin/printf", argv, 5000, out, sizeof(out), &res),
				 0);
		snprintf(want, sizeof(want), "%s|", hostile[i]);
		assert_string_equal(out, want);
	}
	assert_int_equal(access("/tmp/nunatak-test-tool-marker", F_OK), -1);
}

static void test_timeout_honoured(void **state)
{
	char *argv[] = {"sleep", "30", NULL}, out[64];
	struct tool_result res;
	struct timespec t0;
	long long ms;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tool_run("/bin/sleep", argv, 300, out, sizeof(out), &res), -ETIMEDOUT);
	ms = elapsed_ms(&t0);
	assert_true(ms >= 290);
	assert_true(ms < 1500);
	assert_true(WIFSIGNALED(res.status));
	assert_int_equal(WTERMSIG(res.status), SIGKILL);
	assert_no_child_left();
}

/* A script whose child keeps the pipe open: the whole group is killed. */
static void test_timeout_kills_the_group(void **state)
{
	char *argv[] = {"sh", "-c", "sleep 30 & echo $!; wait", NULL}, out[64];
	struct tool_result res;
	struct timespec t0;
	pid_t grandchild;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tool_run("/bin/sh", argv, 500, out, sizeof(out), &res), -ETIMEDOUT);
	assert_true(elapsed_ms(&t0) < 2000);
	grandchild = (pid_t)atoi(out);
	assert_true(grandchild > 0);
	assert_dead(grandchild);
	assert_no_child_left();

	/* closing stdout is not exiting: the bound still holds */
	char *detached[] = {"sh", "-c", "exec >&-; sleep 30", NULL};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tool_run("/bin/sh", detached, 300, out, sizeof(out), &res), -ETIMEDOUT);
	assert_true(elapsed_ms(&t0) < 1500);
	assert_no_child_left();
}

static void test_output_bounded(void **state)
{
	char *argv[] = {"yes", "nunatak", NULL}, out[100];
	struct tool_result res;
	struct timespec t0;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tool_run("/usr/bin/yes", argv, 5000, out, sizeof(out), &res), 0);
	assert_true(elapsed_ms(&t0) < 2000);
	assert_true(res.truncated);
	assert_int_equal(res.out_len, sizeof(out) - 1);
	assert_int_equal(strlen(out), sizeof(out) - 1);
	assert_memory_equal(out, "nunatak\nnunatak\n", 16);
	/* it learnt through EPIPE/SIGPIPE that nobody reads any more */
	assert_true(WIFSIGNALED(res.status) || WEXITSTATUS(res.status) != 0);

	/* no room at all is fine too */
	assert_int_equal(tool_run("/usr/bin/yes", argv, 5000, NULL, 0, &res), 0);
	assert_true(res.truncated);
	assert_no_child_left();
}

/* Only 0, 1 and 2 reach the tool, even from a descriptor left inheritable. */
static void test_no_descriptor_leaked(void **state)
{
	char *argv[] = {"sh", "-c", "cd /proc/self/fd && echo *", NULL}, out[256];
	struct tool_result res;
	int fd;

	(void)state;
	fd = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose */
	assert_true(fd > 2);
	assert_int_equal(tool_run("/bin/sh", argv, 5000, out, sizeof(out), &res), 0);
	close(fd);
	/* sh's own: 0 1 2, and the one `cd` + glob opened (3) */
	assert_true(!strcmp(out, "0 1 2\n") || !strcmp(out, "0 1 2 3\n"));
}

static void test_missing_and_not_executable(void **state)
{
	char path[PATH_MAX], err[512] = "", out[16];
	char *argv[] = {"x", NULL};
	struct tool_result res;

	(void)state;
	assert_int_equal(tool_run("/nonexistent/tool", argv, 1000, out, sizeof(out), &res),
			 -ENOENT);
	assert_int_equal(
	    tool_resolve_trusted("/nonexistent/tool", path, sizeof(path), err, sizeof(err)),
	    -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/tool"));
	assert_int_equal(
	    tool_resolve_trusted("nunatak-no-such-tool", path, sizeof(path), err, sizeof(err)),
	    -ENOENT);
	assert_int_equal(tool_resolve_trusted("/etc/passwd", path, sizeof(path), err, sizeof(err)),
			 -EACCES);
	assert_non_null(strstr(err, "not executable"));
	assert_int_equal(tool_run("/bin/echo", NULL, 1000, out, sizeof(out), &res), -EINVAL);
	assert_no_child_left();
}

static void test_resolve_trusted(void **state)
{
	char tmpl[] = "/tmp/nunatak-test-tool-XXXXXX", path[PATH_MAX], err[1024] = "";
	char tool[PATH_MAX], real[PATH_MAX];
	char *dir;

	(void)state;
	/* a bare name, found in PATH, given back as the real file */
	assert_int_equal(tool_resolve_trusted("sh", path, sizeof(path), err, sizeof(err)), 0);
	assert_true(path[0] == '/');
	assert_non_null(realpath(path, real));
	assert_string_equal(path, real);

	SKIP_UNLESS(geteuid() == 0, "needs root to plant a tool owned by nobody");
	dir = mkdtemp(tmpl);
	assert_non_null(dir);
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(tool, sizeof(tool), "%s/evil.sh", dir);
	assert_int_equal(write_file(tool, "#!/bin/sh\necho evil\n"), 0);
	assert_int_equal(chmod(tool, 0755), 0);
	assert_int_equal(tool_resolve_trusted(tool, path, sizeof(path), err, sizeof(err)), 0);

	assert_int_equal(chown(tool, 65534, 65534), 0);
	assert_int_equal(tool_resolve_trusted(tool, path, sizeof(path), err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "nobody (uid 65534)"));
	assert_non_null(strstr(err, tool));

	/* a root tool in a directory anyone can write */
	assert_int_equal(chown(tool, 0, 0), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(tool_resolve_trusted(tool, path, sizeof(path), err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chmod(dir, 0755), 0);

	/* a link to it is followed, and the file it names is what is checked */
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink(tool, path), 0);
	assert_int_equal(tool_resolve_trusted(path, real, sizeof(real), err, sizeof(err)), 0);
	assert_string_equal(real, tool);
	assert_int_equal(chown(tool, 65534, 65534), 0);
	assert_int_equal(tool_resolve_trusted(path, real, sizeof(real), err, sizeof(err)), -EPERM);
	assert_int_equal(remove_tree(dir), 0);
}

/* In a child with 0, 1 and 2 closed (exit status: 0, or the step that
 * failed): tool_run() still captures stdout; then the three ends a tool
 * gets are put on 1, 2 and 0 (stdin's on 1, stdout's on 2, stderr's on
 * 0): a dup2 done in order would overwrite one before it is read. */
static int closed_stdio_child(void)
{
	char *echo[] = {"echo", "captured", NULL}, out[64], got[64];
	char *sh[] = {"sh", "-c", "read x; echo \"out:$x\"; echo \"err:$x\" >&2", NULL};
	int in[2], op[2], ep[2], status;
	struct tool_result res;
	ssize_t n;
	pid_t pid;

	close(STDIN_FILENO);
	close(STDOUT_FILENO);
	close(STDERR_FILENO);
	if (tool_run("/bin/echo", echo, 5000, out, sizeof(out), &res) || strcmp(out, "captured\n"))
		return 1;
	/* 0, 1, 2 held by placeholders, so that the pipes are above them */
	if (open("/dev/null", O_RDONLY | O_CLOEXEC) != 0 ||
	    open("/dev/null", O_RDONLY | O_CLOEXEC) != 1 ||
	    open("/dev/null", O_RDONLY | O_CLOEXEC) != 2)
		return 2;
	if (pipe2(in, O_CLOEXEC) || pipe2(op, O_CLOEXEC) || pipe2(ep, O_CLOEXEC))
		return 3;
	if (dup3(in[0], 1, O_CLOEXEC) < 0 || dup3(op[1], 2, O_CLOEXEC) < 0 ||
	    dup3(ep[1], 0, O_CLOEXEC) < 0)
		return 4;
	close(in[0]);
	close(op[1]);
	close(ep[1]);
	if (tool_spawn("/bin/sh", sh, (const int[3]){1, 2, 0}, &pid))
		return 5;
	close(0);
	close(1);
	close(2);
	if (write(in[1], "hi\n", 3) != 3)
		return 6;
	close(in[1]);
	n = read(op[0], got, sizeof(got) - 1);
	if (n != 7 || memcmp(got, "out:hi\n", 7))
		return 7;
	n = read(ep[0], got, sizeof(got) - 1);
	if (n != 7 || memcmp(got, "err:hi\n", 7))
		return 8;
	if (tool_reap(pid, clock_monotonic_ms() + 5000, &status) || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 9;
	return 0;
}

static void test_closed_stdio(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(closed_stdio_child());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* tool_reap() kills the group at its deadline; a bare name is refused */
static void test_spawn_and_reap(void **state)
{
	char *argv[] = {"sleep", "600", NULL};
	const int stdio[3] = {-1, -1, -1};
	struct timespec t0;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(tool_spawn("sleep", argv, stdio, &pid), -EINVAL);
	assert_int_equal(tool_spawn("/bin/sleep", argv, stdio, &pid), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tool_reap(pid, clock_monotonic_ms() + 200, &status), -ETIMEDOUT);
	assert_true(elapsed_ms(&t0) >= 190);
	assert_true(elapsed_ms(&t0) < 1500);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_no_child_left();
	/* a deadline already past: killed at once (what tool_run does on an error) */
	assert_int_equal(tool_spawn("/bin/sleep", argv, stdio, &pid), 0);
	assert_int_equal(tool_reap(pid, 0, &status), -ETIMEDOUT);
	assert_true(WIFSIGNALED(status));
	assert_no_child_left();
}

/* tool_user_bind(): the tools of this thread run as that user (no
 * supplementary group, its gid, its uid), with no descriptor of ours;
 * unbound, as this process; a failure to become the user is the spawn's */
static void test_spawned_as_user(void **state)
{
	char *argv[] = {"sh", "-c", "echo $(id -u) $(id -g) $(id -G); cd /proc/self/fd && echo *",
			NULL},
	     out[256];
	struct tool_user u = {4242, 4343};
	const struct tool_user *prev;
	struct tool_result res;
	int fd;

	(void)state;
	if (geteuid() != 0) {
		skip(); /* SKIPPED: needs root to run a tool as another uid */
		return;
	}
	fd = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose */
	assert_true(fd > 2);
	prev = tool_user_bind(&u);
	assert_null(prev);
	assert_int_equal(tool_run("/bin/sh", argv, 5000, out, sizeof(out), &res), 0);
	assert_true(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0);
	assert_true(!strcmp(out, "4242 4343 4343\n0 1 2\n") ||
		    !strcmp(out, "4242 4343 4343\n0 1 2 3\n"));
	/* a path that does not exist: the spawn says so */
	assert_int_equal(tool_run("/nonexistent/tool", argv, 5000, out, sizeof(out), &res),
			 -ENOENT);
	{
		/* none of our environment, ordinary limits */
		char *env_argv[] = {"sh", "-c", "echo \"${NUNATAK_SECRET}|$(ulimit -l)|$PATH\"", NULL};

		setenv("NUNATAK_SECRET", "leaked", 1);
		assert_int_equal(tool_run("/bin/sh", env_argv, 5000, out, sizeof(out), &res), 0);
		unsetenv("NUNATAK_SECRET");
		assert_string_equal(out, "|8192|/usr/bin:/bin\n");
	}
	assert_ptr_equal(tool_user_bind(NULL), &u);
	close(fd);
	assert_int_equal(tool_run("/bin/sh", argv, 5000, out, sizeof(out), &res), 0);
	assert_true(!strncmp(out, "0 0 0", 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_output_captured),
	    cmocka_unit_test(test_argv_verbatim),
	    cmocka_unit_test(test_timeout_honoured),
	    cmocka_unit_test(test_timeout_kills_the_group),
	    cmocka_unit_test(test_output_bounded),
	    cmocka_unit_test(test_no_descriptor_leaked),
	    cmocka_unit_test(test_missing_and_not_executable),
	    cmocka_unit_test(test_resolve_trusted),
	    cmocka_unit_test(test_closed_stdio),
	    cmocka_unit_test(test_spawn_and_reap),
	    cmocka_unit_test(test_spawned_as_user),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
