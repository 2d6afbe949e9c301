/* test_source_extracts — the extracts a finalize stores (userspace/source/
 * source_extracts.h) on a pivot built here, read back by the pivot and
 * the summary (report/summary_source.h): the range (3 lines before the
 * function's first line to 3 after the last sampled line), the samples of
 * each line, --no-source (no line read nor stored), the source map, a
 * missing file with its reason, and a schema 3 pivot read as it is and
 * migrated to 4 when opened to write.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "analysis/diagnose.h"
#include "report/summary_source.h"
#include "tests/unit/test_helpers.h"
#include "userspace/pivot/pivot.h"
#include "userspace/source/source_extracts.h"

static char tmpdir[PATH_MAX], src[PATH_MAX];
static int serial;

/* one Hotspot "work" (start line 8) of three addresses sampled 40, 20, 5
 * times on lines 10, 11 and 20 of dwarf_path; "other" (no line) 30 */
static const struct {
	uint64_t offset, samples;
	uint32_t line;
} sites[] = {{0x10, 40, 10}, {0x20, 20, 11}, {0x30, 5, 20}, {0x100, 30, 0}};
#define N_SITES 4

static const char *dwarf_path_of_run;

static int attribute(const struct pivot_module *m, const uint64_t *offsets, size_t n, void *arg)
{
	struct attributed_address aa[N_SITES];
	size_t i, j;

	assert_int_equal(n, N_SITES);
	memset(aa, 0, sizeof(aa));
	for (i = 0; i < n; i++) {
		for (j = 0; sites[j].offset != offsets[i]; j++)
			;
		aa[i].address = offsets[i];
		aa[i].level = sites[j].line ? RESOLUTION_LINE : RESOLUTION_FUNCTION;
		aa[i].function = sites[j].line ? "work" : "other";
		aa[i].function_start = sites[j].line ? 0x10 : 0x100;
		aa[i].source_file = sites[j].line ? (char *)dwarf_path_of_run : NULL;
		aa[i].start_line = sites[j].line ? 8 : 0;
		aa[i].line = sites[j].line;
	}
	return pivot_store_attribution(arg, m->id, aa, n, "done", NULL);
}

static struct pivot *build_pivot(const char *dwarf_path)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module mod = NUNATAK__WIRE__MODULE__INIT, *mods[1] = {&mod};
	Nunatak__Wire__Locus locus = NUNATAK__WIRE__LOCUS__INIT, *loci[1] = {&locus};
	Nunatak__Wire__Stack stacks[N_SITES], *stack_ptrs[N_SITES];
	Nunatak__Wire__Address addrs[N_SITES], *addr_ptrs[N_SITES];
	Nunatak__Wire__SampleCount samples[N_SITES], *sample_ptrs[N_SITES];
	char path[PATH_MAX + 32];
	struct pivot *p;
	size_t i;

	snprintf(path, sizeof(path), "%s/p%d.sqlite", tmpdir, serial++);
	p = pivot__create(path);
	assert_non_null(p);
	b.run_id = "r";
	b.node = "n1";
	b.seq = 1;
	mod.identity = "0011";
	mod.path = "/nonexistent/app";
	mod.display_name = "app";
	mod.has_build_id = 1;
	locus.node = "n1";
	locus.tgid = locus.tid = 100;
	for (i = 0; i < N_SITES; i++) {
		Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;
		Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;
		Nunatak__Wire__SampleCount sc = NUNATAK__WIRE__SAMPLE_COUNT__INIT;

		a.offset = sites[i].offset;
		addrs[i] = a;
		addr_ptrs[i] = &addrs[i];
		s.n_frames = 1;
		s.frames = &addr_ptrs[i];
		stacks[i] = s;
		stack_ptrs[i] = &stacks[i];
		sc.locus = 0;
		sc.stack = (uint32_t)i;
		sc.counter = "cpu-clock";
		sc.sample_count = sites[i].samples;
		sc.value = sites[i].samples * 1000000;
		samples[i] = sc;
		sample_ptrs[i] = &samples[i];
	}
	b.n_modules = 1;
	b.modules = mods;
	b.n_loci = 1;
	b.loci = loci;
	b.n_stacks = N_SITES;
	b.stacks = stack_ptrs;
	b.n_samples = N_SITES;
	b.samples = sample_ptrs;
	assert_int_equal(pivot_store_batch(p, &b), 0);
	dwarf_path_of_run = dwarf_path;
	assert_int_equal(pivot_for_each_module_to_attribute(p, attribute, p), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	return p;
}

