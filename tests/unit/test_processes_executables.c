/* Tests of the totals per executable (analysis/processes.h) and of their
 * text and JSON (report/summary_processes.h), on a pivot built here
 * (stacks_fixture.h): processes of the same path grouped, two paths with
 * the same file name kept apart and shown by path, a process of unknown
 * path grouped by its command name and one with neither under "unknown",
 * launchers left out, the groups' samples adding up to the Run's, CPU time
 * unavailable as soon as one process' is, control characters of a path
 * never reaching the terminal, the table bounded with an "others" line and
 * printed before the per-process one, and nothing printed for a Run whose
 * sampled processes ran one executable. */
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
#include "report/summary_processes.h"
#include "tests/unit/run_model_fixture.h"
#include "tests/unit/stacks_fixture.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/summary_fixture.h"

#define EPS 1e-12
#define CC1 "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"
#define CC1_OTHER "/opt/gcc-13/libexec/gcc/cc1"
#define RED "/opt/\033[31mred"

static char tmpdir[PATH_MAX];

static const struct sfx_module modules[] = {{"a1", "/opt/app/app", "app", 1}};
static const struct sfx_name names[] = {{0, 0x1000, "work", RESOLUTION_FUNCTION}};
static const struct sfx_stack stacks[] = {{0, 1, {{0, 0x1000}}}};

enum {
	L_CC1_A,
	L_CC1_B,
	L_CC1_IDLE,
	L_CC1_OTHER,
	L_AS,
	L_HELPER,
	L_NONE,
	L_MPIRUN,
	L_RED,
	L_T1,
	L_T2,
	L_T3,
	L_T4,
	N_LOCI
};

static const struct sfx_locus loci[] = {
    [L_CC1_A] = {10, 10, "cc1", CC1},
    [L_CC1_B] = {11, 11, "cc1", CC1},
    [L_CC1_IDLE] = {12, 12, "cc1", CC1}, /* never sampled: counted all the same */
    [L_CC1_OTHER] = {20, 20, "cc1", CC1_OTHER},
    [L_AS] = {30, 30, "as", "/usr/bin/as"},
    [L_HELPER] = {40, 40, "helper", NULL}, /* path unknown */
    [L_NONE] = {50, 50, NULL, NULL},	   /* nothing known */
    [L_MPIRUN] = {60, 60, "mpirun", "/usr/bin/mpirun"},
    [L_RED] = {70, 70, "red", RED},
    [L_T1] = {81, 81, "t1", "/usr/bin/t1"},
    [L_T2] = {82, 82, "t2", "/usr/bin/t2"},
    [L_T3] = {83, 83, "t3", "/usr/bin/t3"},
    [L_T4] = {84, 84, "t4", "/usr/bin/t4"},
};

/* 200 samples of the application, 7 of mpirun (a launcher: left out) */
static const struct sfx_sample samples[] = {
    {L_CC1_A, 0, 100, 0}, {L_CC1_B, 0, 50, 0}, {L_CC1_OTHER, 0, 30, 0}, {L_AS, 0, 6, 0},
    {L_HELPER, 0, 4, 0},  {L_NONE, 0, 1, 0},   {L_MPIRUN, 0, 7, 0},	{L_RED, 0, 3, 0},
    {L_T1, 0, 2, 0},	  {L_T2, 0, 2, 0},     {L_T3, 0, 1, 0},		{L_T4, 0, 1, 0},
};

static const struct sfx_exit exits[] = {
    {L_CC1_A, 1000000000, 500000000},
    {L_CC1_B, 500000000, 100000000},
    {L_CC1_IDLE, 10000000, 0},
    {L_AS, 2000000, 1000000},
};

static struct pivot *build(const char *file, size_t n_samples)
{
	struct sfx f = {modules, 1,	    loci,  N_LOCI, stacks, 1,
			samples, n_samples, exits, 4,	   names,  1};

	return sfx_build(tmpdir, file, &f);
}

/* the invariants of any grouping: every process in exactly one executable,
 * samples adding up, shares adding up to 1, sorted by samples */
static void assert_sane_executables(const struct processes *ps)
{
	uint64_t samples = 0;
	size_t i, procs = 0, sampled = 0;
	double share = 0;

	for (i = 0; i < ps->n_exes; i++) {
		const struct executable_total *e = &ps->exes[i];

		samples += e->samples;
		procs += e->n_processes;
		sampled += e->samples > 0;
		share += e->share;
		assert_true(e->n_processes > 0);
		assert_true(!e->path || !e->comm); /* comm only when the path is unknown */
		if (i)
			assert_true(ps->exes[i - 1].samples >= e->samples);
	}
	assert_int_equal(samples, ps->total_samples);
	assert_int_equal(procs, ps->n);
	assert_int_equal(sampled, ps->n_executables);
	if (ps->total_samples)
		assert_near(share, 1.0, 1e-9);
}

