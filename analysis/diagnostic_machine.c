/* diagnostic_machine — the Ceilings and the cores they cover, read from
 * the Machine snapshot a Run's manifest embeds (machine.ceilings[{name,
 * value|null, unit, quality, reason|null, source}], machine.allocation). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/diagnostic.h"
#include "userspace/machine/machine.h"

static const json_t *ceiling_find(const json_t *machine, const char *name)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(machine, "ceilings"), i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));

		if (n && !strcmp(n, name))
			return c;
	}
	return NULL;
}

/* name's Ceiling as an input of unit unit */
static void ceiling_read(struct derived *out, const json_t *machine, const char *name,
			 const char *unit)
{
	const json_t *c = machine ? ceiling_find(machine, name) : NULL;
	const char *q, *u, *why;
	char reason[DERIVED_REASON_MAX];
	enum quality quality;
	double value;

	if (!machine) {
		snprintf(reason, sizeof(reason), "%s: the Run has no Machine snapshot", name);
		derived_input(out, name, NAN, unit, QUALITY_UNAVAILABLE, reason);
		return;
	}
	if (!c) {
		snprintf(reason, sizeof(reason), "%s: not in the Run's Machine snapshot", name);
		derived_input(out, name, NAN, unit, QUALITY_UNAVAILABLE, reason);
		return;
	}
	q = json_string_value(json_object_get(c, "quality"));
	u = json_string_value(json_object_get(c, "unit"));
	why = json_string_value(json_object_get(c, "reason"));
	value = json_is_number(json_object_get(c, "value"))
		    ? json_number_value(json_object_get(c, "value"))
		    : NAN;
	if (quality_parse(q, &quality)) {
		snprintf(reason, sizeof(reason), "%s: quality '%s' is not a Quality", name,
			 q ? q : "(none)");
		quality = QUALITY_UNAVAILABLE;
	} else if (!u || strcmp(u, unit)) {
		snprintf(reason, sizeof(reason), "%s: unit '%s', expected '%s'", name,
			 u ? u : "(none)", unit);
		quality = QUALITY_UNAVAILABLE;
	} else if (quality != QUALITY_UNAVAILABLE && !(value > 0 && isfinite(value))) {
		snprintf(reason, sizeof(reason), "%s: no positive value in the Machine snapshot",
			 name);
		quality = QUALITY_UNAVAILABLE;
	} else if (why && why[0]) {
		snprintf(reason, sizeof(reason), "%s: %s", name, why);
	} else {
		snprintf(reason, sizeof(reason), "%s: %s without a reason", name,
			 quality_name(quality));
	}
	derived_input(out, name, value, unit, quality,
		      quality == QUALITY_MEASURED && !(why && why[0]) ? NULL : reason);
}

/* the threads the Ceilings were measured (or computed) with: the rule of
 * allocation_threads() (userspace/machine/allocation.h), min(visible cores,
 * ceil(cpu quota)), at least 1, on the snapshot's allocation */
static void cores_read(struct derived *out, const json_t *machine)
{
	int cores = machine_cores(machine);

	if (!cores)
		derived_input(out, "cores", NAN, "cores", QUALITY_UNAVAILABLE,
			      "cores: the Run's Machine snapshot does not give its allocation's "
			      "visible cores");
	else
		derived_input(out, "cores", cores, "cores", QUALITY_MEASURED, NULL);
}

void diagnostic_run_read_machine(struct diagnostic_run *run, const json_t *machine)
{
	ceiling_read(&run->flops_dp, machine, "flops_dp", "flop/s");
	ceiling_read(&run->flops_sp, machine, "flops_sp", "flop/s");
	ceiling_read(&run->dram_bandwidth, machine, "dram_bandwidth", "B/s");
	cores_read(&run->cores, machine);
}
