/* derived — Quality, reason and lineage of derived values, computed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/derived.h"

static const char *const quality_names[] = {
    [QUALITY_MEASURED] = "measured",
    [QUALITY_ESTIMATED] = "estimated",
    [QUALITY_UNAVAILABLE] = "unavailable",
};

const char *quality_name(enum quality q)
{
	if ((unsigned)q > QUALITY_UNAVAILABLE)
		return quality_names[QUALITY_UNAVAILABLE];
	return quality_names[q];
}

int quality_parse(const char *text, enum quality *q)
{
	size_t i;

	if (!text || !q)
		return -EINVAL;
	for (i = 0; i < sizeof(quality_names) / sizeof(quality_names[0]); i++)
		if (!strcmp(text, quality_names[i])) {
			*q = (enum quality)i;
			return 0;
		}
	return -EINVAL;
}

enum quality quality_worst(enum quality a, enum quality b)
{
	return a > b ? a : b;
}

static void set_reason(struct derived *out, const char *reason)
{
	snprintf(out->reason, sizeof(out->reason), "%s", reason ? reason : "");
}

void derived_input(struct derived *out, const char *name, double value, const char *unit,
		   enum quality quality, const char *reason)
{
	memset(out, 0, sizeof(*out));
	out->name = name;
	out->unit = unit;
	out->quality = isnan(value) ? QUALITY_UNAVAILABLE : quality;
	out->value = out->quality == QUALITY_UNAVAILABLE ? NAN : value;
	if (out->quality != QUALITY_MEASURED && (!reason || !reason[0]))
		reason = "no reason given";
	set_reason(out, reason);
}

void derived_combine(struct derived *out, const char *name, const char *unit, const char *formula,
		     const struct derived *const inputs[], size_t n, double value,
		     const char *not_finite)
{
	const struct derived *worst = NULL;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->name = name;
	out->unit = unit;
	out->formula = formula;
	out->quality = QUALITY_MEASURED;
	if (n > DERIVED_LINEAGE_MAX)
		n = DERIVED_LINEAGE_MAX;
	for (i = 0; i < n; i++) {
		out->lineage[out->n_lineage++] = inputs[i]->name;
		if (inputs[i]->quality > out->quality) {
			out->quality = inputs[i]->quality;
			worst = inputs[i];
		}
	}
	if (worst)
		set_reason(out, worst->reason);
	if (out->quality == QUALITY_UNAVAILABLE) {
		out->value = NAN;
		return;
	}
	out->value = value;
	if (isnan(value)) {
		out->quality = QUALITY_UNAVAILABLE;
		set_reason(out, not_finite && not_finite[0] ? not_finite : "not a number");
	} else if (isinf(value) && not_finite && !worst) {
		set_reason(out, not_finite);
	}
}

int derived_available(const struct derived *v)
{
	return v && v->quality != QUALITY_UNAVAILABLE;
}
