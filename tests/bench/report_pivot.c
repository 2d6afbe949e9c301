/* report_pivot — builds the pivot of a big synthetic Run through the pivot
 * API, for tests/bench/report_size.sh: RANKS rank Loci on 4 nodes, HOTSPOTS
 * functions in one module (each its own Hotspot), STACKS distinct Stacks
 * (main, then 8 to 24 frames drawn from the functions, a fixed seed), each
 * sampled on 3 ranks, and EVENTS MPI Events per rank. Attributed, its
 * Measurements derived, sealed: a finished Run's pivot.
 *
 * usage: report_pivot PATH [RANKS HOTSPOTS STACKS EVENTS]
 *        (default 64 5000 100000 2000)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/pivot/pivot.h"

#define CHUNK 5000 /* Stacks per Batch */
#define MAX_DEPTH 25

static unsigned long long rng = 88172645463325252ull;

static unsigned long long next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct big {
	size_t ranks, hotspots, stacks, events;
};

static int attribute(const struct pivot_module *m, const uint64_t *offsets, size_t n, void *arg)
{
	struct attributed_address *aa = calloc(n, sizeof(*aa));
	char (*names)[48] = calloc(n, sizeof(*names));
	size_t i;
	int err;

	if (!aa || !names)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "solver::kernel_%llu<double>",
			 (unsigned long long)(offsets[i] / 0x100));
		aa[i].address = offsets[i];
		aa[i].level = RESOLUTION_FUNCTION;
		aa[i].function = names[i];
		aa[i].function_start = offsets[i];
	}
	err = pivot_store_attribution(arg, m->id, aa, n, "done", NULL);
	free(aa);
	free(names);
	return err;
}

/* n MPI Events, every rank in turn, 1 ms apart on each */
static void add_events(Nunatak__Wire__Batch *b, const struct big *g, Nunatak__Wire__MpiEvent *ev,
		       Nunatak__Wire__MpiEvent **evp, size_t n)
{
	static const char *const names[] = {"MPI_Allreduce", "MPI_Send", "MPI_Recv", "MPI_Barrier"};
	size_t i;

	for (i = 0; i < n; i++) {
		Nunatak__Wire__MpiEvent e = NUNATAK__WIRE__MPI_EVENT__INIT;

		e.locus = (uint32_t)(i % g->ranks);
		e.function = (char *)names[i % 4];
		e.start_ns = 1000000000ull + (i / g->ranks) * 1000000ull + next() % 100000;
		e.duration_ns = 1000 + next() % 500000;
		e.has_bytes = i % 4 < 2, e.bytes = 8 * (1 + i % 1000);
		e.has_peer = i % 4 == 1 || i % 4 == 2, e.peer = (int32_t)((i + 1) % g->ranks);
		ev[i] = e;
		evp[i] = &ev[i];
	}
	b->n_mpi_events = n, b->mpi_events = evp;
}

/* one Batch: every Locus, the Stacks [first, first + n), their samples,
 * and (first Batch) the Events */
