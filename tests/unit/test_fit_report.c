/* Tests of report/fit_report: the bump (a value whose 7-digit print falls
 * below it without the bump; a sweep where the printed constant, read
 * back, is never below the fitted value and within 3e-6 of it), --margin,
 * the text's lines (counts, the binding row of each leg with its digest,
 * the slack and the row that forced it, the [ceilings] block with the
 * reason naming the files and the date, a leg that is none left out, the
 * paste note with several backends, TOML escaping), the JSON's shape
 * ({value, row} or null), and the OCANNL autotuner's report: its number
 * form (7 digits truncated, the exponent's leading zeros dropped, none for
 * e+00; a sweep where the printed bumped constant is never below the fit)
 * and its lines, exactly, on hand-computed rows. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/fit_report.h"
#include "tests/unit/calibration_rows_fixture.h"
#include "tests/unit/test_helpers.h"

static const char *const files[] = { "a.tsv", "b.tsv" };

/* the text report of rows[0..n) (margin), malloc'ed */
static char *text_of(const struct calibration_row *rows, size_t n, double margin)
{
	struct fit_report_input in = { rows, NULL, 0, files, 2, margin, "2026-12-02" };
	struct envelope_fit *fits = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	assert_int_equal(envelope_fit(rows, n, &fits, &in.nfits), 0);
	in.fits = fits;
	assert_int_equal(fit_report_text(out, &in), 0);
	fclose(out);
	free(fits);
	return text;
}

/* the value of "key = V" in text */
static double key_value(const char *text, const char *key)
{
	char pattern[64];
	const char *p;

	snprintf(pattern, sizeof(pattern), "\n%s = ", key);
	p = strstr(text, pattern);
	if (!p)
		fail_msg("no '%s' in:\n%s", key, text);
	return strtod(p + strlen(pattern), NULL);
}

static void test_bump(void **state)
{
	double v = 1.23456749e10, printed;
	char buf[64];
	uint64_t seed = 2463534242ULL;
	int i;

	(void)state;
	snprintf(buf, sizeof(buf), "%.6e", v);
	assert_true(strtod(buf, NULL) < v); /* why the bump is needed */
	snprintf(buf, sizeof(buf), "%.6e", fit_report_bumped(v, 1));
	assert_true(strtod(buf, NULL) >= v);
	for (i = 0; i < 100000; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		v = 1e9 + (double)(seed % 1000000000000ULL) * 97.0;
		snprintf(buf, sizeof(buf), "%.6e", fit_report_bumped(v, 1));
		printed = strtod(buf, NULL);
		if (!(printed >= v && printed <= v * (1 + 3e-6)))
			fail_msg("%.17g printed %s", v, buf);
	}
	assert_near(fit_report_bumped(1e10, 1.5), 1.5e10 * (1 + 2e-6), 1);
}

static void number(double v, const char *want)
{
	char buf[64];

	fit_report_ocannl_number(v, buf, sizeof(buf));
	if (strcmp(buf, want))
		fail_msg("%.17g printed '%s', not '%s'", v, buf, want);
}

static void test_ocannl_number(void **state)
{
	double v, printed;
	char buf[64];
	uint64_t seed = 88172645463325252ULL;
	int i;

	(void)state;
	number(1.23456789e10, "1.234567e+10"); /* truncated, where %.6e says 1.234568 */
	number(2.000004e12, "2.000004e+12");
	number(2.000004e9, "2.000004e+9");
	number(4.0 / 3, "1.333333");	 /* e+00: no exponent */
	number(1.9999999999, "2.000000"); /* %.9e rounds up first: 2.000000000 */
	number(7.5e-7, "7.500000e-7");
	number(3e100, "3.000000e+100");
	number(0, "0.000000");
	number(INFINITY, "inf");
	/* the bump: the printed constant is never below the fit, within 3e-6 */
	for (i = 0; i < 100000; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		v = 1e6 + (double)(seed % 1000000000000000ULL) * 13.0;
		fit_report_ocannl_number(fit_report_bumped(v, 1), buf, sizeof(buf));
		printed = strtod(buf, NULL);
		if (!(printed >= v && printed <= v * (1 + 3e-6)))
			fail_msg("%.17g printed %s", v, buf);
	}
}

