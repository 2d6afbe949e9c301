/* export_stacks — see export_stacks.h */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/export_stacks.h"
#include "userspace/log/json_text.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_read_loci.h"

/* as the summary: time first */
const char *const export_counters[] = {"cpu-clock", "cycles"};
const size_t export_n_counters = sizeof(export_counters) / sizeof(export_counters[0]);

const char *export_counter_unit(const char *counter)
{
	return counter && !strcmp(counter, "cpu-clock") ? "nanoseconds" : "count";
}

static char *clean_text(const char *s)
{
	return s ? json_text_escape(s, strlen(s), NULL) : NULL;
}

char *export_frame_name(const struct pivot_stack_frame *fr)
{
	char *raw = NULL, *name;

	if (fr->hotspot)
		return clean_text(fr->hotspot);
	if (asprintf(&raw, "%s+0x%" PRIx64, fr->module ? fr->module : "", fr->offset) < 0)
		return NULL;
	name = clean_text(raw);
	free(raw);
	return name;
}

/* grows *array (of *cap elements of size) to hold n + 1 */
static int grow(void *array, size_t *cap, size_t n, size_t size)
{
	void **a = array;
	size_t c;
	void *b;

	if (n < *cap)
		return 0;
	c = *cap ? 2 * *cap : 64;
	b = reallocarray(*a, c, size);
	if (!b)
		return -ENOMEM;
	*a = b;
	*cap = c;
	return 0;
}

static int add_module(const struct pivot_module *m, void *ctx)
{
	struct export_stacks *s = ctx;
	struct export_module *e;

	if (grow(&s->modules, &s->cap_modules, s->n_modules, sizeof(*e)))
		return -ENOMEM;
	e = &s->modules[s->n_modules++];
	memset(e, 0, sizeof(*e));
	e->id = m->id;
	e->has_build_id = m->has_build_id;
	e->kernel = m->identity && !strcmp(m->identity, "pseudo:kernel");
	e->identity = clean_text(m->identity ? m->identity : "");
	e->path = clean_text(m->path ? m->path : "");
	e->display_name = clean_text(m->display_name ? m->display_name : "");
	return e->identity && e->path && e->display_name ? 0 : -ENOMEM;
}

/* the index of the element whose id (its first member, int64_t) is id
 * in base[0..n), sorted by id; EXPORT_NO_MODULE when none */
static size_t find_by_id(const void *base, size_t n, size_t size, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int64_t at;

		memcpy(&at, (const char *)base + mid * size, sizeof(at));
		if (at == id)
			return mid;
		if (at < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return EXPORT_NO_MODULE;
}

static uint64_t frame_hash(size_t module, uint64_t offset)
{
	uint64_t h = (offset ^ ((uint64_t)module << 40)) * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 29);
}

