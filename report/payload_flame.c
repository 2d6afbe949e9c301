/* payload_flame — the Loci and the flame graph of the payload (payload.h).
 *
 * flame: {counter, frames[{name, module, kernel}] (unique (name, module)),
 * stacks[{f: frame indexes root first, t: truncated 0|1, n: samples,
 * l: [[index into loci, samples], ...]}] by decreasing n, samples (Σ n of
 * every Stack), kept_samples (Σ n of those kept), limit null | {stacks,
 * of, frames_cut, reason}}. A frame is named as export_folded names it
 * (its Hotspot, else MODULE+0xOFFSET); kernel: its module is [kernel].
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/payload.h"
#include "userspace/log/json_text.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_read_loci.h"

#define KERNEL_MODULE "[kernel]"

struct flame_stack {
	int64_t id;
	int truncated;
	uint64_t n;
	uint32_t *frames; /* root first */
	size_t n_frames;
	json_t *loci; /* [[locus index, samples], ...] */
};

struct flame {
	json_t *frames;	  /* [{name, module, kernel}] of every Stack walked */
	json_t *index;	  /* "len:module" + name -> index in frames */
	int64_t *loci_id; /* loci ids by id: a Locus' index in the payload */
	size_t n_loci;
	struct flame_stack *stacks;
	size_t n, cap;
	uint64_t samples, frames_cut;
};

static int locus_json(const struct pivot_locus *l, void *ctx)
{
	json_t *o = json_pack("{s:I, s:o, s:o, s:I, s:I, s:o, s:o}", "id", (json_int_t)l->id,
			      "node", json_text(l->node), "rank",
			      l->has_rank ? json_integer(l->rank) : json_null(), "tgid",
			      (json_int_t)l->tgid, "tid", (json_int_t)l->tid, "comm",
			      json_text(l->comm), "exe", json_text(l->exe));

	return !o || json_array_append_new(ctx, o) ? -ENOMEM : 0;
}

json_t *payload_loci_json(struct pivot *p)
{
	json_t *a = json_array();
	int err;

	if (!a)
		return NULL;
	err = pivot_for_each_locus(p, locus_json, a);
	if (err) {
		json_decref(a);
		errno = -err;
		return NULL;
	}
	return a;
}

/* the index of frame fr in f->frames, added when new: 0 or -ENOMEM */
static int frame_index(struct flame *f, const struct pivot_stack_frame *fr, uint32_t *out)
{
	char *name = NULL, *key = NULL;
	json_t *at, *o;
	int err = -ENOMEM;

	if (fr->hotspot)
		name = strdup(fr->hotspot);
	else if (asprintf(&name, "%s+0x%" PRIx64, fr->module, fr->offset) < 0)
		name = NULL;
	if (!name || asprintf(&key, "%zu:%s%s", strlen(fr->module), fr->module, name) < 0) {
		key = NULL;
		goto out;
	}
	/* the key is made UTF-8 as the names are */
	o = json_text(key);
	if (!o)
		goto out;
	at = json_object_get(f->index, json_string_value(o));
	if (at) {
		*out = (uint32_t)json_integer_value(at);
		json_decref(o);
		err = 0;
		goto out;
	}
	*out = (uint32_t)json_array_size(f->frames);
	if (json_object_set_new(f->index, json_string_value(o), json_integer(*out)) ||
	    json_array_append_new(f->frames,
				  json_pack("{s:o, s:o, s:b}", "name", json_text(name), "module",
					    json_text(fr->module), "kernel",
					    !strcmp(fr->module, KERNEL_MODULE)))) {
		json_decref(o);
		goto out;
	}
	json_decref(o);
	err = 0;
out:
	free(name);
	free(key);
	return err;
}

static int stack_add(const struct pivot_stack_total *s, void *ctx)
{
	struct flame *f = ctx;
	struct flame_stack *st;
	size_t i, n = s->n_frames;
	int err;

	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 1024;
		struct flame_stack *a = reallocarray(f->stacks, cap, sizeof(*a));

		if (!a)
			return -ENOMEM;
		f->stacks = a;
		f->cap = cap;
	}
	st = &f->stacks[f->n];
	memset(st, 0, sizeof(*st));
	st->id = s->id;
	st->n = s->sample_count;
	st->truncated = s->truncated;
	if (n > PAYLOAD_MAX_FRAMES_PER_STACK) {
		/* the innermost kept: the root side is what a truncated Stack lacks */
		f->frames_cut += n - PAYLOAD_MAX_FRAMES_PER_STACK;
		n = PAYLOAD_MAX_FRAMES_PER_STACK;
		st->truncated = 1;
	}
	st->frames = n ? calloc(n, sizeof(*st->frames)) : NULL;
	st->loci = json_array();
	if ((n && !st->frames) || !st->loci) {
		free(st->frames);
		json_decref(st->loci);
		return -ENOMEM;
	}
	f->n++;
	st->n_frames = n;
	/* frames[0] is the leaf: root first in the payload */
	for (i = 0; i < n; i++) {
		err = frame_index(f, &s->frames[s->n_frames - 1 - i], &st->frames[i]);
		if (err)
			return err;
	}
	f->samples += s->sample_count;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	int64_t x = ((const struct flame_stack *)a)->id, y = ((const struct flame_stack *)b)->id;

	return x < y ? -1 : x > y;
}

