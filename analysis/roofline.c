/* roofline — the envelope min(peak, bandwidth × intensity) and the class.
 * (No libm: nunatak does not link it; isnan/isinf are macros.) */
#include <math.h>
#include <stddef.h>

#include "analysis/roofline.h"

static int roof_valid(const struct roof *r)
{
	return r && r->peak > 0 && r->bandwidth > 0 && isfinite(r->peak) && isfinite(r->bandwidth);
}

double roofline_ridge(const struct roof *r)
{
	return roof_valid(r) ? r->peak / r->bandwidth : NAN;
}

double roofline_attainable(const struct roof *r, double intensity)
{
	if (!roof_valid(r) || isnan(intensity) || intensity < 0)
		return NAN;
	/* from the ridge on, the peak: bandwidth × intensity is never taken
	 * there, so rounding cannot lift the diagonal above the roof */
	if (intensity >= roofline_ridge(r))
		return r->peak;
	return r->bandwidth * intensity < r->peak ? r->bandwidth * intensity : r->peak;
}

double roofline_envelope_fraction(double achieved, double attainable)
{
	if (isnan(achieved) || isnan(attainable) || achieved < 0 || !(attainable > 0))
		return NAN;
	return achieved / attainable;
}

enum roofline_class roofline_classify(double imbalance, double fraction, double intensity,
				      double ridge)
{
	if (imbalance >= ROOFLINE_IMBALANCE_MIN) /* false for NAN */
		return ROOFLINE_IMBALANCE;
	if (isnan(fraction) || isnan(intensity) || isnan(ridge))
		return ROOFLINE_NO_CLASS;
	if (fraction < ROOFLINE_LATENCY_BELOW)
		return ROOFLINE_LATENCY_BOUND;
	return intensity < ridge ? ROOFLINE_MEMORY_BOUND : ROOFLINE_COMPUTE_BOUND;
}

const char *roofline_class_name(enum roofline_class c)
{
	switch (c) {
	case ROOFLINE_IMBALANCE:
		return "imbalance";
	case ROOFLINE_LATENCY_BOUND:
		return "latency-bound";
	case ROOFLINE_MEMORY_BOUND:
		return "memory-bound";
	case ROOFLINE_COMPUTE_BOUND:
		return "compute-bound";
	case ROOFLINE_NO_CLASS:
		break;
	}
	return NULL;
}
