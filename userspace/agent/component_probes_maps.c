/* component_probes_maps — the Component probes in the kernel (see
 * component_probes.h): attached per module, released together, and the
 * maps they fill, read and forgotten. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/components.skel.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/component_probes_internal.h"
#include "userspace/agent/map_walk.h"
#include "userspace/agent/modules.h"

/* pts[0..n) of m into one more uprobe set of cp (room made by the caller),
 * noted as probed: 0 or -errno (what a failure attached stays in the set,
 * released with the others) */
static int attach_set(struct component_probes *cp, const struct module *m,
		      const struct component_point *pts, size_t n, uint64_t *offsets,
		      uint64_t *cookies)
{
	size_t i;
	int e;

	for (i = 0; i < n; i++) {
		offsets[i] = pts[i].offset;
		cookies[i] = pts[i].cookie;
	}
	e = uprobe_set_attach(&cp->sets[cp->n_sets++], cp->skel->progs.component_entry,
			      cp->skel->progs.component_return, cp->multi, m->path, offsets,
			      cookies, n, -1);
	for (i = 0; i < n && !e; i++)
		cp->probed[cp->n_probed++] = (struct component_probed){m, pts[i].offset};
	return e;
}

/* pts[0..n) in as few sets as the kernel takes: a set that fails is
 * released and its halves tried (a function the kernel cannot probe, at
 * its first instruction, fails a whole uprobe_multi link: bisecting finds
 * it in about 2 log2(n) attempts, not n); *failed counts the functions
 * left out, *first keeps the first error */
static void attach_bisect(struct component_probes *cp, const struct module *m,
			  const struct component_point *pts, size_t n, uint64_t *offsets,
			  uint64_t *cookies, size_t *failed, int *first)
{
	int e = attach_set(cp, m, pts, n, offsets, cookies);

	if (!e)
		return;
	uprobe_set_release(&cp->sets[--cp->n_sets]);
	if (n == 1 || e == -ENOMEM) {
		*failed += n;
		*first = *first ? *first : e;
		return;
	}
	attach_bisect(cp, m, pts, n / 2, offsets, cookies, failed, first);
	attach_bisect(cp, m, pts + n / 2, n - n / 2, offsets, cookies, failed, first);
}

int component_probes_attach(struct component_probes *cp, const struct module *m,
			    const struct component_point *pts, size_t n, size_t *failed)
{
	uint64_t *offsets = calloc(n, sizeof(*offsets)), *cookies = calloc(n, sizeof(*cookies));
	struct component_probed *probed;
	struct uprobe_set *sets;
	int e = -ENOMEM;

	*failed = 0;
	if (!cp->switch_link) {
		cp->switch_link = bpf_program__attach(cp->skel->progs.component_switch);
		if (!cp->switch_link) {
			e = -errno;
			goto cleanup;
		}
	}
	/* room for the sets of a bisection: at most one per function */
	probed = realloc(cp->probed, (cp->n_probed + n) * sizeof(*probed));
	if (probed)
		cp->probed = probed;
	sets = realloc(cp->sets, (cp->n_sets + n) * sizeof(*sets));
	if (sets)
		cp->sets = sets;
	if (!offsets || !cookies || !probed || !sets)
		goto cleanup;
	e = 0;
	attach_bisect(cp, m, pts, n, offsets, cookies, failed, &e);
cleanup:
	free(offsets);
	free(cookies);
	return e;
}

void component_probes_release(struct component_probes *cp)
{
	size_t i;

	for (i = 0; i < cp->n_sets; i++)
		uprobe_set_release(&cp->sets[i]);
	bpf_link__destroy(cp->switch_link);
	cp->switch_link = NULL;
	free(cp->sets);
	cp->sets = NULL;
	cp->n_sets = cp->n_probed = 0;
}

struct walk {
	component_cost_fn cost;
	component_step_fn step;
	void *ctx;
};

static int cost_entry(const void *key, const void *value, void *ctx)
{
	struct walk *w = ctx;

	return w->cost(key, value, w->ctx);
}

static int step_entry(const void *key, const void *value, void *ctx)
{
	struct walk *w = ctx;

	return w->step(key, value, w->ctx);
}

