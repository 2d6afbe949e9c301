/* pollution — what makes a calibrated Ceiling less than `measured`: pure
 * functions of the repetitions and of the facts around them, so that each
 * rule is tested alone.
 *
 * A Ceiling is the best of its repetitions (the maximum of a rate, the
 * minimum of a latency), never their mean: every disturbance (another
 * process, a frequency dip, an interrupt) only makes a repetition worse,
 * so the best one is the closest to what the Machine reaches. Pollution
 * downgrades the Ceiling to `estimated` with the reason; it never discards
 * the value. The rules:
 *   - spread: (worst - best) / best over the repetitions above 10 %;
 *   - load: the 1-minute load average before calibration above half the
 *     threads (others were running: the Machine was shared);
 *   - scalar: the kernel was built without SIMD (-march=native refused, or
 *     the kernel itself says "scalar");
 *   - peak: a value above 1.25 x the theoretical peak (theory.h) is not
 *     believable as such (a clock, a count or a table is wrong);
 *   - fewer repetitions than asked (the budget ran out).
 * No repetition at all: `unavailable`, with the caller's reason.
 */
#ifndef NUNATAK_CALIBRATION_POLLUTION_H
#define NUNATAK_CALIBRATION_POLLUTION_H

#include <stddef.h>

#define POLLUTION_SPREAD 0.10
#define POLLUTION_PEAK_FACTOR 1.25

/* Each rule: 1 when it applies, its reason appended to @reason ("; "
 * between reasons, truncated to @len), 0 when it does not. */
int pollution_spread(const double *values, int n, int lower_is_better, char *reason, size_t len);
/* load1 NAN (unreadable): 0, nothing to say */
int pollution_load(double load1, int threads, char *reason, size_t len);
/* native: 1 when -march=native was accepted; simd as the kernel printed it */
int pollution_scalar(int native, const char *simd, char *reason, size_t len);
/* peak NAN (no theoretical peak): 0 */
int pollution_above_peak(double value, double peak, char *reason, size_t len);
int pollution_reps(int n, int wanted, char *reason, size_t len);

/* the best of @n values: max, or min when lower_is_better; NAN when n < 1 */
double reps_best(const double *values, int n, int lower_is_better);

/* Everything known about one calibrated Ceiling. */
struct calibration_facts {
	const double *values; /* the repetitions' values */
	int n, reps_wanted;
	int lower_is_better; /* a latency */
	double load1;	     /* NAN: not a CPU kernel, or unreadable */
	int threads;
	int check_simd;	     /* 0: a kernel whose SIMD does not matter (MPI) */
	int native;
	const char *simd;
	double peak; /* NAN: none */
	const char *downgrade; /* another reason to downgrade (the caller's), or NULL */
};

struct ceiling_verdict {
	double value;	     /* NAN when unavailable */
	const char *quality; /* static: "measured", "estimated", "unavailable" */
	char reason[512];    /* "" when measured */
};

/* Applies every rule. @none says why when there is no repetition. */
void pollution_judge(const struct calibration_facts *f, const char *none,
		     struct ceiling_verdict *out);

#endif