/* the slot table rebuilt at twice the frames' count, power of two */
static int rehash(struct export_stacks *s)
{
	size_t n = s->n_slots ? 2 * s->n_slots : 1024, i;
	size_t *slots = malloc(n * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		slots[i] = EXPORT_NO_MODULE;
	for (i = 0; i < s->n_frames; i++) {
		const struct export_frame *f = &s->frames[i];
		size_t k = frame_hash(f->module, f->offset) & (n - 1);

		while (slots[k] != EXPORT_NO_MODULE)
			k = (k + 1) & (n - 1);
		slots[k] = i;
	}
	free(s->slots);
	s->slots = slots;
	s->n_slots = n;
	return 0;
}

/* the index of the frame (module, offset), added when new; name: a pseudo
 * frame's (module EXPORT_NO_MODULE), else taken from fr */
static int frame_index(struct export_stacks *s, size_t module, uint64_t offset,
		       const struct pivot_stack_frame *fr, const char *name, size_t *index)
{
	struct export_frame *f;
	size_t k;

	if (2 * (s->n_frames + 1) > s->n_slots && rehash(s))
		return -ENOMEM;
	for (k = frame_hash(module, offset) & (s->n_slots - 1); s->slots[k] != EXPORT_NO_MODULE;
	     k = (k + 1) & (s->n_slots - 1)) {
		f = &s->frames[s->slots[k]];
		if (f->module == module && f->offset == offset) {
			*index = s->slots[k];
			return 0;
		}
	}
	if (grow(&s->frames, &s->cap_frames, s->n_frames, sizeof(*f)))
		return -ENOMEM;
	f = &s->frames[s->n_frames];
	memset(f, 0, sizeof(*f));
	f->module = module;
	f->offset = offset;
	f->name = fr ? export_frame_name(fr) : strdup(name);
	f->source_file = fr ? clean_text(fr->source_file) : NULL;
	f->line = fr ? fr->line : 0;
	if (!f->name || (fr && fr->source_file && !f->source_file)) {
		free(f->name);
		free(f->source_file);
		return -ENOMEM;
	}
	if (module != EXPORT_NO_MODULE && offset > s->modules[module].max_offset)
		s->modules[module].max_offset = offset;
	s->slots[k] = *index = s->n_frames++;
	return 0;
}

/* pseudo frames: no module, offsets 0 and 1 */
static int stack_frames(struct export_stacks *s, const struct pivot_stack_total *t, size_t *out)
{
	size_t n = 0, i;
	int err = 0;

	if (t->truncated)
		err = frame_index(s, EXPORT_NO_MODULE, 0, NULL, EXPORT_TRUNCATED, &out[n++]);
	if (!t->n_frames && !err)
		err = frame_index(s, EXPORT_NO_MODULE, 1, NULL, EXPORT_NO_FRAMES, &out[n++]);
	for (i = t->n_frames; i-- > 0 && !err;) { /* root first */
		const struct pivot_stack_frame *fr = &t->frames[i];
		size_t m = find_by_id(s->modules, s->n_modules, sizeof(*s->modules), fr->module_id);

		if (m == EXPORT_NO_MODULE) {
			pr_warn("export: frame of stack %" PRId64 " in an unknown module %" PRId64,
				t->id, fr->module_id);
			return -EBADMSG;
		}
		err = frame_index(s, m, fr->offset, fr, NULL, &out[n++]);
	}
	return err;
}

static int add_stack(const struct pivot_stack_total *t, void *ctx)
{
	struct export_stacks *s = ctx;
	struct export_stack *st;
	size_t n = t->n_frames + 2;
	int err;

	if (grow(&s->stacks, &s->cap_stacks, s->n_stacks, sizeof(*st)))
		return -ENOMEM;
	st = &s->stacks[s->n_stacks];
	memset(st, 0, sizeof(*st));
	st->frames = calloc(n, sizeof(*st->frames));
	if (!st->frames)
		return -ENOMEM;
	s->n_stacks++; /* counted now: released with the others on failure */
	st->id = t->id;
	st->truncated = t->truncated;
	st->sample_count = t->sample_count;
	st->value = t->value;
	st->n_frames = (t->truncated ? 1 : 0) + (t->n_frames ? t->n_frames : 1);
	err = stack_frames(s, t, st->frames);
	if (err)
		return err;
	s->sample_count += t->sample_count;
	s->value += t->value;
	if (t->truncated)
		s->truncated_samples += t->sample_count;
	return 0;
}

static int add_locus(const struct pivot_locus *l, void *ctx)
{
	struct export_stacks *s = ctx;
	struct export_locus *e;

	if (grow(&s->loci, &s->cap_loci, s->n_loci, sizeof(*e)))
		return -ENOMEM;
	e = &s->loci[s->n_loci++];
	memset(e, 0, sizeof(*e));
	e->id = l->id;
	e->has_rank = l->has_rank;
	e->rank = l->rank;
	e->tgid = l->tgid;
	e->tid = l->tid;
	e->node = clean_text(l->node ? l->node : "");
	e->comm = clean_text(l->comm);
	e->exe = clean_text(l->exe);
	if (!e->node || (l->comm && !e->comm) || (l->exe && !e->exe))
		return -ENOMEM;
	return 0;
}

static int add_sample(const struct pivot_locus_stack *ls, void *ctx)
{
	struct export_stacks *s = ctx;
	struct export_sample *e;
	/* both walks are by id */
	size_t stack = find_by_id(s->stacks, s->n_stacks, sizeof(*s->stacks), ls->stack);
	size_t locus = find_by_id(s->loci, s->n_loci, sizeof(*s->loci), ls->locus);

	if (stack == EXPORT_NO_MODULE || locus == EXPORT_NO_MODULE) {
		pr_warn("export: samples of stack %" PRId64 " on locus %" PRId64
			" not found by the walks",
			ls->stack, ls->locus);
		return -EBADMSG;
	}
	if (grow(&s->samples, &s->cap_samples, s->n_samples, sizeof(*e)))
		return -ENOMEM;
	e = &s->samples[s->n_samples++];
	e->stack = stack;
	e->locus = locus;
	e->sample_count = ls->sample_count;
	e->value = ls->value;
	return 0;
}

int export_stacks_load(struct export_stacks *s, struct pivot *p)
{
	size_t k;
	int err;

	if (!s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	if (!p)
		return -EINVAL;
	err = pivot_for_each_module(p, add_module, s);
	err = err ?: pivot_for_each_locus(p, add_locus, s);
	for (k = 0; k < export_n_counters && !err; k++) {
		err = pivot_for_each_stack_total(p, export_counters[k], add_stack, s);
		if (!err && s->n_stacks) {
			s->counter = export_counters[k];
			err = pivot_for_each_locus_stack(p, s->counter, add_sample, s);
			break;
		}
	}
	if (err)
		export_stacks_release(s);
	return err;
}

int export_stacks_load_loci(struct export_stacks *s, struct pivot *p)
{
	int err;

	if (!s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	if (!p)
		return -EINVAL;
	err = pivot_for_each_locus(p, add_locus, s);
	if (err)
		export_stacks_release(s);
	return err;
}

char *export_locus_name(const struct export_locus *l, int thread, int several_nodes)
{
	const char *comm = l->comm ? l->comm : "?";
	char *name = NULL, *on = NULL;
	int n;

	if (several_nodes && asprintf(&on, " on %s", l->node) < 0)
		return NULL;
	if (l->has_rank && !thread)
		n = asprintf(&name, "rank %d%s", l->rank, on ? on : "");
	else if (l->has_rank)
		n = asprintf(&name, "rank %d %s (tid %" PRId64 ")%s", l->rank, comm, l->tid,
			     on ? on : "");
	else if (thread)
		n = asprintf(&name, "%s (pid %" PRId64 ", tid %" PRId64 ")%s", comm, l->tgid,
			     l->tid, on ? on : "");
	else
		n = asprintf(&name, "%s (pid %" PRId64 ")%s", comm, l->tgid, on ? on : "");
	free(on);
	return n < 0 ? NULL : name;
}

size_t export_locus_index(const struct export_stacks *s, int64_t id)
{
	return find_by_id(s->loci, s->n_loci, sizeof(*s->loci), id);
}

int export_several_nodes(const struct export_stacks *s)
{
	size_t i;

	for (i = 1; i < s->n_loci; i++)
		if (strcmp(s->loci[i].node, s->loci[0].node))
			return 1;
	return 0;
}

void export_stacks_release(struct export_stacks *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n_modules; i++) {
		free(s->modules[i].identity);
		free(s->modules[i].path);
		free(s->modules[i].display_name);
	}
	for (i = 0; i < s->n_frames; i++) {
		free(s->frames[i].name);
		free(s->frames[i].source_file);
	}
	for (i = 0; i < s->n_stacks; i++)
		free(s->stacks[i].frames);
	for (i = 0; i < s->n_loci; i++) {
		free(s->loci[i].node);
		free(s->loci[i].comm);
		free(s->loci[i].exe);
	}
	free(s->modules);
	free(s->frames);
	free(s->stacks);
	free(s->loci);
	free(s->samples);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
