/* machine — see machine.h: the description of the Machine (hardware and
 * allocation shape) and the snapshot a Run embeds. The Ceilings are filled
 * by machine_ceilings.c. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "userspace/machine/allocation.h"
#include "userspace/machine/cpu_id.h"
#include "userspace/machine/machine.h"
#include "userspace/machine/machine_cache.h"
#include "userspace/machine/theory.h"

#define SYSFS_CPU "/sys/devices/system/cpu"

static json_t *number_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static json_t *simd_list(unsigned simd)
{
	json_t *list = json_array();
	unsigned bit;

	for (bit = 1; list && bit && bit <= simd; bit <<= 1)
		if ((simd & bit) && cpu_simd_name(bit))
			json_array_append_new(list, json_string(cpu_simd_name(bit)));
	return list;
}

/* {vendor, family, model, stepping, simd[]} and the frequency fields, or
 * nulls when /proc/cpuinfo is unreadable */
static json_t *cpu_fields(const struct cpu_id *id, int have)
{
	struct cpu_id rated;
	char src[160] = "";
	double hz = NAN;

	if (!have)
		return json_pack("{s:n, s:n, s:n, s:n, s:[]}", "vendor", "family", "model",
				 "stepping", "simd");
	/* rated = cpufreq maximum or the model name's "@ GHz"; never the current */
	rated = *id;
	rated.current_hz = NAN;
	if (theory_rated_hz(&rated, SYSFS_CPU, &hz, src, sizeof(src)))
		hz = NAN, src[0] = '\0';
	return json_pack("{s:s, s:i, s:i, s:i, s:o, s:o, s:s?, s:o}", "vendor", id->vendor,
			 "family", id->family, "model", id->model, "stepping", id->stepping,
			 "simd", simd_list(id->simd), "rated_hz", number_or_null(hz),
			 "rated_hz_source", src[0] ? src : NULL, "current_hz",
			 number_or_null(id->current_hz));
}

static json_t *allocation_fields(void)
{
	struct allocation a;
	json_t *mask;
	int cpu;

	if (allocation_read(&a))
		return json_pack("{s:n, s:n, s:n, s:n}", "visible_cores", "affinity_mask",
				 "cpu_quota", "memory_limit_bytes");
	mask = json_array();
	for (cpu = 0; mask && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &a.mask))
			json_array_append_new(mask, json_integer(cpu));
	return json_pack("{s:i, s:o, s:o, s:o}", "visible_cores", a.visible_cores,
			 "affinity_mask", mask ? mask : json_null(), "cpu_quota",
			 number_or_null(a.cpu_quota), "memory_limit_bytes",
			 a.memory_limit_bytes < 0 ? json_null() : json_integer(a.memory_limit_bytes));
}

/* moves cpu's frequency fields up to the machine object (the manifest's
 * shape keeps "cpu" to the identity of the processor) */
static void hoist(json_t *m, json_t *cpu, const char *key)
{
	json_t *v = json_object_get(cpu, key);

	json_object_set(m, key, v ? v : json_null());
	json_object_del(cpu, key);
}

json_t *machine_describe(void)
{
	struct utsname u;
	struct cpu_id id;
	json_t *m, *cpu;
	char *identity;
	int have = !cpu_id_read(&id);

	if (uname(&u))
		memset(&u, 0, sizeof(u));
	cpu = cpu_fields(&id, have);
	m = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:i, s:o}", "system", u.sysname, "kernel",
		      u.release, "architecture", u.machine, "cpu_model",
		      have && id.model_name[0] ? json_string(id.model_name) : json_null(),
		      "microarchitecture",
		      have && id.microarchitecture ? json_string(id.microarchitecture)
						   : json_null(),
		      "cpu", cpu ? cpu : json_null(), "logical_cores",
		      (int)sysconf(_SC_NPROCESSORS_ONLN), "allocation", allocation_fields());
	if (!m || !cpu) {
		json_decref(m);
		errno = ENOMEM;
		return NULL;
	}
	hoist(m, cpu, "rated_hz");
	hoist(m, cpu, "rated_hz_source");
	hoist(m, cpu, "current_hz");
	identity = machine_identity(m);
	if (!identity) {
		json_decref(m);
		return NULL;
	}
	json_object_set_new(m, "identity", json_string(identity));
	free(identity);
	return m;
}

json_t *machine_snapshot(void)
{
	json_t *m = machine_describe(), *ceilings;

	if (!m)
		return NULL;
	ceilings = machine_ceilings(m);
	if (ceilings && machine_apply_fitted_ceilings(m, ceilings)) {
		json_decref(ceilings);
		ceilings = NULL;
	}
	if (!ceilings) {
		json_decref(m);
		errno = ENOMEM;
		return NULL;
	}
	json_object_set_new(m, "ceilings", ceilings);
	return m;
}
