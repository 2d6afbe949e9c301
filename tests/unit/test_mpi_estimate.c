/* test_mpi_estimate — the extrapolation of a rank probed in sampled
 * windows and its errors (userspace/agent/mpi_estimate.c), on cases
 * computed by hand (the figures are in the comments):
 *  - two windows whose call rate is the same (spread 0: the Poisson
 *    floor 1/√n), whose MPI time rate is not (a ratio estimator's
 *    spread), other ranks' traps in them (g between the own-traps and
 *    the every-rank-traps scales, half their distance systematic), and
 *    the wait on the peers' traps bounding the MPI time's error;
 *  - the bound of that wait by the windows' MPI time itself;
 *  - a site no window saw: its exact part ± g × one call;
 *  - windows that would cover more than the phase (g never below 1),
 *    no window at all (-EAGAIN), one window (the Poisson floor only).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "userspace/agent/mpi_estimate.h"

#define REL 1e-9

static void assert_rel(double got, double want)
{
	if (fabs(got - want) > REL * fabs(want) + 1e-12)
		fail_msg("got %.12g, want %.12g", got, want);
}

/* Two windows: 100 calls in 1 ms and 300 calls in 3 ms of the rank's own
 * time (w_own), 0.2 ms and 0.8 ms inside those calls; other ranks' traps
 * cost 0.25 ms in them, so w_all = 4 ms - 0.25 ms = 3.75 ms. The phase:
 * 21 ms, 1 ms of it the rank's own traps (20 ms its own time).
 *  g_own = 20 / 4 = 5, g_all = (20 - 0.25) / 3.75 = 79/15,
 *  g = (75/15 + 79/15) / 2 = 77/15, rel_sys = (4/15) / 2 / (77/15) = 2/77.
 *  call rate: 100/1 = 300/3, no spread: the Poisson floor 1/√400 = 0.05.
 *  MPI time rate r = 1/4 ms per ms: Σ(t_i - r w_i)² = 0.05² + 0.05² ms²,
 *  Var = 0.005 / (2 - 1), √(Var / 2) / (w/k = 2) / r = 0.05 / 2 / 0.25 = 0.1.
 *  wait on the peers: min(0.25, 1) / 1 = 0.25. */
static const struct mpi_windows two = {
    .k = 2,
    .n = 400,
    .w_own = 4e6,
    .w_all = 3.75e6,
    .nn = 100.0 * 100 + 300.0 * 300,
    .nw = 100 * 1e6 + 300 * 3e6,
    .ww = 1e12 + 9e12,
    .t = 1e6,
    .tt = 0.2e6 * 0.2e6 + 0.8e6 * 0.8e6,
    .tw = 0.2e6 * 1e6 + 0.8e6 * 3e6,
    .phase_ns = 21e6,
    .phase_traps_ns = 1e6,
    .others_ns = 0.25e6,
};

static void test_two_windows(void **state)
{
	struct mpi_scale s;
	double est, err;

	(void)state;
	assert_int_equal(mpi_estimate_scale(&two, &s), 0);
	assert_rel(s.g, 77.0 / 15);
	assert_rel(s.coverage, 15.0 / 77);
	assert_rel(s.rel_sys, 2.0 / 77);
	assert_rel(s.rel_rate, 0.05);
	assert_rel(s.rel_time, 0.1);
	assert_rel(s.rel_wait, 0.25);
	/* a site: 10 calls before the switch, 200 in the windows */
	mpi_estimate_total(&s, 10, 200, 200, 1, &est, &err);
	assert_rel(est, 10 + 77.0 / 15 * 200);
	assert_rel(err, 77.0 / 15 * 200 *
			    sqrt(0.05 * 0.05 + (2.0 / 77) * (2.0 / 77) + 1.0 / 200));
	/* its MPI time: 0.1 ms before, 0.5 ms in the windows, scaled by g_own
	 * (a ratio of times of the same windows: no rate systematic); the
	 * wait on the peers' traps is in its error, not in its calls' */
	assert_rel(s.g_own, 5);
	mpi_estimate_time(&s, 1e5, 5e5, 200, 2500, &est, &err);
	assert_rel(est, 1e5 + 5 * 5e5);
	assert_rel(err, 5 * 5e5 * sqrt(0.1 * 0.1 + 0.25 * 0.25 + 1.0 / 200));
	/* a site no window saw: exact ± g calls, g × its mean duration */
	mpi_estimate_total(&s, 7, 0, 0, 1, &est, &err);
	assert_rel(est, 7);
	assert_rel(err, 77.0 / 15);
	mpi_estimate_time(&s, 7000, 0, 0, 1000, &est, &err);
	assert_rel(est, 7000);
	assert_rel(err, 5 * 1000);
}