static json_t *manifest_of(int embed, const char *map_old, const char *map_new,
			   const char *root)
{
	json_t *map = json_array();

	if (map_old)
		json_array_append_new(map, json_pack("{s:s, s:s}", "old", map_old, "new", map_new));
	return json_pack("{s:{s:{s:{s:b, s:s}, s:{s:o, s:s}}}, s:{s:s?}}", "provenance",
			 "effective_configuration", "source.embed", "value", embed, "source",
			 "command line", "source_map", "value", map, "source", "default", "run",
			 "project_root", root);
}

static int setup(void **state)
{
	char text[4096] = "", line[64];
	int i;

	(void)state;
	if (make_tmpdir(tmpdir, sizeof(tmpdir), "source-extracts"))
		return -1;
	snprintf(src, sizeof(src), "%s/src", tmpdir);
	if (mkdir(src, 0755))
		return -1;
	for (i = 1; i <= 40; i++) {
		snprintf(line, sizeof(line), "text of line %d\n", i);
		strcat(text, line);
	}
	return write_file(path_in(src, "work.c"), text);
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

static int64_t sql_int(struct pivot *p, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static char *sql_text(struct pivot *p, const char *sql)
{
	sqlite3_stmt *st;
	char *v = NULL;

	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

static void test_embedded_and_summary(void **state)
{
	char dwarf_path[PATH_MAX], *status, *reason, *buf = NULL;
	struct pivot *p;
	json_t *m, *h, *src_json, *lines;
	struct diagnosis *d;
	size_t len = 0;
	FILE *out;

	(void)state;
	snprintf(dwarf_path, sizeof(dwarf_path), "%s/work.c", src);
	p = build_pivot(dwarf_path);
	m = manifest_of(1, NULL, NULL, NULL);
	assert_int_equal(source_extracts_store(p, -1, m, ""), 0);
	json_decref(m);
	/* one extract: "other" has no line */
	assert_int_equal(sql_int(p, "SELECT count(*) FROM sources"), 1);
	status = sql_text(p, "SELECT status FROM sources");
	reason = sql_text(p, "SELECT reason FROM sources");
	assert_string_equal(status, "not-verified");
	/* the module is gone: its line table unread, said */
	assert_non_null(strstr(reason, "/nonexistent/app"));
	free(status);
	free(reason);
	assert_int_equal(sql_int(p, "SELECT first_line FROM sources"), 5);
	assert_int_equal(sql_int(p, "SELECT last_line FROM sources"), 23);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM extracts"), 19);
	reason = sql_text(p, "SELECT text FROM extracts WHERE line = 10");
	assert_string_equal(reason, "text of line 10");
	free(reason);

	d = diagnosis__new(p);
	assert_non_null(d);
	out = open_memstream(&buf, &len);
	assert_int_equal(summary_print_sources(out, d, p, 0), 0);
	fclose(out);
	assert_non_null(strstr(buf, "source of work: "));
	assert_non_null(strstr(buf, "not verified"));
	assert_non_null(strstr(buf, "42.1%      10  text of line 10\n")); /* 40 / 95 */
	assert_non_null(strstr(buf, "21.1%      11  text of line 11\n"));
	assert_non_null(strstr(buf, " 5.3%      20  text of line 20\n"));
	assert_null(strstr(buf, "text of line 12")); /* not sampled: not a hot line */
	free(buf);

	h = json_object();
	assert_int_equal(summary_source_attach(h, d, &d->hotspots[0], p, 0), 0);
	src_json = json_object_get(h, "source");
	assert_string_equal(json_string_value(json_object_get(src_json, "status")), "not-verified");
	assert_int_equal(json_integer_value(json_object_get(src_json, "first_line")), 5);
	lines = json_object_get(src_json, "lines");
	assert_int_equal(json_array_size(lines), 19);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 5), "line")), 10);
	assert_near(json_real_value(json_object_get(json_array_get(lines, 5), "share")), 40.0 / 95,
		    1e-12);
	assert_true(json_is_null(json_object_get(json_array_get(lines, 0), "share")));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 0), "samples")), 0);
	/* the Hotspot without an extract: null */
	assert_int_equal(summary_source_attach(h, d, &d->hotspots[1], p, 0), 0);
	assert_true(json_is_null(json_object_get(h, "source")));
	json_decref(h);
	diagnosis__free(d);
	pivot__free(p);
}

