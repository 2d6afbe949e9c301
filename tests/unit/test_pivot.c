/* Tests of userspace/pivot: Batches stored exactly once and whole, index
 * mapping, attribution storage, derived sampling Measurements, and the
 * refusals of pivot__open (newer schema, not a pivot), the MPI tables
 * (running totals, lifetimes, Events, ranks) and the Locus-level MPI
 * Measurements. Batches are real Nunatak__Wire__Batch structs, some of them
 * through a pack/unpack round trip. */
#include <errno.h>
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

#include "tests/unit/mpi_fixture.h"
#include "tests/unit/test_helpers.h"
#include "userspace/pivot/pivot.h"

static char tmpdir[PATH_MAX];

static void path_in_tmp(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* the one integer an SQL query gives */
static int64_t sql_int(struct pivot *p, const char *fmt, ...)
{
	sqlite3_stmt *stmt;
	char sql[512];
	va_list ap;
	int64_t v;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static char *sql_text(struct pivot *p, const char *sql)
{
	sqlite3_stmt *stmt;
	const unsigned char *t;
	char *s;

	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	t = sqlite3_column_text(stmt, 0);
	s = t ? strdup((const char *)t) : NULL;
	sqlite3_finalize(stmt);
	return s;
}

/* Batch builder: fixed-size storage, pointers wired by batch_finish() */
#define MAXN 8
struct test_batch {
	Nunatak__Wire__Batch b;
	Nunatak__Wire__Module modules[MAXN], *module_ptrs[MAXN];
	Nunatak__Wire__Locus loci[MAXN], *locus_ptrs[MAXN];
	Nunatak__Wire__Stack stacks[MAXN], *stack_ptrs[MAXN];
	Nunatak__Wire__Address addrs[MAXN][MAXN], *addr_ptrs[MAXN][MAXN];
	Nunatak__Wire__SampleCount samples[MAXN], *sample_ptrs[MAXN];
	Nunatak__Wire__Degradation degs[MAXN], *deg_ptrs[MAXN];
	Nunatak__Wire__Counter counters[MAXN], *counter_ptrs[MAXN];
	Nunatak__Wire__ProcessExit exits[MAXN], *exit_ptrs[MAXN];
};

static void tb_init(struct test_batch *t, const char *node, uint64_t seq)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;

	memset(t, 0, sizeof(*t));
	t->b = b;
	t->b.run_id = "run-1";
	t->b.node = (char *)node;
	t->b.seq = seq;
	t->b.modules = t->module_ptrs;
	t->b.loci = t->locus_ptrs;
	t->b.stacks = t->stack_ptrs;
	t->b.samples = t->sample_ptrs;
	t->b.degradations = t->deg_ptrs;
	t->b.counters = t->counter_ptrs;
	t->b.exits = t->exit_ptrs;
}

static void tb_module(struct test_batch *t, const char *identity, const char *path,
		      const char *display, int has_build_id)
{
	Nunatak__Wire__Module m = NUNATAK__WIRE__MODULE__INIT;
	size_t i = t->b.n_modules++;

	m.identity = (char *)identity;
	m.path = (char *)path;
	m.display_name = (char *)display;
	m.has_build_id = has_build_id;
	t->modules[i] = m;
	t->module_ptrs[i] = &t->modules[i];
}

static void tb_locus(struct test_batch *t, const char *node, uint32_t tgid, uint32_t tid,
		     const char *comm, int rank)
{
	Nunatak__Wire__Locus l = NUNATAK__WIRE__LOCUS__INIT;
	size_t i = t->b.n_loci++;

	l.node = (char *)node;
	l.tgid = tgid;
	l.tid = tid;
	l.comm = (char *)comm;
	if (rank >= 0) {
		l.has_rank = 1;
		l.rank = rank;
		l.has_world_size = 1;
		l.world_size = 2;
	}
	t->loci[i] = l;
	t->locus_ptrs[i] = &t->loci[i];
}

/* n frames given as module index, offset pairs */
static void tb_stack(struct test_batch *t, int truncated, size_t n, ...)
{
	Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;
	size_t i = t->b.n_stacks++, j;
	va_list ap;

	va_start(ap, n);
	for (j = 0; j < n; j++) {
		Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;

		a.module = va_arg(ap, unsigned);
		a.offset = va_arg(ap, uint64_t);
		t->addrs[i][j] = a;
		t->addr_ptrs[i][j] = &t->addrs[i][j];
	}
	va_end(ap);
	s.n_frames = n;
	s.frames = t->addr_ptrs[i];
	s.truncated = truncated;
	t->stacks[i] = s;
	t->stack_ptrs[i] = &t->stacks[i];
}

static void tb_sample(struct test_batch *t, uint32_t locus, uint32_t stack, const char *counter,
		      uint64_t count, uint64_t value, int in_kernel)
{
	Nunatak__Wire__SampleCount s = NUNATAK__WIRE__SAMPLE_COUNT__INIT;
	size_t i = t->b.n_samples++;

	s.locus = locus;
	s.stack = stack;
	s.counter = (char *)counter;
	s.sample_count = count;
	s.value = value;
	s.in_kernel = in_kernel;
	t->samples[i] = s;
	t->sample_ptrs[i] = &t->samples[i];
}

static void tb_degradation(struct test_batch *t, const char *name, const char *message,
			   const char *remedy)
{
	Nunatak__Wire__Degradation d = NUNATAK__WIRE__DEGRADATION__INIT;
	size_t i = t->b.n_degradations++;

	d.name = (char *)name;
	d.message = (char *)message;
	d.remedy = (char *)remedy;
	t->degs[i] = d;
	t->deg_ptrs[i] = &t->degs[i];
}

static void tb_counter(struct test_batch *t, const char *name, uint64_t value)
{
	Nunatak__Wire__Counter c = NUNATAK__WIRE__COUNTER__INIT;
	size_t i = t->b.n_counters++;

	c.name = (char *)name;
	c.value = value;
	t->counters[i] = c;
	t->counter_ptrs[i] = &t->counters[i];
}

static void tb_exit(struct test_batch *t, uint32_t locus)
{
	Nunatak__Wire__ProcessExit e = NUNATAK__WIRE__PROCESS_EXIT__INIT;
	size_t i = t->b.n_exits++;

	e.locus = locus;
	e.exit_status = 0;
	e.utime_ns = 1500000000;
	e.stime_ns = 250000000;
	e.nvcsw = 7;
	e.nivcsw = 3;
	e.min_flt = 1000;
	e.maj_flt = 2;
	e.maxrss_bytes = 64 << 20;
	e.wall_ns = 2000000000;
	e.has_run_delay_ns = 1;
	e.run_delay_ns = 125000000;
	t->exits[i] = e;
	t->exit_ptrs[i] = &t->exits[i];
}

/* batch 1: two loci, a module without build-id, stacks sharing frames */
static void build_batch1(struct test_batch *t)
{
	tb_init(t, "n1", 1);
	tb_module(t, "ab12cd34", "/opt/app/solver", "solver", 1);
	tb_module(t, "nobuildid:/usr/lib/libx.so:4096:77", "/usr/lib/libx.so", "libx.so", 0);
	tb_locus(t, "n1", 100, 100, "solver", 0);
	tb_locus(t, "n1", 101, 101, NULL, 1);
	tb_stack(t, 0, 3, 0u, (uint64_t)0x1010, 0u, (uint64_t)0x204f, 1u, (uint64_t)0x2ff);
	tb_stack(t, 0, 3, 0u, (uint64_t)0x1020, 0u, (uint64_t)0x204f, 1u, (uint64_t)0x2ff);
	tb_stack(t, 1, 1, 1u, (uint64_t)0x400);
	tb_sample(t, 0, 0, "cpu-clock", 10, 10000000, 0);
	tb_sample(t, 0, 1, "cpu-clock", 5, 5000000, 0);
	tb_sample(t, 1, 0, "cpu-clock", 20, 20000000, 0);
	tb_sample(t, 1, 2, "cpu-clock", 3, 3000000, 1);
	tb_degradation(t, "no-cycles", "no hardware cycles counter", "run on bare metal");
	tb_counter(t, "samples_dropped", 5);
	tb_exit(t, 0);
}

/* batch 2: same content in another index order, one more sample */
static void build_batch2(struct test_batch *t)
{
	tb_init(t, "n1", 2);
	tb_module(t, "nobuildid:/usr/lib/libx.so:4096:77", "/usr/lib/libx.so", "libx.so", 0);
	tb_module(t, "ab12cd34", "/opt/app/solver", "solver", 1);
	tb_locus(t, "n1", 100, 100, "solver2", -1);
	tb_stack(t, 0, 3, 1u, (uint64_t)0x1010, 1u, (uint64_t)0x204f, 0u, (uint64_t)0x2ff);
	tb_sample(t, 0, 0, "cpu-clock", 10, 10000000, 0);
	tb_degradation(t, "no-cycles", "another message", "another remedy");
	tb_counter(t, "samples_dropped", 3);
	tb_counter(t, "batches_sent", 2);
}

struct counts {
	int64_t batches, modules, loci, stacks, stack_frames, addresses, samples, sample_count,
	    value, degradations, counters, measurements;
};

static void get_counts(struct pivot *p, struct counts *c)
{
	c->batches = sql_int(p, "SELECT count(*) FROM batches");
	c->modules = sql_int(p, "SELECT count(*) FROM modules");
	c->loci = sql_int(p, "SELECT count(*) FROM loci");
	c->stacks = sql_int(p, "SELECT count(*) FROM stacks");
	c->stack_frames = sql_int(p, "SELECT count(*) FROM stack_frames");
	c->addresses = sql_int(p, "SELECT count(*) FROM addresses");
	c->samples = sql_int(p, "SELECT count(*) FROM samples");
	c->sample_count = sql_int(p, "SELECT coalesce(sum(sample_count), 0) FROM samples");
	c->value = sql_int(p, "SELECT coalesce(sum(value), 0) FROM samples");
	c->degradations = sql_int(p, "SELECT count(*) FROM degradations");
	c->counters = sql_int(p, "SELECT count(*) FROM counters");
	c->measurements = sql_int(p, "SELECT count(*) FROM measurements");
}

static struct pivot *new_pivot(const char *name)
{
	char path[PATH_MAX + 64];
	struct pivot *p;

	path_in_tmp(path, sizeof(path), name);
	p = pivot__create(path);
	assert_non_null(p);
	return p;
}

static void test_store_batch_once(void **state)
{
	struct test_batch t1, t2;
	struct counts c, again;
	struct pivot *p = new_pivot("once.sqlite");
	char *s;

	(void)state;
	build_batch1(&t1);
	assert_int_equal(pivot_store_batch(p, &t1.b), 0);
	get_counts(p, &c);
	assert_int_equal(c.batches, 1);
	assert_int_equal(c.modules, 2);
	assert_int_equal(c.loci, 2);
	assert_int_equal(c.stacks, 3);
	assert_int_equal(c.stack_frames, 7);
	assert_int_equal(c.addresses, 5); /* 0x204f and 0x2ff shared */
	assert_int_equal(c.samples, 4);
	assert_int_equal(c.sample_count, 38);
	assert_int_equal(c.value, 38000000);
	assert_int_equal(c.degradations, 1);
	assert_int_equal(c.counters, 1);
	assert_int_equal(c.measurements,
			 11); /* one ProcessExit: 9 counters + cycles, instructions */
	/* no counts sent for the hardware counters: unavailable, with no value, never 0 */
	assert_int_equal(sql_int(p,
				 "SELECT count(*) FROM measurements WHERE counter = 'cycles'"
				 " AND quality = 'unavailable' AND value IS NULL AND reason <> ''"),
			 1);
	assert_int_equal(sql_int(p, "SELECT has_build_id FROM modules WHERE display_name ="
				    " 'libx.so'"),
			 0);
	assert_int_equal(sql_int(p, "SELECT truncated FROM stacks WHERE depth = 1"), 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM loci WHERE rank IS NULL"), 0);
	assert_int_equal(sql_int(p, "SELECT value FROM measurements WHERE counter ="
				    " 'cpu_time_user' AND hotspot IS NULL AND quality = 'measured'"
				    " AND unit = 'ns'"),
			 1500000000);
	assert_int_equal(sql_int(p, "SELECT value FROM measurements WHERE counter = 'peak_rss'"
				    " AND unit = 'bytes'"),
			 64 << 20);
	assert_int_equal(sql_int(p, "SELECT value FROM measurements WHERE counter ="
				    " 'context_switches_involuntary' AND unit = 'count'"),
			 3);
	assert_int_equal(sql_int(p, "SELECT value FROM measurements WHERE counter = 'run_delay'"
				    " AND unit = 'ns' AND quality = 'measured'"),
			 125000000);
	/* the leaf of every stack is frames[0] */
	assert_int_equal(sql_int(p, "SELECT a.offset FROM stack_frames f JOIN addresses a ON"
				    " a.id = f.address JOIN stacks s ON s.id = f.stack"
				    " WHERE f.position = 0 AND s.depth = 1"),
			 0x400);

	/* the same Batch again: nothing written */
	assert_int_equal(pivot_store_batch(p, &t1.b), 1);
	get_counts(p, &again);
	assert_memory_equal(&c, &again, sizeof(c));

	/* the same Batch through the wire: still a duplicate */
	{
		size_t len = nunatak__wire__batch__get_packed_size(&t1.b);
		uint8_t *buf = malloc(len);
		Nunatak__Wire__Batch *u;

		assert_non_null(buf);
		nunatak__wire__batch__pack(&t1.b, buf);
		u = nunatak__wire__batch__unpack(NULL, len, buf);
		assert_non_null(u);
		assert_int_equal(pivot_store_batch(p, u), 1);
		nunatak__wire__batch__free_unpacked(u, NULL);
		free(buf);
	}

	/* seq + 1, other index order: values add, rows map to the same ids */
	build_batch2(&t2);
	assert_int_equal(pivot_store_batch(p, &t2.b), 0);
	get_counts(p, &again);
	assert_int_equal(again.batches, 2);
	assert_int_equal(again.modules, 2);
	assert_int_equal(again.loci, 2);
	assert_int_equal(again.stacks, 3);
	assert_int_equal(again.addresses, 5);
	assert_int_equal(again.samples, 4);
	assert_int_equal(again.sample_count, 48);
	assert_int_equal(again.value, 48000000);
	assert_int_equal(again.degradations, 1);
	assert_int_equal(again.counters, 2);
	assert_int_equal(sql_int(p, "SELECT sample_count FROM samples s JOIN loci l ON"
				    " l.id = s.locus JOIN stacks k ON k.id = s.stack"
				    " WHERE l.tgid = 100 AND k.digest LIKE '%%:1010,%%'"),
			 20);
	assert_int_equal(sql_int(p, "SELECT value FROM counters WHERE name ="
				    " 'samples_dropped'"),
			 5); /* running totals keep the maximum */
	s = sql_text(p, "SELECT message FROM degradations WHERE name = 'no-cycles'");
	assert_string_equal(s, "no hardware cycles counter");
	free(s);
	s = sql_text(p, "SELECT comm FROM loci WHERE tgid = 100");
	assert_string_equal(s, "solver2");
	free(s);
	/* rank absent in batch 2: the known rank stays */
	assert_int_equal(sql_int(p, "SELECT rank FROM loci WHERE tgid = 100"), 0);
	pivot__free(p);
}

static void test_malformed_batch(void **state)
{
	struct test_batch t;
	struct counts before, after;
	struct pivot *p = new_pivot("malformed.sqlite");

	(void)state;
	build_batch1(&t);
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	get_counts(p, &before);

	build_batch1(&t);
	t.b.seq = 3;
	t.samples[1].stack = 99;
	assert_int_equal(pivot_store_batch(p, &t.b), -EINVAL);

	build_batch1(&t);
	t.b.seq = 3;
	t.addrs[2][0].module = 2; /* two modules only */
	assert_int_equal(pivot_store_batch(p, &t.b), -EINVAL);

	build_batch1(&t);
	t.b.seq = 3;
	t.exits[0].locus = 2;
	assert_int_equal(pivot_store_batch(p, &t.b), -EINVAL);

	build_batch1(&t);
	t.b.seq = 3;
	t.modules[0].identity = NULL;
	assert_int_equal(pivot_store_batch(p, &t.b), -EINVAL);

	get_counts(p, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	/* seq 3 was never recorded: the good Batch is still welcome */
	build_batch1(&t);
	t.b.seq = 3;
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	pivot__free(p);
}

struct seen {
	int n;
	int64_t ids[4];
	char names[4][32];
	size_t n_offsets[4];
	uint64_t offsets[4][8];
	int has_build_id[4];
};

static int collect_module(const struct pivot_module *m, const uint64_t *offsets, size_t n,
			  void *ctx)
{
	struct seen *s = ctx;

	assert_true(s->n < 4 && n <= 8);
	s->ids[s->n] = m->id;
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", m->display_name);
	s->n_offsets[s->n] = n;
	memcpy(s->offsets[s->n], offsets, n * sizeof(*offsets));
	s->has_build_id[s->n] = m->has_build_id;
	s->n++;
	return 0;
}

static void attribute_all(struct pivot *p)
{
	struct attribution_frame inline_chain[2] = {
	    {.function = "flux_inner", .file = "flux.h", .line = 5, .column = 3},
	    {.function = "compute", .file = "solver.c", .line = 10, .column = 0},
	};
	/* 0x1020 first, at level function: the Hotspot still ends at line */
	struct attributed_address solver[3] = {
	    {.address = 0x1020,
	     .level = RESOLUTION_FUNCTION,
	     .function = "compute",
	     .function_start = 0x1000},
	    {.address = 0x1010,
	     .level = RESOLUTION_LINE,
	     .function = "compute",
	     .function_start = 0x1000,
	     .source_file = "solver.c",
	     .line = 5,
	     .n_frames = 2,
	     .frames = inline_chain},
	    {.address = 0x204f,
	     .level = RESOLUTION_FUNCTION,
	     .function = "main",
	     .function_start = 0x2000},
	};
	struct attributed_address libx[2] = {
	    {.address = 0x2ff,
	     .level = RESOLUTION_SYMBOL,
	     .function = "libx_call",
	     .function_start = 0x2f0},
	    {.address = 0x400,
	     .level = RESOLUTION_UNRESOLVED,
	     .function = "libx.so+0x400",
	     .function_start = 0x400},
	};
	struct seen seen = {0};

	assert_int_equal(pivot_for_each_module_to_attribute(p, collect_module, &seen), 0);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.names[0], "solver");
	assert_int_equal(seen.has_build_id[0], 1);
	assert_int_equal(seen.n_offsets[0], 3);
	assert_int_equal(seen.offsets[0][0], 0x1010);
	assert_int_equal(seen.offsets[0][1], 0x1020);
	assert_int_equal(seen.offsets[0][2], 0x204f);
	assert_string_equal(seen.names[1], "libx.so");
	assert_int_equal(seen.has_build_id[1], 0);
	assert_int_equal(seen.n_offsets[1], 2);
	assert_int_equal(seen.offsets[1][0], 0x2ff);
	assert_int_equal(seen.offsets[1][1], 0x400);

	assert_int_equal(pivot_store_attribution(p, seen.ids[0], solver, 3, "done", ""), 0);
	assert_int_equal(pivot_store_attribution(p, seen.ids[1], libx, 2, "missing",
						 "'/usr/lib/libx.so' is gone"),
			 0);
}

static void test_attribution_and_measurements(void **state)
{
	struct test_batch t1, t2;
	struct pivot *p = new_pivot("attr.sqlite");
	struct attributed_address bad = {.address = 1, .function = NULL};
	struct seen seen = {0};
	int64_t before;
	char *s;

	(void)state;
	build_batch1(&t1);
	build_batch2(&t2);
	assert_int_equal(pivot_store_batch(p, &t1.b), 0);
	assert_int_equal(pivot_store_batch(p, &t2.b), 0);

	/* refusals first: they write nothing */
	assert_int_equal(pivot_store_attribution(p, 1, &bad, 1, "done", NULL), -EINVAL);
	assert_int_equal(pivot_store_attribution(p, 1, NULL, 0, "great", NULL), -EINVAL);
	assert_int_equal(pivot_store_attribution(p, 999, NULL, 0, "done", NULL), -ENOENT);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM modules WHERE attribution IS NOT NULL"),
			 0);

	attribute_all(p);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM hotspots"), 4);
	/* 0x1010 and 0x1020 share their function: one Hotspot */
	assert_int_equal(sql_int(p, "SELECT count(DISTINCT hotspot) FROM addresses a JOIN"
				    " modules m ON m.id = a.module WHERE m.display_name = 'solver'"
				    " AND a.offset IN (4112, 4128)"),
			 1);
	s = sql_text(p, "SELECT resolution_level FROM hotspots WHERE name = 'compute'");
	assert_string_equal(s, "line");
	free(s);
	s = sql_text(p, "SELECT source_file FROM hotspots WHERE name = 'compute'");
	assert_string_equal(s, "solver.c");
	free(s);
	assert_int_equal(sql_int(p, "SELECT function_start FROM hotspots WHERE name ="
				    " 'compute'"),
			 0x1000);
	/* the address keeps its own line, and the innermost frame's file */
	s = sql_text(p, "SELECT source_file FROM addresses WHERE offset = 4112");
	assert_string_equal(s, "flux.h");
	free(s);
	assert_int_equal(sql_int(p, "SELECT line FROM addresses WHERE offset = 4112"), 5);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM addresses WHERE offset = 4128 AND"
				    " line IS NULL AND resolution_level = 'function'"),
			 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM frames"), 2);
	s = sql_text(p, "SELECT function FROM frames WHERE depth = 0");
	assert_string_equal(s, "flux_inner");
	free(s);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM frames WHERE depth = 1 AND column IS"
				    " NULL AND line = 10"),
			 1);
	s = sql_text(p, "SELECT attribution_reason FROM modules WHERE attribution = 'missing'");
	assert_string_equal(s, "'/usr/lib/libx.so' is gone");
	free(s);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM modules WHERE attribution = 'done'"
				    " AND attribution_reason IS NULL"),
			 1);
	assert_int_equal(pivot_for_each_module_to_attribute(p, collect_module, &seen), 0);
	assert_int_equal(seen.n, 0);

	/* derive: compute gets S0 and S1 leaves, libx.so+0x400 gets S2 */
	assert_int_equal(pivot_derive_measurements(p), 0);
	before = sql_int(p, "SELECT count(*) FROM measurements");
	assert_int_equal(before, 11 + 3);
	assert_int_equal(sql_int(p, "SELECT sample_count FROM measurements x JOIN hotspots h ON"
				    " h.id = x.hotspot JOIN loci l ON l.id = x.locus WHERE"
				    " h.name = 'compute' AND l.tgid = 100"),
			 25);
	assert_int_equal(sql_int(p, "SELECT value FROM measurements x JOIN hotspots h ON"
				    " h.id = x.hotspot JOIN loci l ON l.id = x.locus WHERE"
				    " h.name = 'compute' AND l.tgid = 100 AND x.unit = 'ns' AND"
				    " x.quality = 'measured' AND x.counter = 'cpu-clock'"),
			 25000000);
	assert_int_equal(sql_int(p, "SELECT value FROM measurements x JOIN hotspots h ON"
				    " h.id = x.hotspot JOIN loci l ON l.id = x.locus WHERE"
				    " h.name = 'compute' AND l.tgid = 101"),
			 20000000);
	assert_int_equal(sql_int(p, "SELECT sample_count FROM measurements x JOIN hotspots h ON"
				    " h.id = x.hotspot WHERE h.name = 'libx.so+0x400'"),
			 3);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM measurements x JOIN hotspots h ON"
				    " h.id = x.hotspot WHERE h.name IN ('main', 'libx_call')"),
			 0); /* not leaves */
	/* idempotent */
	assert_int_equal(pivot_derive_measurements(p), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM measurements"), before);
	assert_int_equal(sql_int(p, "SELECT sum(value) FROM measurements WHERE hotspot IS NOT"
				    " NULL"),
			 48000000);

	/* a late Batch with a new address in solver: solver is attributed again */
	build_batch1(&t1);
	t1.b.seq = 3;
	t1.addrs[2][0].module = 0;
	t1.addrs[2][0].offset = 0x3000;
	assert_int_equal(pivot_store_batch(p, &t1.b), 0);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(pivot_for_each_module_to_attribute(p, collect_module, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.names[0], "solver");
	assert_int_equal(seen.n_offsets[0], 4);
	pivot__free(p);
}

static int count_degradation(const char *name, const char *message, const char *remedy, void *ctx)
{
	(void)message;
	(void)remedy;
	assert_non_null(name);
	(*(int *)ctx)++;
	return 0;
}

static int sum_counter(const char *node, const char *name, uint64_t value, void *ctx)
{
	assert_string_equal(node, "n1");
	(void)name;
	*(uint64_t *)ctx += value;
	return 0;
}

static int list_node(const char *node, void *ctx)
{
	strcat(ctx, node);
	strcat(ctx, ";");
	return 0;
}

static void test_readers_and_read_only(void **state)
{
	char path[PATH_MAX + 64], nodes[64] = "";
	struct test_batch t;
	struct pivot *p;
	uint64_t sum = 0;
	int n = 0;

	(void)state;
	path_in_tmp(path, sizeof(path), "ro.sqlite");
	p = pivot__create(path);
	assert_non_null(p);
	build_batch1(&t);
	tb_locus(&t, "n2", 5, 5, "x", -1);
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	assert_int_equal(pivot_add_degradation(p, "no-symbolizer", "llvm-symbolizer not found",
					       "apt-get install llvm"),
			 0);
	assert_int_equal(pivot_add_degradation(p, "no-symbolizer", "x", "y"), 0);
	assert_int_equal(pivot_add_degradation(p, NULL, "x", "y"), -EINVAL);
	pivot__free(p);

	/* create never overwrites */
	assert_null(pivot__create(path));
	assert_int_equal(errno, EEXIST);

	p = pivot__open(path, 1);
	assert_non_null(p);
	assert_int_equal(pivot_for_each_degradation(p, count_degradation, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(pivot_for_each_counter(p, sum_counter, &sum), 0);
	assert_int_equal(sum, 5);
	assert_int_equal(pivot_nodes(p, list_node, nodes), 0);
	assert_string_equal(nodes, "n1;n2;");
	build_batch1(&t);
	t.b.seq = 9;
	assert_int_equal(pivot_store_batch(p, &t.b), -EROFS);
	assert_int_equal(pivot_add_degradation(p, "a", "b", "c"), -EROFS);
	assert_int_equal(pivot_derive_measurements(p), -EROFS);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM batches"), 1);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), PIVOT_SCHEMA_VERSION);
	assert_int_equal(sql_int(p, "PRAGMA foreign_keys"), 1);
	{
		char *mode = sql_text(p, "PRAGMA journal_mode");

		assert_string_equal(mode, "wal");
		free(mode);
	}
	pivot__free(p);

	p = pivot__open(path, 0);
	assert_non_null(p);
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	pivot__free(p);
}

static void test_open_refusals(void **state)
{
	char path[PATH_MAX + 64];
	struct pivot *p;
	sqlite3 *db;
	FILE *f;

	(void)state;
	path_in_tmp(path, sizeof(path), "absent.sqlite");
	assert_null(pivot__open(path, 1));
	assert_int_equal(errno, ENOENT);

	/* a newer nunatak wrote it */
	path_in_tmp(path, sizeof(path), "newer.sqlite");
	p = pivot__create(path);
	assert_non_null(p);
	pivot__free(p);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	{
		char sql[64];

		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", PIVOT_SCHEMA_VERSION + 1);
		assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	}
	sqlite3_close(db);
	assert_null(pivot__open(path, 0));
	assert_int_equal(errno, EPROTONOSUPPORT);
	assert_null(pivot__open(path, 1));
	assert_int_equal(errno, EPROTONOSUPPORT);

	/* not SQLite at all */
	path_in_tmp(path, sizeof(path), "text.sqlite");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("this is a manifest, not a pivot; it is long enough to have a header page\n", f);
	for (int i = 0; i < 100; i++)
		fputs("0123456789abcdef0123456789abcdef0123456789abcdef\n", f);
	fclose(f);
	assert_null(pivot__open(path, 1));
	assert_int_equal(errno, EBADMSG);

	/* SQLite, but not a pivot */
	path_in_tmp(path, sizeof(path), "other.sqlite");
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_null(pivot__open(path, 0));
	assert_int_equal(errno, EBADMSG);
}

/* the one Locus-level Measurement of rank r (tgid 100 + r) */
#define RANK_MEASUREMENT(col, counter, r)                                                          \
	"SELECT " col " FROM measurements x JOIN loci l ON l.id = x.locus WHERE x.hotspot IS"      \
	" NULL AND x.counter = '" counter "' AND l.tgid = %d",                                     \
	    100 + (r)

static void test_mpi_store(void **state)
{
	struct pivot *p = fx_build(tmpdir, "mpi-store.sqlite");
	struct fx_batch *t = calloc(1, sizeof(*t));
	int64_t rows;
	char *s;

	(void)state;
	assert_non_null(p);
	assert_non_null(t);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM mpi_calls"), 19);
	/* running totals: 50 then 100 then an older 60 → 100 and its times */
	assert_int_equal(sql_int(p, "SELECT calls FROM mpi_calls c JOIN loci l ON l.id ="
				    " c.locus WHERE l.tgid = 100 AND c.function = 'MPI_Allreduce'"),
			 100);
	assert_int_equal(sql_int(p, "SELECT total_ns FROM mpi_calls c JOIN loci l ON l.id ="
				    " c.locus WHERE l.tgid = 100 AND c.function = 'MPI_Allreduce'"),
			 2 * FX_S);
	assert_int_equal(sql_int(p, "SELECT min_ns FROM mpi_calls c JOIN loci l ON l.id ="
				    " c.locus WHERE l.tgid = 100 AND c.function = 'MPI_Allreduce'"),
			 1000);
	/* call sites are addresses, attributed like sampled ones */
	assert_int_equal(sql_int(p, "SELECT count(*) FROM addresses"), 6);
	assert_int_equal(sql_int(p, "SELECT a.line FROM mpi_calls c JOIN addresses a ON a.id ="
				    " c.call_site WHERE c.function = 'MPI_Send' LIMIT 1"),
			 77);
	s = sql_text(p, "SELECT h.name FROM mpi_calls c JOIN addresses a ON a.id = c.call_site"
			" JOIN hotspots h ON h.id = a.hotspot WHERE c.function = 'MPI_Allreduce'"
			" LIMIT 1");
	assert_string_equal(s, "compute");
	free(s);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM mpi_calls WHERE bytes IS NULL AND"
				    " bytes_reason = 'vector counts not read'"),
			 1);
	/* a reason only explains missing bytes */
	assert_int_equal(sql_int(p, "SELECT count(*) FROM mpi_calls WHERE bytes IS NOT NULL AND"
				    " bytes_reason IS NOT NULL"),
			 0);

	/* lifetimes: NULL filled, never erased; last_seen the latest */
	assert_int_equal(sql_int(p, "SELECT init_end_ns FROM mpi_processes m JOIN loci l ON"
				    " l.id = m.locus WHERE l.tgid = 100"),
			 FX_S);
	assert_int_equal(sql_int(p, "SELECT finalize_start_ns FROM mpi_processes m JOIN loci l"
				    " ON l.id = m.locus WHERE l.tgid = 100"),
			 FX_S + 3300000000ll);
	assert_int_equal(sql_int(p, "SELECT last_seen_ns FROM mpi_processes m JOIN loci l ON"
				    " l.id = m.locus WHERE l.tgid = 100"),
			 99 * FX_S);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM mpi_processes m JOIN loci l ON l.id ="
				    " m.locus WHERE l.tgid = 103 AND finalize_start_ns IS NULL AND"
				    " last_seen_ns = 5600000000"),
			 1);

	/* ranks: no rank is NULL, never 0 */
	assert_int_equal(sql_int(p, "SELECT count(*) FROM loci WHERE tgid = 50 AND rank IS NULL"
				    " AND world_size IS NULL"),
			 1);
	assert_int_equal(sql_int(p, "SELECT rank FROM loci WHERE tgid = 102"), 2);
	assert_int_equal(sql_int(p, "SELECT world_size FROM loci WHERE tgid = 102"), 4);

	/* Locus-level MPI Measurements */
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("value", "app_time", 0)), 3300000000ll);
	s = sql_text(p, "SELECT quality FROM measurements x JOIN loci l ON l.id = x.locus WHERE"
			" x.counter = 'app_time' AND l.tgid = 100");
	assert_string_equal(s, "measured");
	free(s);
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("value", "app_time", 3)), 4600000000ll);
	s = sql_text(p, "SELECT quality || '|' || reason FROM measurements x JOIN loci l ON"
			" l.id = x.locus WHERE x.counter = 'app_time' AND l.tgid = 103");
	assert_string_equal(s, "estimated|MPI_Finalize not reached");
	free(s);
	/* MPI_Init and MPI_Finalize are not MPI time */
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("value", "mpi_time", 0)), 2300000000ll);
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("value", "mpi_time", 3)), 600000000ll);
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("value", "mpi_sent_bytes", 0)), 2300);
	/* the receive without bytes does not spoil what rank 2 sent */
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("value", "mpi_sent_bytes", 2)), 1300);
	s = sql_text(p, "SELECT quality || '|' || reason || '|' || typeof(value) FROM"
			" measurements x JOIN loci l ON l.id = x.locus WHERE x.counter ="
			" 'mpi_sent_bytes' AND l.tgid = 103");
	assert_string_equal(s, "unavailable|MPI_Alltoallv: vector counts not read|null");
	free(s);
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("value", "cpu_time", 1)), 1750000000ll);
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("count(*)", "cpu_time", 3)), 0);
	/* the exit's run-queue delay: stored, or unavailable with why, never 0 */
	assert_int_equal(sql_int(p, RANK_MEASUREMENT("value", "run_delay", 0)), 250000000);
	s = sql_text(p, "SELECT quality || '|' || unit || '|' || typeof(value) FROM measurements x"
			" JOIN loci l ON l.id = x.locus WHERE x.counter = 'run_delay' AND l.tgid = 101");
	assert_string_equal(s, "unavailable|ns|null");
	free(s);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM measurements x JOIN loci l ON l.id ="
				    " x.locus WHERE x.hotspot IS NULL AND l.tgid = 50"),
			 0);

	/* deriving again gives the same rows */
	rows = sql_int(p, "SELECT count(*) FROM measurements");
	assert_int_equal(pivot_derive_mpi_measurements(p), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM measurements"), rows);

	/* Events, through the wire; a new call site re-opens attribution */
	fx_init(t, 4);
	{
		Nunatak__Wire__MpiEvent e = NUNATAK__WIRE__MPI_EVENT__INIT;
		size_t len;
		uint8_t *buf;
		Nunatak__Wire__Batch *u;

		e.locus = 1;
		e.function = "MPI_Send";
		e.start_ns = 2 * FX_S;
		e.duration_ns = 1500;
		e.has_bytes = 1;
		e.bytes = 1000;
		e.has_peer = 1;
		e.peer = 0;
		t->events[0] = e;
		t->event_ptrs[0] = &t->events[0];
		e.function = "MPI_Barrier";
		e.has_bytes = e.has_peer = 0;
		t->events[1] = e;
		t->event_ptrs[1] = &t->events[1];
		t->b.n_mpi_events = 2;
		fx_call(t, 1, "MPI_Barrier", 0x1500, 1, 10, 10, 10, 0, NULL, 0);
		len = nunatak__wire__batch__get_packed_size(&t->b);
		buf = malloc(len);
		assert_non_null(buf);
		nunatak__wire__batch__pack(&t->b, buf);
		u = nunatak__wire__batch__unpack(NULL, len, buf);
		assert_non_null(u);
		assert_int_equal(pivot_store_batch(p, u), 0);
		assert_int_equal(pivot_store_batch(p, u), 1); /* once */
		nunatak__wire__batch__free_unpacked(u, NULL);
		free(buf);
	}
	assert_int_equal(sql_int(p, "SELECT count(*) FROM events"), 2);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM events e JOIN loci l ON l.id = e.locus"
				    " WHERE l.tgid = 101 AND e.name = 'MPI_Send' AND e.start_ns ="
				    " 2000000000 AND e.duration_ns = 1500 AND e.bytes = 1000 AND"
				    " e.peer = 0"),
			 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM events WHERE name = 'MPI_Barrier' AND"
				    " bytes IS NULL AND peer IS NULL"),
			 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM modules WHERE attribution IS NULL"), 1);
	free(t);
	pivot__free(p);
}