static int store_chunk(struct pivot *p, const struct big *g, size_t first, size_t n, uint64_t seq)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module mod = NUNATAK__WIRE__MODULE__INIT, *mods[1] = {&mod};
	Nunatak__Wire__Locus *loci = calloc(g->ranks, sizeof(*loci));
	Nunatak__Wire__Locus **lp = calloc(g->ranks, sizeof(*lp));
	Nunatak__Wire__Address *addrs = calloc(n * MAX_DEPTH, sizeof(*addrs));
	Nunatak__Wire__Address **ap = calloc(n * MAX_DEPTH, sizeof(*ap));
	Nunatak__Wire__Stack *stacks = calloc(n, sizeof(*stacks)), **sp = calloc(n, sizeof(*sp));
	Nunatak__Wire__SampleCount *sc = calloc(3 * n, sizeof(*sc)), **scp = calloc(3 * n, sizeof(*scp));
	size_t n_ev = seq == 1 ? g->ranks * g->events : 0;
	Nunatak__Wire__MpiEvent *ev = calloc(n_ev + 1, sizeof(*ev)), **evp = calloc(n_ev + 1, sizeof(*evp));
	static char nodes[4][8];
	size_t i, k, depth, a = 0;
	int err = -ENOMEM;

	if (!loci || !lp || !addrs || !ap || !stacks || !sp || !sc || !scp || !ev || !evp)
		goto out;
	b.run_id = "big", b.node = "node0", b.seq = seq;
	mod.identity = "b1b1b1b1", mod.path = "/opt/big/solver", mod.display_name = "solver";
	mod.has_build_id = 1;
	b.n_modules = 1, b.modules = mods;
	for (i = 0; i < g->ranks; i++) {
		Nunatak__Wire__Locus l = NUNATAK__WIRE__LOCUS__INIT;

		snprintf(nodes[i % 4], sizeof(nodes[0]), "node%zu", i % 4);
		l.node = nodes[i % 4];
		l.tgid = l.tid = (uint32_t)(1000 + i);
		l.comm = "solver";
		l.has_rank = l.has_world_size = 1;
		l.rank = (int32_t)i;
		l.world_size = (int32_t)g->ranks;
		loci[i] = l;
		lp[i] = &loci[i];
	}
	b.n_loci = g->ranks, b.loci = lp;
	for (i = 0; i < n; i++) {
		Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;

		depth = 8 + next() % 17;
		s.frames = &ap[a];
		for (k = 0; k < depth; k++, a++) {
			Nunatak__Wire__Address ad = NUNATAK__WIRE__ADDRESS__INIT;

			/* leaf first, main (function 0) at the root; the Stack's
			 * own number in its second frame keeps it distinct */
			ad.offset = k == depth - 1 ? 0x100 : k == 1 ? 0x100 * (1 + (first + i) % g->hotspots)
					   : 0x100 * (1 + next() % g->hotspots);
			if (k == 2)
				ad.offset = 0x100 * (1 + (first + i) / g->hotspots % g->hotspots);
			addrs[a] = ad;
			ap[a] = &addrs[a];
		}
		s.n_frames = depth;
		stacks[i] = s;
		sp[i] = &stacks[i];
		for (k = 0; k < 3; k++) {
			Nunatak__Wire__SampleCount c = NUNATAK__WIRE__SAMPLE_COUNT__INIT;

			c.locus = (uint32_t)((first + i + k * 7) % g->ranks);
			c.stack = (uint32_t)i;
			c.counter = "cpu-clock";
			c.sample_count = 1 + next() % 50;
			c.value = c.sample_count * 1000000ull;
			sc[3 * i + k] = c;
			scp[3 * i + k] = &sc[3 * i + k];
		}
	}
	b.n_stacks = n, b.stacks = sp, b.n_samples = 3 * n, b.samples = scp;
	add_events(&b, g, ev, evp, n_ev);
	err = pivot_store_batch(p, &b);
out:
	free(loci), free(lp), free(addrs), free(ap), free(stacks), free(sp), free(sc), free(scp);
	free(ev), free(evp);
	return err;
}

int main(int argc, char **argv)
{
	struct big g = {64, 5000, 100000, 2000};
	struct pivot *p;
	size_t first;
	int err = 0;

	if (argc != 2 && argc != 6) {
		fprintf(stderr, "usage: %s PATH [RANKS HOTSPOTS STACKS EVENTS]\n", argv[0]);
		return 2;
	}
	if (argc == 6) {
		g.ranks = strtoul(argv[2], NULL, 10), g.hotspots = strtoul(argv[3], NULL, 10);
		g.stacks = strtoul(argv[4], NULL, 10), g.events = strtoul(argv[5], NULL, 10);
	}
	if (!g.ranks || g.hotspots < 2) {
		fprintf(stderr, "report_pivot: RANKS >= 1 and HOTSPOTS >= 2\n");
		return 2;
	}
	p = pivot__create(argv[1]);
	if (!p) {
		perror("report_pivot: create");
		return 1;
	}
	for (first = 0; !err && first < g.stacks; first += CHUNK)
		err = store_chunk(p, &g, first, g.stacks - first < CHUNK ? g.stacks - first : CHUNK,
				  1 + first / CHUNK);
	err = err ?: pivot_for_each_module_to_attribute(p, attribute, p);
	err = err ?: pivot_derive_measurements(p);
	err = err ?: pivot_seal(p);
	pivot__free(p);
	if (err) {
		fprintf(stderr, "report_pivot: %s\n", strerror(-err));
		return 1;
	}
	printf("pivot: %zu ranks, %zu functions, %zu Stacks, %zu Events\n", g.ranks, g.hotspots,
	       g.stacks, g.ranks * g.events);
	return 0;
}
