/* test_bpf_unwind — the in-kernel user Stack walk (bpf/unwind.bpf.h) on
 * the test's own stack, with the tables the Agent's code compiles and
 * loads (userspace/agent/unwinder.h over userspace/unwind/), checked
 * against an independent unwinder: glibc's backtrace() (libgcc's DWARF
 * walk) taken in the same function.
 *
 * bpf/selftest_unwind.bpf.c walks the user registers the test entered
 * bpf() with: syscall() in libc, bpf_prog_test_run_opts in libbpf, then
 * the functions below, cmocka, main, libc's start, _start. The frames
 * above walk_here must be exactly backtrace()'s, and the walk must end at
 * the outermost frame (UNWIND_END_COMPLETE). Without an entry for the
 * process, or without its tables, the walk must stop at once and say why.
 *
 * Without root or kernel BTF every test is SKIPPED with the reason.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <execinfo.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf/selftest_unwind.h"
#include "bpf/selftest_unwind.skel.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/unwinder.h"

#define BT_MAX 64

static struct selftest_unwind_bpf *skel;
static struct module_table *table;
static struct unwinder *unwinder;
static const char *why_not;

static int setup(void **state)
{
	struct sampler_unwind_maps maps;
	int err;

	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	skel = selftest_unwind_bpf__open();
	if (!skel)
		return -1;
	bpf_map__set_max_entries(skel->maps.unwind_rows, 1u << 20);
	bpf_map__set_max_entries(skel->maps.unwind_procs, 8);
	err = selftest_unwind_bpf__load(skel);
	if (err) {
		print_error("loading bpf/selftest_unwind.bpf.c failed: %s\n", strerror(-err));
		return -1;
	}
	maps = (struct sampler_unwind_maps){
		.rules_fd = bpf_map__fd(skel->maps.unwind_rules),
		.rows_fd = bpf_map__fd(skel->maps.unwind_rows),
		.tables_fd = bpf_map__fd(skel->maps.unwind_tables),
		.procs_fd = bpf_map__fd(skel->maps.unwind_procs),
		.max_rules = bpf_map__max_entries(skel->maps.unwind_rules),
		.max_rows = bpf_map__max_entries(skel->maps.unwind_rows),
		.max_tables = bpf_map__max_entries(skel->maps.unwind_tables),
	};
	table = module_table__new();
	unwinder = unwinder__new(&maps);
	return table && unwinder ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	unwinder__free(unwinder);
	module_table__free(table);
	selftest_unwind_bpf__destroy(skel);
	return 0;
}

/* this process' mappings and tables into the kernel */
static void load_self(void)
{
	assert_int_equal(module_table_load_proc(table, getpid(), 0), 0);
	assert_int_equal(unwinder_sync(unwinder, table), 0); /* asks the worker for tables */
	assert_int_equal(unwinder_wait_idle(unwinder, 30000), 0);
	assert_int_equal(unwinder_sync(unwinder, table), 0); /* the entry with its tables */
}

static void forget_self(void)
{
	module_table_exit(table, getpid());
	assert_int_equal(unwinder_sync(unwinder, table), 0);
	module_table_reap(table);
	module_table_reap(table);
}

static void walk(void)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	skel->bss->unwind_args.tgid = (__u32)getpid();
	skel->bss->unwind_args.ret = -99;
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.selftest_unwind),
						&opts),
			 0);
	assert_int_equal(skel->bss->unwind_args.ret, 0);
}

/* the walk of this very frame, and backtrace()'s, in bt[0..*n) */
static __attribute__((noinline)) void walk_here(void **bt, int *n)
{
	*n = backtrace(bt, BT_MAX);
	walk();
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
}

static void print_frames(const struct stack_value *st, void *const *bt, int n)
{
	int i;

	for (i = 0; i < st->n_user; i++)
		print_message("  bpf[%d] %#llx\n", i, (unsigned long long)st->ips[i]);
	for (i = 0; i < n; i++)
		print_message("  backtrace[%d] %p\n", i, bt[i]);
}

/* the first frame of bt[0..n) the walk holds too: *k in bt, *j in the walk */
static int first_common(const struct stack_value *st, void *const *bt, int n, int *k, int *j)
{
	for (*k = 0; *k < n; (*k)++)
		for (*j = 0; *j < st->n_user; (*j)++)
			if (st->ips[*j] == (__u64)(uintptr_t)bt[*k])
				return 0;
	return -ENOENT;
}

static __attribute__((noinline)) void test_walk_matches_backtrace(void **state)
{
	const struct stack_value *st;
	void *bt[BT_MAX];
	int n = 0, i, j = 0, k = 0;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	load_self();
	walk_here(bt, &n);
	st = &skel->bss->unwind_args.stack;
	assert_true(n >= 3);
	/* bt[0] is backtrace()'s return into walk_here (bt[1] when ASan's
	 * interceptor is in between); from the first frame both hold, the
	 * walk holds every frame backtrace() gave, to the outermost */
	if (first_common(st, bt, n, &k, &j) || k > 2 || st->user_end != UNWIND_END_COMPLETE)
		print_frames(st, bt, n);
	assert_int_equal(first_common(st, bt, n, &k, &j), 0);
	assert_true(k <= 2);
	assert_true(j >= 3); /* syscall(), libbpf, walk(), below walk_here() */
	for (i = k; i < n; i++) {
		if (j + i - k >= st->n_user || st->ips[j + i - k] != (__u64)(uintptr_t)bt[i])
			print_frames(st, bt, n);
		assert_true(j + i - k < st->n_user);
		assert_int_equal(st->ips[j + i - k], (__u64)(uintptr_t)bt[i]);
	}
	assert_int_equal(st->user_end, UNWIND_END_COMPLETE);
	assert_int_equal(st->n_user, j + n - k); /* nothing past _start */
	forget_self();
}

/* no entry for the process: the leaf alone, and why */
static void test_unknown_process_stops_at_leaf(void **state)
{
	const struct stack_value *st;
	void *bt[BT_MAX];
	int n;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	walk_here(bt, &n);
	st = &skel->bss->unwind_args.stack;
	assert_int_equal(st->n_user, 1);
	assert_int_equal(st->user_end, UNWIND_END_NO_PROCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_matches_backtrace),
		cmocka_unit_test(test_unknown_process_stops_at_leaf),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
