/* calibration — see calibration.h: what the CPU and the network
 * measurements share. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "userspace/calibration/calibration.h"
#include "userspace/calibration/kernel_output.h"
#include "userspace/launch/tool.h"

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
	json_t *c = json_pack("{s:s, s:o, s:s, s:s, s:o, s:s}", "name", name, "value",
			      isnan(v->value) ? json_null() : json_real(v->value), "unit", unit,
			      "quality", v->quality, "reason",
			      v->reason[0] ? json_string(v->reason) : json_null(), "source",
			      "calibration");

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

int calibration_run(const char *path, char *const argv[], int timeout_ms, char *out, size_t outlen,
		    char *err, size_t errlen)
{
	struct tool_result res;
	int ret;

	out[0] = '\0';
	ret = tool_run(path, argv, timeout_ms, out, outlen, &res);
	if (ret == -ETIMEDOUT) {
		snprintf(err, errlen, "'%s' did not end within %d s", path, timeout_ms / 1000);
		return ret;
	}
	if (ret) {
		snprintf(err, errlen, "cannot run '%s': %s", path, strerror(-ret));
		return ret;
	}
	if (WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0)
		return 0;
	if (WIFEXITED(res.status))
		snprintf(err, errlen, "'%s' exited with status %d", path, WEXITSTATUS(res.status));
	else
		snprintf(err, errlen, "'%s' was killed by signal %d", path, WTERMSIG(res.status));
	return -ENOEXEC;
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
