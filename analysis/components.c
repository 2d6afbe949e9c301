/* components — per-Step Component costs from recorded rows
 * (components.h states the rules). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/components.h"

static const struct component_metric metrics[] = {
    {"wall_s", PIVOT_COST_WALL_NS, 1e-9, "s"},
    {"cpu_s", PIVOT_COST_CPU_NS, 1e-9, "s"},
    {"minor_page_faults", PIVOT_COST_MINOR_PAGE_FAULTS, 1, "count"},
    {"major_page_faults", PIVOT_COST_MAJOR_PAGE_FAULTS, 1, "count"},
    {"voluntary_context_switches", PIVOT_COST_VOLUNTARY_CONTEXT_SWITCHES, 1, "count"},
    {"involuntary_context_switches", PIVOT_COST_INVOLUNTARY_CONTEXT_SWITCHES, 1, "count"},
    {"peak_rss_increase_mb", PIVOT_COST_PEAK_RSS_INCREASE_BYTES, 1.0 / (1 << 20), "MB"},
    {"instructions", PIVOT_COST_INSTRUCTIONS, 1, "count"},
    {"cycles", PIVOT_COST_CYCLES, 1, "count"},
};

#define N_METRICS (sizeof(metrics) / sizeof(metrics[0]))

const struct component_metric *component_metric_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < N_METRICS; i++)
		if (!strcmp(name, metrics[i].name))
			return &metrics[i];
	return NULL;
}

const char *component_metric_names(void)
{
	return "wall_s, cpu_s, minor_page_faults, major_page_faults, "
	       "voluntary_context_switches, involuntary_context_switches, "
	       "peak_rss_increase_mb, instructions, cycles";
}

int component_phase_parse(const char *text, enum component_phase *phase)
{
	static const char *const names[] = {"setup", "step", "between", "teardown"};
	size_t i;

	for (i = 0; text && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(text, names[i])) {
			*phase = (enum component_phase)i;
			return 0;
		}
	return -EINVAL;
}

/* The accumulation: per Component and slot (Steps 0..n_steps-1, then
 * setup, then teardown) the sum over processes, whether it ran, its calls;
 * per Component and candidate parent (0: none, i + 1: Component i) the
 * calls; per process its last Step. */
struct accum {
	const struct component_input *in;
	const struct component_metric *metric;
	size_t n, n_steps, n_slots;
	double *sum;
	char *ran;
	uint64_t *calls;
	uint64_t *parent_calls; /* n x (n + 1) */
	int64_t *last_step;	/* per process */
	size_t *reach;		/* per slot: the processes that reached it */
	int several_threads;
	char *err;
	size_t errlen;
};

#define SLOT_SETUP(a) ((a)->n_steps)
#define SLOT_TEARDOWN(a) ((a)->n_steps + 1)
#define AT(a, c, s) ((c) * (a)->n_slots + (s))

__attribute__((format(printf, 3, 4))) static int fail(struct accum *a, int e, const char *fmt, ...)
{
	va_list ap;

	if (a->err && a->errlen) {
		va_start(ap, fmt);
		vsnprintf(a->err, a->errlen, fmt, ap);
		va_end(ap);
	}
	return e;
}

/* the index of the Component id in the input, COMPONENT_NONE when absent */
static size_t component_index(const struct component_input *in, int64_t id)
{
	size_t i;

	for (i = 0; i < in->n_components; i++)
		if (in->components[i].id == id)
			return i;
	return COMPONENT_NONE;
}

/* n_steps and each process' last Step, from process_steps and the rows */
static int count_steps(struct accum *a)
{
	const struct component_input *in = a->in;
	size_t i;

	a->last_step = calloc(in->n_processes ? in->n_processes : 1, sizeof(*a->last_step));
	if (!a->last_step)
		return -ENOMEM;
	for (i = 0; i < in->n_processes; i++)
		a->last_step[i] = in->process_steps ? in->process_steps[i] - 1 : -1;
	for (i = 0; i < in->n_rows; i++) {
		const struct component_row *r = &in->rows[i];

		if (r->process >= in->n_processes)
			return fail(a, -EINVAL, "a cost row names process %zu of %zu", r->process,
				    in->n_processes);
		if ((r->phase == COMPONENT_PHASE_STEP || r->phase == COMPONENT_PHASE_BETWEEN) &&
		    r->step > a->last_step[r->process])
			a->last_step[r->process] = r->step;
	}
	for (i = 0; i < in->n_processes; i++)
		if (a->last_step[i] + 1 > (int64_t)a->n_steps)
			a->n_steps = (size_t)(a->last_step[i] + 1);
	a->n_slots = a->n_steps + 2;
	return 0;
}

