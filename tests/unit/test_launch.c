/* test_launch — resolving a command as execvp(3) would, the shell's exit
 * code of a wait status, and the gated child: held until released, exec
 * failures told apart from the application's own exit codes. */
#include <errno.h>
#include <limits.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/launch/launch.h"

static char dir[PATH_MAX], saved_cwd[PATH_MAX], *saved_path;

static int setup(void **state)
{
	(void)state;
	if (make_tmpdir(dir, sizeof(dir), "launch") || !getcwd(saved_cwd, sizeof(saved_cwd)))
		return -1;
	saved_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	if (write_file(path_in(dir, "nt_tool"), "#!/bin/sh\nexit 0\n") ||
	    write_file(path_in(dir, "nt_noexec"), "#!/bin/sh\nexit 0\n") ||
	    chmod(path_in(dir, "nt_tool"), 0755) || chmod(path_in(dir, "nt_noexec"), 0644) ||
	    mkdir(path_in(dir, "nt_dir"), 0755) || mkdir(path_in(dir, "bin2"), 0755) ||
	    write_file(path_in(dir, "bin2/nt_noexec"), "#!/bin/sh\nexit 0\n") ||
	    chmod(path_in(dir, "bin2/nt_noexec"), 0755))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (saved_path)
		setenv("PATH", saved_path, 1);
	else
		unsetenv("PATH");
	free(saved_path);
	saved_path = NULL;
	if (chdir(saved_cwd))
		return -1;
	remove_tree(dir);
	return 0;
}

static void test_resolve_paths(void **state)
{
	char path[PATH_MAX], want[PATH_MAX];
	FILE *p;

	(void)state;
	assert_int_equal(launch_resolve("/bin/sh", path, sizeof(path)), 0);
	assert_string_equal(path, "/bin/sh");

	/* "sh" through PATH: the one the shell finds */
	setenv("PATH", "/nonexistent:/usr/bin:/bin", 1);
	p = popen("command -v sh", "r");
	assert_non_null(p);
	assert_non_null(fgets(want, sizeof(want), p));
	pclose(p);
	want[strcspn(want, "\n")] = '\0';
	assert_int_equal(launch_resolve("sh", path, sizeof(path)), 0);
	assert_string_equal(path, want);

	assert_int_equal(launch_resolve("nt-no-such-command", path, sizeof(path)), -ENOENT);
	assert_int_equal(launch_resolve("", path, sizeof(path)), -ENOENT);
	assert_int_equal(launch_resolve(NULL, path, sizeof(path)), -ENOENT);
	assert_int_equal(launch_resolve(path_in(dir, "missing"), path, sizeof(path)), -ENOENT);
	/* found but not executable, files and directories alike */
	assert_int_equal(launch_resolve(path_in(dir, "nt_noexec"), path, sizeof(path)), -EACCES);
	assert_int_equal(launch_resolve(path_in(dir, "nt_dir"), path, sizeof(path)), -EACCES);
	assert_int_equal(launch_resolve(path_in(dir, "nt_tool"), path, sizeof(path)), 0);
	assert_string_equal(path, path_in(dir, "nt_tool"));
	/* a path that does not fit */
	assert_int_equal(launch_resolve("/bin/sh", path, 4), -ENAMETOOLONG);
}

static void test_resolve_through_path(void **state)
{
	char path[PATH_MAX], env[2 * PATH_MAX];

	(void)state;
	setenv("PATH", dir, 1);
	assert_int_equal(launch_resolve("nt_tool", path, sizeof(path)), 0);
	assert_string_equal(path, path_in(dir, "nt_tool"));
	assert_int_equal(launch_resolve("nt_noexec", path, sizeof(path)), -EACCES);
	assert_int_equal(launch_resolve("nt_dir", path, sizeof(path)), -EACCES);
	/* execvp goes on past a non-executable match */
	snprintf(env, sizeof(env), "%s:%s/bin2", dir, dir);
	setenv("PATH", env, 1);
	assert_int_equal(launch_resolve("nt_noexec", path, sizeof(path)), 0);
	assert_string_equal(path, path_in(dir, "bin2/nt_noexec"));
}

/* Known bug (launch.c:45): for an empty PATH entry the "%.*s" precision is
 * the entry's length, 0, so "." is cut to "" and the candidate is "/cmd"
 * (the root directory), not "./cmd". */
