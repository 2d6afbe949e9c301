/* fit_report — what `nunatak fit` prints of envelope fits
 * (analysis/envelope_fit.h).
 *
 * Text: per backend, '#' comment lines (the counts, the binding row of
 * each leg — its name and digest — and the fission slack with the row that
 * forced it), then a block a nunatak.toml takes as it is (config.h,
 * [ceilings]):
 *
 *   [ceilings]
 *   backend = "<backend>"
 *   peak_flops = 1.234567e+11  # FLOP/s
 *   peak_memory_bandwidth = 2.345678e+10  # B/s
 *   reason = "envelope fit of N rows (nunatak fit FILES) on YYYY-MM-DD"
 *
 * Each printed constant is the fitted value x (1 + FIT_REPORT_BUMP) x
 * margin, printed with 7 significant digits: the bump (2e-6) is above the
 * largest relative change that printing makes (5e-7), so the printed value
 * never lands below the implied minimum. A leg that is none is a comment,
 * not a key; a backend with no leg has no block. With several backends,
 * several blocks: the text says to paste the Machine's own.
 *
 * OCANNL: what the autotuner's own fit report prints
 * (Cost_model.Calibration.report), per backend in order, line for line:
 *
 *   # backend B: N timed row(s) (O opaque excluded, F approx-flops / Y
 *     approx-bytes excluded per leg, K multi-kernel), V recorded bound
 *     violation(s)                                      (one line)
 *   # fission slack S applied to both legs, forced by multi-kernel row: W
 *   # compute-leg binding row: W
 *   model_peak_flops=C
 *   # memory-leg binding row: W
 *   model_peak_memory_bandwidth=C
 *
 * the slack line only when there is one, "# no scoreable row constrains
 * KEY" for a leg that is none; W is "routine/label (digest)". C is the fit
 * x (1 + FIT_REPORT_BUMP) (x margin, with a "# constants below x M" line
 * when it is not 1) in the autotuner's number form
 * (fit_report_ocannl_number); S is not bumped.
 *
 * JSON: {fits: [{backend, timed, rows, opaque, flops_approx, bytes_approx,
 * multi_kernel, violations, fission_slack, peak_flops,
 * peak_memory_bandwidth}]}, the last three {value, row: {name, digest}}
 * or null; peak values x margin, not bumped (JSON keeps every digit).
 */
#ifndef NUNATAK_REPORT_FIT_REPORT_H
#define NUNATAK_REPORT_FIT_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "analysis/envelope_fit.h"

#define FIT_REPORT_BUMP 2e-6
#define FIT_REPORT_OCANNL_PREC 6

struct fit_report_input {
	const struct calibration_row *rows; /* what the fits' row indexes point into */
	const struct envelope_fit *fits;
	size_t nfits;
	const char *const *files; /* the row files, as given, for the reason */
	size_t nfiles;
	double margin; /* >= 1 */
	const char *date; /* "YYYY-MM-DD" */
};

/* the constant a report prints for a fitted value: value x (1 + bump) x margin */
double fit_report_bumped(double value, double margin);

/* The text above on @out. 0, -EIO (a write failed), -ENOMEM. */
int fit_report_text(FILE *out, const struct fit_report_input *in);

/* The OCANNL lines above on @out. 0, -EIO (a write failed). */
int fit_report_ocannl(FILE *out, const struct fit_report_input *in);

/* @v as the autotuner prints a constant: printf's "%.9e" with its last 3
 * digits dropped (7 significant digits, truncated: hence the bump), the
 * exponent without leading zeros ("e+9", "e-7"), none for e+00
 * ("1.333333"); inf and nan as printf writes them. */
void fit_report_ocannl_number(double v, char *buf, size_t len);

/* The JSON above, a new reference; NULL + errno (ENOMEM). */
json_t *fit_report_json(const struct fit_report_input *in);

#endif
