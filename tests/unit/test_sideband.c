/* test_sideband — the kernel's MMAP2, FORK and COMM records applied to a
 * real module table, for a process this test forks and follows.
 *
 * The group setup builds a small shared library (cc -shared, with a
 * build-id) in a mkdtemp directory. The followed child dlopen()s it and
 * reports where the dynamic linker put it (dlinfo's l_addr, the load
 * bias) and the address of one of its functions; then it forks, and
 * execs sleep. Expected values come from the dynamic linker, readelf and
 * nm, never from the code under test: the module table must name the
 * library by its build-id, give the function's ELF address, the same load
 * bias, follow the grandchild, and see the exec (new image, comm, exe).
 *
 * Without root or kernel BTF every test is SKIPPED with the reason.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/sideband.h"

static char dir[PATH_MAX], lib[PATH_MAX], build_id[128];
static const char *why_not;

static const char lib_src[] = "int sideband_probe(int x) { return x * 3 + 1; }\n";

/* the library's build-id as readelf prints it */
static int read_build_id(void)
{
	char cmd[PATH_MAX + 64], line[512];
	FILE *p;
	int found = -ENOENT;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", lib);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " Build ID: %127s", build_id) == 1)
			found = 0;
	pclose(p);
	return found;
}

static int setup(void **state)
{
	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	if (!have_command("cc") || !have_command("readelf") || !have_command("nm")) {
		why_not = "cc, readelf or nm is missing";
		return 0;
	}
	if (make_tmpdir(dir, sizeof(dir), "sideband") ||
	    write_file(path_in(dir, "probe.c"), lib_src))
		return -1;
	snprintf(lib, sizeof(lib), "%s/libsideband_probe.so", dir);
	if (run_cmd("cc -shared -fPIC -O1 -Wl,--build-id=sha1 -o '%s' '%s'", lib,
		    path_in(dir, "probe.c")) ||
	    read_build_id())
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(dir);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct report {
	uint64_t bias, fn;
	pid_t grandchild;
};

/* the followed child: dlopen, report, fork, wait for "go", exec sleep */
static void child_main(int gate, int out)
{
	struct report r = {0};
	struct link_map *lm;
	void *h;
	char c;

	if (read(gate, &c, 1) != 1)
		_exit(2);
	h = dlopen(lib, RTLD_NOW);
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm))
		_exit(3);
	r.bias = lm->l_addr;
	r.fn = (uint64_t)(uintptr_t)dlsym(h, "sideband_probe");
	r.grandchild = fork();
	if (r.grandchild == 0) {
		usleep(500000);
		_exit(0);
	}
	if (write(out, &r, sizeof(r)) != sizeof(r) || read(gate, &c, 1) != 1)
		_exit(4);
	execl("/bin/sleep", "sleep", "2", (char *)NULL);
	_exit(5);
}

/* polls sb until cond(table, arg) holds, 2 s at most */
static int poll_until(struct sideband *sb, struct module_table *t,
		      int (*cond)(struct module_table *t, pid_t pid), pid_t pid)
{
	uint64_t end = now_ns() + 2000000000ull;

	do {
		assert_int_equal(sideband_poll(sb), 0);
		if (cond(t, pid))
			return 1;
		usleep(2000);
	} while (now_ns() < end);
	return 0;
}

static int maps_library(struct module_table *t, pid_t pid)
{
	struct module *m = module_table_open_file(t, lib);
	uint64_t bias;

	return m && !module_table_bias(t, pid, m, &bias);
}

static int followed(struct module_table *t, pid_t pid)
{
	return module_table_has_process(t, pid);
}

static int exec_seen(struct module_table *t, pid_t pid)
{
	const char *exe = module_table_exe(t, pid);

	return module_table_exec_seq(t, pid) == 1 && exe && strstr(exe, "sleep");
}

static void test_mapping_fork_and_exec(void **state)
{
	struct module_table *table;
	struct sideband *sb;
	struct nm_symbol sym;
	struct report r;
	struct module *m;
	uint64_t offset, bias;
	int gate[2], out[2];
	char real[PATH_MAX];
	pid_t pid;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(nm_lookup_with("-D", lib, "sideband_probe", &sym), 0);
	assert_non_null(realpath(lib, real));
	table = module_table__new();
	assert_non_null(table);
	sb = sideband__new(table);
	assert_non_null(sb);
	assert_int_equal(pipe(gate), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	if (pid == 0)
		child_main(gate[0], out[1]);
	assert_int_equal(module_table_load_proc(table, pid, 0), 0);
	assert_int_equal(write(gate[1], "g", 1), 1);
	assert_int_equal(read(out[0], &r, sizeof(r)), sizeof(r));

	/* the dlopen: the library by its build-id, at the dynamic linker's bias */
	assert_true(poll_until(sb, table, maps_library, pid));
	module_table_resolve(table, pid, 0, r.fn, &m, &offset);
	assert_string_equal(m->path, real);
	assert_true(m->has_build_id);
	assert_string_equal(m->identity, build_id);
	assert_int_equal(offset, sym.addr);
	assert_int_equal(module_table_bias(table, pid, m, &bias), 0);
	assert_int_equal(bias, r.bias);
	/* the fork: the grandchild is followed, with its parent's mappings */
	assert_true(poll_until(sb, table, followed, r.grandchild));
	module_table_resolve(table, r.grandchild, 0, r.fn, &m, &offset);
	assert_string_equal(m->identity, build_id);
	assert_int_equal(offset, sym.addr);
	/* the exec: a new image named after its file; the old one still
	 * resolves the samples taken before it */
	assert_int_equal(write(gate[1], "g", 1), 1);
	assert_true(poll_until(sb, table, exec_seen, pid));
	assert_string_equal(module_table_comm(table, pid), "sleep");
	module_table_resolve(table, pid, 0, r.fn, &m, &offset);
	assert_string_equal(m->identity, build_id);
	assert_int_equal(sideband_lost(sb), 0);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	waitpid(r.grandchild, NULL, 0); /* not ours: returns at once */
	close(gate[0]);
	close(gate[1]);
	close(out[0]);
	close(out[1]);
	sideband__free(sb);
	module_table__free(table);
}

/* a process nobody follows: its records change nothing */
static void test_unfollowed_process_ignored(void **state)
{
	struct module_table *table;
	struct sideband *sb;
	int gate[2], out[2];
	struct report r;
	pid_t pid;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	table = module_table__new();
	assert_non_null(table);
	sb = sideband__new(table);
	assert_non_null(sb);
	assert_int_equal(pipe(gate), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	if (pid == 0)
		child_main(gate[0], out[1]);
	assert_int_equal(write(gate[1], "g", 1), 1);
	assert_int_equal(read(out[0], &r, sizeof(r)), sizeof(r));
	assert_int_equal(write(gate[1], "g", 1), 1);
	usleep(100000);
	assert_int_equal(sideband_poll(sb), 0);
	assert_false(module_table_has_process(table, pid));
	assert_false(module_table_has_process(table, r.grandchild));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(gate[0]);
	close(gate[1]);
	close(out[0]);
	close(out[1]);
	sideband__free(sb);
	module_table__free(table);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mapping_fork_and_exec),
	    cmocka_unit_test(test_unfollowed_process_ignored),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
