/* summary_source — see summary_source.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "report/run_model.h"
#include "report/summary_format.h"
#include "report/summary_source.h"
#include "userspace/log/json_text.h"
#include "userspace/pivot/pivot.h"

/* one line of an extract, as read */
struct source_line {
	uint32_t line;
	char *text; /* NULL: not kept */
	uint64_t samples;
};

/* an extract and its lines, copied out of the pivot */
struct source_view {
	int found;
	char *dwarf_path, *resolved, *status, *reason;
	uint32_t first_line, last_line;
	int truncated;
	struct source_line *lines;
	size_t n;
};

static void view_release(struct source_view *v)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		free(v->lines[i].text);
	free(v->lines);
	free(v->dwarf_path);
	free(v->resolved);
	free(v->status);
	free(v->reason);
	memset(v, 0, sizeof(*v));
}

static char *dup_or_null(const char *s, int *failed)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*failed = 1;
	return d;
}

static int copy_source(const struct pivot_source *s, void *ctx)
{
	struct source_view *v = ctx;
	int failed = 0;

	v->found = 1;
	v->dwarf_path = dup_or_null(s->dwarf_path, &failed);
	v->resolved = dup_or_null(s->resolved_path, &failed);
	v->status = dup_or_null(s->status, &failed);
	v->reason = dup_or_null(s->reason, &failed);
	v->first_line = s->first_line;
	v->last_line = s->last_line;
	v->truncated = s->truncated;
	return failed ? -ENOMEM : 0;
}

static int copy_line(uint32_t line, const char *text, uint64_t samples, void *ctx)
{
	struct source_view *v = ctx;
	struct source_line *lines = reallocarray(v->lines, v->n + 1, sizeof(*lines));
	int failed = 0;

	if (!lines)
		return -ENOMEM;
	v->lines = lines;
	lines[v->n] = (struct source_line){line, dup_or_null(text, &failed), samples};
	v->n++;
	return failed ? -ENOMEM : 0;
}

/* no_source: what the extract says instead of its text */
static int view_strip(struct source_view *v)
{
	char *status = strdup("disabled"), *reason = strdup(RUN_MODEL_NO_SOURCE_REASON);
	size_t i;

	if (!status || !reason) {
		free(status);
		free(reason);
		return -ENOMEM;
	}
	for (i = 0; i < v->n; i++) {
		free(v->lines[i].text);
		v->lines[i].text = NULL;
	}
	free(v->status);
	free(v->reason);
	v->status = status;
	v->reason = reason;
	v->first_line = v->last_line = 0;
	return 0;
}

/* the extract of hotspot in v (v->found 0: none): 0 or -errno */
static int view_read(struct pivot *p, const struct diagnosis *d, int64_t hotspot,
		     struct source_view *v, int no_source)
{
	int err;

	memset(v, 0, sizeof(*v));
	err = pivot_source_of_hotspot(p, hotspot, copy_source, v);
	if (err == -ENOENT)
		return 0;
	err = err ?: pivot_for_each_source_line(p, hotspot, d->counter, copy_line, v);
	err = err ?: no_source ? view_strip(v) : 0;
	if (err)
		view_release(v);
	return err;
}

static int has_text(const struct source_view *v)
{
	return !strcmp(v->status, "embedded") || !strcmp(v->status, "not-verified");
}

/* 1 when line i is among the SUMMARY_SOURCE_LINES most sampled */
static int is_hot(const struct source_view *v, size_t i)
{
	size_t k, above = 0;

	if (!v->lines[i].samples)
		return 0;
	for (k = 0; k < v->n; k++)
		above += v->lines[k].samples > v->lines[i].samples ||
			 (v->lines[k].samples == v->lines[i].samples && k < i);
	return above < SUMMARY_SOURCE_LINES;
}

static void print_view(FILE *out, const struct diagnosis *d, const struct hotspot_share *h,
		       const struct source_view *v)
{
	char share[32];
	size_t i;

	fprintf(out, "\n  source of %s: %s", h->name, v->resolved ? v->resolved : v->dwarf_path);
	if (!has_text(v))
		fprintf(out, ": no text, %s: %s", v->status, v->reason ? v->reason : "");
	else if (v->reason)
		fprintf(out, " (%s)", v->reason);
	if (v->truncated)
		fprintf(out, " (extract cut at %u lines)", v->last_line - v->first_line + 1);
	fputc('\n', out);
	for (i = 0; i < v->n; i++) {
		if (!is_hot(v, i))
			continue;
		fprintf(out, "  %6s  %6" PRIu32 "  ",
			summary_fmt_share(share, sizeof(share),
					  d->total_samples ? (double)v->lines[i].samples /
								 (double)d->total_samples
							   : NAN),
			v->lines[i].line);
		if (v->lines[i].text)
			summary_print_text(out, v->lines[i].text);
		else
			fputs(has_text(v) ? "(outside the extract)" : "(text not kept)", out);
		fputc('\n', out);
	}
}

int summary_print_sources(FILE *out, const struct diagnosis *d, struct pivot *p, int no_source)
{
	struct source_view v;
	size_t i, shown = 0;
	int err = 0;

	if (!p || !d->counter)
		return 0;
	for (i = 0; i < d->n_hotspots && shown < SUMMARY_SOURCE_HOTSPOTS && !err; i++) {
		err = view_read(p, d, d->hotspots[i].id, &v, no_source);
		if (err || !v.found)
			continue;
		print_view(out, d, &d->hotspots[i], &v);
		view_release(&v);
		shown++;
	}
	return err ?: ferror(out) ? -EIO : 0;
}

static json_t *lines_json(const struct diagnosis *d, const struct source_view *v)
{
	json_t *lines = json_array(), *o;
	size_t i;

	for (i = 0; lines && i < v->n; i++) {
		const struct source_line *l = &v->lines[i];

		o = json_pack("{s:I, s:o, s:o, s:I}", "line", (json_int_t)l->line, "text",
			      json_text(l->text), "share",
			      l->samples && d->total_samples
				  ? json_real((double)l->samples / (double)d->total_samples)
				  : json_null(),
			      "samples", (json_int_t)l->samples);
		if (!o || json_array_append_new(lines, o)) {
			json_decref(lines);
			return NULL;
		}
	}
	return lines;
}

static json_t *view_json(const struct diagnosis *d, const struct source_view *v)
{
	int text = v->first_line > 0;

	return json_pack("{s:o, s:o, s:s, s:o, s:o, s:o, s:b, s:o}", "file",
			 json_text(v->dwarf_path), "resolved", json_text(v->resolved), "status",
			 v->status, "reason", json_text(v->reason), "first_line",
			 text ? json_integer(v->first_line) : json_null(), "last_line",
			 text ? json_integer(v->last_line) : json_null(), "truncated", v->truncated,
			 "lines", lines_json(d, v));
}

int summary_source_attach(json_t *hotspot, const struct diagnosis *d, const struct hotspot_share *h,
			  struct pivot *p, int no_source)
{
	struct source_view v = {0};
	json_t *o = NULL;
	int err = 0;

	if (p && d->counter)
		err = view_read(p, d, h->id, &v, no_source);
	if (err)
		return err;
	if (v.found && !(o = view_json(d, &v))) {
		view_release(&v);
		return -ENOMEM;
	}
	view_release(&v);
	return json_object_set_new(hotspot, "source", o ? o : json_null()) ? -ENOMEM : 0;
}
