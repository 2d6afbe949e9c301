/* calibration_rows_fixture — calibration rows for the tests of the fit and
 * its report: a fully exact single-kernel row, no model, not opaque, its
 * strings borrowed (never release it). Header-only, static inline. */
#ifndef NUNATAK_TESTS_CALIBRATION_ROWS_FIXTURE_H
#define NUNATAK_TESTS_CALIBRATION_ROWS_FIXTURE_H

#include <math.h>

#include "userspace/calibration/calibration_rows.h"

static inline struct calibration_row exact_row(const char *backend, const char *routine,
					       const char *label, double ms, double flops,
					       double bytes)
{
	return (struct calibration_row){ .backend = (char *)backend,
					 .digest = "d41d8",
					 .routine = (char *)routine,
					 .label = (char *)label,
					 .measured_ms = ms,
					 .model_ms = NAN,
					 .kernels = 1,
					 .flops = flops,
					 .bytes = bytes };
}

#endif
