/* Tests of analysis/roofline: the ridge, the envelope min(peak, bandwidth ×
 * intensity) on known points and its invariant over a sweep of roofs and
 * intensities (the diagonal stops at the ridge: never above the peak, the
 * peak from the ridge on, continuous and non-decreasing), the envelope
 * fraction, invalid inputs (no placement, never 0) and the order of the
 * classification (imbalance first, then latency, then the ridge's side). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/roofline.h"
#include "tests/unit/test_helpers.h"

/* the machine of the example: 8 Gflop/s, 16 GB/s → ridge 0.5 */
static const struct roof example = {8e9, 16e9};

static void test_ridge_and_envelope_points(void **state)
{
	(void)state;
	assert_near(roofline_ridge(&example), 0.5, 1e-15);
	/* on the diagonal: bandwidth × intensity */
	assert_near(roofline_attainable(&example, 0.25), 4e9, 1);
	assert_near(roofline_attainable(&example, 0.01), 1.6e8, 1);
	assert_near(roofline_attainable(&example, 0), 0, 0);
	/* at and beyond the ridge: the peak */
	assert_near(roofline_attainable(&example, 0.5), 8e9, 0);
	assert_near(roofline_attainable(&example, 4.2), 8e9, 0);
	assert_near(roofline_attainable(&example, INFINITY), 8e9, 0); /* no DRAM traffic */
	/* fraction of the envelope */
	assert_near(roofline_envelope_fraction(2e9, 4e9), 0.5, 1e-15);
	assert_near(roofline_envelope_fraction(0, 4e9), 0, 0);
}

/* invalid inputs give no placement (NAN), never a number */
static void test_invalid_is_nan(void **state)
{
	const struct roof no_peak = {0, 16e9}, no_bw = {8e9, NAN}, neg = {-1, 16e9},
			  inf = {INFINITY, 1e9};

	(void)state;
	assert_true(isnan(roofline_ridge(&no_peak)));
	assert_true(isnan(roofline_ridge(&no_bw)));
	assert_true(isnan(roofline_ridge(&neg)));
	assert_true(isnan(roofline_ridge(&inf)));
	assert_true(isnan(roofline_ridge(NULL)));
	assert_true(isnan(roofline_attainable(&no_peak, 1)));
	assert_true(isnan(roofline_attainable(&example, NAN)));
	assert_true(isnan(roofline_attainable(&example, -0.1)));
	assert_true(isnan(roofline_envelope_fraction(NAN, 1)));
	assert_true(isnan(roofline_envelope_fraction(1, NAN)));
	assert_true(isnan(roofline_envelope_fraction(1, 0)));
	assert_true(isnan(roofline_envelope_fraction(-1, 1)));
}

/* the next double above (step 1) or below (step -1) a positive x (no libm
 * here: nunatak does not link it) */
static double ulp_step(double x, int step)
{
	union {
		double d;
		uint64_t u;
	} v = {x};

	v.u = (uint64_t)((int64_t)v.u + step);
	return v.d;
}

/* the invariant over many roofs and intensities, including intensities a
 * few ulps around the ridge */
static void test_diagonal_never_crosses_the_ridge(void **state)
{
	unsigned seed = 12345;
	size_t checked = 0;
	int r, k;

	(void)state;
	for (r = 0; r < 200; r++) {
		struct roof roof = {1e8 * (1 + 1e6 * rand_r(&seed) / RAND_MAX),
				    1e8 * (1 + 1e5 * rand_r(&seed) / RAND_MAX)};
		double ridge = roofline_ridge(&roof), prev = 0, in = ridge * 1e-4;

		assert_true(ridge > 0);
		for (k = -400; k <= 400; k++, in *= 1.0232929922807541) { /* 10^0.01 */
			double at = roofline_attainable(&roof, in);

			assert_false(isnan(at));
			assert_true(at <= roof.peak); /* never above the roof */
			assert_true(at >= prev);      /* non-decreasing */
			if (in >= ridge)
				assert_true(at == roof.peak); /* flat from the ridge on */
			else
				assert_true(at == roof.bandwidth * in && at < roof.peak);
			prev = at;
			checked++;
		}
		/* around the ridge, ulp by ulp */
		for (k = -3; k <= 3; k++) {
			double near = ulp_step(ridge, k);
			double at = roofline_attainable(&roof, near);

			assert_true(at <= roof.peak);
			assert_true(k >= 0 ? at == roof.peak : at == roof.bandwidth * near);
		}
		/* continuous at the ridge */
		assert_near(roofline_attainable(&roof, ridge * (1 - 1e-12)), roof.peak,
			    roof.peak * 1e-9);
	}
	assert_int_equal(checked, 200 * 801);
}

static void test_classification_order(void **state)
{
	const double ridge = 0.5;

	(void)state;
	/* imbalance first, whatever the placement says, even without one */
	assert_int_equal(roofline_classify(2.0, 0.1, 0.1, ridge), ROOFLINE_IMBALANCE);
	assert_int_equal(roofline_classify(3.0, 0.9, 4.0, ridge), ROOFLINE_IMBALANCE);
	assert_int_equal(roofline_classify(INFINITY, NAN, NAN, NAN), ROOFLINE_IMBALANCE);
	assert_int_equal(roofline_classify(2.5, NAN, NAN, NAN), ROOFLINE_IMBALANCE);
	/* just under 2: the placement decides; latency before the ridge */
	assert_int_equal(roofline_classify(1.99, 0.49, 4.0, ridge), ROOFLINE_LATENCY_BOUND);
	assert_int_equal(roofline_classify(NAN, 0.1, 0.1, ridge), ROOFLINE_LATENCY_BOUND);
	/* 0.5 of attainable is not below 0.5: the side of the ridge */
	assert_int_equal(roofline_classify(1.0, 0.5, 0.25, ridge), ROOFLINE_MEMORY_BOUND);
	assert_int_equal(roofline_classify(1.0, 0.9, 0.5, ridge), ROOFLINE_COMPUTE_BOUND);
	assert_int_equal(roofline_classify(1.0, 0.9, INFINITY, ridge), ROOFLINE_COMPUTE_BOUND);
	/* no placement, no imbalance: no class */
	assert_int_equal(roofline_classify(1.2, NAN, 0.25, ridge), ROOFLINE_NO_CLASS);
	assert_int_equal(roofline_classify(NAN, 0.9, NAN, ridge), ROOFLINE_NO_CLASS);
	assert_int_equal(roofline_classify(NAN, 0.9, 0.25, NAN), ROOFLINE_NO_CLASS);
	assert_string_equal(roofline_class_name(ROOFLINE_IMBALANCE), "imbalance");
	assert_string_equal(roofline_class_name(ROOFLINE_LATENCY_BOUND), "latency-bound");
	assert_string_equal(roofline_class_name(ROOFLINE_MEMORY_BOUND), "memory-bound");
	assert_string_equal(roofline_class_name(ROOFLINE_COMPUTE_BOUND), "compute-bound");
	assert_null(roofline_class_name(ROOFLINE_NO_CLASS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ridge_and_envelope_points),
	    cmocka_unit_test(test_invalid_is_nan),
	    cmocka_unit_test(test_diagonal_never_crosses_the_ridge),
	    cmocka_unit_test(test_classification_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
