/* Tests of analysis/components (per-Step Component costs), its pivot reader
 * (userspace/pivot/pivot_components) and its reports: self and inclusive
 * arithmetic, NAN propagation (never 0 for "did not run" or "unavailable"),
 * warm-up removal, setup/between/teardown phases, coverage and per-Step
 * ratios, parent by most calls, a parent cycle refused, the mean across
 * processes, and a real SQLite pivot holding the schema-5 tables. Expected
 * values are computed by hand from the rows written here. */
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
#include <jansson.h>

#include "analysis/components.h"
#include "analysis/components_run.h"
#include "report/components_report.h"
#include "tests/unit/test_helpers.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_components.h"

enum { STEP = 1, A = 2, B = 3, C = 4 };

static const struct component_def defs[] = {
    {STEP, "step", 1}, {A, "comp_a", 0}, {B, "comp_b", 0}, {C, "comp_c", 0}};

#define MAX_ROWS 64
struct fixture {
	struct component_row rows[MAX_ROWS];
	size_t n;
	int64_t steps[4];
	struct component_input in;
};

/* a row whose wall time is wall_ns, CPU half of it, instructions = instr */
static void add(struct fixture *f, size_t proc, int64_t tid, enum component_phase ph, int64_t step,
		int64_t comp, int64_t parent, uint64_t calls, double wall_ns, double instr)
{
	struct component_row *r = &f->rows[f->n++];
	int i;

	assert_true(f->n <= MAX_ROWS);
	*r = (struct component_row){.process = proc,
				    .tid = tid,
				    .phase = ph,
				    .step = step,
				    .component = comp,
				    .parent = parent,
				    .calls = calls};
	for (i = 0; i < PIVOT_COST_COLUMNS; i++)
		r->cost[i] = 0;
	r->cost[PIVOT_COST_WALL_NS] = wall_ns;
	r->cost[PIVOT_COST_CPU_NS] = wall_ns / 2;
	r->cost[PIVOT_COST_INSTRUCTIONS] = instr;
}

static void input(struct fixture *f, size_t n_processes, int has_step)
{
	f->in = (struct component_input){.components = defs,
					 .n_components = 4,
					 .rows = f->rows,
					 .n_rows = f->n,
					 .process_steps = f->steps,
					 .n_processes = n_processes,
					 .has_step = has_step};
}

/* 4 Steps (0 = warm-up, 10x costlier); in each: step 1000 ns self, comp_a
 * 3000 under step, comp_b 1000 under comp_a, comp_c 500 under step on even
 * Steps only; comp_b's instructions are unavailable in Step 2 */
static void standard(struct fixture *f)
{
	int64_t k;

	memset(f, 0, sizeof(*f));
	f->steps[0] = 4;
	for (k = 0; k < 4; k++) {
		double x = k ? 1 : 10;

		add(f, 0, 100, COMPONENT_PHASE_STEP, k, STEP, 0, 1, 1000 * x, 1000 * x);
		add(f, 0, 100, COMPONENT_PHASE_STEP, k, A, STEP, 1, 3000 * x, 3000 * x);
		add(f, 0, 100, COMPONENT_PHASE_STEP, k, B, A, 1, 1000 * x, k == 2 ? NAN : 1000 * x);
		if (k % 2 == 0)
			add(f, 0, 100, COMPONENT_PHASE_STEP, k, C, STEP, 1, 500 * x, 500 * x);
	}
	input(f, 1, 1);
}

static struct component_table *table(struct fixture *f, const char *metric, int inclusive, int keep)
{
	struct component_options opt = {component_metric_find(metric), inclusive, keep};
	char err[256];
	struct component_table *t;

	assert_non_null(opt.metric);
	t = component_table__new(&f->in, &opt, err, sizeof(err));
	if (!t)
		fail_msg("component_table__new: %s (%s)", err, strerror(errno));
	return t;
}

#define EPS 1e-15

