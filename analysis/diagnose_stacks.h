/* diagnose_stacks — the part of a diagnosis (analysis/diagnose.h) read
 * from the Stacks rather than from the Hotspots' Measurements: each Stack
 * classified once (analysis/stack_class.h), then, over the samples of the
 * application's processes (launchers left out, as diagnose.c does):
 *  - a probe's samples are taken off the Hotspot of its leaf (and off that
 *    Hotspot's unresolved module) and summed apart; a Hotspot left with no
 *    sample is dropped from the list;
 *  - a sample inside an MPI call is added to its leaf Hotspot's split by
 *    (MPI function, call site), kept by decreasing samples.
 * Samples whose leaf has no Hotspot are in no Measurement, so in none of
 * these sums either. Used by diagnose.c only.
 */
#ifndef NUNATAK_ANALYSIS_DIAGNOSE_STACKS_H
#define NUNATAK_ANALYSIS_DIAGNOSE_STACKS_H

#include <stddef.h>
#include <stdint.h>

struct hotspot_share;
struct hotspot_mpi_call;
struct unresolved_module;
struct pivot;

struct diagnose_stacks {
	struct hotspot_share *all; /* the Hotspots collected, updated in place */
	size_t n;		   /* their number, lowered when some are dropped */
	struct unresolved_module *mods; /* their share holds the value still */
	size_t n_mods;
	uint64_t probe_samples; /* out */
	double probe_value;	/* out */
};

/* 0, -ENOMEM, or the pivot's error (st->n stays consistent either way) */
int diagnose_stacks(struct pivot *p, const char *counter, struct diagnose_stacks *st);

void diagnose_mpi_call_release(struct hotspot_mpi_call *c);

#endif
