/* component_probes_maps — the Component probes in the kernel (see
 * component_probes.h): attached per module, released together, and the
 * maps they fill, read and forgotten. */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/components.skel.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/component_probes_internal.h"
#include "userspace/agent/map_walk.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/uprobe_multi.h"

static int push_link(struct component_probes *cp, struct bpf_link *link)
{
	struct bpf_link **links = realloc(cp->links, (cp->n_links + 1) * sizeof(*links));

	if (!links) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	cp->links = links;
	cp->links[cp->n_links++] = link;
	return 0;
}

static int push_fd(struct component_probes *cp, int fd)
{
	int *fds = realloc(cp->multi_fds, (cp->n_multi_fds + 1) * sizeof(*fds));

	if (!fds) {
		close(fd);
		return -ENOMEM;
	}
	cp->multi_fds = fds;
	cp->multi_fds[cp->n_multi_fds++] = fd;
	return 0;
}

static int attach_multi(struct component_probes *cp, const char *path,
			const struct component_point *pts, size_t n)
{
	uint64_t *offsets = calloc(n, sizeof(*offsets)), *cookies = calloc(n, sizeof(*cookies));
	int fd, e = 0, dir;
	size_t i;

	if (!offsets || !cookies) {
		e = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		offsets[i] = pts[i].offset;
		cookies[i] = pts[i].cookie;
	}
	for (dir = 0; dir < 2 && !e; dir++) {
		fd = uprobe_multi_link_create(
		    bpf_program__fd(dir ? cp->skel->progs.component_return
					: cp->skel->progs.component_entry),
		    path, offsets, cookies, (uint32_t)n, dir ? UPROBE_MULTI_RETURN : 0, 0);
		e = fd < 0 ? fd : push_fd(cp, fd);
	}
cleanup:
	free(offsets);
	free(cookies);
	return e;
}

static int attach_perf_events(struct component_probes *cp, const char *path,
			      const struct component_point *pts, size_t n)
{
	struct bpf_link *link;
	size_t i;
	int dir, e;

	for (i = 0; i < n; i++) {
		for (dir = 0; dir < 2; dir++) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = pts[i].cookie,
				    .retprobe = dir == 1);

			link = bpf_program__attach_uprobe_opts(
			    dir ? cp->skel->progs.component_return : cp->skel->progs.component_entry,
			    -1, path, pts[i].offset, &opts);
			if (!link)
				return -errno;
			e = push_link(cp, link);
			if (e)
				return e;
		}
	}
	return 0;
}

int component_probes_attach(struct component_probes *cp, const struct module *m,
			    const struct component_point *pts, size_t n)
{
	struct component_probed *probed;
	size_t i;
	int e;

	if (!cp->switch_link) {
		cp->switch_link = bpf_program__attach(cp->skel->progs.component_switch);
		if (!cp->switch_link)
			return -errno;
	}
	probed = realloc(cp->probed, (cp->n_probed + n) * sizeof(*probed));
	if (!probed)
		return -ENOMEM;
	cp->probed = probed;
	e = cp->multi ? attach_multi(cp, m->path, pts, n) : attach_perf_events(cp, m->path, pts, n);
	if (e)
		return e;
	for (i = 0; i < n; i++)
		cp->probed[cp->n_probed++] = (struct component_probed){m, pts[i].offset};
	return 0;
}

void component_probes_release(struct component_probes *cp)
{
	size_t i;

	for (i = 0; i < cp->n_multi_fds; i++)
		close(cp->multi_fds[i]);
	for (i = 0; i < cp->n_links; i++)
		bpf_link__destroy(cp->links[i]);
	bpf_link__destroy(cp->switch_link);
	cp->switch_link = NULL;
	free(cp->multi_fds);
	free(cp->links);
	cp->multi_fds = NULL;
	cp->links = NULL;
	cp->n_multi_fds = cp->n_links = cp->n_probed = 0;
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