static void test_self_costs_and_ratios(void **state)
{
	struct fixture f;
	struct component_table *t;

	(void)state;
	standard(&f);
	t = table(&f, "wall_s", 0, 0);
	assert_int_equal(t->n_steps, 4);
	assert_int_equal(t->first_step, 1);
	assert_int_equal(t->steps, 3);
	assert_true(t->warm_up_left_out);
	/* comp_a: 3 us in each of Steps 1..3, the warm-up's 30 us left out */
	assert_near(t->c[1].seconds, 9e-6, EPS);
	assert_int_equal(t->c[1].calls, 3);
	assert_int_equal(t->c[1].all_calls, 4);
	assert_near(t->c[1].seconds_per_step, 3e-6, EPS);
	assert_near(t->c[1].warm_up, 30e-6, EPS);
	assert_near(t->c[1].coverage, 1.0, EPS);
	/* comp_c ran in Step 2 only of 1..3 */
	assert_int_equal(t->c[3].executed_steps, 1);
	assert_near(t->c[3].coverage, 1.0 / 3, EPS);
	assert_near(t->c[3].seconds, 0.5e-6, EPS);
	assert_near(t->c[3].seconds_per_step, 0.5e-6 / 3, EPS);
	assert_near(t->c[3].seconds_when_run, 0.5e-6, EPS);
	assert_true(isnan(t->c[3].per_step[1]) && !t->c[3].ran[1]);
	assert_true(isnan(t->c[3].per_step[3]) && !t->c[3].ran[3]);
	assert_near(t->c[3].per_step[2], 0.5e-6, EPS);
	/* self: comp_a does not hold comp_b */
	assert_near(t->c[1].per_step[2], 3e-6, EPS);
	/* per Step values add up to the Step across Components */
	assert_near(t->c[0].seconds_per_step + t->c[1].seconds_per_step + t->c[2].seconds_per_step +
			t->c[3].seconds_per_step,
		    (1000 + 3000 + 1000) * 1e-9 + 500e-9 / 3, EPS);
	/* parents */
	assert_int_equal(t->c[0].parent, COMPONENT_NONE);
	assert_int_equal(t->c[1].parent, 0);
	assert_int_equal(t->c[2].parent, 1);
	assert_int_equal(t->c[3].parent, 0);
	assert_false(t->several_threads);
	component_table__free(t);
}

static void test_inclusive(void **state)
{
	struct fixture f;
	struct component_table *t;

	(void)state;
	standard(&f);
	t = table(&f, "wall_s", 1, 0);
	/* comp_a = 3 + comp_b's 1 */
	assert_near(t->c[1].per_step[1], 4e-6, EPS);
	assert_near(t->c[1].seconds, 12e-6, EPS);
	/* step: comp_c not run in Step 1 counts 0 there */
	assert_near(t->c[0].per_step[1], 5e-6, EPS);
	assert_near(t->c[0].per_step[2], 5.5e-6, EPS);
	/* a leaf: inclusive = self */
	assert_near(t->c[2].per_step[3], 1e-6, EPS);
	/* did not run: still no value */
	assert_true(isnan(t->c[3].per_step[1]));
	component_table__free(t);
	/* cpu_s is half of wall here */
	t = table(&f, "cpu_s", 1, 0);
	assert_near(t->c[1].per_step[1], 2e-6, EPS);
	component_table__free(t);
}

static void test_nan_propagation(void **state)
{
	struct fixture f;
	struct component_table *t;

	(void)state;
	standard(&f);
	t = table(&f, "instructions", 0, 0);
	/* comp_b ran in Step 2 without a value: unavailable, not 0, not "not run" */
	assert_true(isnan(t->c[2].per_step[2]) && t->c[2].ran[2]);
	assert_true(t->c[2].unavailable);
	assert_true(isnan(t->c[2].seconds));
	assert_near(t->c[1].seconds, 9000, 1e-9); /* comp_a's own: available */
	assert_false(t->c[1].unavailable);
	component_table__free(t);
	t = table(&f, "instructions", 1, 0);
	assert_true(isnan(t->c[1].per_step[2]));	     /* comp_a holds comp_b's NAN */
	assert_near(t->c[1].per_step[1], 4000, 1e-9);	     /* not in Step 1 */
	assert_true(isnan(t->c[0].per_step[2]));	     /* and step holds comp_a */
	assert_near(t->c[0].per_step[3], 4000 + 1000, 1e-9); /* comp_c not run: 0 */
	assert_true(isnan(t->c[1].seconds));
	component_table__free(t);
}