/* the OCANNL report of rows[0..n) (margin), malloc'ed */
static char *ocannl_of(const struct calibration_row *rows, size_t n, double margin)
{
	struct fit_report_input in = { rows, NULL, 0, files, 2, margin, "2026-12-02" };
	struct envelope_fit *fits = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	assert_int_equal(envelope_fit(rows, n, &fits, &in.nfits), 0);
	in.fits = fits;
	assert_int_equal(fit_report_ocannl(out, &in), 0);
	fclose(out);
	free(fits);
	return text;
}

/* m: 1e10 FLOP/s (compute), 1e10 B/s (stream), a two-kernel row of 1e9
 * FLOP and 1e9 B in 150 ms: slack 4/3, both legs 1.3333e10, printed x
 * (1 + 2e-6) = 1.333336e+10; an opaque row and an untimed approximate one
 * counted as the autotuner counts them. n: one row of 5e8 B in 1 s and no
 * FLOP: no compute leg. */
static void test_ocannl_lines(void **state)
{
	struct calibration_row rows[] = {
		exact_row("m", "gemm", "c0", 100, 1e9, 0),
		exact_row("m", "", "copy", 100, 0, 1e9),
		exact_row("m", "fused", "pair", 150, 1e9, 1e9),
		exact_row("m", "x", "opaque", 1, 1e12, 1e12),
		exact_row("m", "x", "untimed", 0, 1, 1),
		exact_row("n", "scan", "s1", 1000, 0, 5e8),
	};
	char *text;

	(void)state;
	rows[2].kernels = 2;
	rows[2].digest = "f00d";
	rows[3].opaque = true;
	rows[4].flops_approx = true;
	rows[0].model_ms = 101; /* above its 100 ms: a violation */
	text = ocannl_of(rows, 6, 1);
	assert_string_equal(
		text,
		"# backend m: 3 timed rows (1 opaque excluded, 0 approx-flops / 0 approx-bytes "
		"excluded per leg, 1 multi-kernel), 1 recorded bound violation\n"
		"# fission slack 1.333333 applied to both legs, forced by multi-kernel row: "
		"fused/pair (f00d)\n"
		"# compute-leg binding row: gemm/c0 (d41d8)\n"
		"model_peak_flops=1.333336e+10\n"
		"# memory-leg binding row: copy (d41d8)\n"
		"model_peak_memory_bandwidth=1.333336e+10\n"
		"# backend n: 1 timed row (0 opaque excluded, 0 approx-flops / 0 approx-bytes "
		"excluded per leg, 0 multi-kernel), 0 recorded bound violations\n"
		"# no scoreable row constrains model_peak_flops\n"
		"# memory-leg binding row: scan/s1 (d41d8)\n"
		"model_peak_memory_bandwidth=5.000010e+8\n");
	free(text);
	/* a margin: said, then applied before the bump */
	text = ocannl_of(rows + 5, 1, 2);
	assert_non_null(strstr(text, "# constants below x 2 (nunatak fit --margin)\n"));
	assert_non_null(strstr(text, "\nmodel_peak_memory_bandwidth=1.000002e+9\n"));
	free(text);
}

static void test_text_lines(void **state)
{
	struct calibration_row rows[] = {
		exact_row("m", "compute", "threads=2", 100, 1e9, 0),
		exact_row("m", "stream", "n=8", 100, 0, 1e9),
		exact_row("m", "", "fused-7", 150, 1e9, 1e9),
		exact_row("m", "x", "opaque", 1, 1, 1),
	};
	char *text;

	(void)state;
	rows[1].digest = "beef";
	rows[2].kernels = 2;
	rows[2].digest = "cafe";
	rows[3].opaque = true;
	text = text_of(rows, 4, 1);
	assert_non_null(strstr(text, "# backend m: 3 rows used, 1 opaque excluded, 0 skipped by "
				     "peak_flops (approximate FLOP), 0 skipped by "
				     "peak_memory_bandwidth (approximate bytes), 1 multi-kernel, "
				     "0 violations (model_ms above measured_ms)\n"));
	assert_non_null(strstr(text, "# peak_flops bound by 'compute/threads=2' (digest d41d8): "
				     "1.33333333e+10 FLOP/s with the fission slack\n"));
	assert_non_null(strstr(text, "# peak_memory_bandwidth bound by 'stream/n=8' (digest "
				     "beef): 1.33333333e+10 B/s with the fission slack\n"));
	assert_non_null(strstr(text, "# fission slack 1.33333333 forced by 'fused-7' (digest "
				     "cafe): both legs raised by it\n"));
	assert_non_null(strstr(text, "\n[ceilings]\nbackend = \"m\"\npeak_flops = 1.333336e+10  "
				     "# FLOP/s\npeak_memory_bandwidth = 1.333336e+10  # B/s\n"
				     "reason = \"envelope fit of 3 rows (nunatak fit a.tsv b.tsv) "
				     "on 2026-12-02\"\n"));
	assert_null(strstr(text, "paste"));
	assert_true(key_value(text, "peak_flops") >= 1e10 * 4 / 3);
	free(text);

	/* --margin 1.1: the constants x 1.1, said */
	text = text_of(rows, 4, 1.1);
	assert_near(key_value(text, "peak_flops"), 1e10 * 4 / 3 * 1.1, 1e10 * 4 / 3 * 1.1 * 3e-6);
	assert_true(key_value(text, "peak_flops") >= 1e10 * 4 / 3 * 1.1);
	assert_non_null(strstr(text, "x 1.1 (--margin)"));
	free(text);
}

