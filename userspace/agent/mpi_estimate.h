/* mpi_estimate — the totals of a rank probed in sampled windows (the cost
 * budget, mpi_budget.h), extrapolated, with one standard error. Plain
 * arithmetic, no kernel: tests/unit/test_mpi_estimate.c.
 *
 * A window's length counts in the rank's own time: the traps the window
 * cost the rank (calls × the cost of one probed call) are removed from it,
 * since a probed window runs slower than the rank does unprobed. A rank
 * that waits on another rank's traps (a ping-pong inside a window runs at
 * the traps' pace) loses more than its own traps: between "only its own
 * traps slowed it" and "every probed rank's traps on the node slowed it",
 * the truth is not known. The scale is the middle of the two and half
 * their distance is a systematic error, added to the statistical one (the
 * spread of the per-window rates, a ratio estimator; Poisson when there
 * are few windows or calls). Ranks on other nodes are not seen: a
 * ping-pong between nodes is underestimated beyond its stated error
 * (docs/mpi-probe-cost.md).
 *
 * MPI time has one more systematic error: inside a window the rank waits
 * in MPI for its peers' traps, so the windows' MPI time is inflated by at
 * most what the other probed ranks' traps cost during them (others_ns),
 * and by no more than the windows' MPI time itself. rel_wait is that
 * bound relative to the windows' MPI time; an extrapolated MPI time states
 * it (± g × windowed ns × rel_wait, in quadrature with the rest). The
 * estimate is not moved: an --mpi-exact Run's MPI time holds the same
 * waits, so the two stay comparable; the bound says how much of it may be
 * nunatak's.
 */
#ifndef NUNATAK_AGENT_MPI_ESTIMATE_H
#define NUNATAK_AGENT_MPI_ESTIMATE_H

#include <stdint.h>

/* what the windows of one rank saw, since every-call probing stopped */
struct mpi_windows {
	uint64_t k;		/* windows */
	double n;		/* Σ calls counted in them (MPI_WINDOWED) */
	double w_own;		/* Σ their length minus the rank's own traps, ns */
	double w_all;		/* Σ their length minus every probed rank's traps, ns */
	double nn, nw, ww;	/* Σ n_i², n_i w_i, w_i² (own lengths): the spread */
	double t, tt, tw;	/* Σ t_i, t_i², t_i w_i: the ns inside the calls counted */
	double phase_ns;	/* the rank's wall time since every-call probing stopped */
	double phase_traps_ns;	/* what its own traps cost it since then */
	double others_ns;	/* Σ what other ranks' traps cost inside its windows */
	double own_traps_ns;	/* Σ what its own traps cost inside its windows */
};

struct mpi_scale {
	double g;	 /* a windowed count times g estimates the phase's count */
	double g_own;	 /* a windowed MPI time times g_own estimates the phase's:
			  * the windows' share of MPI in the rank's own time (its
			  * traps removed), which its peers' traps do not bias
			  * the way they bias its call rate */
	double coverage; /* share of the rank's own time the windows covered (1 / g) */
	double rel_rate; /* relative standard error of the rank's call rate */
	double rel_time; /* the same of its rate of MPI time */
	double rel_sys;	 /* relative systematic error (who waited on whose traps) */
	double rel_cal;	 /* relative error from the calibrated cost of a trap: the
			  * windows' own time is their length less their traps at
			  * that cost; a trap that costs the rank twice it (a
			  * contended CPU) shrinks it by the traps' cost again */
	double rel_wait; /* MPI time only: the bound of the windows' MPI time spent
			  * waiting on other ranks' traps, relative to it (0..1) */
};

/* 0 and *s, or -EAGAIN when no window has closed with any length */
int mpi_estimate_scale(const struct mpi_windows *w, struct mpi_scale *s);

/* One total of a site: exact (counted while every call was probed) plus
 * windowed (counted in windows, from windowed_calls calls), extrapolated:
 * *est and one standard error *err. unit: what one unseen call adds to
 * the total (1 for calls, a mean duration for ns): a site no window saw
 * may still have had calls, about g of them. */
void mpi_estimate_total(const struct mpi_scale *s, double exact, double windowed,
			double windowed_calls, double unit, double *est, double *err);
/* the same for a total of ns: the spread of the time rate, and the wait
 * on other ranks' traps (rel_wait) */
void mpi_estimate_time(const struct mpi_scale *s, double exact, double windowed,
		       double windowed_calls, double unit, double *est, double *err);

#endif