static void test_resolve_empty_path_entries(void **state)
{
	char path[PATH_MAX];

	(void)state;
	/* an empty entry is the current directory: leading, middle, trailing */
	assert_int_equal(chdir(dir), 0);
	setenv("PATH", "/nonexistent::/also-not", 1);
	assert_int_equal(launch_resolve("nt_tool", path, sizeof(path)), 0);
	assert_string_equal(path, "./nt_tool");
	setenv("PATH", ":/nonexistent", 1);
	assert_int_equal(launch_resolve("nt_tool", path, sizeof(path)), 0);
	assert_string_equal(path, "./nt_tool");
	setenv("PATH", "/nonexistent:", 1);
	assert_int_equal(launch_resolve("nt_tool", path, sizeof(path)), 0);
	assert_string_equal(path, "./nt_tool");
	setenv("PATH", "/nonexistent", 1);
	assert_int_equal(launch_resolve("nt_tool", path, sizeof(path)), -ENOENT);
}

static int wait_child(pid_t pid)
{
	int status = -1;

	while (waitpid(pid, &status, 0) < 0)
		assert_int_equal(errno, EINTR);
	return status;
}

static void test_exit_code(void **state)
{
	pid_t pid;

	(void)state;
	assert_int_equal(launch_exit_code(W_EXITCODE(0, 0)), 0);
	assert_int_equal(launch_exit_code(W_EXITCODE(3, 0)), 3);
	assert_int_equal(launch_exit_code(W_EXITCODE(0, SIGKILL)), 137);
	assert_int_equal(launch_exit_code(W_STOPCODE(SIGSTOP)), EXIT_NUNATAK_FAILED);

	/* real children */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(3);
	assert_int_equal(launch_exit_code(wait_child(pid)), 3);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(launch_exit_code(wait_child(pid)), 137);
}

static void test_gated_true(void **state)
{
	char path[PATH_MAX], self[PATH_MAX], child[PATH_MAX], link[64];
	char *argv[] = { "true", NULL };
	struct launch l = { 0 };
	ssize_t n;
	int status;

	(void)state;
	assert_int_equal(launch_resolve("true", path, sizeof(path)), 0);
	assert_int_equal(launch_prepare(&l, path, argv), 0);
	assert_true(l.pid > 0);
	/* held at the gate: alive, and still this program */
	usleep(50 * 1000);
	assert_int_equal(waitpid(l.pid, &status, WNOHANG), 0);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)l.pid);
	n = readlink(link, child, sizeof(child) - 1);
	assert_true(n > 0);
	child[n] = '\0';
	assert_string_equal(child, self);

	assert_int_equal(launch_release(&l), 0);
	assert_int_equal(l.gate_fd, -1);
	assert_int_equal(l.error_fd, -1);
	status = wait_child(l.pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(launch_exit_code(status), 0);
}

static void test_gated_argv_and_exit_code(void **state)
{
	char *argv[] = { "sh", "-c", "exit 7", NULL };
	struct launch l = { 0 };

	(void)state;
	assert_int_equal(launch_prepare(&l, "/bin/sh", argv), 0);
	assert_int_equal(launch_release(&l), 0);
	assert_int_equal(launch_exit_code(wait_child(l.pid)), 7);
}

static void test_gated_exec_failures(void **state)
{
	char *argv[] = { "missing", NULL };
	struct launch l = { 0 };

	(void)state;
	assert_int_equal(launch_prepare(&l, path_in(dir, "missing"), argv), 0);
	assert_int_equal(launch_release(&l), -ENOENT);
	assert_int_equal(launch_exit_code(wait_child(l.pid)), EXIT_NOT_FOUND);

	assert_int_equal(launch_prepare(&l, path_in(dir, "nt_noexec"), argv), 0);
	assert_int_equal(launch_release(&l), -EACCES);
	assert_int_equal(launch_exit_code(wait_child(l.pid)), EXIT_NOT_EXECUTABLE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_resolve_paths, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_resolve_through_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_resolve_empty_path_entries, setup, teardown),
	    cmocka_unit_test(test_exit_code),
	    cmocka_unit_test(test_gated_true),
	    cmocka_unit_test(test_gated_argv_and_exit_code),
	    cmocka_unit_test_setup_teardown(test_gated_exec_failures, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
