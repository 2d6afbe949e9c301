/* Tests of analysis/processes and the summary parts built on it and on the
 * diagnosis' unresolved modules, on pivots built here (stacks_fixture.h):
 * samples and CPU time per process (launchers left out, CPU time
 * unavailable without an exit, never 0), threads and which are busy, the
 * kernel's share from kernel leaf frames or, in a Run without kernel
 * frames, from the in-kernel flag; the text (kernel line, process table
 * only with several executables, busy threads line, unresolved modules with
 * their remedies) and the JSON (every Hotspot with above_floor, processes,
 * threads, kernel_share, unresolved_modules). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/diagnose.h"
#include "analysis/processes.h"
#include "report/summary.h"
#include "tests/unit/run_model_fixture.h"
#include "tests/unit/stacks_fixture.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/summary_fixture.h"

#define EPS 1e-12

static char tmpdir[PATH_MAX];

enum { M_SOLVER, M_LIBM, M_KERNEL, M_CC1 };

static const struct sfx_module modules[] = {
    [M_SOLVER] = {"s1", "/opt/app/solver", "solver", 1},
    [M_LIBM] = {"m1", "/usr/lib/x86_64-linux-gnu/libm.so.6", "libm.so.6", 1},
    [M_KERNEL] = {"pseudo:kernel", "[kernel]", "[kernel]", 1},
    [M_CC1] = {"c1", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "cc1", 1},
};

static const struct sfx_name names[] = {
    {M_SOLVER, 0x1000, "compute", RESOLUTION_FUNCTION},
    {M_SOLVER, 0x1800, "main", RESOLUTION_FUNCTION},
    {M_SOLVER, 0x4000, "solver+0x4000", RESOLUTION_UNRESOLVED},
    {M_LIBM, 0x2000, "libm.so.6+0x2000", RESOLUTION_UNRESOLVED},
    {M_KERNEL, 0x500, "clear_page_erms", RESOLUTION_SYMBOL},
    {M_CC1, 0x3000, "cc1+0x3000", RESOLUTION_UNRESOLVED},
};

/* solver (pid 100: threads 100, 101, 102), cc1 (200), mpirun (300) */
static const struct sfx_locus loci[] = {
    {100, 100, "solver", "/opt/app/solver"},
    {100, 101, "solver", "/opt/app/solver"},
    {100, 102, "solver", "/opt/app/solver"},
    {200, 200, "cc1", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"},
    {300, 300, "mpirun", "/usr/bin/mpirun"},
};

static const struct sfx_stack stacks[] = {
    {0, 2, {{M_SOLVER, 0x1000}, {M_SOLVER, 0x1800}}},
    /* a page fault in compute: the kernel's frame on top */
    {0, 3, {{M_KERNEL, 0x500}, {M_SOLVER, 0x1000}, {M_SOLVER, 0x1800}}},
    {0, 1, {{M_LIBM, 0x2000}}},
    {0, 1, {{M_CC1, 0x3000}}},
    {0, 2, {{M_SOLVER, 0x4000}, {M_SOLVER, 0x1800}}},
    /* the same fault, in a Run without kernel frames */
    {0, 2, {{M_SOLVER, 0x1000}, {M_SOLVER, 0x1800}}},
};

/* application samples: 100 + 20 + 5 + 80 + 10 + 5 (solver) + 40 (cc1) = 260 */
static const struct sfx_sample samples[] = {
    {0, 0, 100, 0}, {0, 1, 20, 1}, {2, 0, 5, 0},  {1, 0, 80, 0},
    {1, 2, 10, 0},  {0, 4, 5, 0},  {3, 3, 40, 0}, {4, 0, 7, 0}, /* mpirun: left out */
};

static const struct sfx_exit exits[] = {{0, 2000000000, 500000000}};

static struct pivot *build(const char *file)
{
	struct sfx f = {modules, 4, loci, 5, stacks, 5, samples, 8, exits, 1, names, 6};

	return sfx_build(tmpdir, file, &f);
}

static void test_processes_arithmetic(void **state)
{
	struct pivot *p = build("procs.sqlite");
	struct processes *ps = processes__new(p, "cpu-clock");
	const struct process_total *solver, *cc1;

	(void)state;
	assert_non_null(ps);
	assert_int_equal(ps->n, 2); /* mpirun is a launcher */
	assert_int_equal(ps->n_executables, 2);
	assert_int_equal(ps->total_samples, 260);
	solver = &ps->procs[0];
	cc1 = &ps->procs[1];
	assert_int_equal(solver->pid, 100);
	assert_int_equal(solver->samples, 220);
	assert_near(solver->share, 220.0 / 260, EPS);
	assert_string_equal(solver->exe, "/opt/app/solver");
	/* the exit snapshot on the main thread's Locus: the whole process */
	assert_near(solver->cpu_time, 2.5, EPS);
	assert_string_equal(solver->cpu_time_quality, "measured");
	assert_null(solver->cpu_time_reason);
	assert_int_equal(solver->n_threads, 3);
	assert_int_equal(solver->threads[0].tid, 100);
	assert_int_equal(solver->threads[0].samples, 125);
	assert_near(solver->threads[0].process_share, 125.0 / 220, EPS);
	assert_near(solver->threads[0].share, 125.0 / 260, EPS);
	assert_int_equal(solver->threads[1].tid, 101);
	assert_int_equal(solver->threads[1].samples, 90);
	assert_true(solver->threads[0].busy && solver->threads[1].busy);
	assert_false(solver->threads[2].busy); /* 5 samples: under the floor */
	assert_int_equal(solver->n_busy, 2);
	/* no exit recorded: unavailable, never 0 */
	assert_int_equal(cc1->pid, 200);
	assert_int_equal(cc1->samples, 40);
	assert_true(isnan(cc1->cpu_time));
	assert_string_equal(cc1->cpu_time_quality, "unavailable");
	assert_non_null(cc1->cpu_time_reason);
	assert_int_equal(cc1->n_busy, 1);
	/* the kernel: 20 samples whose leaf is in [kernel] */
	assert_false(ps->kernel_from_flag);
	assert_int_equal(ps->stack_samples, 260);
	assert_int_equal(ps->kernel_samples, 20);
	assert_near(ps->kernel_share, 20.0 / 260, EPS);
	processes__free(ps);
	pivot__free(p);
	assert_null(processes__new(NULL, "cpu-clock"));
	assert_int_equal(errno, EINVAL);
}

/* the unresolved share by module, cc1 first */
static void test_unresolved_modules(void **state)
{
	struct pivot *p = build("unres.sqlite");
	struct diagnosis *d = diagnosis__new(p);

	(void)state;
	assert_non_null(d);
	assert_int_equal(d->total_samples, 260);
	assert_near(d->unresolved_share, 55.0 / 260, EPS);
	assert_int_equal(d->n_unresolved_modules, 3);
	assert_string_equal(d->unresolved_modules[0].module, "cc1");
	assert_near(d->unresolved_modules[0].share, 40.0 / 260, EPS);
	assert_int_equal(d->unresolved_modules[0].samples, 40);
	assert_string_equal(d->unresolved_modules[1].path, "/usr/lib/x86_64-linux-gnu/libm.so.6");
	assert_string_equal(d->unresolved_modules[2].identity, "s1");
	/* every Hotspot kept: 2 above the floor first */
	assert_int_equal(d->n_hotspots, 2);
	assert_int_equal(d->n_all, 5);
	assert_string_equal(d->hotspots[0].name, "compute");
	assert_int_equal(d->hotspots[0].samples, 185);
	assert_true(d->hotspots[1].above_floor);
	assert_string_equal(d->hotspots[2].name, "clear_page_erms");
	assert_false(d->hotspots[2].above_floor);
	diagnosis__free(d);
	pivot__free(p);
}

static void test_summary_text_parts(void **state)
{
	struct pivot *p = build("text.sqlite");
	struct diagnosis *d = diagnosis__new(p);
	char *text;

	(void)state;
	text = print_to_string(d, p);
	assert_contains(text, "\nkernel: 7.7% of the samples (in system calls and page faults)\n");
	assert_contains(text, "\nprocesses: 2 (2 executables)\n"
			      "       pid   samples   share        CPU s  executable\n"
			      "       100       220   84.6%        2.500  /opt/app/solver\n"
			      "       200        40   15.4%  unavailable  "
			      "/usr/lib/gcc/x86_64-linux-gnu/12/cc1\n");
	assert_contains(text,
			"  pid 100 (solver): 2 busy of 3 sampled threads: tid 100 56.8%, tid 101"
			" 40.9%\n");
	assert_null(strstr(text, "pid 200 (cc1): "));
	assert_contains(text,
			"  - unresolved: 21.2% of the time is in code no symbol names\n"
			"     15.4% in cc1 (/usr/lib/gcc/x86_64-linux-gnu/12/cc1): install the"
			" -dbgsym package of the package holding it (dpkg -S"
			" /usr/lib/gcc/x86_64-linux-gnu/12/cc1)\n"
			"      3.8% in libm.so.6 (/usr/lib/x86_64-linux-gnu/libm.so.6): install"
			" the -dbgsym package");
	assert_contains(text, "      1.9% in solver (/opt/app/solver): build it with -g and do not"
			      " strip it");
	assert_null(strstr(text, "/usr/bin/mpirun")); /* a launcher: no process row */
	free(text);
	diagnosis__free(d);
	pivot__free(p);
}

#define JGET(o, k) json_object_get((o), (k))

static void test_summary_json_parts(void **state)
{
	struct pivot *p = build("json.sqlite");
	struct diagnosis *d = diagnosis__new(p);
	json_t *j, *x;

	(void)state;
	j = summary_json_of(d, p);
	assert_non_null(j);
	assert_int_equal(json_array_size(JGET(j, "hotspots")), 5);
	x = json_array_get(JGET(j, "hotspots"), 4);
	assert_string_equal(json_string_value(JGET(x, "name")), "solver+0x4000");
	assert_true(json_is_false(JGET(x, "above_floor")));
	assert_near(json_real_value(JGET(j, "kernel_share")), 20.0 / 260, EPS);
	assert_string_equal(json_string_value(JGET(j, "kernel_share_source")), "kernel frames");
	assert_int_equal(json_array_size(JGET(j, "processes")), 2);
	x = json_array_get(JGET(j, "processes"), 0);
	assert_int_equal(json_integer_value(JGET(x, "pid")), 100);
	assert_int_equal(json_integer_value(JGET(x, "samples")), 220);
	assert_near(json_real_value(JGET(x, "cpu_time")), 2.5, EPS);
	assert_string_equal(json_string_value(JGET(x, "cpu_time_quality")), "measured");
	assert_int_equal(json_integer_value(JGET(x, "busy_threads")), 2);
	x = json_array_get(JGET(j, "processes"), 1);
	assert_true(json_is_null(JGET(x, "cpu_time")));
	assert_string_equal(json_string_value(JGET(x, "cpu_time_quality")), "unavailable");
	assert_string_equal(json_string_value(JGET(x, "executable")),
			    "/usr/lib/gcc/x86_64-linux-gnu/12/cc1");
	assert_int_equal(json_array_size(JGET(j, "threads")), 4);
	x = json_array_get(JGET(j, "threads"), 1);
	assert_int_equal(json_integer_value(JGET(x, "tid")), 101);
	assert_int_equal(json_integer_value(JGET(x, "pid")), 100);
	assert_int_equal(json_integer_value(JGET(x, "samples")), 90);
	assert_near(json_real_value(JGET(x, "share")), 90.0 / 260, EPS);
	assert_true(json_is_true(JGET(x, "busy")));
	x = json_array_get(JGET(j, "unresolved_modules"), 0);
	assert_string_equal(json_string_value(JGET(x, "module")), "cc1");
	assert_near(json_real_value(JGET(x, "share")), 40.0 / 260, EPS);
	assert_non_null(strstr(json_string_value(JGET(x, "remedy")), "-dbgsym"));
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

/* no kernel frame but samples flagged in the kernel (a Run of an older
 * nunatak): the flag says the share, and the text says where it went; one
 * executable: no process table */
static void test_kernel_from_flag(void **state)
{
	static const struct sfx_sample flagged[] = {{0, 0, 100, 0}, {0, 5, 25, 1}};
	struct sfx f = {modules, 4, loci, 5, stacks, 6, flagged, 2, exits, 1, names, 6};
	struct pivot *p = sfx_build(tmpdir, "flag.sqlite", &f);
	struct diagnosis *d = diagnosis__new(p);
	struct processes *ps = processes__new(p, d->counter);
	char *text;

	(void)state;
	assert_non_null(ps);
	assert_true(ps->kernel_from_flag);
	assert_near(ps->kernel_share, 25.0 / 125, EPS);
	assert_int_equal(ps->n_executables, 1);
	text = print_to_string(d, p);
	assert_contains(text, "\nkernel: 20.0% of the samples were taken in the kernel; this Run"
			      " has no kernel frames");
	assert_null(strstr(text, "processes:"));
	assert_null(strstr(text, "busy of"));
	free(text);
	processes__free(ps);
	diagnosis__free(d);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "summary-procs") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_processes_arithmetic), cmocka_unit_test(test_unresolved_modules),
	    cmocka_unit_test(test_summary_text_parts),	 cmocka_unit_test(test_summary_json_parts),
	    cmocka_unit_test(test_kernel_from_flag),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
