/* diagnostic — the Diagnostic of each Hotspot above the floor (GLOSSARY):
 * its share, its imbalance across Loci, its place on the roofline and its
 * class; recomputed on demand from the pivot and the Machine snapshot of
 * the Run's manifest, never stored.
 *
 * Every value is a struct derived (analysis/derived.h): unit, Quality (the
 * worst of its inputs, computed), reason, lineage, formula.
 *  - share = the Hotspot's sampled time / the Run's (cycles when only
 *    cycles were sampled), as the diagnosis computes it;
 *  - imbalance = max / min of the Hotspot's time over Loci that share one
 *    piece of work: the ranks when the Run has two or more ranks of one
 *    program (every rank sampled in the Run counts; a rank that ran none of
 *    it makes it infinite); in a Run with one rank or none, the threads of
 *    the one process that ran the Hotspot, when two or more did. A ratio
 *    of 2 or more whose busiest and least busy Loci's samples (a, b)
 *    differ by no more than 3 sqrt(a + b) (Poisson noise) is estimated
 *    (the reason says so) and gives no class. Anywhere else it is not applicable (not a
 *    measurement, not unavailable): imbalance_not_applicable says why (one
 *    of the DIAGNOSTIC_NA_* reasons), imbalance is then NAN with that
 *    reason and gives no class;
 *  - flop = flop_dp + flop_sp and dram_bytes: the Hotspot's sampling
 *    Measurements of those counters (0 when the Run sampled the counter
 *    but not in this Hotspot); a counter the Run never sampled is
 *    unavailable, with the message of the Run's Degradation
 *    `hardware-counters-unavailable`, else "no FLOP or DRAM counter was
 *    sampled in this Run" (none was), else "no <counter> counter was
 *    sampled in this Run";
 *  - dram_intensity = flop / dram_bytes (flop/B; infinite without DRAM
 *    traffic); achieved = flop / seconds (flop/s over the Hotspot's CPU
 *    time, i.e. the rate of one core running it);
 *  - attainable = min(peak, dram_bandwidth × dram_intensity) / cores: the
 *    Ceilings of the manifest (flops_dp, or flops_sp when the Hotspot did
 *    more single- than double-precision FLOP; dram_bandwidth), which cover
 *    the allocation's cores (min(visible cores, ceil(cpu quota))), per
 *    core so that they compare with achieved; the diagonal stops at the
 *    ridge (analysis/roofline.h);
 *  - envelope_fraction = achieved / attainable;
 *  - classification: analysis/roofline.h's order, with the reason (the
 *    evidence, or why there is no class).
 * A Run that sampled no FLOP counter or no DRAM counter places no Hotspot:
 * diagnostic_run.no_placement says why once (the Degradation's message
 * when the Run has one), and every placement value repeats that reason.
 */
#ifndef NUNATAK_ANALYSIS_DIAGNOSTIC_H
#define NUNATAK_ANALYSIS_DIAGNOSTIC_H

#include <stddef.h>

#include <jansson.h>

#include "analysis/derived.h"

struct diagnosis;
struct pivot;

/* the counters a placement reads (units as the pmu part writes them) */
enum diagnostic_counter {
	DIAGNOSTIC_FLOP_DP = 0, /* "flop_dp", flop */
	DIAGNOSTIC_FLOP_SP,	/* "flop_sp", flop */
	DIAGNOSTIC_DRAM_BYTES,	/* "dram_bytes", B */
	DIAGNOSTIC_N_COUNTERS,
};

#define DIAGNOSTIC_NO_COUNTER "no FLOP or DRAM counter was sampled in this Run"
#define DIAGNOSTIC_COUNTERS_DEGRADATION "hardware-counters-unavailable"

/* why a Hotspot's imbalance is not applicable (static strings) */
#define DIAGNOSTIC_NA_RANK_PROGRAMS "the ranks of the Run run different programs"
#define DIAGNOSTIC_NA_ONE_THREAD "one thread of one process ran it"
#define DIAGNOSTIC_NA_PROCESSES                                                                    \
	"processes that are not ranks of one program ran it: they do not share one piece of work"

/* What every Diagnostic of a Run shares. */
struct diagnostic_run {
	/* the Ceilings as the manifest gives them, and the cores they cover */
	struct derived flops_dp, flops_sp, dram_bandwidth, cores;
	int sampled[DIAGNOSTIC_N_COUNTERS]; /* the Run has Measurements of it */
	/* why a counter was not sampled: the Degradation's message, else
	 * DIAGNOSTIC_NO_COUNTER when none was; "" when some were (each missing
	 * one then says "no <counter> counter was sampled in this Run") */
	char no_counter_reason[DERIVED_REASON_MAX];
	int reason_is_degradation; /* no_counter_reason is the Degradation's message */
	/* "ranks" (two or more ranks of one program), "threads" (one rank or
	 * none: the threads of one process, per Hotspot); NULL: imbalance is not
	 * applicable in this Run (imbalance_not_applicable says why) or nothing
	 * was sampled */
	const char *loci;
	const char *imbalance_not_applicable; /* static DIAGNOSTIC_NA_*; NULL */
	size_t n_ranks;			      /* ranks sampled in the Run */
	/* why no Hotspot of the Run can be placed on the roofline (no FLOP or
	 * no DRAM counter was sampled); "" when placements are possible */
	char no_placement[DERIVED_REASON_MAX];
};

struct diagnostic {
	struct derived share, imbalance, dram_intensity, achieved, attainable, envelope_fraction;
	struct derived ridge;		      /* peak / dram_bandwidth (flop/B) */
	const char *imbalance_over;	      /* static: "ranks", "threads"; NULL: not applicable */
	const char *imbalance_not_applicable; /* static DIAGNOSTIC_NA_*; NULL: applicable */
	size_t n_loci;			      /* Loci compared */
	const char *peak;		      /* static: "flops_dp" or "flops_sp" */
	const char *classification;	      /* static: roofline_class_name(); NULL: no class */
	char classification_reason[DERIVED_REASON_MAX];
};

/* Reads the Ceilings and the cores from machine (the manifest's `machine`
 * object, borrowed; NULL: none) into run. Never fails: what is missing or
 * malformed is unavailable with the reason. */
void diagnostic_run_read_machine(struct diagnostic_run *run, const json_t *machine);

/* Computes d->diagnostic_run and the diagnostic of each Hotspot of d above
 * the floor (d->hotspots[0 .. n_hotspots)), from the pivot p (NULL: no
 * Measurement but the diagnosis' own) and machine (may be NULL).
 * 0, -ENOMEM, -EIO. */
int diagnostic_compute(struct diagnosis *d, struct pivot *p, const json_t *machine);

#endif