static int accum_alloc(struct accum *a)
{
	size_t cells = (a->n ? a->n : 1) * a->n_slots, s, p;

	a->sum = calloc(cells, sizeof(*a->sum));
	a->ran = calloc(cells, 1);
	a->calls = calloc(cells, sizeof(*a->calls));
	a->parent_calls = calloc((a->n ? a->n : 1) * (a->n + 1), sizeof(*a->parent_calls));
	a->reach = calloc(a->n_slots, sizeof(*a->reach));
	if (!a->sum || !a->ran || !a->calls || !a->parent_calls || !a->reach)
		return -ENOMEM;
	for (p = 0; p < a->in->n_processes; p++)
		for (s = 0; s < a->n_steps; s++)
			a->reach[s] += (int64_t)s <= a->last_step[p];
	a->reach[SLOT_SETUP(a)] = a->reach[SLOT_TEARDOWN(a)] = a->in->n_processes;
	return 0;
}

static size_t row_slot(const struct accum *a, const struct component_row *r)
{
	switch (r->phase) {
	case COMPONENT_PHASE_SETUP:
		return SLOT_SETUP(a);
	case COMPONENT_PHASE_BETWEEN:
		if (r->step >= a->last_step[r->process])
			return SLOT_TEARDOWN(a);
		/* folded into Step k */
		__attribute__((fallthrough));
	case COMPONENT_PHASE_STEP:
		return r->step >= 0 ? (size_t)r->step : SLOT_SETUP(a);
	case COMPONENT_PHASE_TEARDOWN:
	default:
		return SLOT_TEARDOWN(a);
	}
}

static int accumulate(struct accum *a)
{
	const struct component_input *in = a->in;
	int64_t *first_tid;
	size_t i, c, parent, slot;

	first_tid = calloc(in->n_processes ? in->n_processes : 1, sizeof(*first_tid));
	if (!first_tid)
		return -ENOMEM;
	for (i = 0; i < in->n_rows; i++) {
		const struct component_row *r = &in->rows[i];

		c = component_index(in, r->component);
		parent = r->parent ? component_index(in, r->parent) : COMPONENT_NONE;
		if (c == COMPONENT_NONE || (r->parent && parent == COMPONENT_NONE)) {
			free(first_tid);
			return fail(a, -EINVAL, "a cost row names Component id %lld, not recorded",
				    (long long)(c == COMPONENT_NONE ? r->component : r->parent));
		}
		if (!r->calls)
			continue;
		slot = row_slot(a, r);
		a->sum[AT(a, c, slot)] += r->cost[a->metric->column] * a->metric->scale;
		a->ran[AT(a, c, slot)] = 1;
		a->calls[AT(a, c, slot)] += r->calls;
		a->parent_calls[c * (a->n + 1) + (parent == COMPONENT_NONE ? 0 : parent + 1)] +=
		    r->calls;
		if (!first_tid[r->process])
			first_tid[r->process] = r->tid;
		else if (first_tid[r->process] != r->tid)
			a->several_threads = 1;
	}
	free(first_tid);
	return 0;
}

/* the chosen parent of each Component and the others it was seen under */
static int choose_parents(struct accum *a, struct component_table *t)
{
	size_t c, k, best, n_others;

	for (c = 0; c < a->n; c++) {
		const uint64_t *pc = &a->parent_calls[c * (a->n + 1)];

		best = 0;
		for (k = 1; k <= a->n; k++)
			if (k - 1 != c && pc[k] > pc[best])
				best = k;
		t->c[c].parent = best ? best - 1 : COMPONENT_NONE;
		n_others = 0;
		for (k = 0; k <= a->n; k++)
			n_others += k != best && k - 1 != c && pc[k];
		if (!n_others)
			continue;
		t->c[c].others = calloc(n_others, sizeof(*t->c[c].others));
		if (!t->c[c].others)
			return -ENOMEM;
		for (k = 0; k <= a->n; k++)
			if (k != best && k - 1 != c && pc[k])
				t->c[c].others[t->c[c].n_others++] =
				    (struct component_other_parent){
					.parent = k ? k - 1 : COMPONENT_NONE, .calls = pc[k]};
	}
	return 0;
}

/* -ELOOP naming the cycle when a chain of parents comes back on itself */
static int refuse_cycles(struct accum *a, const struct component_table *t)
{
	size_t c, p, hops, len;
	char cycle[512];

	for (c = 0; c < a->n; c++) {
		for (p = t->c[c].parent, hops = 0; p != COMPONENT_NONE && p != c && hops < a->n;
		     p = t->c[p].parent)
			hops++;
		if (p != c)
			continue;
		len = (size_t)snprintf(cycle, sizeof(cycle), "%s", t->c[c].name);
		for (p = t->c[c].parent; len < sizeof(cycle); p = t->c[p].parent) {
			len += (size_t)snprintf(cycle + len, sizeof(cycle) - len, " -> %s",
						t->c[p].name);
			if (p == c)
				break;
		}
		return fail(a, -ELOOP,
			    "the recorded parents form a cycle (%s): Components cannot nest "
			    "that way; the Run's rows are inconsistent",
			    cycle);
	}
	return 0;
}

