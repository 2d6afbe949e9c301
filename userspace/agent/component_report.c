/* component_report — see component_report.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/batch.h"
#include "userspace/agent/batch_components.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/component_probes_internal.h"
#include "userspace/agent/component_report.h"

struct report_ctx {
	struct component_probes *cp;
	struct batch_builder *b;
	int has_step;
	int (*want)(void *ctx, pid_t tgid);
	component_locus_fn locus;
	void *ctx;
	uint32_t *index; /* by Component id: its index in the Batch + 1, 0 not in it */
	struct component_step_key *ended; /* Steps to forget once sent */
	size_t n_ended, cap_ended;
};

/* the index in the Batch of Component id, added when new */
static int component_index(struct report_ctx *rc, uint32_t id, uint32_t *index)
{
	const struct component_def *d = component_probes_def(rc->cp, id);
	int err;

	if (!d)
		return -ENOENT;
	if (!rc->index[id]) {
		err = batch_builder_add_component(rc->b, d->name, d->pattern, d->is_step, index);
		if (err)
			return err;
		rc->index[id] = *index + 1;
	}
	*index = rc->index[id] - 1;
	return 0;
}

static int report_cost(const struct component_cost_key *key,
		       const struct component_cost_value *value, void *ctx)
{
	struct report_ctx *rc = ctx;
	struct batch_component_cost c = {
	    .phase = key->phase, .step = key->step, .calls = value->calls, .self = value->self};
	struct batch_locus l;
	int err;

	if (!value->calls || !rc->want(rc->ctx, (pid_t)key->tgid))
		return 0;
	if (!component_sent_changed(rc->cp, key, value->calls))
		return 0;
	err = component_index(rc, key->component, &c.component);
	if (!err && key->parent) {
		c.has_parent = 1;
		err = component_index(rc, key->parent, &c.parent);
	}
	if (err)
		return err == -ENOENT ? 0 : err;
	rc->locus(rc->ctx, (pid_t)key->tgid, (pid_t)key->tid, &l);
	return batch_builder_add_component_cost(rc->b, &l, &c);
}

static int remember_ended(struct report_ctx *rc, const struct component_step_key *key)
{
	struct component_step_key *e;

	if (rc->n_ended == rc->cap_ended) {
		size_t cap = rc->cap_ended ? 2 * rc->cap_ended : 64;

		e = realloc(rc->ended, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		rc->ended = e;
		rc->cap_ended = cap;
	}
	rc->ended[rc->n_ended++] = *key;
	return 0;
}

static int report_step(const struct component_step_key *key,
		       const struct component_step_value *value, void *ctx)
{
	/* a Step's row in the "sent" record: a key no cost has (phase) */
	struct component_cost_key mark = {
	    .tgid = key->tgid, .step = (__s32)key->step, .phase = ~0u};
	struct report_ctx *rc = ctx;
	struct batch_locus l;
	int err;

	if (!rc->want(rc->ctx, (pid_t)key->tgid))
		return 0;
	if (!component_sent_changed(rc->cp, &mark, value->end_ns + 1))
		return 0;
	rc->locus(rc->ctx, (pid_t)key->tgid, (pid_t)key->tgid, &l);
	err = batch_builder_add_step(rc->b, &l, key->step, value->start_ns, value->end_ns);
	if (!err && rc->has_step && value->end_ns)
		err = remember_ended(rc, key);
	return err;
}

int component_report_of(struct component_probes *cp, struct batch_builder *b, uint32_t target_id,
			int (*want)(void *ctx, pid_t tgid), component_locus_fn locus, void *ctx)
{
	struct report_ctx rc = {.cp = cp, .b = b, .want = want, .locus = locus, .ctx = ctx};
	size_t i;
	int err;

	if (!component_probes_has_target(cp, target_id, &rc.has_step))
		return 0;
	rc.index = calloc(cp->n_defs + 1, sizeof(*rc.index));
	if (!rc.index)
		return -ENOMEM;
	err = component_probes_for_each_cost(cp, report_cost, &rc);
	if (!err)
		err = component_probes_for_each_step(cp, report_step, &rc);
	for (i = 0; !err && i < rc.n_ended; i++)
		component_probes_forget_step(cp, &rc.ended[i]);
	free(rc.ended);
	free(rc.index);
	return err;
}
