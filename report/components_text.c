/* components_text — the Component costs as text (components_report.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/components.h"
#include "analysis/components_run.h"
#include "report/components_report.h"
#include "report/summary_format.h"

#define NUM_WIDTH 11	   /* strlen("unavailable") */
#define TEXT_MAX_STEPS 100 /* Steps shown one by one; --json has them all */
#define NOT_RUN "-"

/* value v of unit, "-" when it did not run, "unavailable" when it ran
 * without a value */
static const char *fmt_value(char *buf, size_t len, const char *unit, double v, int ran)
{
	if (!ran)
		return NOT_RUN;
	return summary_fmt_double(buf, len, components_value_format(unit), v);
}

static const char *parent_name(const struct component_table *t, size_t c)
{
	return t->c[c].parent == COMPONENT_NONE ? "-" : t->c[t->c[c].parent].name;
}

static int name_width(const struct component_table *t)
{
	size_t c, w = strlen("component");

	for (c = 0; c < t->n; c++)
		if (strlen(t->c[c].name) > w)
			w = strlen(t->c[c].name);
	return (int)(w > 40 ? 40 : w);
}

static void print_header(FILE *out, const struct component_table *t)
{
	fprintf(out, "Component costs per Step: %s (%s), %s costs", t->metric->name,
		t->metric->unit, t->inclusive ? "inclusive" : "self");
	if (!t->steps)
		fprintf(out, ", no Step left\n");
	else if (t->first_step + 1 == t->n_steps)
		fprintf(out, ", over Step %zu\n", t->first_step);
	else
		fprintf(out, ", over the %zu Steps %zu..%zu\n", t->steps, t->first_step,
			t->n_steps - 1);
}

static void print_table(FILE *out, const struct component_table *t)
{
	char total[32], per[32], when[32], cov[32];
	const char *u = t->metric->unit;
	int w = name_width(t);
	size_t c;

	fprintf(out, "  %-*s  %-*s  %10s  %*s  %*s  %*s  %8s\n", w, "component", w, "parent",
		"calls", NUM_WIDTH, "total", NUM_WIDTH, "per Step", NUM_WIDTH, "when run",
		"coverage");
	for (c = 0; c < t->n; c++) {
		const struct component_cost *cc = &t->c[c];

		fprintf(
		    out, "  %-*s  %-*s  %10" PRIu64 "  %*s  %*s  %*s  %8s%s\n", w, cc->name, w,
		    parent_name(t, c), cc->calls, NUM_WIDTH,
		    fmt_value(total, sizeof(total), u, cc->seconds, 1), NUM_WIDTH,
		    fmt_value(per, sizeof(per), u, cc->seconds_per_step, 1), NUM_WIDTH,
		    fmt_value(when, sizeof(when), u, cc->seconds_when_run, cc->executed_steps > 0),
		    summary_fmt_share(cov, sizeof(cov), cc->coverage),
		    cc->is_step ? "  (the step function)" : "");
	}
}

static void print_steps(FILE *out, const struct component_table *t)
{
	size_t c, s, shown = t->n_steps < TEXT_MAX_STEPS ? t->n_steps : TEXT_MAX_STEPS;
	int w = NUM_WIDTH;
	char v[32];

	if (!t->n_steps)
		return;
	fprintf(out, "\nper Step (%s; %s: did not run):\n", t->metric->unit, NOT_RUN);
	for (c = 0; c < t->n && strlen(t->c[c].name) <= (size_t)w; c++)
		;
	if (c < t->n) /* a name too wide for its column: the columns numbered */
		for (c = 0; c < t->n; c++)
			fprintf(out, "  [%zu] %s\n", c + 1, t->c[c].name);
	fprintf(out, "  %6s", "Step");
	for (c = 0; c < t->n; c++) {
		char label[32];

		snprintf(label, sizeof(label), "[%zu]", c + 1);
		fprintf(out, "  %*s", w, strlen(t->c[c].name) <= (size_t)w ? t->c[c].name : label);
	}
	fputc('\n', out);
	for (s = 0; s < shown; s++) {
		fprintf(out, "  %6zu", s);
		for (c = 0; c < t->n; c++)
			fprintf(out, "  %*s", w,
				fmt_value(v, sizeof(v), t->metric->unit, t->c[c].per_step[s],
					  t->c[c].ran[s]));
		fprintf(out, "%s\n", s < t->first_step ? "  (warm-up, left out)" : "");
	}
	if (shown < t->n_steps)
		fprintf(out, "  ... %zu more Steps: 'nunatak components --json' has them all\n",
			t->n_steps - shown);
}

static void print_phases(FILE *out, const struct component_table *t)
{
	char a[32], b[32], d[32];
	const char *u = t->metric->unit;
	int w = name_width(t);
	size_t c;

	fprintf(out, "\nphases (%s; %s: did not run):\n  %-*s  %*s  %*s  %*s\n", u, NOT_RUN, w,
		"component", NUM_WIDTH, "setup", NUM_WIDTH, "warm-up", NUM_WIDTH, "teardown");
	for (c = 0; c < t->n; c++) {
		const struct component_cost *cc = &t->c[c];

		fprintf(out, "  %-*s  %*s  %*s  %*s\n", w, cc->name, NUM_WIDTH,
			fmt_value(a, sizeof(a), u, cc->setup, cc->ran_setup), NUM_WIDTH,
			t->warm_up_left_out
			    ? fmt_value(b, sizeof(b), u, cc->warm_up, cc->ran_warm_up)
			    : "in Steps",
			NUM_WIDTH, fmt_value(d, sizeof(d), u, cc->teardown, cc->ran_teardown));
	}
}

static void print_overhead(FILE *out, const struct component_table *t,
			   const struct components_run *r)
{
	struct component_overhead o;
	char a[32], b[32], c[32], d[32];

	if (!r)
		return;
	component_overhead_of(&r->counters, t->total_calls, &o);
	if (!derived_available(&o.per_call)) {
		fprintf(out, "\nprobe cost: unavailable (%s)\n", o.per_call.reason);
		return;
	}
	fprintf(out,
		"\nprobe cost: %s per Component call (an empty uprobe pair: %s here, ratio %s); "
		"%" PRIu64 " calls: %s s in total, inside the costs above, not subtracted\n",
		summary_fmt_double(a, sizeof(a), "%.0f ns", o.per_call.value),
		summary_fmt_double(b, sizeof(b), "%.0f ns", o.empty_pair.value),
		summary_fmt_double(c, sizeof(c), "%.2f", o.ratio.value), t->total_calls,
		summary_fmt_double(d, sizeof(d), "%.6f", o.total.value * 1e-9));
}

static int print_note(const char *note, void *ctx)
{
	fprintf(ctx, "  - %s\n", note);
	return 0;
}

void components_print_text(FILE *out, const struct component_table *t,
			   const struct components_run *r)
{
	if (!out || !t)
		return;
	print_header(out, t);
	print_table(out, t);
	print_steps(out, t);
	print_phases(out, t);
	print_overhead(out, t, r);
	fprintf(out, "\nnotes:\n");
	if (components_notes(t, r, print_note, out))
		fprintf(out, "  (out of memory: notes cut)\n");
}
