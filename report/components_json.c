/* components_json — the Component costs as JSON (components_report.h). */
#include <errno.h>
#include <math.h>

#include "analysis/components.h"
#include "analysis/components_run.h"
#include "report/components_report.h"
#include "report/summary_format.h"
#include "userspace/log/json_text.h"

/* v where it ran, null where it did not (or ran without a value) */
static json_t *ran_number(double v, int ran)
{
	return ran ? summary_json_number(v) : json_null();
}

static json_t *parent_json(const struct component_table *t, size_t parent)
{
	return parent == COMPONENT_NONE ? json_null() : json_text(t->c[parent].name);
}

static json_t *component_json(const struct component_table *t, size_t c)
{
	const struct component_cost *cc = &t->c[c];
	json_t *per_step = json_array(), *others = json_array(), *o;
	size_t s;

	for (s = 0; per_step && s < t->n_steps; s++)
		json_array_append_new(per_step, ran_number(cc->per_step[s], cc->ran[s]));
	for (s = 0; others && s < cc->n_others; s++)
		json_array_append_new(others, json_pack("{s:o, s:I}", "name",
							parent_json(t, cc->others[s].parent),
							"calls", (json_int_t)cc->others[s].calls));
	if (!per_step || !others) {
		json_decref(per_step);
		json_decref(others);
		return NULL;
	}
	o = json_pack("{s:o, s:o, s:o, s:b, s:I, s:o, s:I, s:I, s:o, s:o, s:o, s:o}", "name",
		      json_text(cc->name), "parent", parent_json(t, cc->parent), "other_parents",
		      others, "is_step", cc->is_step, "calls", (json_int_t)cc->calls, "seconds",
		      summary_json_number(cc->seconds), "steps", (json_int_t)t->steps,
		      "executed_steps", (json_int_t)cc->executed_steps, "coverage",
		      summary_json_number(cc->coverage), "seconds_per_step",
		      summary_json_number(cc->seconds_per_step), "seconds_when_run",
		      summary_json_number(cc->seconds_when_run), "per_step", per_step);
	return o;
}

static json_t *phases_json(const struct component_table *t)
{
	json_t *setup = json_object(), *warm = json_object(), *teardown = json_object();
	size_t c;

	for (c = 0; setup && warm && teardown && c < t->n; c++) {
		json_object_set_new(setup, t->c[c].name,
				    ran_number(t->c[c].setup, t->c[c].ran_setup));
		json_object_set_new(warm, t->c[c].name,
				    ran_number(t->c[c].warm_up, t->c[c].ran_warm_up));
		json_object_set_new(teardown, t->c[c].name,
				    ran_number(t->c[c].teardown, t->c[c].ran_teardown));
	}
	if (!t->warm_up_left_out) {
		json_decref(warm);
		return json_pack("{s:o?, s:o?}", "setup", setup, "teardown", teardown);
	}
	return json_pack("{s:o?, s:o?, s:o?}", "setup", setup, "warm_up", warm, "teardown",
			 teardown);
}

static json_t *overhead_json(const struct component_table *t, const struct components_run *r)
{
	struct pivot_component_counters none = {.probe_ns = NAN, .empty_pair_ns = NAN};
	struct component_overhead o;

	component_overhead_of(r ? &r->counters : &none, t->total_calls, &o);
	return json_pack("{s:o, s:o, s:o, s:o, s:I, s:o?}", "per_call",
			 summary_json_number(o.per_call.value), "empty_uprobe_pair",
			 summary_json_number(o.empty_pair.value), "ratio",
			 summary_json_number(o.ratio.value), "total",
			 summary_json_number(o.total.value), "calls", (json_int_t)t->total_calls,
			 "reason", o.per_call.reason[0] ? json_text(o.per_call.reason) : NULL);
}

static int append_note(const char *note, void *ctx)
{
	return json_array_append_new(ctx, json_text(note)) ? -ENOMEM : 0;
}

json_t *components_json(const struct component_table *t, const struct components_run *r)
{
	json_t *comps = json_array(), *notes = json_array(), *o = NULL;
	size_t c;

	for (c = 0; comps && c < t->n; c++)
		if (json_array_append_new(comps, component_json(t, c)))
			goto fail;
	if (!comps || !notes || components_notes(t, r, append_note, notes))
		goto fail;
	o = json_pack("{s:s, s:s, s:b, s:b, s:I, s:I, s:I, s:o, s:o?, s:o?, s:o}", "metric",
		      t->metric->name, "unit", t->metric->unit, "inclusive", t->inclusive,
		      "warm_up_kept", !t->warm_up_left_out, "processes", (json_int_t)t->n_processes,
		      "steps", (json_int_t)t->steps, "first_step", (json_int_t)t->first_step,
		      "components", comps, "phases", phases_json(t), "measurement_overhead_ns",
		      overhead_json(t, r), "notes", notes);
	if (!o)
		errno = ENOMEM;
	return o;
fail:
	json_decref(comps);
	json_decref(notes);
	errno = ENOMEM;
	return NULL;
}
