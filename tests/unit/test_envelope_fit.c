/* Tests of analysis/envelope_fit on hand-computed cases: single-kernel
 * rows (each leg the best exact rate, and the row that set it), a
 * compute-bound + a bandwidth-bound row with a multi-kernel row that
 * forces the fission slack (4/3, after which its bound equals its time),
 * the same row with an approximate leg forcing nothing, violations (only
 * fully exact, non-opaque rows with model_ms above measured_ms), opaque
 * rows excluded even when they are the fastest, rows not positively timed
 * or approximate on both legs unused (an untimed row counted nowhere but
 * in violations, as the autotuner counts), and backends kept apart in the
 * order of their first appearance. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/envelope_fit.h"
#include "tests/unit/calibration_rows_fixture.h"
#include "tests/unit/test_helpers.h"

/* a fully exact single-kernel row of no routine */
static struct calibration_row row(const char *backend, const char *label, double ms, double flops,
				  double bytes)
{
	return exact_row(backend, "", label, ms, flops, bytes);
}

static struct envelope_fit *fit(const struct calibration_row *rows, size_t n, size_t want)
{
	struct envelope_fit *fits = NULL;
	size_t nfits = 0;

	assert_int_equal(envelope_fit(rows, n, &fits, &nfits), 0);
	assert_int_equal(nfits, want);
	return fits;
}

static void test_single_kernel_rows(void **state)
{
	struct calibration_row rows[] = {
		row("m", "fma-a", 100, 2e9, 0),	  /* 2e10 FLOP/s */
		row("m", "triad", 100, 1e8, 1.2e9), /* 1e9 FLOP/s, 1.2e10 B/s */
		row("m", "fma-b", 200, 3e9, 0),	  /* 1.5e10 FLOP/s */
		row("m", "idle", 0, 5e9, 5e9),	  /* not positively timed: unused */
	};
	struct envelope_fit *f;

	(void)state;
	rows[3].flops_approx = true; /* untimed: counted nowhere, as the autotuner counts */
	rows[3].kernels = 2;
	f = fit(rows, 4, 1);
	assert_string_equal(f->backend, "m");
	assert_int_equal(f->timed, 3);
	assert_int_equal(f->flops_approx, 0);
	assert_near(f->peak_flops.value, 2e10, 1e-3);
	assert_int_equal(f->peak_flops.row, 0);
	assert_near(f->peak_memory_bandwidth.value, 1.2e10, 1e-3);
	assert_int_equal(f->peak_memory_bandwidth.row, 1);
	assert_int_equal(f->fission_slack.row, -1);
	assert_true(isnan(f->fission_slack.value));
	assert_int_equal(f->rows, 3);
	assert_int_equal(f->multi_kernel, 0);
	assert_int_equal(f->violations, 0);
	free(f);
}

/* F = 1e10 (compute-bound row), B = 1e10 (bandwidth-bound row); the
 * two-kernel row does 1e9 FLOP and 1e9 B in 150 ms: 0.1 s + 0.1 s under
 * the maxima, above its 0.15 s, so s = 0.2 / 0.15 = 4/3 */
static void slack_rows(struct calibration_row rows[3])
{
	rows[0] = row("m", "compute", 100, 1e9, 0);
	rows[1] = row("m", "stream", 100, 0, 1e9);
	rows[2] = row("m", "fused", 150, 1e9, 1e9);
	rows[2].kernels = 2;
}

static void test_multi_kernel_forces_slack(void **state)
{
	struct calibration_row rows[3];
	struct envelope_fit *f;

	(void)state;
	slack_rows(rows);
	f = fit(rows, 3, 1);
	assert_near(f->fission_slack.value, 4.0 / 3, 1e-12);
	assert_int_equal(f->fission_slack.row, 2);
	assert_near(f->peak_flops.value, 1e10 * 4 / 3, 1e-2);
	assert_int_equal(f->peak_flops.row, 0);
	assert_near(f->peak_memory_bandwidth.value, 1e10 * 4 / 3, 1e-2);
	assert_int_equal(f->peak_memory_bandwidth.row, 1);
	assert_int_equal(f->multi_kernel, 1);
	assert_int_equal(f->rows, 3);
	/* the fused row's bound is now its time: the smallest slack */
	assert_near(1e9 / f->peak_flops.value + 1e9 / f->peak_memory_bandwidth.value, 0.150,
		    1e-12);
	free(f);

	/* within the maxima (0.2 s <= 0.25 s): no slack */
	rows[2].measured_ms = 250;
	f = fit(rows, 3, 1);
	assert_int_equal(f->fission_slack.row, -1);
	assert_near(f->peak_flops.value, 1e10, 1e-3);
	free(f);
}

static void test_approximate_leg_forces_no_slack(void **state)
{
	struct calibration_row rows[3];
	struct envelope_fit *f;

	(void)state;
	slack_rows(rows);
	rows[2].bytes_approx = true;
	f = fit(rows, 3, 1);
	assert_int_equal(f->fission_slack.row, -1);
	assert_near(f->peak_flops.value, 1e10, 1e-3);
	assert_near(f->peak_memory_bandwidth.value, 1e10, 1e-3);
	assert_int_equal(f->bytes_approx, 1);
	assert_int_equal(f->flops_approx, 0);
	assert_int_equal(f->multi_kernel, 1);
	assert_int_equal(f->rows, 3); /* its exact FLOP count is still used */
	free(f);

	/* an approximate count never sets its leg, even when it is the highest */
	rows[2] = row("m", "guess", 10, 1e12, 0);
	rows[2].flops_approx = true;
	f = fit(rows, 3, 1);
	assert_int_equal(f->peak_flops.row, 0);
	assert_int_equal(f->flops_approx, 1);
	assert_int_equal(f->rows, 3); /* its exact 0 B is still audited */
	free(f);
	rows[2].bytes_approx = true; /* approximate on both legs: unused */
	f = fit(rows, 3, 1);
	assert_int_equal(f->rows, 2);
	free(f);
}

