/* mpi_fixture — a pivot of a 4-rank MPI Run built from real
 * Nunatak__Wire__Batch structs, shared by test_balance.c and
 * test_summary.c (header-only: each test is one translation unit).
 *
 * Module "app" (identity "a1"), node n1 (ranks 0, 1) and n2 (ranks 2, 3),
 * plus a launcher Locus without a rank (n1, tgid 50). Rank r:
 *  - app time = outside-MPI time (r + 1) s + its MPI time; init ends at 1 s;
 *    ranks 0-2 reach MPI_Finalize, rank 3 is only last seen (estimated);
 *  - MPI_Allreduce at 0x1100 (compute, solver.c:42): 100 calls,
 *    (4 - r) * 0.5 s, min (r + 1) µs, max (r + 1) ms, 800 bytes sent;
 *  - MPI_Send at 0x1200 (exchange, solver.c:77), ranks 0 and 1 only:
 *    10 calls, 0.2 s, 1000 bytes sent;
 *  - MPI_Alltoallv at 0x1300 (unresolved, "app+0x1300"): 5 calls, 0.1 s,
 *    500 bytes sent, but rank 3's bytes are unavailable ("vector counts not
 *    read");
 *  - MPI_Recv at 0x1400 (exchange, solver.c:80), rank 2 only: 10 calls,
 *    0 ns, bytes unavailable ("status not read"), receive side;
 *  - MPI_Init at 0x1000 (main, solver.c:10), 1 call, 0.3 s; MPI_Finalize at
 *    0x1010 (main, solver.c:90), 1 call, 0.05 s: not MPI time;
 *  - ProcessExit (cpu 1.5 + 0.25 s) for ranks 0-2, none for rank 3.
 * Rank 0's Allreduce arrives first as a lower running total (50 calls)
 * then, in a later Batch, as the final one; a third, older report (60
 * calls) arrives last and is ignored.
 * MPI time per rank: 2.3, 1.8, 1.1, 0.6 s; app time 3.3, 3.8, 4.1, 4.6 s.
 */
#ifndef NUNATAK_TESTS_MPI_FIXTURE_H
#define NUNATAK_TESTS_MPI_FIXTURE_H

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "userspace/pivot/pivot.h"

#define FX_S 1000000000ull
#define FX_MAX 32

struct fx_batch {
	Nunatak__Wire__Batch b;
	Nunatak__Wire__Module module, *module_ptrs[1];
	Nunatak__Wire__Locus loci[FX_MAX], *locus_ptrs[FX_MAX];
	Nunatak__Wire__Address addrs[FX_MAX];
	Nunatak__Wire__MpiCallSite calls[FX_MAX], *call_ptrs[FX_MAX];
	Nunatak__Wire__MpiProcess procs[FX_MAX], *proc_ptrs[FX_MAX];
	Nunatak__Wire__MpiEvent events[FX_MAX], *event_ptrs[FX_MAX];
	Nunatak__Wire__ProcessExit exits[FX_MAX], *exit_ptrs[FX_MAX];
};

static const char *const fx_nodes[4] = {"n1", "n1", "n2", "n2"};

/* a Batch with module "app" and the 4 rank Loci (index r) + launcher (4) */
static void fx_init(struct fx_batch *t, uint64_t seq)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module m = NUNATAK__WIRE__MODULE__INIT;
	size_t r;

	memset(t, 0, sizeof(*t));
	t->b = b;
	t->b.run_id = "run-mpi";
	t->b.node = "n1";
	t->b.seq = seq;
	m.identity = "a1";
	m.path = "/opt/app/app";
	m.display_name = "app";
	m.has_build_id = 1;
	t->module = m;
	t->module_ptrs[0] = &t->module;
	t->b.n_modules = 1;
	t->b.modules = t->module_ptrs;
	for (r = 0; r < 5; r++) {
		Nunatak__Wire__Locus l = NUNATAK__WIRE__LOCUS__INIT;

		l.node = (char *)(r < 4 ? fx_nodes[r] : "n1");
		l.tgid = l.tid = r < 4 ? 100 + r : 50;
		if (r < 4) {
			l.has_rank = l.has_world_size = 1;
			l.rank = (int32_t)r;
			l.world_size = 4;
		}
		t->loci[r] = l;
		t->locus_ptrs[r] = &t->loci[r];
	}
	t->b.n_loci = 5;
	t->b.loci = t->locus_ptrs;
	t->b.mpi_call_sites = t->call_ptrs;
	t->b.mpi_processes = t->proc_ptrs;
	t->b.mpi_events = t->event_ptrs;
	t->b.exits = t->exit_ptrs;
}

/* bytes < 0: unavailable with reason */
static void fx_call(struct fx_batch *t, uint32_t locus, const char *function, uint64_t offset,
		    uint64_t calls, uint64_t total_ns, uint64_t min_ns, uint64_t max_ns,
		    long long bytes, const char *reason, int sends)
{
	Nunatak__Wire__MpiCallSite c = NUNATAK__WIRE__MPI_CALL_SITE__INIT;
	Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;
	size_t i = t->b.n_mpi_call_sites++;

	a.module = 0;
	a.offset = offset;
	t->addrs[i] = a;
	c.locus = locus;
	c.function = (char *)function;
	c.call_site = &t->addrs[i];
	c.calls = calls;
	c.total_ns = total_ns;
	c.min_ns = min_ns;
	c.max_ns = max_ns;
	if (bytes >= 0) {
		c.has_bytes = 1;
		c.bytes = (uint64_t)bytes;
	} else {
		c.bytes_reason = (char *)reason;
	}
	c.sends = sends;
	t->calls[i] = c;
	t->call_ptrs[i] = &t->calls[i];
}