static void test_warm_up(void **state)
{
	struct fixture f;
	struct component_table *t;

	(void)state;
	standard(&f);
	t = table(&f, "wall_s", 0, 1);
	assert_false(t->warm_up_left_out);
	assert_int_equal(t->steps, 4);
	assert_near(t->c[1].seconds, 9e-6 + 30e-6, EPS);
	assert_true(isnan(t->c[1].warm_up) && !t->c[1].ran_warm_up);
	assert_int_equal(t->c[3].executed_steps, 2);
	component_table__free(t);
	/* without a step function the whole run is Step 0, not a warm-up */
	memset(&f, 0, sizeof(f));
	f.steps[0] = 1;
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 0, A, 0, 7, 7000, 0);
	input(&f, 1, 0);
	t = table(&f, "wall_s", 0, 0);
	assert_false(t->warm_up_left_out);
	assert_int_equal(t->first_step, 0);
	assert_int_equal(t->steps, 1);
	assert_near(t->c[1].seconds, 7e-6, EPS);
	assert_int_equal(t->c[1].calls, 7);
	assert_int_equal(t->c[2].executed_steps, 0); /* never ran: 0 over the Steps */
	assert_near(t->c[2].seconds, 0, EPS);
	assert_true(isnan(t->c[2].seconds_when_run));
	component_table__free(t);
}

static void test_phases(void **state)
{
	struct fixture f;
	struct component_table *t;

	(void)state;
	standard(&f);
	add(&f, 0, 100, COMPONENT_PHASE_SETUP, -1, A, 0, 1, 700, 0);
	add(&f, 0, 100, COMPONENT_PHASE_BETWEEN, 1, A, 0, 1, 200, 0); /* into Step 1 */
	add(&f, 0, 100, COMPONENT_PHASE_BETWEEN, 3, A, 0, 1, 400, 0); /* after the last */
	add(&f, 0, 100, COMPONENT_PHASE_TEARDOWN, 3, B, 0, 1, 100, 0);
	input(&f, 1, 1);
	t = table(&f, "wall_s", 0, 0);
	assert_near(t->c[1].per_step[1], 3.2e-6, EPS);
	assert_near(t->c[1].setup, 0.7e-6, EPS);
	assert_near(t->c[1].teardown, 0.4e-6, EPS);
	assert_near(t->c[2].teardown, 0.1e-6, EPS);
	assert_true(isnan(t->c[2].setup) && !t->c[2].ran_setup);
	assert_near(t->c[1].seconds, 9.2e-6, EPS); /* phases are not Steps */
	component_table__free(t);
}

static void test_parents(void **state)
{
	struct fixture f;
	struct component_table *t;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.steps[0] = 2;
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 1, A, 0, 1, 3000, 0);
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 1, B, A, 5, 500, 0);
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 1, B, 0, 2, 200, 0);
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 1, B, B, 10, 1000, 0); /* recursion */
	input(&f, 1, 1);
	t = table(&f, "wall_s", 1, 0);
	assert_int_equal(t->c[2].parent, 1);
	assert_int_equal(t->c[2].n_others, 1);
	assert_int_equal(t->c[2].others[0].parent, COMPONENT_NONE);
	assert_int_equal(t->c[2].others[0].calls, 2);
	assert_int_equal(t->c[2].calls, 17);
	/* comp_b's whole cost in comp_a's inclusive */
	assert_near(t->c[1].per_step[1], 4.7e-6, EPS);
	component_table__free(t);
}

/* the table's order is the nesting tree's, whatever the input's: roots
 * (the step function first, then by name), each followed by its children */
static void test_tree_order(void **state)
{
	static const struct component_def reversed[] = {
	    {C, "comp_c", 0}, {B, "comp_b", 0}, {A, "comp_a", 0}, {STEP, "step", 1}};
	static const char *const want[] = {"step", "comp_a", "comp_b", "comp_c"};
	static const size_t want_parent[] = {COMPONENT_NONE, 0, 1, 0};
	struct fixture f;
	struct component_table *t;
	size_t i;

	(void)state;
	memset(&f, 0, sizeof(f));
	standard(&f);
	input(&f, 1, 1);
	f.in.components = reversed;
	t = table(&f, "wall_s", 0, 0);
	for (i = 0; i < 4; i++) {
		assert_string_equal(t->c[i].name, want[i]);
		assert_int_equal(t->c[i].parent, want_parent[i]);
	}
	component_table__free(t);
}

static void test_parent_cycle_refused(void **state)
{
	struct component_options opt = {component_metric_find("wall_s"), 0, 0};
	struct fixture f;
	char err[256];

	(void)state;
	memset(&f, 0, sizeof(f));
	f.steps[0] = 2;
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 1, A, B, 3, 3000, 0);
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 1, B, A, 3, 500, 0);
	input(&f, 1, 1);
	errno = 0;
	assert_null(component_table__new(&f.in, &opt, err, sizeof(err)));
	assert_int_equal(errno, ELOOP);
	assert_non_null(strstr(err, "comp_a -> comp_b -> comp_a"));
	/* an unknown Component id: refused too */
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 1, 99, 0, 1, 1, 0);
	input(&f, 1, 1);
	assert_null(component_table__new(&f.in, &opt, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "99"));
}

