/* hotspot_loci — the sampling Measurements of each Hotspot summed per
 * process, for a few counters: what a Diagnostic needs to compare Loci
 * (ranks, else processes) and to place a Hotspot on the roofline (FLOP and
 * DRAM bytes). Read from the pivot (its borrowed connection), never
 * stored.
 *
 * One row per (Hotspot, counter, process, command name): a process is a
 * (node, tgid); its rank is the rank any of its Loci carries (-1: none);
 * launcher is 1 when the command name is an MPI launcher's or one of its
 * daemons' (launcher_is_launcher_process), so callers leave it out as the
 * diagnosis does. value = Σ value of the rows (NAN when one of them has
 * none: an unavailable Measurement); quality the worst of them, reason one
 * of the worst ones' (NULL when none). Rows are ordered by Hotspot id, then
 * counter, then process, then thread: the rows of one process are
 * consecutive.
 */
#ifndef NUNATAK_ANALYSIS_HOTSPOT_LOCI_H
#define NUNATAK_ANALYSIS_HOTSPOT_LOCI_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/derived.h"

struct pivot;

struct hotspot_locus_row {
	int64_t hotspot; /* hotspots.id */
	size_t counter;	 /* index into the counters asked */
	int64_t process; /* a key of the (node, tgid): the smallest loci.id of its threads */
	int64_t thread;	 /* loci.id */
	int rank;	 /* -1: no rank */
	int launcher;
	uint64_t samples;
	double value; /* in the counter's unit; NAN when unavailable */
	enum quality quality;
	char *reason; /* NULL when none */
};

struct hotspot_loci {
	size_t n;
	struct hotspot_locus_row *rows;
};

/* counters[0..n_counters), n_counters <= 8. NULL + errno (EINVAL, ENOMEM,
 * EIO). Free with hotspot_loci__free(). */
struct hotspot_loci *hotspot_loci__new(struct pivot *p, const char *const counters[],
				       size_t n_counters);

/* the number of distinct executables among the Loci with a rank, in *n
 * (0: no rank). 0 or -EIO. */
int hotspot_loci_rank_programs(struct pivot *p, size_t *n);

/* NULL-safe */
void hotspot_loci__free(struct hotspot_loci *hl);

#endif
