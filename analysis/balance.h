/* balance — how evenly the ranks of a Run worked, and where their MPI time
 * went, computed from the pivot on demand and never stored (like a
 * Diagnostic).
 *
 * Inputs are the Locus-level MPI Measurements (app_time, mpi_time,
 * cpu_time: pivot_derive_mpi_measurements) and the mpi_calls rows.
 *
 *  - ranks[]: one row per Locus with a rank and MPI data, sorted by rank.
 *    Times in seconds; an unavailable value is NAN, never 0:
 *    outside_mpi_time = app_time - mpi_time, mpi_fraction = mpi / app,
 *    where app_time and mpi_time are without nunatak's MPI probes: their
 *    calibrated cost is subtracted where the clocks counted it
 *    (balance_probe.h, docs/mpi-probe-cost.md), so the probes move no
 *    time between MPI and outside MPI; the cost is stated per rank and
 *    for the Run (probe_cost).
 *  - run level, over the ranks whose outside_mpi_time is available:
 *    imbalance = max / mean of outside_mpi_time, efficiency = mean / max,
 *    busiest_rank its argmax (first on ties) and busiest_factor = max /
 *    mean; mpi_share = Σ mpi_time / Σ app_time. NAN (busiest_rank -1)
 *    when there is nothing to compare (no rank, or a zero mean or max);
 *    with one rank compared they are not applicable (not a measurement:
 *    a rank is not unbalanced against itself): imbalance_not_applicable
 *    says why, they are NAN, busiest_rank -1; mpi_share stays.
 *  - call_sites[]: one per (function, call site) summed over every Locus:
 *    calls, total_ns (Σ), min_ns (min), max_ns (max), mean_ns = total /
 *    calls, bytes (Σ, or unavailable with the reason of the first Locus that
 *    lacks them), cov = population std / mean of the per-rank total time over
 *    ranks[] (a rank that never called it counts as 0; NAN with a zero
 *    mean). COV compares ranks that share the call: with fewer than two
 *    ranks calling it, it is not applicable (not a measurement):
 *    cov_not_applicable says why, cov is NAN. per_rank[] is parallel to
 *    ranks[]. Sorted by total time.
 *    A site is estimated when any rank's row is (a rank probed in sampled
 *    windows, the cost budget: docs/mpi-probe-cost.md): estimate is the
 *    first such row's text (why and how), calls_error and total_ns_error
 *    one standard error, the estimated rows' combined in quadrature over
 *    the ranks (NAN when a row states none); NULL and 0 when measured.
 *  - a rank's mpi_time_error: its estimated sites' total_ns_error in
 *    quadrature (s; 0 when every site was measured, NAN when an estimated
 *    one states no error), mpi_fraction_error = mpi_time_error / app_time;
 *    the Run's mpi_share_error the ranks' in quadrature over Σ app_time.
 *    Quadrature treats the sites as independent: the part of their error
 *    their common window scale gives them is not (the extrapolation of
 *    one rank scales all its windowed sites alike).
 *  - a rank whose sites were estimated takes its MPI time from its
 *    samples when they can tell it (analysis/balance_samples.h, MAP's
 *    method): mpi_time, its error, mpi_fraction, outside_mpi_time and the
 *    run level then use that figure; the sites keep the windows'.
 *    mpi_time_method says which method gave each rank's MPI time.
 * A Run without MPI data gives n_ranks = 0 and n_call_sites = 0.
 */
#ifndef NUNATAK_ANALYSIS_BALANCE_H
#define NUNATAK_ANALYSIS_BALANCE_H

#include <stddef.h>
#include <stdint.h>

struct pivot;

/* why a call site has no COV (static strings) */
#define BALANCE_NA_ONE_RANK "the Run has one rank"
#define BALANCE_NA_ONE_CALLER "one rank calls it"