/* depth of c in the parent tree (parents are acyclic by then) */
static size_t depth_of(const struct component_table *t, size_t c)
{
	size_t d = 0;

	for (; t->c[c].parent != COMPONENT_NONE; c = t->c[c].parent)
		d++;
	return d;
}

/* value[c][slot]: the mean per process where it ran, NAN where not; then,
 * with inclusive, the children's inclusive values added, deepest first */
static void slot_values(struct accum *a, const struct component_table *t, double *v)
{
	size_t c, s, d, max_depth = 0, child;

	for (c = 0; c < a->n; c++)
		for (s = 0; s < a->n_slots; s++)
			v[AT(a, c, s)] =
			    a->ran[AT(a, c, s)]
				? a->sum[AT(a, c, s)] / (double)(a->reach[s] ? a->reach[s] : 1)
				: NAN;
	if (!t->inclusive || a->metric->column == PIVOT_COST_PEAK_RSS_INCREASE_BYTES)
		return;
	for (c = 0; c < a->n; c++)
		if (depth_of(t, c) > max_depth)
			max_depth = depth_of(t, c);
	/* a child of depth d + 1 is complete once every depth below it is */
	for (d = max_depth; d-- > 0;)
		for (child = 0; child < a->n; child++) {
			size_t parent = t->c[child].parent;

			if (parent == COMPONENT_NONE || depth_of(t, child) != d + 1)
				continue;
			for (s = 0; s < a->n_slots; s++)
				if (a->ran[AT(a, parent, s)] && a->ran[AT(a, child, s)])
					v[AT(a, parent, s)] += v[AT(a, child, s)];
		}
}

/* the totals over the Steps left, the phases and per_step of c */
static int component_totals(struct accum *a, struct component_table *t, size_t c, const double *v)
{
	struct component_cost *cc = &t->c[c];
	size_t s;

	cc->per_step = calloc(a->n_steps ? a->n_steps : 1, sizeof(*cc->per_step));
	if (!cc->per_step)
		return -ENOMEM;
	cc->ran = calloc(a->n_steps ? a->n_steps : 1, 1);
	if (!cc->ran)
		return -ENOMEM;
	memcpy(cc->per_step, &v[AT(a, c, 0)], a->n_steps * sizeof(*cc->per_step));
	memcpy(cc->ran, &a->ran[AT(a, c, 0)], a->n_steps);
	cc->setup = v[AT(a, c, SLOT_SETUP(a))];
	cc->ran_setup = a->ran[AT(a, c, SLOT_SETUP(a))];
	cc->teardown = v[AT(a, c, SLOT_TEARDOWN(a))];
	cc->ran_teardown = a->ran[AT(a, c, SLOT_TEARDOWN(a))];
	cc->warm_up = t->warm_up_left_out ? v[AT(a, c, 0)] : NAN;
	cc->ran_warm_up = t->warm_up_left_out && a->ran[AT(a, c, 0)];
	cc->seconds = 0;
	for (s = 0; s < a->n_slots; s++) {
		cc->all_calls += a->calls[AT(a, c, s)];
		cc->unavailable |= a->ran[AT(a, c, s)] && isnan(v[AT(a, c, s)]);
	}
	for (s = t->first_step; s < a->n_steps; s++) {
		if (!a->ran[AT(a, c, s)])
			continue;
		cc->seconds += v[AT(a, c, s)];
		cc->calls += a->calls[AT(a, c, s)];
		cc->executed_steps++;
	}
	if (!t->steps) {
		cc->seconds = cc->coverage = cc->seconds_per_step = cc->seconds_when_run = NAN;
		return 0;
	}
	cc->coverage = (double)cc->executed_steps / (double)t->steps;
	cc->seconds_per_step = cc->seconds / (double)t->steps;
	cc->seconds_when_run = cc->executed_steps ? cc->seconds / (double)cc->executed_steps : NAN;
	return 0;
}

static int table_fill(struct accum *a, struct component_table *t)
{
	double *v;
	size_t c;
	int err;

	err = choose_parents(a, t);
	if (!err)
		err = refuse_cycles(a, t);
	if (err)
		return err;
	v = calloc((a->n ? a->n : 1) * a->n_slots, sizeof(*v));
	if (!v)
		return -ENOMEM;
	slot_values(a, t, v);
	for (c = 0; c < a->n && !err; c++) {
		err = component_totals(a, t, c, v);
		t->total_calls += t->c[c].all_calls;
	}
	free(v);
	return err;
}

static void accum_release(struct accum *a)
{
	free(a->sum);
	free(a->ran);
	free(a->calls);
	free(a->parent_calls);
	free(a->last_step);
	free(a->reach);
}