static void test_mpi_refusals_and_unavailable(void **state)
{
	struct pivot *p = new_pivot("mpi-refusals.sqlite");
	struct fx_batch *t = calloc(1, sizeof(*t));
	char *s;

	(void)state;
	assert_non_null(t);
	fx_init(t, 1);
	fx_call(t, 0, "MPI_Send", 0x10, 1, 1, 1, 1, 8, NULL, 1);
	t->addrs[0].module = 1; /* one module only */
	assert_int_equal(pivot_store_batch(p, &t->b), -EINVAL);
	fx_init(t, 1);
	fx_call(t, 9, "MPI_Send", 0x10, 1, 1, 1, 1, 8, NULL, 1);
	assert_int_equal(pivot_store_batch(p, &t->b), -EINVAL);
	fx_init(t, 1);
	fx_call(t, 0, NULL, 0x10, 1, 1, 1, 1, 8, NULL, 1);
	assert_int_equal(pivot_store_batch(p, &t->b), -EINVAL);
	fx_init(t, 1);
	fx_process(t, 7, 1, 2, 3);
	assert_int_equal(pivot_store_batch(p, &t->b), -EINVAL);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM batches"), 0);

	/* init never returned: app time unavailable, with the reason; a send
	 * without bytes or reason is still named */
	fx_init(t, 1);
	fx_process(t, 0, 0, 0, 5 * FX_S);
	fx_process(t, 1, 2 * FX_S, 0, 0);
	fx_call(t, 0, "MPI_Isend", 0x10, 3, 30, 10, 10, -1, NULL, 1);
	assert_int_equal(pivot_store_batch(p, &t->b), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	s = sql_text(p, "SELECT quality || '|' || reason || '|' || typeof(value) FROM"
			" measurements x JOIN loci l ON l.id = x.locus WHERE x.counter ="
			" 'app_time' AND l.tgid = 100");
	assert_string_equal(s, "unavailable|MPI_Init never returned|null");
	free(s);
	s = sql_text(p, "SELECT quality || '|' || reason FROM measurements x JOIN loci l ON"
			" l.id = x.locus WHERE x.counter = 'app_time' AND l.tgid = 101");
	assert_string_equal(s, "unavailable|MPI_Finalize not reached and the process end was"
			       " not seen");
	free(s);
	s = sql_text(p, "SELECT quality || '|' || reason FROM measurements x JOIN loci l ON"
			" l.id = x.locus WHERE x.counter = 'mpi_sent_bytes' AND l.tgid = 100");
	assert_string_equal(s, "unavailable|MPI_Isend: bytes not read");
	free(s);
	/* rank 1 sent nothing it could not count: 0 bytes, measured */
	assert_int_equal(sql_int(p, "SELECT count(*) FROM measurements x JOIN loci l ON l.id ="
				    " x.locus WHERE x.counter = 'mpi_sent_bytes' AND l.tgid = 101"
				    " AND x.value = 0 AND x.quality = 'measured'"),
			 1);
	free(t);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "pivot") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

static int count_node_degradation(const char *node, const char *name, const char *message,
				  const char *remedy, void *ctx)
{
	char *seen = ctx;

	(void)message;
	(void)remedy;
	strcat(seen, node);
	strcat(seen, ":");
	strcat(seen, name);
	strcat(seen, ";");
	return 0;
}

static int list_batch_node(const char *node, uint64_t batches, int last, void *ctx)
{
	char *seen = ctx;

	sprintf(seen + strlen(seen), "%s=%llu%s;", node, (unsigned long long)batches,
		last ? "+last" : "");
	return 0;
}

/* exactly once by (node, incarnation, seq): an Agent that restarted (a new
 * incarnation) counting from seq 0 again is stored, its former self's
 * resent Batch is not; Degradations of two nodes with one name both kept */
static void test_incarnations_and_node_degradations(void **state)
{
	struct pivot *p = new_pivot("incarnations.sqlite");
	char seen[256] = "";
	struct test_batch t;
	uint64_t samples;

	(void)state;
	build_batch1(&t);
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	assert_int_equal(pivot_store_batch(p, &t.b), 1);
	t.b.has_incarnation = 1;
	t.b.incarnation = 0; /* 0 said is 0 unsaid */
	assert_int_equal(pivot_store_batch(p, &t.b), 1);
	t.b.incarnation = 77;
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	assert_int_equal(pivot_store_batch(p, &t.b), 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM batches"), 2);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM batches WHERE incarnation = 77"), 1);
	assert_int_equal(pivot_sample_total(p, &samples), 0);
	assert_int_equal(samples, 2 * (10 + 5 + 20 + 3));

	build_batch1(&t);
	t.b.node = "n2";
	t.b.has_last = t.b.last = 1;
	t.degs[0].message = "n2 has no cycles either";
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	assert_int_equal(pivot_add_node_degradation(p, "n2", "node-lost", "lost", "look"), 0);
	assert_int_equal(pivot_add_degradation(p, "run-interrupted", "m", "r"), 0);
	assert_int_equal(pivot_for_each_node_degradation(p, count_node_degradation, seen), 0);
	assert_string_equal(seen, "n1:no-cycles;n2:no-cycles;n2:node-lost;:run-interrupted;");
	seen[0] = '\0';
	assert_int_equal(pivot_for_each_batch_node(p, list_batch_node, seen), 0);
	assert_string_equal(seen, "n1=2;n2=1+last;");
	pivot__free(p);
}

