/* roofline — where a Hotspot sits against the Machine's Ceilings, and its
 * class (DESIGN.md section 9). Pure arithmetic on plain numbers; Quality
 * and lineage are analysis/derived.h's business.
 *
 * A roof is a compute peak (flop/s) and a memory bandwidth (B/s), both > 0.
 *  - ridge = peak / bandwidth (flop/B): where the diagonal meets the flat
 *    roof;
 *  - attainable(I) = min(peak, bandwidth × I) for a DRAM intensity I >= 0
 *    (flop/B; +inf: no DRAM traffic): the diagonal bandwidth × I below the
 *    ridge, the peak from the ridge on — the diagonal stops at the ridge,
 *    it never rises above the peak;
 *  - envelope fraction = achieved / attainable.
 * Invalid arguments (NAN, a negative intensity, a roof that is not > 0)
 * give NAN: no placement.
 *
 * Classification, in this order:
 *  1. imbalance (max/min of the time across Loci) >= ROOFLINE_IMBALANCE_MIN
 *     → "imbalance" (needs no placement);
 *  2. no placement (fraction, intensity or ridge NAN) → no class;
 *  3. fraction < ROOFLINE_LATENCY_BELOW → "latency-bound";
 *  4. intensity < ridge → "memory-bound", else "compute-bound".
 */
#ifndef NUNATAK_ANALYSIS_ROOFLINE_H
#define NUNATAK_ANALYSIS_ROOFLINE_H

#define ROOFLINE_IMBALANCE_MIN 2.0
#define ROOFLINE_LATENCY_BELOW 0.5

struct roof {
	double peak;	  /* flop/s */
	double bandwidth; /* B/s */
};

enum roofline_class {
	ROOFLINE_NO_CLASS = 0,
	ROOFLINE_IMBALANCE,
	ROOFLINE_LATENCY_BOUND,
	ROOFLINE_MEMORY_BOUND,
	ROOFLINE_COMPUTE_BOUND,
};

/* flop/B; NAN for an invalid roof */
double roofline_ridge(const struct roof *r);
/* flop/s; NAN for an invalid roof or intensity */
double roofline_attainable(const struct roof *r, double intensity);
/* achieved / attainable; NAN when either is NAN, attainable <= 0 or
 * achieved < 0 */
double roofline_envelope_fraction(double achieved, double attainable);
/* imbalance may be NAN (unavailable) or +inf */
enum roofline_class roofline_classify(double imbalance, double fraction, double intensity,
				      double ridge);
/* "imbalance", "latency-bound", "memory-bound", "compute-bound"; NULL for
 * ROOFLINE_NO_CLASS */
const char *roofline_class_name(enum roofline_class c);

#endif
