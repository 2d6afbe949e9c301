/* test_kernel_attribution — the "[kernel]" pseudo module from the Agent's
 * Batch to its Hotspots: symbols built by the real batch builder, stored in
 * the pivot once per (module, start), a pivot of schema 2 migrated, and
 * finalize_run() naming each kernel offset after the symbol covering it,
 * every other one (uncovered, or hidden: offset 0) the one '[kernel]'
 * Hotspot. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/modules.h"
#include "userspace/aggregator/finalize.h"
#include "userspace/attribution/attribution.h"
#include "userspace/pivot/pivot.h"

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "kernel-attribution") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

static int64_t sql_int(struct pivot *p, const char *sql)
{
	sqlite3_stmt *stmt;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static struct module mod_kernel = {
    .path = "[kernel]", .display_name = "[kernel]", .identity = "pseudo:kernel"};
static const struct batch_locus locus = {.tgid = 10, .tid = 10, .comm = "memset", .world_size = -1};
static const struct batch_locus hidden_locus = {
    .tgid = 20, .tid = 20, .comm = "hidden", .world_size = -1};

struct ksym {
	uint64_t start, size;
	const char *name;
};

/* One Batch: a sample per kernel offset (a one-frame stack), then the
 * symbols; the pivot stores it. Returns pivot_store_batch()'s answer. */
static int store_kernel_batch(struct pivot *p, uint64_t seq, const uint64_t *offsets, size_t n,
			      const struct ksym *syms, size_t n_syms, const struct batch_locus *l)
{
	struct module *const frame[] = {&mod_kernel};
	struct batch_builder *b = batch_builder__new("run-k", "node1", seq);
	size_t i;
	int err;

	assert_non_null(b);
	for (i = 0; i < n; i++)
		assert_int_equal(batch_builder_add_sample(b, l, frame, &offsets[i], 1, 0, 1,
							  "cpu-clock", 1 + i, 1000 * (1 + i)),
				 0);
	for (i = 0; i < n_syms; i++)
		assert_int_equal(batch_builder_add_module_symbol(b, &mod_kernel, syms[i].start,
								 syms[i].size, syms[i].name),
				 0);
	err = pivot_store_batch(p, batch_builder_envelope(b)->batch);
	batch_builder__free(b);
	return err;
}

static struct pivot *new_pivot(const char *name)
{
	struct pivot *p = pivot__create(path_in(tmpdir, name));

	assert_non_null(p);
	return p;
}

static int append_symbol(uint64_t start, uint64_t size, const char *name, void *ctx)
{
	char *seen = ctx;

	snprintf(seen + strlen(seen), 256 - strlen(seen), "%llx+%llx=%s;",
		 (unsigned long long)start, (unsigned long long)size, name);
	return 0;
}

static const struct ksym syms1[] = {
    {0x2000, 0x80, "asm_exc_page_fault"},
    {0x1000, 0x100, "clear_page_erms"},
};