/* the peers' traps cost more than the windows' MPI time: the wait is at
 * most all of it (rel_wait 1); without other ranks, none */
static void test_wait_bound(void **state)
{
	struct mpi_windows w = two;
	struct mpi_scale s;

	(void)state;
	w.others_ns = 3e6;
	w.w_all = 1e6;
	assert_int_equal(mpi_estimate_scale(&w, &s), 0);
	assert_rel(s.rel_wait, 1);
	/* g_all = (20 - 3) / 1 = 17: g = 11, rel_sys = 6 / 11 */
	assert_rel(s.g, 11);
	assert_rel(s.rel_sys, 6.0 / 11);
	w.others_ns = 0;
	w.w_all = w.w_own;
	assert_int_equal(mpi_estimate_scale(&w, &s), 0);
	assert_rel(s.rel_wait, 0);
	assert_rel(s.rel_sys, 0);
	assert_rel(s.g, 5);
}

/* no window closed: nothing to scale by; one window: no spread to
 * measure, Poisson alone; windows longer than the phase: g = 1 */
/* the calibrated trap cost's error: the windows' own traps over their own
 * time (1 ms of 4 ms: 0.25), in both the count's and the time's error;
 * windows that were nearly all traps: capped at 1 (unknown) */
static void test_calibration_error(void **state)
{
	struct mpi_windows w = two;
	struct mpi_scale s;
	double est, err;

	(void)state;
	w.own_traps_ns = 1e6;
	assert_int_equal(mpi_estimate_scale(&w, &s), 0);
	assert_rel(s.rel_cal, 0.25);
	mpi_estimate_total(&s, 10, 200, 200, 1, &est, &err);
	assert_rel(est, 10 + 77.0 / 15 * 200);
	assert_rel(err, 77.0 / 15 * 200 *
			    sqrt(0.05 * 0.05 + (2.0 / 77) * (2.0 / 77) + 0.25 * 0.25 + 1.0 / 200));
	mpi_estimate_time(&s, 1e5, 5e5, 200, 2500, &est, &err);
	assert_rel(err, 5 * 5e5 * sqrt(0.1 * 0.1 + 0.25 * 0.25 + 0.25 * 0.25 + 1.0 / 200));
	w.own_traps_ns = 9e6;
	assert_int_equal(mpi_estimate_scale(&w, &s), 0);
	assert_rel(s.rel_cal, 1);
}

static void test_edges(void **state)
{
	struct mpi_windows w = {0};
	struct mpi_scale s;
	double est, err;

	(void)state;
	w.phase_ns = 1e6;
	assert_int_equal(mpi_estimate_scale(&w, &s), -EAGAIN);
	w = (struct mpi_windows){.k = 1, .n = 25, .w_own = 2e6, .w_all = 2e6, .nn = 625,
				 .nw = 25 * 2e6, .ww = 4e12, .t = 1e5, .tt = 1e10, .tw = 2e11,
				 .phase_ns = 10e6};
	assert_int_equal(mpi_estimate_scale(&w, &s), 0);
	assert_rel(s.g, 5);
	assert_rel(s.rel_rate, 0.2); /* 1/√25 */
	assert_rel(s.rel_time, 0.2);
	mpi_estimate_total(&s, 0, 25, 25, 1, &est, &err);
	assert_rel(est, 125);
	assert_rel(err, 125 * sqrt(0.04 + 0.04));
	w.phase_ns = 1e6; /* the windows cover more than the phase */
	assert_int_equal(mpi_estimate_scale(&w, &s), 0);
	assert_rel(s.g, 1);
	assert_rel(s.coverage, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_windows),
	    cmocka_unit_test(test_wait_bound),
	    cmocka_unit_test(test_calibration_error),
	    cmocka_unit_test(test_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