static void test_grouping(void **state)
{
	struct pivot *p = build("group.sqlite", 12);
	struct processes *ps = processes__new(p, "cpu-clock");
	const struct executable_total *e;

	(void)state;
	assert_non_null(ps);
	assert_int_equal(ps->n, 12); /* mpirun left out */
	assert_int_equal(ps->total_samples, 200);
	assert_int_equal(ps->n_exes, 10);
	assert_sane_executables(ps);
	/* same path: one executable of 3 processes, the idle one too */
	e = &ps->exes[0];
	assert_string_equal(e->path, CC1);
	assert_null(e->comm);
	assert_string_equal(e->name, "cc1");
	assert_true(e->name_shared); /* CC1_OTHER is a cc1 too */
	assert_int_equal(e->n_processes, 3);
	assert_int_equal(e->samples, 150);
	assert_near(e->share, 0.75, EPS);
	assert_near(e->seconds, 0.150, 1e-9); /* 1 sample = 1 ms */
	assert_near(e->cpu_time, 1.5 + 0.6 + 0.01, 1e-9);
	assert_string_equal(e->cpu_time_quality, "measured");
	assert_null(e->cpu_time_reason);
	/* another path, the same file name: another executable */
	e = &ps->exes[1];
	assert_string_equal(e->path, CC1_OTHER);
	assert_true(e->name_shared);
	assert_int_equal(e->samples, 30);
	assert_true(isnan(e->cpu_time)); /* no exit: unavailable, never 0 */
	assert_string_equal(e->cpu_time_quality, "unavailable");
	assert_non_null(strstr(e->cpu_time_reason, "1 of its 1 processes: no exit was recorded"));
	e = &ps->exes[2];
	assert_string_equal(e->name, "as");
	assert_false(e->name_shared);
	assert_near(e->cpu_time, 0.003, 1e-9);
	/* path unknown: by command name */
	e = &ps->exes[3];
	assert_null(e->path);
	assert_string_equal(e->comm, "helper");
	assert_string_equal(e->name, "helper");
	assert_int_equal(e->samples, 4);
	/* neither known: last of the ties of 1 sample, still counted */
	e = &ps->exes[9];
	assert_null(e->path);
	assert_null(e->comm);
	assert_null(e->name);
	assert_int_equal(e->samples, 1);
	assert_string_equal(ps->exes[7].name, "t3");
	assert_string_equal(ps->exes[8].name, "t4");
	processes__free(ps);
	pivot__free(p);
}

/* cc1 with a process whose CPU time is unavailable: the executable's is */
static void test_cpu_time_worst(void **state)
{
	static const struct sfx_locus two[] = {{10, 10, "cc1", CC1}, {11, 11, "cc1", CC1}};
	static const struct sfx_sample s2[] = {{0, 0, 40, 0}, {1, 0, 40, 0}};
	static const struct sfx_exit one_exit[] = {{0, 1000000000, 0}};
	struct sfx f = {modules, 1, two, 2, stacks, 1, s2, 2, one_exit, 1, names, 1};
	struct pivot *p = sfx_build(tmpdir, "worst.sqlite", &f);
	struct processes *ps = processes__new(p, "cpu-clock");

	(void)state;
	assert_non_null(ps);
	assert_sane_executables(ps);
	assert_int_equal(ps->n_exes, 1);
	assert_int_equal(ps->exes[0].n_processes, 2);
	assert_false(ps->exes[0].name_shared);
	assert_true(isnan(ps->exes[0].cpu_time));
	assert_string_equal(ps->exes[0].cpu_time_reason,
			    "1 of its 2 processes: no exit was recorded for it (still running at "
			    "the end, or its exit report was lost)");
	processes__free(ps);
	pivot__free(p);
}