static struct component_table *table_alloc(const struct component_input *in,
					   const struct component_options *opt)
{
	struct component_table *t = calloc(1, sizeof(*t));
	size_t c;

	if (!t)
		return NULL;
	t->c = calloc(in->n_components ? in->n_components : 1, sizeof(*t->c));
	if (!t->c) {
		free(t);
		return NULL;
	}
	t->n = in->n_components;
	for (c = 0; c < t->n; c++) {
		t->c[c].name = in->components[c].name;
		t->c[c].is_step = in->components[c].is_step;
		t->c[c].parent = COMPONENT_NONE;
	}
	t->metric = opt->metric;
	t->inclusive = opt->inclusive;
	t->keep_warm_up = opt->keep_warm_up;
	t->has_step = in->has_step;
	t->n_processes = in->n_processes;
	return t;
}

/* sibling order: the step function first, then by name */
static int sibling_before(const struct component_cost *x, const struct component_cost *y)
{
	if (x->is_step != y->is_step)
		return x->is_step;
	return strcmp(x->name, y->name) < 0;
}

/* appends to ord, after the ones already there (*n), the Components whose
 * parent is parent, each followed by its own children (preorder) */
static void tree_preorder(const struct component_table *t, size_t parent, size_t *ord, size_t *n)
{
	size_t c, best, first = *n;

	for (;;) { /* the next child in sibling order, not yet placed */
		best = COMPONENT_NONE;
		for (c = 0; c < t->n; c++) {
			size_t k;

			if (t->c[c].parent != parent)
				continue;
			for (k = first; k < *n && ord[k] != c; k++)
				;
			if (k == *n && (best == COMPONENT_NONE || sibling_before(&t->c[c], &t->c[best])))
				best = c;
		}
		if (best == COMPONENT_NONE)
			return;
		ord[(*n)++] = best;
		tree_preorder(t, best, ord, n);
	}
}

/* t->c in the order of the nesting tree (the readers' order), parents
 * and other parents renumbered: 0 or -ENOMEM */
static int order_as_tree(struct component_table *t)
{
	size_t *ord = calloc(t->n + 1, sizeof(*ord)), *pos = calloc(t->n + 1, sizeof(*pos));
	struct component_cost *c = calloc(t->n + 1, sizeof(*c));
	size_t i, k, n = 0;

	if (!ord || !pos || !c) {
		free(ord), free(pos), free(c);
		return -ENOMEM;
	}
	tree_preorder(t, COMPONENT_NONE, ord, &n); /* every one: no cycle (refused before) */
	for (i = 0; i < n; i++)
		pos[ord[i]] = i;
	for (i = 0; i < n; i++) {
		c[i] = t->c[ord[i]];
		if (c[i].parent != COMPONENT_NONE)
			c[i].parent = pos[c[i].parent];
		for (k = 0; k < c[i].n_others; k++)
			if (c[i].others[k].parent != COMPONENT_NONE)
				c[i].others[k].parent = pos[c[i].others[k].parent];
	}
	free(t->c);
	t->c = c;
	free(ord);
	free(pos);
	return n == t->n ? 0 : -EINVAL;
}

struct component_table *component_table__new(const struct component_input *in,
					     const struct component_options *opt, char *err,
					     size_t errlen)
{
	struct accum a = {.in = in, .err = err, .errlen = errlen};
	struct component_table *t = NULL;
	int e;

	if (err && errlen)
		err[0] = '\0';
	if (!in || !opt || !opt->metric || (in->n_components && !in->components) ||
	    (in->n_rows && !in->rows)) {
		errno = EINVAL;
		return NULL;
	}
	a.metric = opt->metric;
	a.n = in->n_components;
	t = table_alloc(in, opt);
	e = t ? count_steps(&a) : -ENOMEM;
	if (!e)
		e = accum_alloc(&a);
	if (!e)
		e = accumulate(&a);
	if (e)
		goto out;
	t->n_steps = a.n_steps;
	t->several_threads = a.several_threads;
	t->warm_up_left_out = t->has_step && !t->keep_warm_up && t->n_steps > 0;
	t->first_step = t->warm_up_left_out ? 1 : 0;
	t->steps = t->n_steps > t->first_step ? t->n_steps - t->first_step : 0;
	e = table_fill(&a, t);
	if (!e)
		e = order_as_tree(t);
out:
	accum_release(&a);
	if (e) {
		component_table__free(t);
		errno = -e;
		return NULL;
	}
	return t;
}

void component_table__free(struct component_table *t)
{
	size_t c;

	if (!t)
		return;
	for (c = 0; c < t->n; c++) {
		free(t->c[c].others);
		free(t->c[c].per_step);
		free(t->c[c].ran);
	}
	free(t->c);
	free(t);
}