static void test_processes_and_threads(void **state)
{
	struct fixture f;
	struct component_table *t;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.steps[0] = 3; /* Steps 0..2 */
	f.steps[1] = 2; /* Steps 0..1: it stopped earlier */
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 1, A, 0, 1, 3000, 0);
	add(&f, 1, 200, COMPONENT_PHASE_STEP, 1, A, 0, 1, 5000, 0);
	add(&f, 1, 201, COMPONENT_PHASE_STEP, 1, A, 0, 1, 1000, 0); /* a second thread */
	add(&f, 0, 100, COMPONENT_PHASE_STEP, 2, A, 0, 1, 3000, 0);
	input(&f, 2, 1);
	t = table(&f, "wall_s", 0, 0);
	assert_int_equal(t->n_processes, 2);
	assert_near(t->c[1].per_step[1], (3000 + 5000 + 1000) / 2 * 1e-9, EPS);
	assert_near(t->c[1].per_step[2], 3e-6, EPS); /* one process reached Step 2 */
	assert_int_equal(t->c[1].calls, 4);	     /* summed, not averaged */
	assert_true(t->several_threads);
	component_table__free(t);
}

/* ---- a real pivot with the schema-5 tables ---- */

/* a pivot of schema 4: the empty placeholders schema 5 replaced */
static const char schema4[] =
    "DROP TABLE component_costs; DROP TABLE steps; DROP TABLE components;"
    "CREATE TABLE steps(id INTEGER PRIMARY KEY);"
    "CREATE TABLE component_costs(id INTEGER PRIMARY KEY);";

/* two threads of process 100 on node n1; Steps 0..2; comp_c on Step 2
 * only, 2048 minor faults, 8 MiB; no PMU (instructions NULL) */
static const char rows5[] =
    "INSERT INTO loci(id, node, tgid, tid) VALUES (1, 'n1', 100, 100), (2, 'n1', 100, 101);"
    "INSERT INTO components VALUES (1, 'step', 'step', 1), (2, 'comp_a', 'comp_*', 0),"
    " (3, 'comp_b', 'comp_*', 0), (4, 'comp_c', 'comp_*', 0);"
    "INSERT INTO steps VALUES (1, 0, 10, 20), (1, 1, 30, 40), (1, 2, 50, NULL);"
    "INSERT INTO component_costs VALUES"
    " (1, 'step', 0, 2, 1, 1, 9000000, 9000000, 0, 0, 0, 0, 0, NULL, NULL),"
    " (1, 'step', 1, 2, 1, 1, 5000000, 3000000, 1, 0, 2, 0, 0, NULL, NULL),"
    " (2, 'step', 1, 3, 2, 1, 1000000, 1000000, 0, 0, 0, 0, 0, NULL, NULL),"
    " (1, 'step', 2, 2, 1, 1, 5000000, 3000000, 1, 0, 2, 0, 0, NULL, NULL),"
    " (1, 'step', 2, 4, 1, 1, 2000000, 2000000, 2048, 0, 0, 1, 8388608, NULL, NULL);"
    "INSERT INTO counters VALUES ('n1', 'component_probe_ns', 2000),"
    " ('n1', 'empty_uprobe_pair_ns', 1000), ('n1', 'component_calls_lost', 3);";

static struct pivot *pivot_with(char *dir, size_t len, int schema5_tables)
{
	struct pivot *p;
	char *msg = NULL;

	assert_int_equal(make_tmpdir(dir, len, "components"), 0);
	p = pivot__create(path_in(dir, "pivot.sqlite"));
	assert_non_null(p);
	if (sqlite3_exec(pivot_sqlite(p), schema5_tables ? rows5 : schema4, NULL, NULL, &msg) !=
	    SQLITE_OK)
		fail_msg("sql: %s", msg);
	return p;
}

static int has_note(json_t *notes, const char *text)
{
	size_t i;
	json_t *n;

	json_array_foreach(notes, i, n) if (strstr(json_string_value(n), text)) return 1;
	return 0;
}