/* the first name stored at a start stays; a new symbol re-attributes */
static void test_symbols_stored_once(void **state)
{
	static const uint64_t offs[] = {0x1010, 0x2004};
	static const struct ksym syms2[] = {
	    {0x1000, 0x40, "renamed"},
	    {0xffffffffa0001000ull, 0x20, "mod_fn [mymod]"},
	};
	struct pivot *p = new_pivot("stored.sqlite");
	char seen[256] = "";

	(void)state;
	mod_kernel.batch_seq = 0;
	assert_int_equal(store_kernel_batch(p, 1, offs, 2, syms1, 2, &locus), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM module_symbols"), 2);
	/* the same Batch again: stored once */
	assert_int_equal(store_kernel_batch(p, 1, offs, 2, syms1, 2, &locus), 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM module_symbols"), 2);
	/* attributed; a Batch with nothing new leaves it so, one with a new
	 * symbol (and no new address) has it attributed again */
	assert_int_equal(sqlite3_exec(pivot_sqlite(p), "UPDATE modules SET attribution = 'pseudo'",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(store_kernel_batch(p, 2, offs, 2, syms1, 2, &locus), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM modules WHERE attribution IS NULL"), 0);
	assert_int_equal(store_kernel_batch(p, 3, offs, 2, syms2, 2, &locus), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM modules WHERE attribution IS NULL"), 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM module_symbols"), 3);
	assert_int_equal(pivot_for_each_module_symbol(
			     p,
			     sql_int(p, "SELECT id FROM modules WHERE identity = 'pseudo:kernel'"),
			     append_symbol, seen),
			 0);
	/* by start (unsigned), the first name kept */
	assert_string_equal(seen, "1000+100=clear_page_erms;2000+80=asm_exc_page_fault;"
				  "ffffffffa0001000+20=mod_fn [mymod];");
	pivot__free(p);
}

/* finalize: each offset named after the symbol covering it, every other
 * (a gap, a hidden node's 0) the one '[kernel]' Hotspot; then a symbol
 * that arrives later names what was '[kernel]' */
static void test_finalize_names_kernel(void **state)
{
	static const uint64_t offs[] = {0x1010, 0x10ff, 0x2004, 0x5000};
	static const uint64_t hidden[] = {0};
	static const struct ksym later[] = {{0x4f00, 0x200, "copy_user_generic"}};
	struct pivot *p = new_pivot("finalize.sqlite");
	json_t *manifest = json_object();
	int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t total;

	(void)state;
	assert_true(dirfd >= 0);
	assert_non_null(manifest);
	mod_kernel.batch_seq = 0;
	assert_int_equal(store_kernel_batch(p, 1, offs, 4, syms1, 2, &locus), 0);
	assert_int_equal(store_kernel_batch(p, 2, hidden, 1, NULL, 0, &hidden_locus), 0);
	assert_int_equal(finalize_run(p, dirfd, manifest, ""), 0);

	assert_int_equal(sql_int(p, "SELECT count(*) FROM hotspots"), 3);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM hotspots WHERE name = 'clear_page_erms'"
				    " AND function_start = 4096 AND resolution_level = 'function'"
				    " AND source_file IS NULL"),
			 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM hotspots WHERE name ="
				    " 'asm_exc_page_fault' AND function_start = 8192"),
			 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM hotspots WHERE name = '[kernel]'"
				    " AND resolution_level = 'unresolved' AND function_start = -1"),
			 1);
	/* 0x1010 and 0x10ff: one Hotspot; 0x5000 and the hidden 0: '[kernel]' */
	assert_int_equal(sql_int(p, "SELECT count(*) FROM addresses a JOIN hotspots h ON"
				    " h.id = a.hotspot WHERE h.name = 'clear_page_erms'"),
			 2);
	assert_int_equal(sql_int(p, "SELECT sum(a.offset) FROM addresses a JOIN hotspots h ON"
				    " h.id = a.hotspot WHERE h.name = '[kernel]'"),
			 0x5000);
	/* every sample has its Hotspot: the Measurements add up */
	assert_int_equal(pivot_sample_total(p, &total), 0);
	assert_int_equal(sql_int(p, "SELECT sum(sample_count) FROM measurements WHERE hotspot IS"
				    " NOT NULL"),
			 (int64_t)total);
	assert_int_equal(sql_int(p, "SELECT sum(m.sample_count) FROM measurements m JOIN hotspots"
				    " h ON h.id = m.hotspot WHERE h.name = 'clear_page_erms'"),
			 1 + 2);

	/* a later symbol covering 0x5000 */
	assert_int_equal(store_kernel_batch(p, 3, offs + 3, 1, later, 1, &locus), 0);
	assert_int_equal(finalize_run(p, dirfd, manifest, ""), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM addresses a JOIN hotspots h ON"
				    " h.id = a.hotspot WHERE h.name = 'copy_user_generic'"
				    " AND a.offset = 20480"),
			 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM addresses a JOIN hotspots h ON"
				    " h.id = a.hotspot WHERE h.name = '[kernel]'"),
			 1);
	json_decref(manifest);
	close(dirfd);
	pivot__free(p);
}

/* the rules alone: sorted symbols only; the symbol with the latest start
 * at or before an offset names it if its extent reaches it (kallsyms
 * extents never nest), an extent's end is exclusive */