/* a pivot of schema 1 (no incarnation, Degradations by name): read as it
 * is, migrated when opened to write, its rows kept */
static void test_schema_1_migrated(void **state)
{
	char path[PATH_MAX + 64], seen[256] = "";
	struct pivot *p = new_pivot("v1.sqlite");
	struct test_batch t;

	(void)state;
	pivot__free(p);
	path_in_tmp(path, sizeof(path), "v1.sqlite");
	{
		sqlite3 *db;

		assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
		assert_int_equal(
		    sqlite3_exec(db,
				 "DROP TABLE batches; DROP TABLE degradations;"
				 "CREATE TABLE batches(node TEXT NOT NULL, seq INTEGER NOT NULL,"
				 " received TEXT NOT NULL, PRIMARY KEY(node, seq));"
				 "CREATE TABLE degradations(name TEXT PRIMARY KEY, message TEXT NOT"
				 " NULL, remedy TEXT NOT NULL);"
				 "INSERT INTO batches VALUES('n1', 1, 'then');"
				 "INSERT INTO degradations VALUES('old', 'said', 'done');"
				 "PRAGMA user_version = 1;",
				 NULL, NULL, NULL),
		    SQLITE_OK);
		sqlite3_close(db);
	}
	p = pivot__open(path, 1);
	assert_non_null(p);
	assert_int_equal(pivot_for_each_node_degradation(p, count_node_degradation, seen), 0);
	assert_string_equal(seen, ":old;");
	assert_int_equal(sql_int(p, "PRAGMA user_version"), 1);
	pivot__free(p);

	p = pivot__open(path, 0);
	assert_non_null(p);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), PIVOT_SCHEMA_VERSION);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM batches WHERE incarnation = 0"), 1);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM degradations WHERE node = ''"), 1);
	build_batch1(&t);
	assert_int_equal(pivot_store_batch(p, &t.b), 1); /* (n1, 0, 1) was stored */
	t.b.seq = 2;
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	pivot__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_store_batch_once),
	    cmocka_unit_test(test_malformed_batch),
	    cmocka_unit_test(test_attribution_and_measurements),
	    cmocka_unit_test(test_readers_and_read_only),
	    cmocka_unit_test(test_open_refusals),
	    cmocka_unit_test(test_incarnations_and_node_degradations),
	    cmocka_unit_test(test_schema_1_migrated),
	    cmocka_unit_test(test_mpi_store),
	    cmocka_unit_test(test_mpi_refusals_and_unavailable),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