struct balance_rank {
	int rank;
	int64_t locus; /* loci.id */
	char *node;
	double app_time;	      /* s; NAN when unavailable */
	const char *app_time_quality; /* static: "measured", "estimated", "unavailable" */
	char *app_time_reason;	      /* NULL when measured */
	double mpi_time;	      /* s; NAN when unavailable */
	double mpi_fraction;	      /* mpi_time / app_time; NAN */
	double cpu_time;	      /* s; NAN when unavailable */
	double outside_mpi_time;      /* s; NAN when unavailable */
	/* its process over its lifetime (the exit's, s; NAN when
	 * unavailable): wall time, run-queue delay (runnable, waiting for a
	 * CPU), and the least share of its app window it was neither on a
	 * CPU nor waiting for one, max(wall_app_time - cpu_time - run_delay,
	 * 0) / wall_app_time (its life outside the window counted as asleep
	 * first): asleep */
	double process_wall_time, run_delay, asleep_fraction;
	/* nunatak's MPI probes (balance_probe.c, docs/mpi-probe-cost.md):
	 * app_time and mpi_time above are without them; wall_* as the clocks
	 * read them, the probes' cost included */
	double wall_app_time, wall_mpi_time; /* s; NAN when unavailable */
	int has_probe_calls;
	uint64_t probe_calls;		/* traps, nested calls included */
	double probe_cost_per_call_ns;	/* NAN: not calibrated */
	double probe_cost_s;		/* probe_calls x per call; NAN */
	double probe_cost_share;	/* probe_cost_s / wall_app_time; NAN */
	char *probe_cost_reason;	/* why not calibrated; NULL when it is */
	double probe_budget;		/* NAN: every call probed, or not recorded */
	char *probing;			/* how its calls were probed; NULL unknown */
	/* a site of it estimated (probed in sampled windows) */
	int mpi_time_estimated;
	double mpi_time_error;		/* s; 0 measured; NAN: not stated */
	double mpi_fraction_error;	/* mpi_time_error / app_time; NAN */
	/* where mpi_time comes from (analysis/balance_samples.h): static
	 * BALANCE_METHOD_*; the rank process' samples (the application's,
	 * and those inside MPI calls; has_samples 0: not read); the
	 * windows' estimate when the samples replaced it (NAN otherwise);
	 * why the samples were not used for an estimated rank (NULL) */
	const char *mpi_time_method;
	int has_samples;
	uint64_t app_samples, mpi_samples;
	double windows_mpi_time, windows_mpi_time_error;
	char *mpi_time_method_reason;
};

/* the Run's probe cost, over the ranks calibrated (ranks 0: none) */
struct balance_probe_cost {
	size_t ranks;
	uint64_t calls;
	double seconds, share; /* share of the ranks' wall app time; NAN */
	double per_call_ns_min, per_call_ns_max;
	size_t nodes; /* distinct nodes calibrated */
	char *node;   /* the node when one, else NULL */
};

struct balance_rank_calls {
	int rank;
	uint64_t calls;
	uint64_t total_ns;
};

struct balance_call_site {
	char *function;		   /* "MPI_Allreduce" */
	char *location;		   /* "file:line", "file", or "module+0x1a2b" when unresolved */
	char *file;		   /* NULL when unknown */
	int line;		   /* 0 when unknown */
	char *containing_function; /* Hotspot containing the call site; NULL */
	char *module;		   /* display name */
	uint64_t offset;	   /* module-relative */
	uint64_t calls, total_ns, min_ns, max_ns;
	double mean_ns;
	int has_bytes;
	uint64_t bytes;
	char *bytes_reason;		     /* NULL when has_bytes */
	double cov;			     /* NAN when unavailable or not applicable */
	const char *cov_not_applicable;	     /* static BALANCE_NA_*; NULL: applicable */
	struct balance_rank_calls *per_rank; /* n_ranks entries, parallel to ranks[] */
	char *estimate;			     /* NULL: measured on every rank */
	int estimate_rank;		     /* the rank whose text it is; -1 */
	double calls_error, total_ns_error;  /* one standard error; 0 measured, NAN */
};

struct balance {
	size_t n_ranks;
	struct balance_rank *ranks;
	double imbalance, efficiency, busiest_factor, mpi_share;
	double mpi_share_error; /* 0 when every rank's MPI time is measured; NAN */
	int busiest_rank;		      /* -1: none */
	const char *imbalance_not_applicable; /* static BALANCE_NA_ONE_RANK; NULL: applicable */
	size_t n_call_sites;
	struct balance_call_site *call_sites;
	struct balance_probe_cost probe_cost;
};

/* NULL + errno (EINVAL, ENOMEM, EIO). Free with balance__free(). */
struct balance *balance__new(struct pivot *p);

/* NULL-safe */
void balance__free(struct balance *b);

enum balance_order {
	BALANCE_BY_TIME,  /* total time descending */
	BALANCE_BY_BYTES, /* bytes descending, unavailable bytes last */
};

/* Sorts call_sites[] in place; ties by total time, function, location. */
void balance_sort_call_sites(struct balance *b, enum balance_order order);

#endif
