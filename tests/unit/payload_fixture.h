/* payload_fixture — a 2-rank Run's pivot built through the pivot API (one
 * Batch stored, attributed, its Measurements derived), for the tests of the
 * report's payload and page (test_payload.c, test_report_html.c).
 *
 * Module "solver" (build-id) and the pseudo module [kernel]; Loci rank 0
 * (tgid 100) and rank 1 (tgid 101) on node n1. Hotspots (one address
 * each) and the Stacks sampled (leaf first):
 *  - stream ← compute ← main: cpu-clock 60 + 50, flop_dp and dram_bytes:
 *    placed on the roofline, every value measured (dram_bytes set measured);
 *    an embedded extract (lines 40-44 "SECRET_LINE_40" ..., line 42
 *    sampled);
 *  - halo ← compute ← main: 40 + 35, placed, its dram_bytes estimated; its
 *    address has an inline chain halo_inner (src/inner.h:7, the address'
 *    line) in halo (src/solver.c:60);
 *  - wait ← main: 30 + 30, no FLOP: its placement unavailable; its source
 *    missing with the reason PF_MISSING_REASON;
 *  - solver+0x600 ← main (unresolved): 35 on rank 0;
 *  - tiny ← main: 1 (below the floor);
 *  - PF_EVIL (a name with </script> and C++ < > &) ← main: 31 on rank 1;
 *  - do_syscall_64 ([kernel]) ← wait ← main: 32 on rank 1.
 * cpu-clock: 1 sample = 1 ms. MPI Events: MPI_Send on rank 1 at 900 ns
 * (100 ns, 64 bytes, peer 0), MPI_Allreduce on rank 0 at 1000 ns (500 ns,
 * 8 bytes), MPI_Recv on rank 0 at 2000 ns (50 ns, peer 1, no bytes).
 * pf_build(dir, name, 0) gives a pivot with no sample and no Event.
 */
#ifndef NUNATAK_TESTS_PAYLOAD_FIXTURE_H
#define NUNATAK_TESTS_PAYLOAD_FIXTURE_H

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "userspace/pivot/pivot.h"

#define PF_EVIL "</script><!--std::vector<int, std::allocator<int> >::operator[]&&"
#define PF_MISSING_REASON "src/wait.c: not found under the project root"
#define PF_MS 1000000ull

struct pf_hotspot {
	uint64_t offset;
	const char *name;
	enum resolution_level level;
	const char *file;
	uint32_t line;
	int kernel;
};

enum { PF_MAIN, PF_COMPUTE, PF_STREAM, PF_HALO, PF_WAIT, PF_UNRESOLVED, PF_TINY, PF_EVIL_I,
       PF_KERNEL, PF_N };

static const struct pf_hotspot pf_hotspots[PF_N] = {
    {0x100, "main", RESOLUTION_LINE, "src/main.c", 5, 0},
    {0x200, "compute", RESOLUTION_LINE, "src/solver.c", 20, 0},
    {0x300, "stream", RESOLUTION_LINE, "src/solver.c", 42, 0},
    {0x400, "halo", RESOLUTION_LINE, "src/solver.c", 60, 0},
    {0x500, "wait", RESOLUTION_LINE, "src/wait.c", 7, 0},
    {0x600, "solver+0x600", RESOLUTION_UNRESOLVED, NULL, 0, 0},
    {0x700, "tiny", RESOLUTION_FUNCTION, NULL, 0, 0},
    {0x800, PF_EVIL, RESOLUTION_FUNCTION, NULL, 0, 0},
    {0x10, "do_syscall_64", RESOLUTION_FUNCTION, NULL, 0, 1},
};

/* leaf first; -1 ends */
static const int pf_stacks[][4] = {
    {PF_STREAM, PF_COMPUTE, PF_MAIN, -1}, {PF_HALO, PF_COMPUTE, PF_MAIN, -1},
    {PF_WAIT, PF_MAIN, -1},		  {PF_UNRESOLVED, PF_MAIN, -1},
    {PF_TINY, PF_MAIN, -1},		  {PF_EVIL_I, PF_MAIN, -1},
    {PF_KERNEL, PF_WAIT, PF_MAIN, -1},
};
#define PF_N_STACKS (sizeof(pf_stacks) / sizeof(pf_stacks[0]))

struct pf_sample {
	int stack, locus;
	const char *counter;
	uint64_t count, value;
};

