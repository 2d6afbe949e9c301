/* export_folded — folded stacks from the pivot's Stacks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/export_folded.h"
#include "report/export_stacks.h"
#include "userspace/log/json_text.h"
#include "userspace/pivot/pivot.h"

struct folded_line {
	char *text;
	uint64_t count;
};

struct folded {
	struct folded_line *lines;
	size_t n, cap;
	struct export_folded_stats st;
	/* the line being built */
	char *buf;
	size_t len, size;
};

char *export_folded_name(const char *name)
{
	char *s = json_text_escape(name, strlen(name), NULL);
	char *c;

	if (!s)
		return NULL;
	for (c = s; *c; c++) {
		if (*c == ';')
			*c = ':';
		else if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	}
	return s;
}

static int line_append(struct folded *f, const char *s)
{
	size_t n = strlen(s);

	if (f->len + n + 1 > f->size) {
		size_t size = f->size ? f->size : 256;
		char *b;

		while (size < f->len + n + 1)
			size *= 2;
		b = realloc(f->buf, size);
		if (!b)
			return -ENOMEM;
		f->buf = b;
		f->size = size;
	}
	memcpy(f->buf + f->len, s, n + 1);
	f->len += n;
	return 0;
}

/* one frame, after a ';' unless it is the first */
static int append_frame(struct folded *f, const struct pivot_stack_frame *fr)
{
	char *raw, *name;
	int err;

	if (f->len && line_append(f, ";"))
		return -ENOMEM;
	/* the shared naming, then the folded format's replacements */
	raw = export_frame_name(fr);
	name = raw ? export_folded_name(raw) : NULL;
	free(raw);
	if (!name)
		return -ENOMEM;
	err = line_append(f, name);
	free(name);
	return err;
}

static int add_stack(const struct pivot_stack_total *s, void *ctx)
{
	struct folded *f = ctx;
	struct folded_line *l;
	size_t i;
	int err = 0;

	f->len = 0;
	if (s->truncated)
		err = line_append(f, EXPORT_TRUNCATED);
	if (!s->n_frames)
		err = err ?: line_append(f, f->len ? ";" EXPORT_NO_FRAMES : EXPORT_NO_FRAMES);
	for (i = s->n_frames; i-- > 0 && !err;) /* root first */
		err = append_frame(f, &s->frames[i]);
	if (err)
		return err;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;

		l = reallocarray(f->lines, cap, sizeof(*l));
		if (!l)
			return -ENOMEM;
		f->lines = l;
		f->cap = cap;
	}
	l = &f->lines[f->n];
	l->text = strdup(f->buf ? f->buf : "");
	if (!l->text)
		return -ENOMEM;
	l->count = s->sample_count;
	f->n++;
	f->st.stacks++;
	f->st.samples += s->sample_count;
	if (s->truncated)
		f->st.truncated += s->sample_count;
	return 0;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* sorted, the lines of one folded stack merged, written */
static int write_lines(struct folded *f, FILE *out)
{
	size_t i, j;

	if (f->n) /* qsort of NULL: undefined */
		qsort(f->lines, f->n, sizeof(*f->lines), by_text);
	for (i = 0; i < f->n; i = j) {
		uint64_t count = f->lines[i].count;

		for (j = i + 1; j < f->n && !strcmp(f->lines[i].text, f->lines[j].text); j++)
			count += f->lines[j].count;
		if (fprintf(out, "%s %" PRIu64 "\n", f->lines[i].text, count) < 0)
			return errno ? -errno : -EIO;
		f->st.lines++;
	}
	if (fflush(out) || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}

static void folded_release(struct folded *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		free(f->lines[i].text);
	free(f->lines);
	free(f->buf);
	f->lines = NULL;
	f->buf = NULL;
	f->n = f->cap = f->len = f->size = 0;
}

int export_folded(struct pivot *p, FILE *out, struct export_folded_stats *stats)
{
	struct folded f = {0};
	size_t k;
	int err = 0;

	if (!p || !out)
		return -EINVAL;
	for (k = 0; k < export_n_counters; k++) {
		err = pivot_for_each_stack_total(p, export_counters[k], add_stack, &f);
		if (err || f.n) {
			f.st.counter = export_counters[k];
			break;
		}
	}
	errno = 0;
	if (!err)
		err = write_lines(&f, out);
	if (stats)
		*stats = f.st;
	folded_release(&f);
	return err;
}
