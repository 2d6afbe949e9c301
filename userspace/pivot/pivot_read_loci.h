/* pivot_read_loci — the Loci of a Run, the samples of each Stack per Locus,
 * the MPI Events and the modules, as stored: what the report's flame graph (per rank),
 * its timeline and the per-rank exports (speedscope, Chrome trace, pprof
 * labels) read. Every walk stops at the first non-zero return of its
 * callback and returns it; else 0, -EINVAL, or the pivot's -errno
 * (logged). Strings are borrowed for the duration of the callback.
 */
#ifndef NUNATAK_PIVOT_READ_LOCI_H
#define NUNATAK_PIVOT_READ_LOCI_H

#include <stdint.h>

struct pivot;

/* one loci row */
struct pivot_locus {
	int64_t id;
	const char *node;
	int has_rank, rank;  /* has_rank 0: not an MPI rank (or not known) */
	int world_size;	     /* 0 when unknown */
	int64_t tgid, tid;
	const char *comm, *exe; /* NULL when unknown */
};

/* by id */
int pivot_for_each_locus(struct pivot *p, int (*cb)(const struct pivot_locus *l, void *ctx),
			 void *ctx);

/* the samples of counter one Locus took on one Stack (both flags of
 * in_kernel summed); frames: pivot_for_each_stack_total() */
struct pivot_locus_stack {
	int64_t locus, stack;
	uint64_t sample_count;
	double value; /* in the counter's unit */
};

/* by stack, then locus */
int pivot_for_each_locus_stack(struct pivot *p, const char *counter,
			       int (*cb)(const struct pivot_locus_stack *s, void *ctx), void *ctx);

/* one MPI Event (`nunatak run --mpi-events`); times on the node's
 * CLOCK_MONOTONIC, in ns */
struct pivot_event {
	int64_t id, locus;
	const char *name; /* "MPI_Allreduce" */
	int64_t start_ns, duration_ns;
	int has_bytes;
	uint64_t bytes;
	int has_peer;
	int64_t peer; /* the peer rank */
};

/* by locus, then start; a Run without Events walks none */
int pivot_for_each_event(struct pivot *p, int (*cb)(const struct pivot_event *e, void *ctx),
			 void *ctx);

/* every module of the Run (struct pivot_module of pivot.h: identity is
 * the build-id when has_build_id, else "pseudo:kernel", a path digest...),
 * by id */
struct pivot_module;
int pivot_for_each_module(struct pivot *p, int (*cb)(const struct pivot_module *m, void *ctx),
			  void *ctx);

/* the number of Events of the Run (0: none), or -errno */
int64_t pivot_event_count(struct pivot *p);

#endif