static const struct pf_sample pf_samples[] = {
    {0, 0, "cpu-clock", 60, 60 * PF_MS}, {0, 1, "cpu-clock", 50, 50 * PF_MS},
    {1, 0, "cpu-clock", 40, 40 * PF_MS}, {1, 1, "cpu-clock", 35, 35 * PF_MS},
    {2, 0, "cpu-clock", 30, 30 * PF_MS}, {2, 1, "cpu-clock", 30, 30 * PF_MS},
    {3, 0, "cpu-clock", 35, 35 * PF_MS}, {4, 0, "cpu-clock", 1, 1 * PF_MS},
    {5, 1, "cpu-clock", 31, 31 * PF_MS}, {6, 1, "cpu-clock", 32, 32 * PF_MS},
    {0, 0, "flop_dp", 60, 600000000},	 {0, 1, "flop_dp", 50, 500000000},
    {0, 0, "dram_bytes", 60, 1200000000}, {0, 1, "dram_bytes", 50, 1000000000},
    {1, 0, "flop_dp", 40, 400000000},	 {1, 1, "flop_dp", 35, 350000000},
    {1, 0, "dram_bytes", 40, 100000000}, {1, 1, "dram_bytes", 35, 100000000},
};
#define PF_N_SAMPLES (sizeof(pf_samples) / sizeof(pf_samples[0]))
#define PF_CPU_SAMPLES (60 + 50 + 40 + 35 + 30 + 30 + 35 + 1 + 31 + 32)

static int pf_attribute(const struct pivot_module *m, const uint64_t *offsets, size_t n,
			void *arg)
{
	struct attribution_frame chain[2] = {{"halo_inner", "src/inner.h", 7, 0},
					     {"halo", "src/solver.c", 60, 0}};
	struct attributed_address aa[PF_N];
	size_t i, k;

	assert_true(n <= PF_N);
	memset(aa, 0, sizeof(aa));
	for (i = 0; i < n; i++) {
		for (k = 0; k < PF_N; k++)
			if (pf_hotspots[k].offset == offsets[i] &&
			    pf_hotspots[k].kernel == !strcmp(m->identity, "pseudo:kernel"))
				break;
		assert_true(k < PF_N);
		aa[i].address = offsets[i];
		aa[i].level = pf_hotspots[k].level;
		aa[i].function = (char *)pf_hotspots[k].name;
		aa[i].function_start = offsets[i];
		aa[i].source_file = (char *)pf_hotspots[k].file;
		aa[i].line = pf_hotspots[k].line;
		if (k == PF_HALO) {
			aa[i].n_frames = 2;
			aa[i].frames = chain;
			aa[i].line = 7;
		}
	}
	return pivot_store_attribution(arg, m->id, aa, n,
				       strcmp(m->identity, "pseudo:kernel") ? "done" : "pseudo",
				       NULL);
}

static int64_t pf_hotspot_id(struct pivot *p, const char *name)
{
	sqlite3_stmt *st;
	int64_t id = -1;

	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), "SELECT id FROM hotspots WHERE name = ?",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	assert_true(id > 0);
	return id;
}

