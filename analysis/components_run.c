/* components_run — the Component rows of a pivot, for the analysis. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/components_run.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

#define NOT_RECORDED "the Run did not record the probe cost (written by an older nunatak?)"

static int grow(void **array, size_t *cap, size_t need, size_t size)
{
	size_t cap2 = *cap ? *cap * 2 : 64;
	void *a;

	if (need <= *cap)
		return 0;
	while (cap2 < need)
		cap2 *= 2;
	a = reallocarray(*array, cap2, size);
	if (!a)
		return -ENOMEM;
	*array = a;
	*cap = cap2;
	return 0;
}

static int component_cb(const struct pivot_component *c, void *ctx)
{
	struct components_run *r = ctx;
	struct component_def *d;
	size_t cap = r->in.n_components;

	d = reallocarray(r->defs, cap + 1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	r->defs = d;
	d[cap] = (struct component_def){
	    .id = c->id, .name = strdup(c->name ? c->name : "?"), .is_step = c->is_step};
	if (!d[cap].name)
		return -ENOMEM;
	r->in.n_components++;
	r->in.has_step |= c->is_step;
	return 0;
}

/* room for n processes in the three process arrays: 0 or -ENOMEM */
static int grow_processes(struct components_run *r, size_t n)
{
	size_t cap = r->processes_cap ? r->processes_cap * 2 : 16;
	char **node;
	int64_t *tgid, *steps;

	if (n <= r->processes_cap)
		return 0;
	while (cap < n)
		cap *= 2;
	node = reallocarray(r->process_node, cap, sizeof(*node));
	if (node)
		r->process_node = node;
	tgid = reallocarray(r->process_tgid, cap, sizeof(*tgid));
	if (tgid)
		r->process_tgid = tgid;
	steps = reallocarray(r->process_steps, cap, sizeof(*steps));
	if (steps)
		r->process_steps = steps;
	if (!node || !tgid || !steps)
		return -ENOMEM;
	r->processes_cap = cap;
	return 0;
}

/* the index of process (node, tgid), added when new: 0 or -ENOMEM */
static int process_index(struct components_run *r, const char *node, int64_t tgid, size_t *idx)
{
	size_t i, n = r->in.n_processes;

	node = node ? node : "";
	for (i = n; i-- > 0;) /* rows come by process: the last one first */
		if (r->process_tgid[i] == tgid && !strcmp(r->process_node[i], node)) {
			*idx = i;
			return 0;
		}
	if (grow_processes(r, n + 1))
		return -ENOMEM;
	r->process_node[n] = strdup(node);
	if (!r->process_node[n])
		return -ENOMEM;
	r->process_tgid[n] = tgid;
	r->process_steps[n] = 0;
	r->in.n_processes++;
	*idx = n;
	return 0;
}

static int step_cb(const struct pivot_step *s, void *ctx)
{
	struct components_run *r = ctx;
	size_t i;
	int err = process_index(r, s->node, s->tgid, &i);

	if (!err && s->step + 1 > r->process_steps[i])
		r->process_steps[i] = s->step + 1;
	return err;
}

static int cost_cb(const struct pivot_component_cost *c, void *ctx)
{
	struct components_run *r = ctx;
	struct component_row *row;
	size_t i;
	int err;

	err = process_index(r, c->node, c->tgid, &i);
	if (!err)
		err = grow((void **)&r->rows, &r->rows_cap, r->in.n_rows + 1, sizeof(*r->rows));
	if (err)
		return err;
	row = &r->rows[r->in.n_rows];
	*row = (struct component_row){.process = i,
				      .tid = c->tid,
				      .step = c->step,
				      .component = c->component,
				      .parent = c->parent,
				      .calls = c->calls};
	if (component_phase_parse(c->phase, &row->phase)) {
		pr_warn("a component cost row has phase '%s': not a phase\n",
			c->phase ? c->phase : "(null)");
		return -EINVAL;
	}
	memcpy(row->cost, c->cost, sizeof(row->cost));
	r->in.n_rows++;
	return 0;
}

static int degradation_cb(const char *name, const char *message, const char *remedy, void *ctx)
{
	struct components_run *r = ctx;
	char **d;

	(void)remedy;
	if (!strcmp(name, "hardware-counters-unavailable") && !r->counters_reason)
		return (r->counters_reason = strdup(message)) ? 0 : -ENOMEM;
	if (strncmp(name, "component-", 10))
		return 0;
	d = reallocarray(r->degradations, r->n_degradations + 1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	r->degradations = d;
	if (asprintf(&d[r->n_degradations], "%s: %s", name, message) < 0)
		return -ENOMEM;
	r->n_degradations++;
	return 0;
}

struct components_run *components_run__load(struct pivot *p)
{
	struct components_run *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return NULL;
	err = pivot_for_each_component(p, component_cb, r);
	if (!err)
		err = pivot_for_each_step(p, step_cb, r);
	if (!err)
		err = pivot_for_each_component_cost(p, cost_cb, r);
	if (!err)
		err = pivot_component_counters(p, &r->counters);
	if (!err)
		err = pivot_for_each_degradation(p, degradation_cb, r);
	if (err) {
		components_run__free(r);
		errno = -err;
		return NULL;
	}
	r->in.components = r->defs;
	r->in.rows = r->rows;
	r->in.process_steps = r->process_steps;
	return r;
}

void components_run__free(struct components_run *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->in.n_components; i++)
		free((char *)r->defs[i].name);
	for (i = 0; i < r->in.n_processes; i++)
		free(r->process_node[i]);
	for (i = 0; i < r->n_degradations; i++)
		free(r->degradations[i]);
	free(r->degradations);
	free(r->counters_reason);
	free(r->defs);
	free(r->rows);
	free(r->process_steps);
	free(r->process_node);
	free(r->process_tgid);
	free(r);
}

void component_overhead_of(const struct pivot_component_counters *c, uint64_t calls,
			   struct component_overhead *out)
{
	const struct derived *per_call_in[] = {&out->per_call};
	const struct derived *ratio_in[] = {&out->per_call, &out->empty_pair};

	derived_input(&out->per_call, "component_probe_ns", c->probe_ns, "ns", QUALITY_MEASURED,
		      isnan(c->probe_ns) ? NOT_RECORDED : NULL);
	derived_input(&out->empty_pair, "empty_uprobe_pair_ns", c->empty_pair_ns, "ns",
		      QUALITY_MEASURED, isnan(c->empty_pair_ns) ? NOT_RECORDED : NULL);
	derived_combine(&out->ratio, "probe_cost_ratio", "ratio",
			"component_probe_ns / empty_uprobe_pair_ns", ratio_in, 2,
			c->probe_ns / c->empty_pair_ns, "the empty uprobe pair measured 0 ns");
	derived_combine(&out->total, "probe_cost_total_ns", "ns", "component_probe_ns x calls",
			per_call_in, 1, c->probe_ns * (double)calls, NULL);
}