static void test_text_none_and_backends(void **state)
{
	struct calibration_row rows[] = {
		exact_row("m\"1", "fma", "a", 100, 1e9, 0),
		exact_row("other", "fma", "b", 100, 0, 0),
	};
	char *text;

	(void)state;
	rows[1].flops_approx = true;
	text = text_of(rows, 2, 1);
	assert_non_null(strstr(text, "# 2 backends: paste the [ceilings] block of this Machine's "
				     "backend"));
	assert_non_null(strstr(text, "backend = \"m\\\"1\"\npeak_flops = 1.000002e+10  # FLOP/s\n"
				     "reason = "));
	assert_non_null(strstr(text, "# peak_memory_bandwidth: none (no row with an exact, "
				     "positive byte count)\n"));
	assert_null(strstr(text, "peak_memory_bandwidth = "));
	assert_non_null(strstr(text, "# backend other: 1 rows used, 0 opaque excluded, 1 skipped "
				     "by peak_flops"));
	assert_non_null(strstr(text, "# no [ceilings] block: neither leg could be fitted\n"));
	free(text);

	text = text_of(rows, 0, 1);
	assert_string_equal(text, "# no rows: nothing to fit\n");
	free(text);
}

static void test_json(void **state)
{
	struct calibration_row rows[] = {
		exact_row("m", "compute", "t", 100, 1e9, 0),
		exact_row("m", "stream", "n", 100, 0, 1e9),
	};
	struct fit_report_input in = { rows, NULL, 0, files, 1, 2, "2026-12-02" };
	struct envelope_fit *fits = NULL;
	json_t *doc, *f, *v;

	(void)state;
	rows[0].model_ms = 200;
	assert_int_equal(envelope_fit(rows, 2, &fits, &in.nfits), 0);
	in.fits = fits;
	doc = fit_report_json(&in);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "fits")), 1);
	f = json_array_get(json_object_get(doc, "fits"), 0);
	assert_int_equal(json_object_size(f), 11);
	assert_string_equal(json_string_value(json_object_get(f, "backend")), "m");
	assert_int_equal(json_integer_value(json_object_get(f, "timed")), 2);
	assert_int_equal(json_integer_value(json_object_get(f, "rows")), 2);
	assert_int_equal(json_integer_value(json_object_get(f, "violations")), 1);
	assert_int_equal(json_integer_value(json_object_get(f, "multi_kernel")), 0);
	assert_true(json_is_integer(json_object_get(f, "opaque")));
	assert_true(json_is_integer(json_object_get(f, "flops_approx")));
	assert_true(json_is_integer(json_object_get(f, "bytes_approx")));
	assert_true(json_is_null(json_object_get(f, "fission_slack")));
	v = json_object_get(f, "peak_flops");
	assert_near(json_real_value(json_object_get(v, "value")), 2e10, 1e-3); /* x margin 2 */
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "row"), "name")),
			    "compute/t");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(v, "row"), "digest")), "d41d8");
	v = json_object_get(f, "peak_memory_bandwidth");
	assert_near(json_real_value(json_object_get(v, "value")), 2e10, 1e-3);
	json_decref(doc);
	free(fits);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bump),
		cmocka_unit_test(test_text_lines),
		cmocka_unit_test(test_text_none_and_backends),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_ocannl_number),
		cmocka_unit_test(test_ocannl_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
