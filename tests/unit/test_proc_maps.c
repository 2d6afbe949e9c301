/* test_proc_maps — proc_maps_parse_line on real-format lines and on
 * malformed ones; proc_maps_for_each_exec on this very process, on a zombie
 * and on a reaped child.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "userspace/agent/proc_maps.h"

static void assert_sane_map(const struct proc_map *m)
{
	assert_true(m->start <= m->end);
	assert_int_equal(strlen(m->perms), 4);
	assert_true(m->perms[0] == 'r' || m->perms[0] == '-');
	assert_true(m->perms[1] == 'w' || m->perms[1] == '-');
	assert_true(m->perms[2] == 'x' || m->perms[2] == '-');
	assert_true(m->perms[3] == 'p' || m->perms[3] == 's');
	assert_true(strnlen(m->path, sizeof(m->path)) < sizeof(m->path));
	assert_null(strchr(m->path, '\n'));
}

static void test_parse_file_mapping(void **state)
{
	struct proc_map m;

	(void)state;
	assert_int_equal(proc_maps_parse_line("5597b24b6000-5597b24bb000 r-xp 00002000 fe:00 247134"
					      "                     /usr/bin/cat\n",
					      &m),
			 0);
	assert_sane_map(&m);
	assert_int_equal(m.start, 0x5597b24b6000ULL);
	assert_int_equal(m.end, 0x5597b24bb000ULL);
	assert_int_equal(m.pgoff, 0x2000);
	assert_int_equal(m.dev_major, 0xfe);
	assert_int_equal(m.dev_minor, 0);
	assert_int_equal(m.inode, 247134);
	assert_string_equal(m.perms, "r-xp");
	assert_string_equal(m.path, "/usr/bin/cat");
}

static void test_parse_anonymous(void **state)
{
	struct proc_map m;

	(void)state;
	/* the kernel pads anonymous lines with one trailing blank */
	assert_int_equal(
	    proc_maps_parse_line("7f0368c50000-7f0368c72000 rw-p 00000000 00:00 0 \n", &m), 0);
	assert_sane_map(&m);
	assert_string_equal(m.path, "");
	assert_int_equal(m.inode, 0);
	assert_int_equal(
	    proc_maps_parse_line("7f0368c50000-7f0368c72000 rw-p 00000000 00:00 0", &m), 0);
	assert_string_equal(m.path, "");
}

static void test_parse_pseudo_and_deleted(void **state)
{
	struct proc_map m;

	(void)state;
	assert_int_equal(proc_maps_parse_line("7ffd4b7f5000-7ffd4b7f7000 r-xp 00000000 00:00 0"
					      "                          [vdso]\n",
					      &m),
			 0);
	assert_string_equal(m.path, "[vdso]");
	assert_string_equal(m.perms, "r-xp");

	assert_int_equal(
	    proc_maps_parse_line("7f1c2a000000-7f1c2a021000 r-xp 00001000 08:01 1234567"
				 "                    /tmp/my app/libx.so (deleted)\n",
				 &m),
	    0);
	assert_string_equal(m.path, "/tmp/my app/libx.so (deleted)");
	assert_int_equal(m.dev_major, 8);
	assert_int_equal(m.dev_minor, 1);
	assert_int_equal(m.inode, 1234567);

	assert_int_equal(
	    proc_maps_parse_line("7f0368eb8000-7f0368ebf000 r--s 00000000 fe:00 332280"
				 " /usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache",
				 &m),
	    0);
	assert_string_equal(m.perms, "r--s");
}

static void test_parse_large_values(void **state)
{
	struct proc_map m;

	(void)state;
	assert_int_equal(
	    proc_maps_parse_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0"
				 "                  [vsyscall]\n",
				 &m),
	    0);
	assert_sane_map(&m);
	assert_int_equal(m.start, 0xffffffffff600000ULL);
	assert_int_equal(m.end, 0xffffffffff601000ULL);
	assert_string_equal(m.perms, "--xp");
	assert_string_equal(m.path, "[vsyscall]");

	/* big pgoff, 12-bit major, 20-bit minor, 64-bit inode */
	assert_int_equal(proc_maps_parse_line("100000000-100001000 r-xp 7fffffff000 fff:fffff "
					      "18446744073709551615 /x\n",
					      &m),
			 0);
	assert_int_equal(m.pgoff, 0x7fffffff000ULL);
	assert_int_equal(m.dev_major, 0xfff);
	assert_int_equal(m.dev_minor, 0xfffff);
	assert_int_equal(m.inode, UINT64_MAX);
}