static void test_violations(void **state)
{
	struct calibration_row rows[] = {
		row("m", "a", 100, 1e9, 1e9), row("m", "b", 100, 1e9, 1e9),
		row("m", "c", 100, 1e9, 1e9), row("m", "d", 100, 1e9, 1e9),
		row("m", "e", 100, 1e9, 1e9),
	};
	struct envelope_fit *f;

	(void)state;
	rows[0].model_ms = 120;	 /* a violation */
	rows[1].model_ms = 100;	 /* equal: none */
	rows[2].model_ms = 130;	 /* approximate: cannot be audited */
	rows[2].flops_approx = true;
	rows[3].model_ms = 140;	 /* opaque: excluded */
	rows[3].opaque = true;
	rows[4].model_ms = 99.9; /* below: none */
	f = fit(rows, 5, 1);
	assert_int_equal(f->violations, 1);
	assert_int_equal(f->opaque, 1);
	free(f);
}

static void test_opaque_rows(void **state)
{
	struct calibration_row rows[] = {
		row("m", "fast", 1, 1e12, 1e12),
		row("m", "real", 100, 1e9, 2e9),
	};
	struct envelope_fit *f;

	(void)state;
	rows[0].opaque = true;
	rows[0].kernels = 3;
	f = fit(rows, 2, 1);
	assert_int_equal(f->peak_flops.row, 1);
	assert_near(f->peak_flops.value, 1e10, 1e-3);
	assert_near(f->peak_memory_bandwidth.value, 2e10, 1e-3);
	assert_int_equal(f->opaque, 1);
	assert_int_equal(f->rows, 1);
	assert_int_equal(f->multi_kernel, 0); /* an opaque row is not counted elsewhere */
	free(f);

	/* only opaque rows: both legs none */
	f = fit(rows, 1, 1);
	assert_int_equal(f->peak_flops.row, -1);
	assert_int_equal(f->peak_memory_bandwidth.row, -1);
	assert_int_equal(f->rows, 0);
	free(f);
}

static void test_backends_in_order(void **state)
{
	struct calibration_row rows[] = {
		row("zeta", "z1", 100, 1e9, 0), row("alpha", "a1", 100, 4e9, 0),
		row("zeta", "z2", 100, 3e9, 0), row("mid", "m1", 100, 0, 5e9),
		row("alpha", "a2", 100, 2e9, 0),
	};
	struct envelope_fit *f = fit(rows, 5, 3);

	(void)state;
	assert_string_equal(f[0].backend, "zeta");
	assert_string_equal(f[1].backend, "alpha");
	assert_string_equal(f[2].backend, "mid");
	assert_int_equal(f[0].peak_flops.row, 2);
	assert_near(f[0].peak_flops.value, 3e10, 1e-3);
	assert_int_equal(f[1].peak_flops.row, 1);
	assert_int_equal(f[0].rows, 2);
	assert_int_equal(f[1].rows, 2);
	assert_int_equal(f[2].rows, 1);
	assert_int_equal(f[2].peak_flops.row, -1); /* no positive exact FLOP count */
	assert_int_equal(f[0].peak_memory_bandwidth.row, -1);
	assert_near(f[2].peak_memory_bandwidth.value, 5e10, 1e-3);
	free(f);

	/* no rows: no fits */
	f = fit(NULL, 0, 0);
	free(f);
	assert_int_equal(envelope_fit(rows, 5, NULL, NULL), -EINVAL);
}

/* the bound calibrate records as model_ms and the slack uses */
static void test_bound(void **state)
{
	(void)state;
	assert_near(envelope_bound_s(1e10, 1e10, 1e9, 2e9, 1), 0.2, 1e-15); /* max */
	assert_near(envelope_bound_s(1e10, 1e10, 1e9, 2e9, 2), 0.3, 1e-15); /* sum */
	assert_near(envelope_bound_s(1e10, NAN, 1e9, 0, 1), 0.1, 1e-15);   /* no bytes: no B */
	assert_true(isnan(envelope_bound_s(1e10, NAN, 1e9, 1, 1)));	    /* B needed */
	assert_true(isnan(envelope_bound_s(0, 1e10, 1, 1e9, 1)));
	assert_true(isnan(envelope_bound_s(NAN, 1e10, 1, 1e9, 2)));
	assert_near(envelope_bound_s(NAN, NAN, 0, 0, 1), 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_kernel_rows),
		cmocka_unit_test(test_multi_kernel_forces_slack),
		cmocka_unit_test(test_approximate_leg_forces_no_slack),
		cmocka_unit_test(test_violations),
		cmocka_unit_test(test_opaque_rows),
		cmocka_unit_test(test_backends_in_order),
		cmocka_unit_test(test_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
