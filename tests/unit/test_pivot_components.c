/* test_pivot_components — the Component entries of a Batch, built by the
 * Agent's builder (batch_components.c) and stored by the pivot's writer
 * (pivot_store_components.c): Components by name, costs as running totals
 * per (Locus, phase, step, Component, parent) where an older report never
 * lowers a row and a NULL parent is one key, Steps whose end comes later,
 * a Batch with an index out of range refused whole, and the schema 4 -> 5
 * migration of a pivot with the empty placeholders. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/batch_components.h"
#include "userspace/pivot/pivot.h"

static char tmpdir[PATH_MAX];

static int64_t sql_int(struct pivot *p, const char *sql)
{
	sqlite3_stmt *stmt;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_type(stmt, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static const struct batch_locus thread = {.tgid = 100, .tid = 101, .world_size = -1};
static const struct batch_locus process = {.tgid = 100, .tid = 100, .world_size = -1};

/* Batch seq: A (and B under A) in Step 1 with `calls` calls; Step 1 ends
 * when ended */
static int store(struct pivot *p, uint64_t seq, uint64_t calls, int ended)
{
	struct batch_builder *b = batch_builder__new("run", "n1", seq);
	struct batch_component_cost c = {.phase = COMPONENT_PHASE_STEP, .step = 1, .calls = calls};
	uint32_t a, bb;
	int err;

	assert_non_null(b);
	assert_int_equal(batch_builder_add_component(b, "A::run(int)", "A::run", 0, &a), 0);
	assert_int_equal(batch_builder_add_component(b, "B", "B", 0, &bb), 0);
	c.component = a;
	c.self.wall_ns = 1000 * calls;
	c.self.cpu_ns = 600 * calls;
	c.self.minor_faults = 2 * calls;
	c.self.peak_rss_increase = 4096;
	assert_int_equal(batch_builder_add_component_cost(b, &thread, &c), 0);
	c.component = bb;
	c.has_parent = 1;
	c.parent = a;
	assert_int_equal(batch_builder_add_component_cost(b, &thread, &c), 0);
	assert_int_equal(batch_builder_add_step(b, &process, 1, 5000, ended ? 9000 : 0), 0);
	err = pivot_store_batch(p, batch_builder_envelope(b)->batch);
	batch_builder__free(b);
	return err;
}

static void test_running_totals(void **state)
{
	struct pivot *p;

	(void)state;
	p = pivot__create(path_in(tmpdir, "components.sqlite"));
	assert_non_null(p);
	assert_int_equal(store(p, 1, 3, 0), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM components"), 2);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM component_costs"), 2);
	assert_int_equal(sql_int(p, "SELECT cpu_ns FROM component_costs c JOIN components k"
				    " ON k.id = c.component WHERE k.name = 'A::run(int)'"
				    " AND c.parent IS NULL AND c.phase = 'step' AND c.step = 1"),
			 1800);
	assert_int_equal(sql_int(p, "SELECT end_ns FROM steps WHERE step = 1"), -1);
	/* more calls replace; the Step's end arrives */
	assert_int_equal(store(p, 2, 5, 1), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM component_costs"), 2);
	assert_int_equal(sql_int(p, "SELECT sum(calls) FROM component_costs"), 10);
	assert_int_equal(sql_int(p, "SELECT minor_page_faults FROM component_costs"
				    " WHERE parent IS NULL"),
			 10);
	assert_int_equal(sql_int(p, "SELECT end_ns FROM steps WHERE step = 1"), 9000);
	/* an older report (fewer calls) never lowers it, nor takes the end */
	assert_int_equal(store(p, 3, 4, 0), 0);
	assert_int_equal(sql_int(p, "SELECT sum(calls) FROM component_costs"), 10);
	assert_int_equal(sql_int(p, "SELECT end_ns FROM steps WHERE step = 1"), 9000);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM components WHERE pattern = 'A::run'"), 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM component_costs WHERE instructions"
				    " IS NULL AND cycles IS NULL"),
			 2);
	pivot__free(p);
}

static void test_out_of_range_refused(void **state)
{
	struct batch_builder *b = batch_builder__new("run", "n1", 1);
	struct batch_component_cost c = {.phase = COMPONENT_PHASE_STEP, .calls = 1};
	struct pivot *p;
	uint32_t a;

	(void)state;
	p = pivot__create(path_in(tmpdir, "refused.sqlite"));
	assert_non_null(p);
	assert_int_equal(batch_builder_add_component(b, "A", "A", 0, &a), 0);
	c.component = a + 1; /* no such Component in the Batch */
	assert_int_equal(batch_builder_add_component_cost(b, &thread, &c), 0);
	assert_int_equal(pivot_store_batch(p, batch_builder_envelope(b)->batch), -EINVAL);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM components"), 0);
	c.phase = 7;
	assert_int_equal(batch_builder_add_component_cost(b, &thread, &c), -EINVAL);
	batch_builder__free(b);
	pivot__free(p);
}

static void test_schema_4_migrated(void **state)
{
	const char *path = path_in(tmpdir, "v4.sqlite");
	struct pivot *p;
	sqlite3 *db;

	(void)state;
	p = pivot__create(path);
	assert_non_null(p);
	pivot__free(p);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
				      "DROP TABLE component_costs; DROP TABLE steps;"
				      " DROP TABLE components;"
				      " CREATE TABLE steps(id INTEGER PRIMARY KEY);"
				      " CREATE TABLE component_costs(id INTEGER PRIMARY KEY);"
				      " PRAGMA user_version = 4;",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	p = pivot__open(path, 0);
	assert_non_null(p);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), PIVOT_SCHEMA_VERSION);
	/* and on to schema 6: the MPI estimates and probe costs */
	assert_int_equal(sql_int(p, "SELECT count(*) FROM pragma_table_info('mpi_processes')"
				    " WHERE name IN ('probe_cost_ns', 'probed_calls', 'probe_budget')"),
			 3);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM pragma_table_info('mpi_calls')"
				    " WHERE name IN ('estimate', 'calls_error', 'total_ns_error')"),
			 3);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM pragma_table_info('component_costs')"),
			 15);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM pragma_table_info('steps')"), 4);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM calibration_rows"), 0);
	assert_int_equal(store(p, 1, 2, 1), 0);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "pivot_components");
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_running_totals),
	    cmocka_unit_test(test_out_of_range_refused),
	    cmocka_unit_test(test_schema_4_migrated),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