static int by_samples(const void *a, const void *b)
{
	const struct flame_stack *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int64_t locus_index(const struct flame *f, int64_t id)
{
	size_t lo = 0, hi = f->n_loci;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->loci_id[mid] == id)
			return (int64_t)mid;
		if (f->loci_id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int locus_id(const struct pivot_locus *l, void *ctx)
{
	struct flame *f = ctx;
	int64_t *a = reallocarray(f->loci_id, f->n_loci + 1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	f->loci_id = a;
	a[f->n_loci++] = l->id;
	return 0;
}

static int locus_stack(const struct pivot_locus_stack *s, void *ctx)
{
	struct flame *f = ctx;
	struct flame_stack key = {.id = s->stack}, *st;
	int64_t li = locus_index(f, s->locus);

	if (!f->n)
		return 0;
	st = bsearch(&key, f->stacks, f->n, sizeof(*f->stacks), by_id);
	if (!st || li < 0 || !s->sample_count)
		return 0;
	return json_array_append_new(st->loci, json_pack("[I, I]", (json_int_t)li,
							 (json_int_t)s->sample_count))
		   ? -ENOMEM
		   : 0;
}

/* the kept Stacks with their frames renumbered: only the frames they use
 * are in the payload, by first use */
static json_t *kept_json(struct flame *f, size_t kept, json_t **frames_out)
{
	json_t *stacks = json_array(), *frames = json_array(), *fa, *o;
	uint32_t *map = calloc(json_array_size(f->frames) + 1, sizeof(*map));
	size_t i, k;

	if (!stacks || !frames || !map)
		goto fail;
	for (i = 0; i < kept; i++) {
		struct flame_stack *st = &f->stacks[i];

		fa = json_array();
		for (k = 0; fa && k < st->n_frames; k++) {
			uint32_t *to = &map[st->frames[k]];

			if (!*to) {
				if (json_array_append(frames,
						      json_array_get(f->frames, st->frames[k])))
					goto fail_fa;
				*to = (uint32_t)json_array_size(frames);
			}
			if (json_array_append_new(fa, json_integer(*to - 1)))
				goto fail_fa;
		}
		o = fa ? json_pack("{s:o, s:i, s:I, s:O}", "f", fa, "t", st->truncated, "n",
				   (json_int_t)st->n, "l", st->loci)
		       : NULL;
		if (!o || json_array_append_new(stacks, o))
			goto fail;
	}
	free(map);
	*frames_out = frames;
	return stacks;
fail_fa:
	json_decref(fa);
fail:
	free(map);
	json_decref(stacks);
	json_decref(frames);
	errno = ENOMEM;
	return NULL;
}

static json_t *limit_json(const struct flame *f, size_t kept)
{
	char reason[256];

	if (kept == f->n && !f->frames_cut)
		return json_null();
	snprintf(reason, sizeof(reason),
		 "the %d Stacks with the most samples are kept (each of at most %d frames, "
		 "the innermost): the page stays small enough to open",
		 PAYLOAD_MAX_STACKS, PAYLOAD_MAX_FRAMES_PER_STACK);
	return json_pack("{s:I, s:I, s:I, s:s}", "stacks", (json_int_t)kept, "of",
			 (json_int_t)f->n, "frames_cut", (json_int_t)f->frames_cut, "reason", reason);
}

static void flame_release(struct flame *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		free(f->stacks[i].frames);
		json_decref(f->stacks[i].loci);
	}
	free(f->stacks);
	free(f->loci_id);
	json_decref(f->frames);
	json_decref(f->index);
}

json_t *payload_flame_json(struct pivot *p, const char *counter)
{
	struct flame f = {0};
	json_t *stacks = NULL, *frames = NULL, *o = NULL;
	uint64_t kept_samples = 0;
	size_t kept, i;
	int err = -ENOMEM;

	f.frames = json_array();
	f.index = json_object();
	if (!f.frames || !f.index)
		goto out;
	err = 0;
	if (p && counter) {
		err = pivot_for_each_locus(p, locus_id, &f);
		err = err ?: pivot_for_each_stack_total(p, counter, stack_add, &f);
		/* walked by id: the Loci's samples find their Stack by id */
		if (f.n)
			qsort(f.stacks, f.n, sizeof(*f.stacks), by_id);
		err = err ?: pivot_for_each_locus_stack(p, counter, locus_stack, &f);
	}
	if (err)
		goto out;
	if (f.n)
		qsort(f.stacks, f.n, sizeof(*f.stacks), by_samples);
	kept = f.n < PAYLOAD_MAX_STACKS ? f.n : PAYLOAD_MAX_STACKS;
	for (i = 0; i < kept; i++)
		kept_samples += f.stacks[i].n;
	stacks = kept_json(&f, kept, &frames);
	if (!stacks) {
		err = -ENOMEM;
		goto out;
	}
	o = json_pack("{s:o, s:o, s:o, s:I, s:I, s:o}", "counter", json_text(counter), "frames",
		      frames, "stacks", stacks, "samples", (json_int_t)f.samples, "kept_samples",
		      (json_int_t)kept_samples, "limit", limit_json(&f, kept));
	if (!o)
		err = -ENOMEM;
out:
	flame_release(&f);
	if (err)
		errno = -err;
	return o;
}
