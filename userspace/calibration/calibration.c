/* calibration — see calibration.h: what the CPU and the network
 * measurements share. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "userspace/calibration/calibration.h"
#include "userspace/calibration/kernel_build.h"
#include "userspace/calibration/kernel_output.h"

double calibration_load_average(void)
{
	double load = NAN;
	FILE *f = fopen("/proc/loadavg", "re");

	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = NAN;
		fclose(f);
	}
	return load;
}

json_t *calibration_ceiling(const char *name, const char *unit, const struct ceiling_verdict *v)
{
	int none = isnan(v->value);
	json_t *c = json_pack("{s:s, s:o, s:s, s:s, s:o, s:o}", "name", name, "value",
			      none ? json_null() : json_real(v->value), "unit", unit, "quality",
			      v->quality, "reason", v->reason[0] ? json_string(v->reason) : json_null(),
			      "source", none ? json_null() : json_string("calibration"));

	if (!c)
		errno = ENOMEM;
	return c;
}

int calibration_unavailable(json_t *ceilings, const char *name, const char *unit,
			    const char *reason)
{
	struct ceiling_verdict v = { .value = NAN, .quality = "unavailable" };

	snprintf(v.reason, sizeof(v.reason), "%s", reason);
	return json_array_append_new(ceilings, calibration_ceiling(name, unit, &v)) ? -ENOMEM : 0;
}

int calibration_run(struct kernel_workdir *wd, const char *path, char *const argv[],
		    const char *name, int timeout_ms, char *out, size_t outlen, char *err,
		    size_t errlen)
{
	char file[NAME_MAX];
	int ret = kernel_workdir_run(wd, path, argv, name, timeout_ms, err, errlen);

	snprintf(file, sizeof(file), "%s.out", name);
	kernel_workdir_read(wd, file, out, outlen); /* what it printed, whatever happened */
	return ret;
}

int calibration_append(json_t *ceilings, const char *name, const char *unit, const char *kernel,
		       const char *output, const struct calibration_facts *facts, const char *none)
{
	struct kernel_rep reps[KERNEL_MAX_REPS];
	double values[KERNEL_MAX_REPS];
	struct calibration_facts f = *facts;
	struct ceiling_verdict v;
	int i, malformed;
	size_t used;

	f.n = kernel_output_parse(output, kernel, reps, KERNEL_MAX_REPS, &malformed);
	for (i = 0; i < f.n; i++)
		values[i] = reps[i].value;
	f.values = values;
	if (f.n && !f.simd)
		f.simd = reps[0].simd;
	pollution_judge(&f, none, &v);
	if (malformed && f.n) { /* lines we could not read: said, never guessed */
		used = strlen(v.reason);
		snprintf(v.reason + used, sizeof(v.reason) - used,
			 "%s%d unreadable line%s in the kernel's output", used ? "; " : "",
			 malformed, malformed == 1 ? "" : "s");
		v.quality = "estimated";
	}
	return json_array_append_new(ceilings, calibration_ceiling(name, unit, &v)) ? -ENOMEM : 0;
}