/* 0: absent */
static void fx_process(struct fx_batch *t, uint32_t locus, uint64_t init_end,
		       uint64_t finalize_start, uint64_t last_seen)
{
	Nunatak__Wire__MpiProcess m = NUNATAK__WIRE__MPI_PROCESS__INIT;
	size_t i = t->b.n_mpi_processes++;

	m.locus = locus;
	m.has_init_end_ns = init_end != 0;
	m.init_end_ns = init_end;
	m.has_finalize_start_ns = finalize_start != 0;
	m.finalize_start_ns = finalize_start;
	m.has_last_seen_ns = last_seen != 0;
	m.last_seen_ns = last_seen;
	t->procs[i] = m;
	t->proc_ptrs[i] = &t->procs[i];
}

static void fx_exit(struct fx_batch *t, uint32_t locus)
{
	Nunatak__Wire__ProcessExit e = NUNATAK__WIRE__PROCESS_EXIT__INIT;
	size_t i = t->b.n_exits++;

	e.locus = locus;
	e.utime_ns = 1500000000;
	e.stime_ns = 250000000;
	e.wall_ns = 5 * FX_S;
	if (locus != 1) { /* rank 1: a kernel that keeps no run-queue delay */
		e.has_run_delay_ns = 1;
		e.run_delay_ns = 250000000;
	}
	t->exits[i] = e;
	t->exit_ptrs[i] = &t->exits[i];
}

static const uint64_t fx_mpi_ns[4] = {2300000000, 1800000000, 1100000000, 600000000};

static int fx_attribute(const struct pivot_module *m, const uint64_t *offsets, size_t n, void *ctx)
{
	static const struct {
		uint64_t offset;
		const char *function;
		uint64_t start;
		uint32_t line;
	} known[] = {
	    {0x1000, "main", 0xf00, 10},      {0x1010, "main", 0xf00, 90},
	    {0x1100, "compute", 0x10f0, 42},  {0x1200, "exchange", 0x11f0, 77},
	    {0x1400, "exchange", 0x11f0, 80},
	};
	struct attributed_address aa[FX_MAX];
	size_t i, k;

	memset(aa, 0, sizeof(aa));
	for (i = 0; i < n && i < FX_MAX; i++) {
		aa[i].address = offsets[i];
		aa[i].level = RESOLUTION_UNRESOLVED;
		aa[i].function = "app+0x1300";
		aa[i].function_start = offsets[i];
		for (k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
			if (known[k].offset != offsets[i])
				continue;
			aa[i].level = RESOLUTION_LINE;
			aa[i].function = (char *)known[k].function;
			aa[i].function_start = known[k].start;
			aa[i].source_file = "solver.c";
			aa[i].line = known[k].line;
		}
	}
	return pivot_store_attribution(ctx, m->id, aa, n, "done", NULL);
}

/* The 4-rank pivot at dir/name, stored, attributed and derived: NULL on
 * failure (the caller asserts). */
static struct pivot *fx_build(const char *dir, const char *name)
{
	struct fx_batch *t = calloc(1, sizeof(*t));
	char path[PATH_MAX + 64];
	struct pivot *p;
	uint32_t r;

	if (!t)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	p = pivot__create(path);
	if (!p)
		goto fail;

	/* seq 1: init, and rank 0's Allreduce half-way */
	fx_init(t, 1);
	for (r = 0; r < 4; r++)
		fx_process(t, r, 1 * FX_S, 0, 0);
	fx_call(t, 0, "MPI_Allreduce", 0x1100, 50, 1 * FX_S, 1000, 1000000, 400, NULL, 1);
	if (pivot_store_batch(p, &t->b))
		goto fail;

	/* seq 2: the final running totals */
	fx_init(t, 2);
	for (r = 0; r < 4; r++) {
		uint64_t app = (r + 1) * FX_S + fx_mpi_ns[r];

		if (r < 3) {
			fx_process(t, r, 0, 1 * FX_S + app, 0);
			fx_exit(t, r);
		} else {
			fx_process(t, r, 0, 0, 1 * FX_S + app);
		}
		fx_call(t, r, "MPI_Init", 0x1000, 1, 300000000, 300000000, 300000000, 0, NULL, 0);
		fx_call(t, r, "MPI_Finalize", 0x1010, 1, 50000000, 50000000, 50000000, 0, NULL, 0);
		fx_call(t, r, "MPI_Allreduce", 0x1100, 100, (4 - r) * FX_S / 2, 1000 * (r + 1),
			1000000 * (r + 1), 800, NULL, 1);
		if (r < 2)
			fx_call(t, r, "MPI_Send", 0x1200, 10, FX_S / 5, 1000000, 50000000, 1000,
				NULL, 1);
		fx_call(t, r, "MPI_Alltoallv", 0x1300, 5, FX_S / 10, 10000000, 30000000,
			r == 3 ? -1 : 500, "vector counts not read", 1);
		if (r == 2)
			fx_call(t, r, "MPI_Recv", 0x1400, 10, 0, 0, 0, -1, "status not read", 0);
	}
	if (pivot_store_batch(p, &t->b))
		goto fail;

	/* seq 3: an older report of rank 0 arriving late, and a process
	 * report with only last_seen: neither lowers nor erases anything */
	fx_init(t, 3);
	fx_call(t, 0, "MPI_Allreduce", 0x1100, 60, FX_S, 1, 1, 1, NULL, 1);
	fx_process(t, 0, 0, 0, 99 * FX_S);
	if (pivot_store_batch(p, &t->b))
		goto fail;

	if (pivot_for_each_module_to_attribute(p, fx_attribute, p) || pivot_derive_measurements(p))
		goto fail;
	free(t);
	return p;
fail:
	pivot__free(p);
	free(t);
	return NULL;
}

#endif
