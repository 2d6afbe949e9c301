/* diagnose — where the sampled time went, computed from the pivot.
 *
 * A diagnosis is recomputed on demand and never stored (GLOSSARY:
 * Diagnostic). It sums the sampling Measurements of each Hotspot over
 * every Locus for the time counter ("cpu-clock", ns); when a Run sampled
 * only "cycles", shares come from cycles and seconds are unavailable (NAN).
 *
 *  - share = Hotspot value / total sampled value (fraction of 1); the shares
 *    of hotspots[] and others.share add up to 1 when anything was sampled;
 *    the total is the application's: launcher processes and the samples of
 *    nunatak's own probes (each Stack classified once, analysis/stack_class.h)
 *    are left out of it and counted apart (launchers, probes); a Hotspot
 *    whose every sample was a probe's is not listed;
 *  - a Hotspot's samples inside an MPI call are split by MPI function and
 *    call site (mpi_calls), so a busy-wait in the MPI library reads as MPI
 *    time at its call site; inside_mpi sums them over the Run;
 *  - statistical floor: a Hotspot with at least DIAGNOSIS_SAMPLE_FLOOR
 *    samples is above the floor (gets a Diagnostic); the rest is also
 *    counted in others;
 *  - hotspots[] holds every Hotspot: the n_hotspots above the floor first,
 *    then the others; each part by decreasing share, ties by name, then
 *    by id;
 *  - unresolved_share: share of every Hotspot whose Resolution level is
 *    "unresolved"; unresolved_modules[] splits it by module (identity),
 *    by decreasing share.
 * Unavailable values are NAN, never 0: seconds without a time counter,
 * shares when nothing was sampled.
 *
 * Each Hotspot above the floor also gets its Diagnostic (imbalance,
 * roofline placement, class: analysis/diagnostic.h), computed against the
 * Machine snapshot given to diagnosis__new_on() (none: every Ceiling is
 * unavailable, so is every placement).
 */
#ifndef NUNATAK_ANALYSIS_DIAGNOSE_H
#define NUNATAK_ANALYSIS_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct diagnostic;
struct diagnostic_run;
struct pivot;

#define DIAGNOSIS_SAMPLE_FLOOR 30

/* one MPI call a Hotspot's samples were inside (analysis/stack_class.h) */
struct hotspot_mpi_call {
	char *function;	    /* "MPI_Send"; "" when the Stack holds no MPI function */
	char *caller;	    /* the call site's function; NULL when unknown */
	char *caller_module; /* NULL when the Stack ends inside MPI */
	char *caller_file;  /* NULL when unknown */
	int caller_line;    /* 0 when unknown */
	uint64_t samples;
	double value;
};

struct hotspot_share {
	int64_t id; /* hotspots.id */
	char *name;
	char *module;		/* display name */
	char *source_file;	/* NULL when unknown */
	char *resolution_level; /* "line", "function", "symbol", "unresolved" */
	int above_floor;	/* samples >= DIAGNOSIS_SAMPLE_FLOOR */
	uint64_t samples;
	double value;	/* Σ value in the counter's unit */
	double seconds; /* NAN when unavailable */
	double share;	/* fraction of 1 */
	struct diagnostic *diagnostic; /* above the floor; NULL below it */
	/* of its samples, those inside an MPI call, split by (MPI function,
	 * call site) by decreasing samples */
	uint64_t mpi_samples;
	double mpi_value;
	size_t n_mpi_calls;
	struct hotspot_mpi_call *mpi_calls;
	size_t unresolved_module; /* scratch: its unresolved_modules index + 1, 0: none */
};

/* the unresolved Hotspots of one module, summed */
struct unresolved_module {
	char *module;	/* display name */
	char *path;	/* the file sampled, or the pseudo module's name */
	char *identity; /* build-id, "pseudo:kernel", ... */
	uint64_t samples;
	double share; /* of the total sampled value */
};

struct diagnosis {
	const char *counter; /* static: "cpu-clock", "cycles", or NULL: nothing sampled */
	size_t n_hotspots;   /* above the floor: hotspots[0 .. n_hotspots) */
	size_t n_all;	     /* every Hotspot: hotspots[0 .. n_all) */
	struct hotspot_share *hotspots;
	struct {
		size_t hotspots; /* below the floor */
		uint64_t samples;
		double seconds; /* NAN when unavailable */
		double share;	/* 0 when none; NAN when nothing was sampled */
	} others;
	size_t total_hotspots; /* every Hotspot with samples */
	uint64_t total_samples;
	double total_value;
	double total_seconds;	 /* NAN when unavailable */
	double unresolved_share; /* NAN when nothing was sampled */
	size_t n_unresolved_modules;
	struct unresolved_module *unresolved_modules;
	/* samples of launcher processes (mpirun, orted, srun, ...): not the
	 * application's, left out of every figure above */
	struct {
		uint64_t samples;
		double value;
	} launchers;
	/* samples of nunatak's own probes (analysis/stack_class.h: the uprobe
	 * traps, its BPF programs, its trampoline): nunatak's cost, left out of
	 * every figure above; share = of the application's samples and these
	 * (NAN when nothing was sampled), seconds NAN without a time counter */
	struct {
		uint64_t samples;
		double value, seconds, share;
	} probes;
	/* the application's samples inside an MPI call (share of total_value) */
	struct {
		uint64_t samples;
		double value, seconds, share;
	} inside_mpi;
	/* what the Diagnostics share: Ceilings, Loci compared, counters */
	struct diagnostic_run *diagnostic_run;
};

/* NULL + errno (EINVAL, ENOMEM, EIO). An empty Run gives a diagnosis with
 * no hotspot and counter NULL, not an error. machine: the manifest's
 * `machine` object (borrowed, only during the call; NULL: none). Free with
 * diagnosis__free(). */
struct diagnosis *diagnosis__new_on(struct pivot *p, const json_t *machine);
/* diagnosis__new_on(p, NULL) */
struct diagnosis *diagnosis__new(struct pivot *p);

/* NULL-safe */
void diagnosis__free(struct diagnosis *d);

#endif
