/* components_report — the per-Step Component costs of a Run
 * (analysis/components.h) as text and as JSON.
 *
 * Both say the same things: the table per Component (parent, calls, total,
 * per Step, when run, coverage), each Step's value, the setup, warm-up and
 * teardown phases, the probe cost per call and in total next to the costs
 * it inflates (never subtracted), and the notes (one Step without a step
 * function, the warm-up left out, several threads, means over processes,
 * other parents, unavailable values and why, calls lost, Degradations).
 * A Component that did not run somewhere is null in JSON and "-" in text,
 * never 0; one that ran without a value is null / "unavailable".
 *
 * JSON: {metric, unit, inclusive, warm_up_kept, processes, steps,
 * first_step, components: [{name, parent, other_parents: [{name, calls}],
 * is_step, calls, seconds, steps, executed_steps, coverage,
 * seconds_per_step, seconds_when_run, per_step: [Step 0, Step 1, ...]}],
 * phases: {setup: {NAME: value|null}, warm_up: {...} (when left out),
 * teardown: {...}}, measurement_overhead_ns: {per_call, empty_uprobe_pair,
 * ratio, total, calls}, notes: [...]}; the "seconds" keys are in `unit`.
 */
#ifndef NUNATAK_REPORT_COMPONENTS_REPORT_H
#define NUNATAK_REPORT_COMPONENTS_REPORT_H

#include <stdio.h>

#include <jansson.h>

struct component_table;
struct components_run;

/* the text report on out */
void components_print_text(FILE *out, const struct component_table *t,
			   const struct components_run *r);

/* a new JSON object; NULL + errno (ENOMEM) */
json_t *components_json(const struct component_table *t, const struct components_run *r);



/* shared by both: each note in turn to cb (a non-zero return stops and is
 * returned); 0, or -ENOMEM */
int components_notes(const struct component_table *t, const struct components_run *r,
		     int (*cb)(const char *note, void *ctx), void *ctx);

/* the value format of a unit: "%.6f" for s, "%.3f" for MB, "%.1f" else */
const char *components_value_format(const char *unit);
#endif