/* the extracts, halo's dram_bytes estimated */
static void pf_after(struct pivot *p)
{
	const char *lines[] = {"SECRET_LINE_40", "SECRET_LINE_41", "SECRET_LINE_42 <x> & y",
			       "SECRET_LINE_43", "SECRET_LINE_44"};
	struct pivot_source s = {pf_hotspot_id(p, "stream"), "src/solver.c", "/src/solver.c",
				 "embedded", NULL, 40, 44, 0};
	struct pivot_source w = {pf_hotspot_id(p, "wait"), "src/wait.c", NULL,
				 "missing", PF_MISSING_REASON, 0, 0, 0};
	char sql[256];

	assert_int_equal(pivot_store_source(p, &s, lines, 5), 0);
	assert_int_equal(pivot_store_source(p, &w, NULL, 0), 0);
	/* dram_bytes comes estimated from the pmu part (a lower bound): here
	 * measured, but halo's */
	assert_int_equal(sqlite3_exec(pivot_sqlite(p),
				      "UPDATE measurements SET quality = 'measured', reason = NULL"
				      " WHERE counter = 'dram_bytes'",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	snprintf(sql, sizeof(sql),
		 "UPDATE measurements SET quality = 'estimated', reason = 'dram_bytes: multiplexed'"
		 " WHERE counter = 'dram_bytes' AND hotspot = %lld",
		 (long long)pf_hotspot_id(p, "halo"));
	assert_int_equal(sqlite3_exec(pivot_sqlite(p), sql, NULL, NULL, NULL), SQLITE_OK);
}

static void pf_events(Nunatak__Wire__Batch *b, Nunatak__Wire__MpiEvent *ev,
		      Nunatak__Wire__MpiEvent **ptrs)
{
	size_t i;

	for (i = 0; i < 3; i++) {
		Nunatak__Wire__MpiEvent e = NUNATAK__WIRE__MPI_EVENT__INIT;

		ev[i] = e;
		ptrs[i] = &ev[i];
	}
	ev[0].locus = 1, ev[0].function = "MPI_Send", ev[0].start_ns = 900, ev[0].duration_ns = 100;
	ev[0].has_bytes = 1, ev[0].bytes = 64, ev[0].has_peer = 1, ev[0].peer = 0;
	ev[1].locus = 0, ev[1].function = "MPI_Allreduce", ev[1].start_ns = 1000;
	ev[1].duration_ns = 500, ev[1].has_bytes = 1, ev[1].bytes = 8;
	ev[2].locus = 0, ev[2].function = "MPI_Recv", ev[2].start_ns = 2000, ev[2].duration_ns = 50;
	ev[2].has_peer = 1, ev[2].peer = 1;
	b->n_mpi_events = 3;
	b->mpi_events = ptrs;
}

static struct pivot *pf_build(const char *dir, const char *name, int with_samples)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module mods[2] = {NUNATAK__WIRE__MODULE__INIT, NUNATAK__WIRE__MODULE__INIT};
	Nunatak__Wire__Module *mod_ptrs[2] = {&mods[0], &mods[1]};
	Nunatak__Wire__Locus loci[2] = {NUNATAK__WIRE__LOCUS__INIT, NUNATAK__WIRE__LOCUS__INIT};
	Nunatak__Wire__Locus *locus_ptrs[2] = {&loci[0], &loci[1]};
	Nunatak__Wire__Address addrs[PF_N_STACKS][4], *addr_ptrs[PF_N_STACKS][4];
	Nunatak__Wire__Stack stacks[PF_N_STACKS], *stack_ptrs[PF_N_STACKS];
	Nunatak__Wire__SampleCount sc[PF_N_SAMPLES], *sc_ptrs[PF_N_SAMPLES];
	Nunatak__Wire__MpiEvent ev[3], *ev_ptrs[3];
	char path[PATH_MAX + 64];
	struct pivot *p;
	size_t i, k;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	p = pivot__create(path);
	assert_non_null(p);
	b.run_id = "r";
	b.node = "n1";
	b.seq = 1;
	mods[0].identity = "00aa", mods[0].path = "/opt/app/solver";
	mods[0].display_name = "solver", mods[0].has_build_id = 1;
	mods[1].identity = "pseudo:kernel", mods[1].path = "[kernel]";
	mods[1].display_name = "[kernel]";
	b.n_modules = 2;
	b.modules = mod_ptrs;
	for (i = 0; i < 2; i++) {
		loci[i].node = "n1";
		loci[i].tgid = loci[i].tid = 100 + i;
		loci[i].comm = "solver";
		loci[i].has_rank = loci[i].has_world_size = 1;
		loci[i].rank = (int32_t)i;
		loci[i].world_size = 2;
	}
	b.n_loci = 2;
	b.loci = locus_ptrs;
	for (i = 0; with_samples && i < PF_N_STACKS; i++) {
		Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;

		for (k = 0; pf_stacks[i][k] >= 0; k++) {
			Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;

			a.module = (uint32_t)pf_hotspots[pf_stacks[i][k]].kernel;
			a.offset = pf_hotspots[pf_stacks[i][k]].offset;
			addrs[i][k] = a;
			addr_ptrs[i][k] = &addrs[i][k];
		}
		s.n_frames = k;
		s.frames = addr_ptrs[i];
		stacks[i] = s;
		stack_ptrs[i] = &stacks[i];
	}
	for (i = 0; with_samples && i < PF_N_SAMPLES; i++) {
		Nunatak__Wire__SampleCount c = NUNATAK__WIRE__SAMPLE_COUNT__INIT;

		c.locus = (uint32_t)pf_samples[i].locus;
		c.stack = (uint32_t)pf_samples[i].stack;
		c.counter = (char *)pf_samples[i].counter;
		c.sample_count = pf_samples[i].count;
		c.value = pf_samples[i].value;
		sc[i] = c;
		sc_ptrs[i] = &sc[i];
	}
	if (with_samples) {
		b.n_stacks = PF_N_STACKS;
		b.stacks = stack_ptrs;
		b.n_samples = PF_N_SAMPLES;
		b.samples = sc_ptrs;
		pf_events(&b, ev, ev_ptrs);
	}
	assert_int_equal(pivot_store_batch(p, &b), 0);
	if (with_samples)
		assert_int_equal(pivot_for_each_module_to_attribute(p, pf_attribute, p), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	if (with_samples)
		pf_after(p);
	return p;
}

/* the manifest: a name and a Machine with measured Ceilings, 2 cores */
static json_t *pf_manifest(void)
{
	json_t *m = json_pack(
	    "{s:{s:s}, s:{s:{s:i, s:n}, s:[{s:s, s:f, s:s, s:s, s:n, s:s},"
	    " {s:s, s:f, s:s, s:s, s:n, s:s}, {s:s, s:f, s:s, s:s, s:n, s:s}]}}",
	    "run", "name", "payload <run> & co", "machine", "allocation", "visible_cores", 2,
	    "cpu_quota", "ceilings", "name", "flops_dp", "value", 8e9, "unit", "flop/s", "quality",
	    "measured", "reason", "source", "calibration", "name", "flops_sp", "value", 16e9,
	    "unit", "flop/s", "quality", "measured", "reason", "source", "calibration", "name",
	    "dram_bandwidth", "value", 16e9, "unit", "B/s", "quality", "measured", "reason",
	    "source", "calibration");

	assert_non_null(m);
	return m;
}

#endif