int component_probes_for_each_cost(struct component_probes *cp, component_cost_fn fn, void *ctx)
{
	struct walk w = {.cost = fn, .ctx = ctx};

	return map_walk(bpf_map__fd(cp->skel->maps.component_costs),
			sizeof(struct component_cost_key), sizeof(struct component_cost_value),
			cost_entry, &w);
}

int component_probes_for_each_step(struct component_probes *cp, component_step_fn fn, void *ctx)
{
	struct walk w = {.step = fn, .ctx = ctx};

	return map_walk(bpf_map__fd(cp->skel->maps.component_steps),
			sizeof(struct component_step_key), sizeof(struct component_step_value),
			step_entry, &w);
}

void component_probes_forget_step(struct component_probes *cp, const struct component_step_key *k)
{
	bpf_map_delete_elem(bpf_map__fd(cp->skel->maps.component_steps), k);
}

struct sent_entry {
	struct component_cost_key key;
	uint64_t calls;
};

static int sent_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct sent_entry *)a)->key, &((const struct sent_entry *)b)->key,
		      sizeof(struct component_cost_key));
}

int component_sent_changed(struct component_probes *cp, const struct component_cost_key *key,
			   uint64_t calls)
{
	struct sent_entry probe = {.key = *key}, *e;
	void *node = tfind(&probe, &cp->sent, sent_cmp);

	if (node) {
		e = *(struct sent_entry **)node;
		if (e->calls == calls)
			return 0;
		e->calls = calls;
		return 1;
	}
	e = malloc(sizeof(*e));
	if (e) {
		*e = (struct sent_entry){*key, calls};
		if (!tsearch(e, &cp->sent, sent_cmp))
			free(e);
	}
	return 1;
}

void component_sent_free(struct component_probes *cp)
{
	tdestroy(cp->sent, free);
	cp->sent = NULL;
}

struct forget_ctx {
	struct component_probes *cp;
	__u32 tgid;
};

static int forget_cost(const struct component_cost_key *key,
		       const struct component_cost_value *value, void *ctx)
{
	struct forget_ctx *fc = ctx;

	(void)value;
	if (key->tgid == fc->tgid)
		bpf_map_delete_elem(bpf_map__fd(fc->cp->skel->maps.component_costs), key);
	return 0;
}

/* the entries of one process in the "sent" record, collected by twalk_r
 * (the tree is not changed while it is walked) */
struct sent_sweep {
	__u32 tgid;
	struct sent_entry **list;
	size_t n, cap;
};

static void sweep_sent(const void *node, VISIT which, void *closure)
{
	struct sent_sweep *sw = closure;
	struct sent_entry *e = *(struct sent_entry *const *)node, **list;

	if ((which != postorder && which != leaf) || e->key.tgid != sw->tgid)
		return;
	if (sw->n == sw->cap) {
		list = realloc(sw->list, (sw->cap ? 2 * sw->cap : 64) * sizeof(*list));
		if (!list)
			return; /* kept: a leak of a few bytes, not a wrong total */
		sw->list = list;
		sw->cap = sw->cap ? 2 * sw->cap : 64;
	}
	sw->list[sw->n++] = e;
}

static void sent_forget(struct component_probes *cp, __u32 tgid)
{
	struct sent_sweep sw = {.tgid = tgid};
	size_t i;

	twalk_r(cp->sent, sweep_sent, &sw);
	for (i = 0; i < sw.n; i++) {
		tdelete(sw.list[i], &cp->sent, sent_cmp);
		free(sw.list[i]);
	}
	free(sw.list);
}

static int forget_step(const struct component_step_key *key,
		       const struct component_step_value *value, void *ctx)
{
	struct forget_ctx *fc = ctx;

	(void)value;
	if (key->tgid == fc->tgid)
		component_probes_forget_step(fc->cp, key);
	return 0;
}

void component_probes_forget(struct component_probes *cp, pid_t tgid)
{
	struct forget_ctx fc = {cp, (__u32)tgid};

	component_probes_for_each_cost(cp, forget_cost, &fc);
	component_probes_for_each_step(cp, forget_step, &fc);
	bpf_map_delete_elem(bpf_map__fd(cp->skel->maps.component_steps_state), &fc.tgid);
	sent_forget(cp, fc.tgid);
}