static void test_text(void **state)
{
	struct pivot *p = build("text.sqlite", 12);
	struct diagnosis *d = diagnosis__new(p);
	char *text, *exes, *procs;

	(void)state;
	text = print_to_string(d, p);
	assert_contains(
	    text, "\nexecutables: 10 (of 12 processes), by share of the samples\n"
		  "   share   samples      seconds  processes        CPU s  executable\n"
		  "   75.0%       150        0.150          3        2.110  " CC1 "\n"
		  "   15.0%        30        0.030          1  unavailable  " CC1_OTHER "\n"
		  "    3.0%         6        0.006          1        0.003  as\n"
		  "    2.0%         4        0.004          1  unavailable  helper (path unknown)\n"
		  "    1.5%         3        0.003          1  unavailable  ?[31mred\n"
		  "    1.0%         2        0.002          1  unavailable  t1\n"
		  "    1.0%         2        0.002          1  unavailable  t2\n"
		  "    0.5%         1        0.001          1  unavailable  t3\n"
		  "    1.0%         2        0.002          2  unavailable  others: 2 executables\n"
		  "\nprocesses: 12 (10 executables)\n");
	/* the control character of a path never reaches the terminal */
	assert_null(strchr(text, '\033'));
	assert_contains(text, "  /opt/?[31mred\n");
	exes = strstr(text, "\nexecutables:");
	procs = strstr(text, "\nprocesses:");
	assert_true(exes && procs && exes < procs);
	free(text);
	diagnosis__free(d);
	pivot__free(p);
}

#define JGET(o, k) json_object_get((o), (k))

static void test_json(void **state)
{
	struct pivot *p = build("json.sqlite", 12);
	struct diagnosis *d = diagnosis__new(p);
	json_t *j, *x, *exes, *procs;
	json_int_t samples = 0, n = 0;
	size_t i;

	(void)state;
	j = summary_json_of(d, p);
	assert_non_null(j);
	exes = JGET(j, "executables");
	procs = JGET(j, "processes");
	assert_int_equal(json_array_size(exes), 10);
	json_array_foreach(exes, i, x)
	{
		samples += json_integer_value(JGET(x, "samples"));
		n += json_integer_value(JGET(x, "processes"));
	}
	assert_int_equal(samples, 200);
	assert_int_equal(n, json_array_size(procs));
	x = json_array_get(exes, 0);
	assert_string_equal(json_string_value(JGET(x, "executable")), CC1);
	assert_string_equal(json_string_value(JGET(x, "name")), "cc1");
	assert_true(json_is_null(JGET(x, "comm")));
	assert_true(json_is_true(JGET(x, "name_shared")));
	assert_int_equal(json_integer_value(JGET(x, "processes")), 3);
	assert_int_equal(json_integer_value(JGET(x, "samples")), 150);
	assert_near(json_real_value(JGET(x, "share")), 0.75, EPS);
	assert_near(json_real_value(JGET(x, "seconds")), 0.150, 1e-9);
	assert_near(json_real_value(JGET(x, "cpu_time")), 2.11, 1e-9);
	assert_string_equal(json_string_value(JGET(x, "cpu_time_quality")), "measured");
	x = json_array_get(exes, 1);
	assert_true(json_is_null(JGET(x, "cpu_time")));
	assert_string_equal(json_string_value(JGET(x, "cpu_time_quality")), "unavailable");
	assert_non_null(json_string_value(JGET(x, "cpu_time_reason")));
	x = json_array_get(exes, 3);
	assert_true(json_is_null(JGET(x, "executable")));
	assert_string_equal(json_string_value(JGET(x, "comm")), "helper");
	x = json_array_get(exes, 9);
	assert_true(json_is_null(JGET(x, "name")));
	/* the per-process seconds add up to the executable's */
	x = json_array_get(procs, 0);
	assert_int_equal(json_integer_value(JGET(x, "pid")), 10);
	assert_near(json_real_value(JGET(x, "seconds")), 0.100, 1e-9);
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

/* the sampled processes ran one executable (cc1): no executables table
 * (nor process table), the JSON still has every executable */
static void test_one_executable(void **state)
{
	struct pivot *p = build("one.sqlite", 2);
	struct diagnosis *d = diagnosis__new(p);
	struct processes *ps = processes__new(p, d->counter);
	char *text;

	(void)state;
	assert_non_null(ps);
	assert_sane_executables(ps);
	assert_int_equal(ps->n_executables, 1);
	assert_int_equal(ps->exes[0].samples, 150);
	assert_near(ps->exes[0].share, 1.0, EPS);
	text = print_to_string(d, p);
	assert_null(strstr(text, "executables:"));
	assert_null(strstr(text, "processes:"));
	free(text);
	processes__free(ps);
	diagnosis__free(d);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "procs-exes") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grouping),	   cmocka_unit_test(test_cpu_time_worst),
	    cmocka_unit_test(test_text),	   cmocka_unit_test(test_json),
	    cmocka_unit_test(test_one_executable),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
