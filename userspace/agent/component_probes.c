/* component_probes — see component_probes.h: loading, the Targets'
 * patterns, the functions probed, and what the kernel counted. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/components.skel.h"
#include "bpf/target.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/component_probes_internal.h"
#include "userspace/agent/component_symbols.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/uprobe_multi.h"
#include "userspace/log/log.h"

static struct components_bpf *components_load(int targets_fd, int multi, char *err, size_t errlen)
{
	struct components_bpf *skel;
	int e;

	/* 1. open */
	skel = components_bpf__open();
	if (!skel) {
		e = -errno;
		snprintf(err, errlen, "opening bpf/components.bpf.c failed: %s", strerror(-e));
		goto fail;
	}
	/* 2. configure */
	skel->rodata->component_page_size = (__u64)sysconf(_SC_PAGESIZE);
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.component_entry,
						      TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.component_return,
						      TRACE_UPROBE_MULTI);
	}
	e = targets_fd >= 0 ? bpf_map__reuse_fd(skel->maps.targets, targets_fd) : 0;
	if (e) {
		snprintf(err, errlen, "sharing the target map with the Component probes failed: %s",
			 strerror(-e));
		goto fail;
	}
	/* 3. load; 4. attach: per module (component_probes_consider) */
	e = components_bpf__load(skel);
	if (e) {
		snprintf(err, errlen, "loading bpf/components.bpf.c failed: %s", strerror(-e));
		goto fail;
	}
	return skel;
fail:
	components_bpf__destroy(skel);
	errno = -e;
	return NULL;
}

struct components_bpf *component_probes_load(int targets_fd, int multi, char *err, size_t errlen)
{
	return components_load(targets_fd, multi, err, errlen);
}

struct component_probes *component_probes__new(int targets_fd, int multi, char *err, size_t errlen)
{
	struct component_probes *cp = calloc(1, sizeof(*cp));
	int e;

	if (!cp)
		return NULL;
	cp->multi = multi != 0;
	cp->max_functions = MAX_COMPONENT_FUNCTIONS;
	cp->skel = components_load(targets_fd, cp->multi, err, errlen);
	if (!cp->skel && multi < 0) { /* before 6.6: one perf event per probe */
		cp->multi = 0;
		cp->skel = components_load(targets_fd, 0, err, errlen);
	}
	if (!cp->skel) {
		e = -errno;
		free(cp);
		errno = -e;
		return NULL;
	}
	return cp;
}

/* what t holds (not t) */
static void target_free(struct component_target *t)
{
	size_t j;

	for (j = 0; j < t->n; j++)
		free(t->patterns[j]);
	free(t->patterns);
	free(t->matched);
	free(t->considered);
}

void component_probes__free(struct component_probes *cp)
{
	size_t i;

	if (!cp)
		return;
	component_probes_release(cp);
	for (i = 0; i < cp->n_targets; i++)
		target_free(&cp->targets[i]);
	free(cp->targets);
	for (i = 0; i < cp->n_defs; i++) {
		free(cp->defs[i].name);
		free(cp->defs[i].pattern);
	}
	free(cp->defs);
	free(cp->probed);
	component_sent_free(cp);
	components_bpf__destroy(cp->skel);
	free(cp);
}

int component_probes_multi(const struct component_probes *cp)
{
	return cp->multi;
}

static struct component_target *target_find(const struct component_probes *cp, uint32_t id)
{
	size_t i;

	for (i = 0; i < cp->n_targets; i++)
		if (cp->targets[i].target_id == id)
			return &cp->targets[i];
	return NULL;
}

int component_probes_has_target(const struct component_probes *cp, uint32_t target_id,
				int *has_step)
{
	struct component_target *t = target_find(cp, target_id);

	if (has_step)
		*has_step = t && t->has_step;
	return t != NULL;
}