static void test_parse_malformed(void **state)
{
	static const char *const bad[] = {
	    "",
	    "\n",
	    "garbage",
	    "5597b24b6000 r-xp 00002000 fe:00 247134 /usr/bin/cat",	  /* no end */
	    "5597b24b6000-5597b24bb000",				  /* stops early */
	    "5597b24b6000-5597b24bb000 r-xp",				  /* stops early */
	    "5597b24b6000-5597b24bb000 r-xp 00002000 fe:00",		  /* no inode */
	    "5597b24b6000-5597b24bb000 r-xp 00002000 fe00 247134 /a",	  /* no colon */
	    "5597b24b6000-5597b24bb000 rwxq 00002000 fe:00 247134 /a",	  /* bad perms */
	    "5597b24b6000-5597b24bb000 r-x 00002000 fe:00 247134 /a",	  /* short perms */
	    "5597b24bb000-5597b24b6000 r-xp 00002000 fe:00 247134 /a",	  /* end < start */
	    "g597b24b6000-5597b24bb000 r-xp 00002000 fe:00 247134 /a",	  /* not hex */
	    "-5597b24b6000-5597b24bb000 r-xp 00002000 fe:00 247134 /a",	  /* sign */
	    "10000000000000000-10000000000000001 r-xp 0 00:00 0 /a",	  /* > 64 bits */
	    "1000-2000 r-xp 0 00:00 12x /a",				  /* inode not decimal */
	    "1000-2000 r-xp 0 100000000:00 0 /a",			  /* major > 32 bits */
	    "1000-2000 r-xp 0 00:00 0 /a\n1000-2000 r-xp 0 00:00 0 /b\n", /* two lines */
	    " 1000-2000 r-xp 0 00:00 0 /a",				  /* leading blank */
	};
	struct proc_map m;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = proc_maps_parse_line(bad[i], &m);

		if (err != -EINVAL)
			fail_msg("line %zu '%s' gave %d, expected -EINVAL", i, bad[i], err);
	}
}

static void test_parse_path_too_long(void **state)
{
	const char *prefix = "1000-2000 r-xp 0 00:00 0 /";
	size_t plen = strlen(prefix);
	char *line = malloc(plen + PROC_MAP_PATH_MAX + 2);
	struct proc_map m;

	(void)state;
	assert_non_null(line);
	memcpy(line, prefix, plen);
	/* "/" + PROC_MAP_PATH_MAX - 2 chars: exactly fills path with its NUL */
	memset(line + plen, 'a', PROC_MAP_PATH_MAX - 2);
	line[plen + PROC_MAP_PATH_MAX - 2] = '\0';
	assert_int_equal(proc_maps_parse_line(line, &m), 0);
	assert_int_equal(strlen(m.path), PROC_MAP_PATH_MAX - 1);
	line[plen + PROC_MAP_PATH_MAX - 2] = 'a';
	line[plen + PROC_MAP_PATH_MAX - 1] = '\0';
	assert_int_equal(proc_maps_parse_line(line, &m), -EINVAL);
	free(line);
}

struct find_ctx {
	uint64_t addr;
	int nexec;
	int found;
	char path[PROC_MAP_PATH_MAX];
	uint64_t file_offset;
};

static int find_addr_cb(const struct proc_map *m, void *ctx)
{
	struct find_ctx *c = ctx;

	assert_sane_map(m);
	assert_int_equal(m->perms[2], 'x');
	c->nexec++;
	if (c->addr >= m->start && c->addr < m->end) {
		c->found++;
		strcpy(c->path, m->path);
		c->file_offset = c->addr - m->start + m->pgoff;
	}
	return 0;
}

__attribute__((noinline)) static int marker_function(int x)
{
	return x * 3 + 1;
}

static void test_for_each_exec_self(void **state)
{
	struct find_ctx c = {.addr = (uint64_t)(uintptr_t)&marker_function};
	char exe[PATH_MAX], *real;

	(void)state;
	assert_int_equal(marker_function(1), 4);
	assert_int_equal(proc_maps_for_each_exec(getpid(), find_addr_cb, &c), 0);
	assert_true(c.nexec >= 2); /* this program and libc at least */
	assert_int_equal(c.found, 1);
	real = realpath("/proc/self/exe", exe);
	assert_non_null(real);
	assert_string_equal(c.path, exe);
}

static int stop_cb(const struct proc_map *m, void *ctx)
{
	int *calls = ctx;

	(void)m;
	return ++*calls == 2 ? 42 : 0;
}

static void test_for_each_exec_stops(void **state)
{
	int calls = 0;

	(void)state;
	assert_int_equal(proc_maps_for_each_exec(getpid(), stop_cb, &calls), 42);
	assert_int_equal(calls, 2);
}

static void test_for_each_exec_gone(void **state)
{
	int calls = 0, status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	/* zombie: /proc/PID exists but the mm is gone */
	assert_int_equal(waitid(P_PID, (id_t)pid, NULL, WEXITED | WNOWAIT), 0);
	assert_int_equal(proc_maps_for_each_exec(pid, stop_cb, &calls), -ESRCH);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* reaped: /proc/PID is gone */
	assert_int_equal(proc_maps_for_each_exec(pid, stop_cb, &calls), -ENOENT);
	assert_int_equal(calls, 0);
	assert_int_equal(proc_maps_for_each_exec(-1, stop_cb, &calls), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_file_mapping),
	    cmocka_unit_test(test_parse_anonymous),
	    cmocka_unit_test(test_parse_pseudo_and_deleted),
	    cmocka_unit_test(test_parse_large_values),
	    cmocka_unit_test(test_parse_malformed),
	    cmocka_unit_test(test_parse_path_too_long),
	    cmocka_unit_test(test_for_each_exec_self),
	    cmocka_unit_test(test_for_each_exec_stops),
	    cmocka_unit_test(test_for_each_exec_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