static void test_no_source(void **state)
{
	char dwarf_path[PATH_MAX], *reason;
	struct pivot *p;
	json_t *m;

	(void)state;
	snprintf(dwarf_path, sizeof(dwarf_path), "%s/work.c", src);
	p = build_pivot(dwarf_path);
	m = manifest_of(0, NULL, NULL, NULL);
	assert_int_equal(source_extracts_store(p, -1, m, ""), 0);
	json_decref(m);
	reason = sql_text(p, "SELECT status || ': ' || reason FROM sources");
	assert_string_equal(reason, "disabled: --no-source");
	free(reason);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM extracts"), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM sources WHERE resolved_path IS NOT NULL"),
			 0);
	pivot__free(p);
}

static void test_map_root_missing(void **state)
{
	char *v;
	struct pivot *p;
	json_t *m;

	(void)state;
	/* built elsewhere: found through the map */
	p = build_pivot("/build/tree/work.c");
	m = manifest_of(1, "/build/tree", src, NULL);
	assert_int_equal(source_extracts_store(p, -1, m, ""), 0);
	json_decref(m);
	v = sql_text(p, "SELECT resolved_path FROM sources");
	assert_non_null(v);
	assert_string_equal(v, path_in(src, "work.c"));
	free(v);
	/* found by its name under the project root */
	m = manifest_of(1, NULL, NULL, tmpdir);
	assert_int_equal(source_extracts_store(p, -1, m, ""), 0);
	json_decref(m);
	v = sql_text(p, "SELECT status FROM sources");
	assert_string_equal(v, "not-verified");
	free(v);
	/* neither: missing, why */
	m = manifest_of(1, NULL, NULL, NULL);
	assert_int_equal(source_extracts_store(p, -1, m, ""), 0);
	json_decref(m);
	v = sql_text(p, "SELECT status || ': ' || reason FROM sources");
	assert_non_null(strstr(v, "missing: '/build/tree/work.c' not found"));
	free(v);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM extracts"), 0);
	pivot__free(p);
}

static int no_source_cb(const struct pivot_source *s, void *ctx)
{
	(void)s;
	(void)ctx;
	fail_msg("a schema 3 pivot has no extract");
	return 0;
}

/* schema 3: read as it is (no extract), migrated when opened to write */
static void test_schema_3_migrated(void **state)
{
	char path[PATH_MAX + 32];
	struct pivot *p;

	(void)state;
	p = build_pivot("/build/tree/work.c");
	pivot__free(p);
	snprintf(path, sizeof(path), "%s/p%d.sqlite", tmpdir, serial - 1);
	p = pivot__open(path, 0);
	assert_non_null(p);
	assert_int_equal(sqlite3_exec(pivot_sqlite(p),
				      "DROP TABLE extracts; DROP TABLE sources;"
				      " ALTER TABLE hotspots DROP COLUMN start_line;"
				      " CREATE TABLE extracts(file TEXT NOT NULL, line INTEGER NOT"
				      " NULL, text TEXT NOT NULL, PRIMARY KEY(file, line));"
				      " PRAGMA user_version = 3;",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	pivot__free(p);
	p = pivot__open(path, 1);
	assert_non_null(p);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), 3);
	assert_int_equal(pivot_source_of_hotspot(p, 1, no_source_cb, NULL),
			 -ENOENT);
	pivot__free(p);
	p = pivot__open(path, 0);
	assert_non_null(p);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), PIVOT_SCHEMA_VERSION);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM pragma_table_info('hotspots') WHERE name"
				    " = 'start_line'"),
			 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM pragma_table_info('extracts') WHERE name"
				    " = 'source'"),
			 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM sources"), 0);
	pivot__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_embedded_and_summary),
	    cmocka_unit_test(test_no_source),
	    cmocka_unit_test(test_map_root_missing),
	    cmocka_unit_test(test_schema_3_migrated),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