/* t's patterns, then its step function last (t->n of them in all) */
static int target_fill(struct component_target *t, const char *const *patterns, size_t n,
		       const char *step)
{
	size_t i;

	t->patterns = calloc(n + 1, sizeof(*t->patterns));
	t->matched = calloc(n + 1, sizeof(*t->matched));
	if (!t->patterns || !t->matched)
		return -ENOMEM;
	for (i = 0; i < n + !!step; i++) {
		t->patterns[i] = strdup(i < n ? patterns[i] : step);
		if (!t->patterns[i])
			return -ENOMEM;
		t->n++;
	}
	t->has_step = !!step;
	return 0;
}

int component_probes_add_target(struct component_probes *cp, uint32_t target_id, uint32_t owner,
				const char *const *patterns, size_t n, const char *step)
{
	struct component_target *ts, *t;
	__u8 one = 1;
	int e;

	if (target_find(cp, target_id))
		return -EEXIST;
	ts = realloc(cp->targets, (cp->n_targets + 1) * sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	cp->targets = ts;
	t = &ts[cp->n_targets];
	memset(t, 0, sizeof(*t));
	t->target_id = target_id;
	t->owner = owner;
	e = target_fill(t, patterns, n, step);
	if (!e && step &&
	    bpf_map_update_elem(bpf_map__fd(cp->skel->maps.component_step_targets), &target_id,
				&one, BPF_ANY))
		e = errno == E2BIG ? -ENOSPC : -errno;
	if (e) {
		target_free(t);
		return e;
	}
	cp->n_targets++;
	cp->cost_measured = 0; /* measured again for this Run */
	return 0;
}

void component_probes_remove_target(struct component_probes *cp, uint32_t target_id)
{
	struct component_target *t = target_find(cp, target_id);

	if (!t)
		return;
	bpf_map_delete_elem(bpf_map__fd(cp->skel->maps.component_step_targets), &target_id);
	target_free(t);
	*t = cp->targets[--cp->n_targets];
	if (!cp->n_targets)
		component_probes_release(cp);
}

void component_probes_set_max_functions(struct component_probes *cp, size_t max)
{
	cp->max_functions = max;
}

size_t component_probes_unprobed(const struct component_probes *cp, uint32_t target_id)
{
	const struct component_target *t = target_find(cp, target_id);

	return t ? t->unprobed : 0;
}

int component_probes_for_each_unmatched(const struct component_probes *cp, uint32_t target_id,
					int (*cb)(const char *pattern, int is_step, void *ctx),
					void *ctx)
{
	struct component_target *t = target_find(cp, target_id);
	size_t i;
	int err;

	for (i = 0; t && i < t->n; i++) {
		if (t->matched[i])
			continue;
		err = cb(t->patterns[i], t->has_step && i == t->n - 1, ctx);
		if (err)
			return err;
	}
	return 0;
}

const struct component_def *component_probes_def(const struct component_probes *cp, uint32_t id)
{
	return id >= 1 && id <= cp->n_defs ? &cp->defs[id - 1] : NULL;
}

/* the id of the Component named name (made when new); 0 on ENOMEM */
static uint32_t def_id(struct component_probes *cp, const char *name, const char *pattern,
		       int is_step)
{
	struct component_def *defs, *d;
	size_t i;

	for (i = 0; i < cp->n_defs; i++)
		if (!strcmp(cp->defs[i].name, name))
			return (uint32_t)i + 1;
	defs = realloc(cp->defs, (cp->n_defs + 1) * sizeof(*defs));
	if (!defs)
		return 0;
	cp->defs = defs;
	d = &defs[cp->n_defs];
	d->name = strdup(name);
	d->pattern = strdup(pattern);
	d->is_step = is_step;
	if (!d->name || !d->pattern) {
		free(d->name);
		free(d->pattern);
		return 0;
	}
	return (uint32_t)++cp->n_defs;
}

void component_probes_read_counters(const struct component_probes *cp,
				    uint64_t out[COMPONENT_COUNTERS])
{
	int i;

	for (i = 0; i < COMPONENT_COUNTERS; i++)
		out[i] = cp->skel->bss->component_counters[i];
}

/* the functions of m one Target names, matched flags set */
struct consider_ctx {
	struct component_probes *cp;
	struct component_target *t;
	const struct module *m;
	struct component_point *points;
	size_t n, cap;
};

static int already_probed(const struct component_probes *cp, const struct module *m,
			  uint64_t offset)
{
	size_t i;

	for (i = 0; i < cp->n_probed; i++)
		if (cp->probed[i].module == m && cp->probed[i].offset == offset)
			return 1;
	return 0;
}

static int consider_symbol(const struct component_symbol *s, void *arg)
{
	struct consider_ctx *cc = arg;
	int is_step = cc->t->has_step && s->pattern == cc->t->n - 1;
	struct component_point *pts;
	size_t i;
	uint32_t id;

	cc->t->matched[s->pattern] = 1;
	if (already_probed(cc->cp, cc->m, s->offset))
		return 0;
	for (i = 0; i < cc->n; i++)
		if (cc->points[i].offset == s->offset)
			return 0;
	if (cc->cp->n_probed + cc->n >= cc->cp->max_functions) {
		cc->t->unprobed++;
		return 0;
	}
	id = def_id(cc->cp, s->name, cc->t->patterns[s->pattern], is_step);
	if (!id)
		return -ENOMEM;
	if (cc->n == cc->cap) {
		size_t cap = cc->cap ? 2 * cc->cap : 16;

		pts = realloc(cc->points, cap * sizeof(*pts));
		if (!pts)
			return -ENOMEM;
		cc->points = pts;
		cc->cap = cap;
	}
	cc->points[cc->n++] = (struct component_point){
	    .offset = s->offset, .cookie = COMPONENT_COOKIE(id, is_step), .id = id};
	return 0;
}

/* 1 when t searched m already (else it is noted as searched: 0), -ENOMEM */
static int considered_before(struct component_target *t, const struct module *m)
{
	const struct module **grown;
	size_t i;

	for (i = 0; i < t->n_considered; i++)
		if (t->considered[i] == m)
			return 1;
	grown = realloc(t->considered, (t->n_considered + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	t->considered = grown;
	t->considered[t->n_considered++] = m;
	return 0;
}

int component_probes_consider(struct component_probes *cp, uint32_t target_id,
			      const struct module *m, char *err, size_t errlen)
{
	struct consider_ctx cc = {.cp = cp, .m = m, .t = target_find(cp, target_id)};
	size_t failed = 0;
	uint32_t file_owner;
	struct stat st;
	int e;

	if (!m->elf || !cc.t)
		return 0;
	e = considered_before(cc.t, m);
	if (e)
		return e > 0 ? 0 : e;
	file_owner = stat(m->path, &st) ? UINT32_MAX - 1 : (uint32_t)st.st_uid; /* none's */
	if (cc.t->owner != TARGET_UID_ANY && cc.t->owner != file_owner)
		return 0; /* not the user's file: others run it too */
	e = component_symbols_select(m->elf, (const char *const *)cc.t->patterns, cc.t->n,
				     consider_symbol, &cc);
	if (!e && cc.n)
		e = component_probes_attach(cp, m, cc.points, cc.n, &failed);
	if (e && failed)
		snprintf(err, errlen,
			 "%zu of the %zu functions of '%s' the Component patterns named could not "
			 "be probed (%s): their costs are missing",
			 failed, cc.n, m->path,
			 e == -524 ? "the kernel cannot probe their first instruction"
				   : strerror(-e));
	else if (e)
		snprintf(err, errlen, "probing the Components of '%s' failed: %s", m->path,
			 strerror(-e));
	if (cc.n > failed)
		pr_info("'%s': %zu Component functions probed%s", m->path, cc.n - failed,
			cp->multi ? " (uprobe_multi)" : "");
	free(cc.points);
	return e ? e : (int)cc.n;
}
