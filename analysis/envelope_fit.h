/* envelope_fit — the tightest roofline envelope a Machine demonstrably
 * reached, from calibration rows (calibration_rows.h). Pure arithmetic over
 * rows in memory; rendering is report/fit_report.h's business.
 *
 * Per backend, in the order of first appearance, over its rows that are
 * not opaque and positively timed (measured_ms > 0):
 *  - each leg (peak FLOP/s, peak memory bandwidth B/s) is the maximum
 *    achieved count / time over the rows whose count for that leg is exact
 *    (not *_approx) and > 0; no such row: the leg is none (a 0 B/s roof
 *    would be a wall, not a bound);
 *  - single-kernel rows then respect the roofline bound max(flops/F,
 *    bytes/B) <= time by construction; a multi-kernel row (kernels > 1)
 *    runs its kernels one after the other, so its bound is the sum
 *    flops/F + bytes/B, which the maxima need not respect: both legs are
 *    raised by the smallest uniform fission slack s = max over the fully
 *    exact multi-kernel rows of (flops/F + bytes/B) / time, when s > 1
 *    (else no slack). A row with an approximate leg never forces slack.
 * Counted (the autotuner's counts, Cost_model.Calibration.fit): timed
 * (non-opaque, positively timed), opaque (excluded), flops_approx and
 * bytes_approx (timed rows skipped by that leg), multi_kernel (timed rows
 * with kernels > 1) and violations (fully exact non-opaque rows whose
 * recorded model_ms exceeds measured_ms: the model they were pruned with
 * claimed more than the Machine did); and rows, the timed rows exact on at
 * least one leg (the rows the envelope is audited on). A time is
 * measured_ms x 1e-3 s, as the autotuner computes it.
 */
#ifndef NUNATAK_ANALYSIS_ENVELOPE_FIT_H
#define NUNATAK_ANALYSIS_ENVELOPE_FIT_H

#include <stddef.h>

#include "userspace/calibration/calibration_rows.h"

/* a fitted value and the row (index into the rows given) that set it;
 * row < 0: none */
struct fit_value {
	double value;
	long row;
};

struct envelope_fit {
	const char *backend; /* borrowed from the rows */
	size_t timed, rows, opaque, flops_approx, bytes_approx, multi_kernel, violations;
	struct fit_value fission_slack, peak_flops, peak_memory_bandwidth;
};

/* The roofline bound of a row in seconds under peaks F (FLOP/s) and B
 * (B/s): max(flops/F, bytes/B) for one kernel, flops/F + bytes/B for
 * kernels > 1 (run one after the other). A count of 0 needs no peak; a
 * positive count whose peak is not > 0 and finite: NAN (no coverage). */
double envelope_bound_s(double peak_flops, double peak_bandwidth, double flops, double bytes,
			int kernels);

/* Fits every backend of rows[0..n). *fits (malloc'ed, caller frees; its
 * backends borrowed from @rows) gets one per backend in order of first
 * appearance, *nfits their count. 0, -EINVAL (NULL arguments), -ENOMEM. */
int envelope_fit(const struct calibration_row *rows, size_t n, struct envelope_fit **fits,
		 size_t *nfits);

#endif
