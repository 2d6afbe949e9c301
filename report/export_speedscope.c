/* export_speedscope — see export_speedscope.h */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/export_speedscope.h"
#include "report/export_stacks.h"
#include "userspace/log/json_text.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

/* the order of the profiles: ranks by rank, then the others by node, pid,
 * tid */
static int group_cmp(const struct export_locus *a, const struct export_locus *b)
{
	int c;

	if (a->has_rank != b->has_rank)
		return a->has_rank ? -1 : 1;
	if (a->has_rank)
		return (a->rank > b->rank) - (a->rank < b->rank);
	c = strcmp(a->node, b->node);
	if (c)
		return c;
	if (a->tgid != b->tgid)
		return a->tgid < b->tgid ? -1 : 1;
	return (a->tid > b->tid) - (a->tid < b->tid);
}

static const struct export_locus *sort_loci;

static int by_group(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = group_cmp(&sort_loci[i], &sort_loci[j]);

	return c ? c : (i > j) - (i < j);
}

static json_t *frames_json(const struct export_stacks *s)
{
	json_t *frames = json_array();
	size_t i;

	for (i = 0; frames && i < s->n_frames; i++) {
		const struct export_frame *f = &s->frames[i];
		json_t *o = json_pack("{s:s}", "name", f->name);

		if (o && f->source_file)
			json_object_set_new(o, "file", json_string(f->source_file));
		if (o && f->line > 0)
			json_object_set_new(o, "line", json_integer(f->line));
		if (!o || json_array_append_new(frames, o)) {
			json_decref(frames);
			return NULL;
		}
	}
	return frames;
}

/* a Stack's frame indexes, root first */
static json_t *stack_json(const struct export_stack *st)
{
	json_t *a = json_array();
	size_t k;

	for (k = 0; a && k < st->n_frames; k++)
		if (json_array_append_new(a, json_integer((json_int_t)st->frames[k]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* the samples of the Loci in group (a mask by locus index) */
static json_t *profile_json(const struct export_stacks *s, const char *name,
			    const unsigned char *group)
{
	json_t *samples = json_array(), *weights = json_array();
	uint64_t total = 0;
	size_t i;

	for (i = 0; samples && weights && i < s->n_samples; i++) {
		const struct export_sample *e = &s->samples[i];

		if (!group[e->locus])
			continue;
		if (json_array_append_new(samples, stack_json(&s->stacks[e->stack])) ||
		    json_array_append_new(weights, json_integer((json_int_t)e->sample_count)))
			break;
		total += e->sample_count;
	}
	if (!samples || !weights || i < s->n_samples) {
		json_decref(samples);
		json_decref(weights);
		return NULL;
	}
	return json_pack("{s:s, s:o, s:s, s:i, s:I, s:o, s:o}", "type", "sampled", "name",
			 json_text(name), "unit", "none", "startValue", 0, "endValue",
			 (json_int_t)total, "samples", samples, "weights", weights);
}

/* one profile per group of Loci, in group order */
static json_t *profiles_json(const struct export_stacks *s)
{
	size_t *order = calloc(s->n_loci + 1, sizeof(*order)), i, j, k;
	unsigned char *group = calloc(s->n_loci + 1, 1);
	int several = export_several_nodes(s);
	json_t *profiles = json_array();

	for (i = 0; order && i < s->n_loci; i++)
		order[i] = i;
	sort_loci = s->loci;
	if (order && s->n_loci)
		qsort(order, s->n_loci, sizeof(*order), by_group);
	for (i = 0; order && group && profiles && i < s->n_loci; i = j) {
		const struct export_locus *l = &s->loci[order[i]];
		char *name = export_locus_name(l, !l->has_rank, several);
		json_t *p;

		memset(group, 0, s->n_loci);
		for (j = i; j < s->n_loci && !group_cmp(l, &s->loci[order[j]]); j++)
			group[order[j]] = 1;
		for (k = 0; k < s->n_samples && !group[s->samples[k].locus]; k++)
			;
		p = name && k < s->n_samples ? profile_json(s, name, group) : NULL;
		if ((!name || k < s->n_samples) && (!p || json_array_append_new(profiles, p))) {
			json_decref(profiles);
			profiles = NULL;
		}
		free(name);
	}
	if (!order || !group) {
		json_decref(profiles);
		profiles = NULL;
	}
	free(order);
	free(group);
	return profiles;
}

int export_speedscope(struct pivot *p, const json_t *manifest, FILE *out,
		      struct export_speedscope_stats *stats)
{
	const char *run =
	    json_string_value(json_object_get(json_object_get(manifest, "run"), "name"));
	struct export_speedscope_stats st = {0};
	struct export_stacks s;
	json_t *doc = NULL, *frames, *profiles;
	int err;

	if (!p || !out)
		return -EINVAL;
	err = export_stacks_load(&s, p);
	if (err)
		return err;
	frames = frames_json(&s);
	profiles = profiles_json(&s);
	if (profiles && !json_array_size(profiles)) /* no sample: one empty profile */
		json_array_append_new(profiles, json_pack("{s:s, s:s, s:s, s:i, s:i, s:[], s:[]}",
							  "type", "sampled", "name", "no sample",
							  "unit", "none", "startValue", 0,
							  "endValue", 0, "samples", "weights"));
	if (frames && profiles)
		doc = json_pack("{s:s, s:s, s:o, s:i, s:{s:O}, s:O}", "$schema", SPEEDSCOPE_SCHEMA,
				"exporter", "nunatak", "name", json_text(run ? run : "nunatak Run"),
				"activeProfileIndex", 0, "shared", "frames", frames, "profiles",
				profiles);
	if (!doc) {
		err = -ENOMEM;
		goto cleanup;
	}
	errno = 0;
	if (json_dumpf(doc, out, JSON_COMPACT) || fputc('\n', out) == EOF || fflush(out) ||
	    ferror(out)) {
		err = errno ? -errno : -EIO;
		goto cleanup;
	}
	st.counter = s.counter;
	st.samples = s.sample_count;
	st.profiles = json_array_size(profiles);
	st.frames = s.n_frames;
cleanup:
	if (stats)
		*stats = st;
	json_decref(doc);
	json_decref(frames);
	json_decref(profiles);
	export_stacks_release(&s);
	return err;
}
