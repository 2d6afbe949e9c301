/* components_notes — what the text and the JSON of the Component costs
 * both say besides their numbers (components_report.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/components.h"
#include "analysis/components_run.h"
#include "report/components_report.h"

const char *components_value_format(const char *unit)
{
	if (!strcmp(unit, "s"))
		return "%.6f";
	return strcmp(unit, "MB") ? "%.1f" : "%.3f";
}

__attribute__((format(printf, 3, 4))) static int note(int (*cb)(const char *, void *), void *ctx,
						      const char *fmt, ...)
{
	char *text;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	n = cb(text, ctx);
	free(text);
	return n;
}

/* a Component seen under several parents */
static int other_parent_notes(const struct component_table *t, int (*cb)(const char *, void *),
			      void *ctx)
{
	size_t c, k;
	int err = 0;

	for (c = 0; c < t->n && !err; c++)
		for (k = 0; k < t->c[c].n_others && !err; k++) {
			const struct component_other_parent *o = &t->c[c].others[k];

			err = note(cb, ctx,
				   "%s was also called %s%s (%" PRIu64
				   " calls): they are in %s's costs, not in %s's inclusive "
				   "cost",
				   t->c[c].name,
				   o->parent == COMPONENT_NONE ? "outside any Component" : "under ",
				   o->parent == COMPONENT_NONE ? "" : t->c[o->parent].name,
				   o->calls, t->c[c].name,
				   t->c[c].parent == COMPONENT_NONE ? "no parent"
								    : t->c[t->c[c].parent].name);
		}
	return err;
}

static int unavailable_note(const struct component_table *t, const struct components_run *r,
			    int (*cb)(const char *, void *), void *ctx)
{
	int counters =
	    t->metric->column == PIVOT_COST_INSTRUCTIONS || t->metric->column == PIVOT_COST_CYCLES;
	size_t c;

	for (c = 0; c < t->n; c++)
		if (t->c[c].unavailable)
			break;
	if (c == t->n)
		return 0;
	if (counters)
		return note(cb, ctx, "%s is unavailable: %s", t->metric->name,
			    r && r->counters_reason ? r->counters_reason
						    : "not collected by this Run");
	return note(cb, ctx, "%s is unavailable where a call's cost was not recorded",
		    t->metric->name);
}

int components_notes(const struct component_table *t, const struct components_run *r,
		     int (*cb)(const char *note, void *ctx), void *ctx)
{
	size_t i;
	int err = 0;

	if (!t->has_step)
		err = note(cb, ctx,
			   "no --step function: the whole run is one Step (Step 0), "
			   "not a warm-up");
	else if (t->warm_up_left_out)
		err = note(cb, ctx,
			   "Step 0, the warm-up, is left out of the totals "
			   "(--keep-warm-up keeps it)");
	if (!err && t->several_threads)
		err = note(cb, ctx,
			   "several threads ran Components: wall times of overlapping "
			   "calls on several threads can add up to more than the Step");
	if (!err && t->n_processes > 1)
		err = note(cb, ctx,
			   "values are the mean per process over %zu processes (each Step over "
			   "the processes that reached it); calls are summed over them",
			   t->n_processes);
	if (!err && t->metric->column == PIVOT_COST_PEAK_RSS_INCREASE_BYTES)
		err = note(cb, ctx,
			   "peak_rss_increase_mb includes the nested calls (the "
			   "process' peak RSS): it is an inclusive value, also without "
			   "--inclusive; MB = 2^20 bytes");
	if (!err)
		err = other_parent_notes(t, cb, ctx);
	if (!err)
		err = unavailable_note(t, r, cb, ctx);
	if (!err && r && r->counters.calls_lost)
		err = note(cb, ctx,
			   "%" PRIu64 " Component calls were not measured (nesting deeper than "
			   "the probes' stack, a full map, or unbalanced returns): the costs "
			   "above miss them",
			   r->counters.calls_lost);
	for (i = 0; !err && r && i < r->n_degradations; i++)
		err = cb(r->degradations[i], ctx);
	return err;
}
