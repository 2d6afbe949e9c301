/* mpi_estimate — see mpi_estimate.h. */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "userspace/agent/mpi_estimate.h"

/* the relative standard error of the ratio estimator r = Σx / Σw over k
 * windows: Var ≈ Σ(x_i - r w_i)² / (k (k-1) w̄²); 0 when it cannot be
 * told (fewer than 2 windows, nothing counted) */
static double ratio_rel_error(uint64_t k, double x, double xx, double xw, double ww, double w)
{
	double r, var;

	if (k < 2 || x <= 0 || w <= 0)
		return 0;
	r = x / w;
	var = (xx - 2 * r * xw + r * r * ww) / (double)(k - 1);
	if (var <= 0)
		return 0;
	return sqrt(var / (double)k) / (w / (double)k) / r;
}

int mpi_estimate_scale(const struct mpi_windows *w, struct mpi_scale *s)
{
	double own_phase = w->phase_ns - w->phase_traps_ns, g_own, g_all;

	if (!w->k || w->w_own <= 0 || own_phase <= 0)
		return -EAGAIN;
	/* the windows cannot cover more than the phase */
	g_own = own_phase / w->w_own;
	if (g_own < 1)
		g_own = 1;
	s->g_own = g_own;
	/* a trap costing the rank twice its calibrated cost leaves the
	 * windows w_own - own_traps of own time: g (and the rates) off by
	 * that much; at most 1 (the windows were all traps: unknown) */
	s->rel_cal = w->own_traps_ns > 0 ? w->own_traps_ns / w->w_own : 0;
	if (s->rel_cal > 1)
		s->rel_cal = 1;
	if (w->w_all <= 0) {
		/* the windows held nothing but traps, the rank's and its
		 * peers': how fast it calls unprobed is not known */
		s->g = g_own;
		s->coverage = 1 / s->g;
		s->rel_sys = 1;
	} else {
		g_all = (own_phase - w->others_ns) / w->w_all;
		if (g_all < g_own)
			g_all = g_own;
		s->g = (g_own + g_all) / 2;
		s->coverage = 1 / s->g;
		s->rel_sys = (g_all - g_own) / 2 / s->g;
	}
	/* Poisson: the floor */
	s->rel_rate = ratio_rel_error(w->k, w->n, w->nn, w->nw, w->ww, w->w_own);
	if (s->rel_rate < 1 / sqrt(w->n > 1 ? w->n : 1))
		s->rel_rate = 1 / sqrt(w->n > 1 ? w->n : 1);
	s->rel_time = ratio_rel_error(w->k, w->t, w->tt, w->tw, w->ww, w->w_own);
	if (s->rel_time < s->rel_rate)
		s->rel_time = s->rel_rate;
	/* waited on the peers' traps: at most what they cost in the windows,
	 * at most the windows' MPI time */
	s->rel_wait = w->t > 0 ? (w->others_ns < w->t ? w->others_ns : w->t) / w->t : 0;
	if (s->rel_wait < 0)
		s->rel_wait = 0;
	return 0;
}

static void estimate(double g, double rel_rate, double rel_sys, double rel_cal, double rel_wait,
		     double exact,
		     double windowed, double windowed_calls, double unit, double *est,
		     double *err)
{
	double rel;

	*est = exact + g * windowed;
	if (windowed_calls < 1) {
		*err = g * unit;
		return;
	}
	rel = sqrt(rel_rate * rel_rate + rel_sys * rel_sys + rel_cal * rel_cal +
		   rel_wait * rel_wait + 1 / windowed_calls);
	*err = g * windowed * rel;
}

void mpi_estimate_total(const struct mpi_scale *s, double exact, double windowed,
			double windowed_calls, double unit, double *est, double *err)
{
	estimate(s->g, s->rel_rate, s->rel_sys, s->rel_cal, 0, exact, windowed, windowed_calls,
		 unit, est, err);
}

/* MPI time: the windows' MPI time over their own time, scaled to the
 * phase's own time (g_own): a ratio of two times measured in the same
 * windows, so the systematic term of the call rate does not apply */
void mpi_estimate_time(const struct mpi_scale *s, double exact, double windowed,
		       double windowed_calls, double unit, double *est, double *err)
{
	estimate(s->g_own ? s->g_own : s->g, s->rel_time, 0, s->rel_cal, s->rel_wait, exact,
		 windowed, windowed_calls, unit, est, err);
}
