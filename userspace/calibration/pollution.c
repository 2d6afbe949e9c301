/* pollution — see pollution.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "userspace/calibration/pollution.h"

__attribute__((format(printf, 3, 4))) static void reason_add(char *reason, size_t len,
							     const char *fmt, ...)
{
	size_t used = strlen(reason);
	va_list ap;

	if (used && used + 2 < len) {
		memcpy(reason + used, "; ", 3);
		used += 2;
	}
	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(reason + used, len - used, fmt, ap);
	va_end(ap);
}

double reps_best(const double *values, int n, int lower_is_better)
{
	double best = NAN;
	int i;

	for (i = 0; i < n; i++)
		if (isnan(best) || (lower_is_better ? values[i] < best : values[i] > best))
			best = values[i];
	return best;
}

int pollution_spread(const double *values, int n, int lower_is_better, char *reason, size_t len)
{
	double best = reps_best(values, n, lower_is_better);
	double worst = reps_best(values, n, !lower_is_better);
	double spread = fabs(worst - best) / best;

	if (n < 2 || !(spread > POLLUTION_SPREAD))
		return 0;
	reason_add(reason, len, "the repetitions spread over %.0f %% (more than %.0f %%)",
		   spread * 100, POLLUTION_SPREAD * 100);
	return 1;
}

int pollution_load(double load1, int threads, char *reason, size_t len)
{
	if (isnan(load1) || !(load1 > threads / 2.0))
		return 0;
	reason_add(reason, len,
		   "the load average was %.2f before calibration, above half the %d thread%s: "
		   "the Machine was shared",
		   load1, threads, threads == 1 ? "" : "s");
	return 1;
}

int pollution_scalar(int native, const char *simd, char *reason, size_t len)
{
	if (!native) {
		reason_add(reason, len, "a scalar build: the compiler refused -march=native");
		return 1;
	}
	if (!simd || !*simd || !strcmp(simd, "scalar")) {
		reason_add(reason, len, "a scalar build: the kernel reports no SIMD");
		return 1;
	}
	return 0;
}

int pollution_above_peak(double value, double peak, char *reason, size_t len)
{
	if (isnan(peak) || !(value > POLLUTION_PEAK_FACTOR * peak))
		return 0;
	reason_add(reason, len, "%.3g is above %.2f x the theoretical peak %.3g", value,
		   POLLUTION_PEAK_FACTOR, peak);
	return 1;
}

int pollution_reps(int n, int wanted, char *reason, size_t len)
{
	if (n >= wanted)
		return 0;
	reason_add(reason, len, "%d of %d repetitions within the budget", n, wanted);
	return 1;
}

void pollution_judge(const struct calibration_facts *f, const char *none,
		     struct ceiling_verdict *out)
{
	int polluted = 0;

	out->reason[0] = '\0';
	if (f->n < 1) {
		out->value = NAN;
		out->quality = "unavailable";
		snprintf(out->reason, sizeof(out->reason), "%s", none ? none : "no repetition");
		return;
	}
	out->value = reps_best(f->values, f->n, f->lower_is_better);
	polluted |= pollution_reps(f->n, f->reps_wanted, out->reason, sizeof(out->reason));
	polluted |= pollution_spread(f->values, f->n, f->lower_is_better, out->reason,
				     sizeof(out->reason));
	polluted |= pollution_load(f->load1, f->threads, out->reason, sizeof(out->reason));
	if (f->check_simd)
		polluted |= pollution_scalar(f->native, f->simd, out->reason, sizeof(out->reason));
	polluted |= pollution_above_peak(out->value, f->peak, out->reason, sizeof(out->reason));
	if (f->downgrade) {
		reason_add(out->reason, sizeof(out->reason), "%s", f->downgrade);
		polluted = 1;
	}
	out->quality = polluted ? "estimated" : "measured";
}