static void test_pivot_reader_and_json(void **state)
{
	struct component_options opt = {component_metric_find("minor_page_faults"), 0, 0};
	char dir[PATH_MAX];
	struct pivot *p;
	struct components_run *r;
	struct component_table *t;
	json_t *j, *comps, *c;

	(void)state;
	p = pivot_with(dir, sizeof(dir), 1);
	assert_int_equal(pivot_components_present(p), 1);
	r = components_run__load(p);
	assert_non_null(r);
	assert_int_equal(r->in.n_components, 4);
	assert_true(r->in.has_step);
	assert_int_equal(r->in.n_processes, 1);
	assert_int_equal(r->in.process_steps[0], 3);
	assert_int_equal(r->in.n_rows, 5);
	assert_true(isnan(r->rows[0].cost[PIVOT_COST_INSTRUCTIONS])); /* NULL: NAN */
	assert_near(r->counters.probe_ns, 2000, 0);
	assert_int_equal(r->counters.calls_lost, 3);
	t = component_table__new(&r->in, &opt, NULL, 0);
	assert_non_null(t);
	assert_true(t->several_threads);
	j = components_json(t, r);
	assert_non_null(j);
	comps = json_object_get(j, "components");
	c = json_array_get(comps, 3);
	assert_string_equal(json_string_value(json_object_get(c, "name")), "comp_c");
	assert_string_equal(json_string_value(json_object_get(c, "parent")), "step");
	assert_true(json_is_null(json_array_get(json_object_get(c, "per_step"), 1)));
	assert_near(json_real_value(json_array_get(json_object_get(c, "per_step"), 2)), 2048, 0);
	assert_near(json_real_value(json_object_get(c, "coverage")), 0.5, EPS);
	assert_true(json_is_null(
	    json_object_get(json_object_get(json_object_get(j, "phases"), "setup"), "comp_c")));
	assert_near(json_real_value(
			json_object_get(json_object_get(j, "measurement_overhead_ns"), "total")),
		    2000.0 * 5, 0);
	assert_true(has_note(json_object_get(j, "notes"), "can add up to more than the Step"));
	assert_true(has_note(json_object_get(j, "notes"), "3 Component calls were not measured"));
	json_decref(j);
	component_table__free(t);
	components_run__free(r);
	pivot__free(p);
	remove_tree(dir);
}

static void test_pivot_text_and_unavailable(void **state)
{
	struct component_options opt = {component_metric_find("instructions"), 0, 0};
	char dir[PATH_MAX], *text = NULL;
	size_t len = 0;
	struct pivot *p;
	struct components_run *r;
	struct component_table *t;
	FILE *out;

	(void)state;
	p = pivot_with(dir, sizeof(dir), 1);
	assert_int_equal(
	    sqlite3_exec(pivot_sqlite(p),
			 "INSERT INTO degradations VALUES ('n1',"
			 " 'hardware-counters-unavailable', 'no PMU here', 'use metal')",
			 NULL, NULL, NULL),
	    SQLITE_OK);
	r = components_run__load(p);
	assert_non_null(r);
	t = component_table__new(&r->in, &opt, NULL, 0);
	assert_non_null(t);
	out = open_memstream(&text, &len);
	components_print_text(out, t, r);
	fclose(out);
	if (getenv("COMPONENTS_SHOW")) /* to look at the text */
		fputs(text, stderr);
	assert_non_null(strstr(text, "instructions is unavailable: no PMU here"));
	assert_non_null(strstr(text, "2000 ns per Component call"));
	assert_non_null(strstr(text, "not subtracted"));
	assert_non_null(strstr(text, "(warm-up, left out)"));
	free(text);
	component_table__free(t);
	components_run__free(r);
	pivot__free(p);
	remove_tree(dir);
}

static void test_pivot_without_components(void **state)
{
	char dir[PATH_MAX];
	struct pivot *p;
	struct components_run *r;

	(void)state;
	p = pivot_with(dir, sizeof(dir), 0); /* schema 4: the placeholders */
	assert_int_equal(pivot_components_present(p), 0);
	r = components_run__load(p);
	assert_non_null(r);
	assert_int_equal(r->in.n_components, 0);
	assert_int_equal(r->in.n_rows, 0);
	components_run__free(r);
	pivot__free(p);
	remove_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_self_costs_and_ratios),
	    cmocka_unit_test(test_inclusive),
	    cmocka_unit_test(test_nan_propagation),
	    cmocka_unit_test(test_warm_up),
	    cmocka_unit_test(test_phases),
	    cmocka_unit_test(test_parents),
	    cmocka_unit_test(test_tree_order),
	    cmocka_unit_test(test_parent_cycle_refused),
	    cmocka_unit_test(test_processes_and_threads),
	    cmocka_unit_test(test_pivot_reader_and_json),
	    cmocka_unit_test(test_pivot_text_and_unavailable),
	    cmocka_unit_test(test_pivot_without_components),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
