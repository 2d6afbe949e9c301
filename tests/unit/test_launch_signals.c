/* test_launch_signals — the application starts as a shell would start it,
 * whatever nunatak blocks (the signals it reads from a signalfd) or
 * ignores (SIGPIPE): every signal at its default disposition and none
 * blocked, as /proc/PID/status of the launched program shows. */
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/run_signals.h"

/* the SigBlk and SigIgn masks of a program launched by launch.h */
static void launched_masks(unsigned long long *blocked, unsigned long long *ignored)
{
	char dir[PATH_MAX], out[PATH_MAX + 16], cmd[PATH_MAX + 128], line[256];
	struct launch l = {.pid = -1, .gate_fd = -1, .error_fd = -1};
	int status = 0;
	FILE *f;

	assert_int_equal(make_tmpdir(dir, sizeof(dir), "launch-signals"), 0);
	snprintf(out, sizeof(out), "%s/status", dir);
	snprintf(cmd, sizeof(cmd), "exec cat /proc/self/status > '%s'", out);
	{
		char *argv[] = {"sh", "-c", cmd, NULL};

		assert_int_equal(launch_prepare(&l, "/bin/sh", argv), 0);
	}
	assert_int_equal(launch_release(&l), 0);
	assert_int_equal(waitpid(l.pid, &status, 0), l.pid);
	assert_int_equal(launch_exit_code(status), 0);
	f = fopen(out, "r");
	assert_non_null(f);
	*blocked = *ignored = ~0ULL;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "SigBlk:", 7))
			*blocked = strtoull(line + 7, NULL, 16);
		if (!strncmp(line, "SigIgn:", 7))
			*ignored = strtoull(line + 7, NULL, 16);
	}
	fclose(f);
	remove_tree(dir);
}

#define GLIBC_SIGNALS ((1ULL << (32 - 1)) | (1ULL << (33 - 1)))

static void test_defaults_restored(void **state)
{
	unsigned long long blocked, ignored;
	int fd;

	(void)state;
	/* what `nunatak run` does before anything else */
	fd = run_signals_open();
	assert_true(fd >= 0);
	signal(SIGUSR1, SIG_IGN); /* and an ignored signal of another origin */
	launched_masks(&blocked, &ignored);
	/* signals 32 and 33 are glibc's own (thread cancellation, setxid): no
	 * program can block, unblock or catch them through glibc, which
	 * installs its handlers itself; GNU make runs its recipes with them
	 * ignored (SigIgn 0x180000000 under `make test`), so the launched
	 * program inherits that whatever nunatak does. Every other signal is
	 * checked. */
	blocked &= ~GLIBC_SIGNALS;
	ignored &= ~GLIBC_SIGNALS;
	assert_int_equal(blocked, 0);
	assert_int_equal(ignored, 0);
	close(fd);
}

/* the forwarding rule: kill(2) senders are forwarded, the terminal's not */
static void test_forward_rule(void **state)
{
	struct run_signal from_kill = {.signo = SIGUSR1, .code = SI_USER},
			  from_tty = {.signo = SIGUSR1, .code = SI_KERNEL};
	int fd, got = 0;
	struct run_signal s;
	pid_t self = getpid();

	(void)state;
	fd = run_signals_open();
	assert_true(fd >= 0);
	assert_int_equal(run_signal_forward(&from_tty, self), 0);
	assert_int_equal(run_signals_read(fd, &s), 0); /* nothing was sent */
	assert_int_equal(run_signal_forward(&from_kill, self), 1);
	got = run_signals_read(fd, &s);
	assert_int_equal(got, 1);
	assert_int_equal(s.signo, SIGUSR1);
	assert_int_equal(s.code, SI_USER);
	assert_int_equal(s.sender, self);
	assert_true(run_signal_stops(SIGINT) && run_signal_stops(SIGTERM) &&
		    run_signal_stops(SIGHUP) && run_signal_stops(SIGQUIT));
	assert_false(run_signal_stops(SIGUSR1) || run_signal_stops(SIGWINCH));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forward_rule),
	    cmocka_unit_test(test_defaults_restored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
