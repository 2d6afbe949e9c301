/* mpi_estimate — see mpi_estimate.h. */
#include <errno.h>
#include <math.h>

#include "userspace/agent/mpi_estimate.h"

int mpi_estimate_scale(const struct mpi_windows *w, struct mpi_scale *s)
{
	double own_phase = w->phase_ns - w->phase_traps_ns, g_own, g_all, r, var;

	if (!w->k || w->w_own <= 0 || own_phase <= 0)
		return -EAGAIN;
	/* the windows cannot cover more than the phase */
	g_own = own_phase / w->w_own;
	if (g_own < 1)
		g_own = 1;
	g_all = w->w_all > 0 ? (own_phase - w->others_ns) / w->w_all : g_own;
	if (g_all < g_own)
		g_all = g_own;
	s->g = (g_own + g_all) / 2;
	s->coverage = 1 / s->g;
	s->rel_sys = (g_all - g_own) / 2 / s->g;
	/* Poisson: the floor */
	s->rel_rate = 1 / sqrt(w->n > 1 ? w->n : 1);
	if (w->k >= 2 && w->n > 0) {
		/* ratio estimator r = Σn / Σw: Var ≈ Σ(n_i - r w_i)² / (k (k-1) w̄²) */
		r = w->n / w->w_own;
		var = (w->nn - 2 * r * w->nw + r * r * w->ww) / (double)(w->k - 1);
		if (var > 0) {
			double w_mean = w->w_own / (double)w->k;
			double rel = sqrt(var / (double)w->k) / w_mean / r;

			if (rel > s->rel_rate)
				s->rel_rate = rel;
		}
	}
	return 0;
}

void mpi_estimate_total(const struct mpi_scale *s, double exact, double windowed,
			double windowed_calls, double unit, double *est, double *err)
{
	double rel;

	*est = exact + s->g * windowed;
	if (windowed_calls < 1) {
		*err = s->g * unit;
		return;
	}
	rel = sqrt(s->rel_rate * s->rel_rate + s->rel_sys * s->rel_sys + 1 / windowed_calls);
	*err = s->g * windowed * rel;
}
