/* machine_ceilings — the Ceilings of a Machine, as machine.h says: the
 * cached measured ones, else the theory for flops, else unavailable with
 * the reason. A pure function of the machine object and the cache. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "userspace/machine/cpu_id.h"
#include "userspace/machine/machine.h"
#include "userspace/machine/machine_cache.h"
#include "userspace/machine/theory.h"

static const struct {
	const char *name, *unit;
	int flops; /* 1 dp, 2 sp, 0 no theory */
} known[] = {
	{ "flops_dp", "flop/s", 1 },	      { "flops_sp", "flop/s", 2 },
	{ "dram_bandwidth", "B/s", 0 },	      { "network_bandwidth", "B/s", 0 },
	{ "network_latency", "s", 0 },
};

json_t *machine_ceiling_new(const char *name, json_t *value, const char *unit,
			    const char *quality, const char *reason, const char *source)
{
	return json_pack("{s:s, s:o, s:s, s:s, s:s?, s:s?}", "name", name, "value",
			 value ? value : json_null(), "unit", unit, "quality", quality, "reason",
			 reason, "source", source);
}

const json_t *machine_ceiling_find(const json_t *ceilings, const char *name)
{
	const json_t *c;
	size_t i;

	json_array_foreach(ceilings, i, c)
		if (name && json_is_string(json_object_get(c, "name")) &&
		    !strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	return NULL;
}

double machine_ceiling_value(const json_t *ceilings, const char *name)
{
	const json_t *v = json_object_get(machine_ceiling_find(ceilings, name), "value");

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* a cpu_id from the machine object's fields (borrowed strings stay valid
 * while machine does) */
static void cpu_from_json(const json_t *m, struct cpu_id *id)
{
	const json_t *cpu = json_object_get(m, "cpu"), *v;
	const char *s;
	size_t i;

	memset(id, 0, sizeof(*id));
	snprintf(id->vendor, sizeof(id->vendor), "%s",
		 (s = json_string_value(json_object_get(cpu, "vendor"))) ? s : "");
	snprintf(id->model_name, sizeof(id->model_name), "%s",
		 (s = json_string_value(json_object_get(m, "cpu_model"))) ? s : "");
	id->microarchitecture = json_string_value(json_object_get(m, "microarchitecture"));
	json_array_foreach(json_object_get(cpu, "simd"), i, v)
		id->simd |= cpu_simd_from_name(json_string_value(v));
	id->rated_hz = json_is_number(json_object_get(m, "rated_hz"))
			       ? json_number_value(json_object_get(m, "rated_hz"))
			       : NAN;
	id->current_hz = json_is_number(json_object_get(m, "current_hz"))
				 ? json_number_value(json_object_get(m, "current_hz"))
				 : NAN;
}

/* see machine.h; the same rule as allocation_threads() */
int machine_cores(const json_t *m)
{
	const json_t *a = json_object_get(m, "allocation");
	const json_t *visible = json_object_get(a, "visible_cores");
	const json_t *q = json_object_get(a, "cpu_quota");
	int cores;

	if (!json_is_integer(visible) || json_integer_value(visible) < 1)
		return 0;
	cores = (int)json_integer_value(visible);
	if (json_is_number(q) && json_number_value(q) > 0 && json_number_value(q) < cores) {
		/* ceil without libm (nunatak does not link it) */
		int whole = (int)json_number_value(q);

		cores = whole < json_number_value(q) ? whole + 1 : whole;
	}
	return cores < 1 ? 1 : cores;
}

int machine_theory_flops(const json_t *m, double *dp, double *sp, char *reason, size_t len)
{
	const char *src = json_string_value(json_object_get(m, "rated_hz_source"));
	struct cpu_id id;
	char why[512];
	double hz;
	int err;

	if (!json_is_object(m) || !dp || !sp || !reason || !len)
		return -EINVAL;
	cpu_from_json(m, &id);
	if (id.rated_hz > 0) {
		hz = id.rated_hz;
	} else if (id.current_hz > 0) {
		hz = id.current_hz;
		src = "'cpu MHz' of /proc/cpuinfo: the current frequency, not the rated one";
	} else {
		snprintf(reason, len, "no theoretical peak: no frequency known");
		return -ENOENT;
	}
	err = theory_flops(&id, hz, machine_cores(m) ? machine_cores(m) : 1, dp, sp, why, sizeof(why));
	if (err)
		snprintf(reason, len, "%s", why);
	else
		snprintf(reason, len, "%s; frequency: %s", why, src ? src : "rated");
	return err;
}

/* the theory Ceiling (estimated) of precision 1 dp / 2 sp, or an unavailable
 * one saying why */
static json_t *theory_ceiling(const json_t *m, const char *name, const char *unit, int which)
{
	char why[640], reason[768];
	double dp, sp;

	if (machine_theory_flops(m, &dp, &sp, why, sizeof(why))) {
		snprintf(reason, sizeof(reason), "%s; %s", MACHINE_NOT_CALIBRATED, why);
		return machine_ceiling_new(name, NULL, unit, "unavailable", reason, NULL);
	}
	snprintf(reason, sizeof(reason), "%s; %s", why, MACHINE_NOT_CALIBRATED);
	return machine_ceiling_new(name, json_real(which == 1 ? dp : sp), unit, "estimated", reason, "theory");
}

static json_t *from_cache(json_t *c, const char *name, const char *unit)
{
	const char *quality = json_string_value(json_object_get(c, "quality"));
	json_t *value = json_object_get(c, "value");

	return machine_ceiling_new(name, json_incref(value), unit, quality ? quality : "estimated",
		       json_string_value(json_object_get(c, "reason")),
		       json_is_number(value) ? "calibration" : NULL);
}

json_t *machine_ceilings(const json_t *machine)
{
	const char *identity = json_string_value(json_object_get(machine, "identity"));
	json_t *profile = NULL, *list;
	size_t i;

	if (!json_is_object(machine)) {
		errno = EINVAL;
		return NULL;
	}
	if (identity && machine_cache_load(identity, &profile))
		profile = NULL; /* none, stale, or refused (said): not cached */
	list = json_array();
	for (i = 0; list && i < sizeof(known) / sizeof(known[0]); i++) {
		json_t *c = (json_t *)machine_ceiling_find(json_object_get(profile, "ceilings"),
							   known[i].name),
		       *out;

		if (c && json_is_number(json_object_get(c, "value")))
			out = from_cache(c, known[i].name, known[i].unit);
		else if (known[i].flops)
			out = theory_ceiling(machine, known[i].name, known[i].unit, known[i].flops);
		else if (c && json_is_string(json_object_get(c, "reason")))
			out = from_cache(c, known[i].name, known[i].unit); /* why not measured */
		else
			out = machine_ceiling_new(known[i].name, NULL, known[i].unit, "unavailable",
				      MACHINE_NOT_CALIBRATED, NULL);
		if (!out || json_array_append_new(list, out)) {
			json_decref(list);
			list = NULL;
		}
	}
	json_decref(profile);
	if (!list)
		errno = ENOMEM;
	return list;
}