static void test_attribute_kernel_rules(void **state)
{
	static const struct pseudo_symbol syms[] = {
	    {0x100, 0x100, "outer"}, {0x180, 0x10, "inner"}, {0x300, 0x10, "after"}};
	static const struct pseudo_symbol unsorted[] = {{0x300, 0x10, "b"}, {0x100, 0x10, "a"}};
	static const uint64_t addrs[] = {0x100, 0x185, 0x1a0, 0x310, 0xff, 0};
	struct attributed_address out[6];
	size_t i;

	(void)state;
	assert_int_equal(attribution_attribute_kernel(unsorted, 2, addrs, 6, out), -EINVAL);
	assert_int_equal(attribution_attribute_kernel(syms, 3, addrs, 6, out), 0);
	assert_string_equal(out[0].function, "outer");
	assert_int_equal(out[0].function_start, 0x100);
	assert_int_equal(out[0].level, RESOLUTION_FUNCTION);
	assert_string_equal(out[1].function, "inner");
	/* past inner's end: never named after a neighbour */
	assert_string_equal(out[2].function, "[kernel]");
	assert_string_equal(out[3].function, "[kernel]");
	assert_string_equal(out[4].function, "[kernel]");
	assert_string_equal(out[5].function, "[kernel]");
	for (i = 2; i < 6; i++) {
		assert_int_equal(out[i].level, RESOLUTION_UNRESOLVED);
		assert_true(out[i].function_start == ATTRIBUTION_KERNEL_UNNAMED_START);
		assert_null(out[i].source_file);
		assert_int_equal(out[i].address, addrs[i]);
	}
	for (i = 0; i < 6; i++)
		attributed_address_release(&out[i]);
}

/* nunatak's BPF programs are named as its own, another tool's keep their
 * kallsyms name */
static void test_own_bpf_programs(void **state)
{
	static const struct pseudo_symbol syms[] = {
	    {0x100, 0x40, "bpf_prog_d2a369ba240289dd_mpi_return [bpf]"},
	    {0x140, 0x40, "bpf_prog_0123456789abcdef_their_prog [bpf]"}};
	static const uint64_t addrs[] = {0x110, 0x150};
	struct attributed_address out[2];

	(void)state;
	assert_int_equal(attribution_attribute_kernel(syms, 2, addrs, 2, out), 0);
	assert_string_equal(out[0].function, "[nunatak BPF program mpi_return]");
	assert_string_equal(out[1].function, "bpf_prog_0123456789abcdef_their_prog [bpf]");
	attributed_address_release(&out[0]);
	attributed_address_release(&out[1]);
}

/* a pivot of schema 2 (no module_symbols): read as it is, migrated when
 * opened to write, then stores symbols */
static void test_schema_2_migrated(void **state)
{
	static const uint64_t offs[] = {0x1010};
	struct pivot *p = new_pivot("v2.sqlite");
	const char *path = path_in(tmpdir, "v2.sqlite");
	char seen[256] = "";

	(void)state;
	assert_int_equal(sqlite3_exec(pivot_sqlite(p),
				      "DROP TABLE module_symbols; PRAGMA user_version = 2;", NULL,
				      NULL, NULL),
			 SQLITE_OK);
	pivot__free(p);
	p = pivot__open(path, 1);
	assert_non_null(p);
	assert_int_equal(pivot_for_each_module_symbol(p, 1, append_symbol, seen), 0);
	assert_string_equal(seen, "");
	pivot__free(p);
	p = pivot__open(path, 0);
	assert_non_null(p);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), PIVOT_SCHEMA_VERSION);
	mod_kernel.batch_seq = 0;
	assert_int_equal(store_kernel_batch(p, 1, offs, 1, syms1, 2, &locus), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM module_symbols"), 2);
	pivot__free(p);
}

/* a symbol without a name is a malformed Batch: nothing is stored */
static void test_unnamed_symbol_refused(void **state)
{
	static const uint64_t offs[] = {0x1010};
	struct module *const frame[] = {&mod_kernel};
	struct pivot *p = new_pivot("unnamed.sqlite");
	struct batch_builder *b = batch_builder__new("run-k", "node1", 1);
	Nunatak__Wire__Batch *wb;

	(void)state;
	mod_kernel.batch_seq = 0;
	assert_non_null(b);
	assert_int_equal(
	    batch_builder_add_sample(b, &locus, frame, offs, 1, 0, 1, "cpu-clock", 1, 1000), 0);
	assert_int_equal(batch_builder_add_module_symbol(b, &mod_kernel, 0x1000, 0x100, "f"), 0);
	wb = batch_builder_envelope(b)->batch;
	wb->modules[0]->symbols[0]->name = NULL; /* the builder still frees its copy */
	assert_int_equal(pivot_store_batch(p, wb), -EINVAL);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM batches"), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM module_symbols"), 0);
	batch_builder__free(b);
	pivot__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symbols_stored_once),
	    cmocka_unit_test(test_finalize_names_kernel),
	    cmocka_unit_test(test_attribute_kernel_rules),
	    cmocka_unit_test(test_own_bpf_programs),
	    cmocka_unit_test(test_schema_2_migrated),
	    cmocka_unit_test(test_unnamed_symbol_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
