/* source_read — one source file read for a Run (source.h): resolved,
 * opened without following its last component, checked against its MD5,
 * cut to the lines wanted. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/source/source.h"

const char *source_status_name(enum source_status s)
{
	static const char *const names[] = {
	    [SOURCE_EMBEDDED] = "embedded", [SOURCE_NOT_VERIFIED] = "not-verified",
	    [SOURCE_STALE] = "stale",	    [SOURCE_MISSING] = "missing",
	    [SOURCE_AMBIGUOUS] = "ambiguous", [SOURCE_DISABLED] = "disabled",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "invalid";
}

void source_answer_release(struct source_answer *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->n_lines; i++)
		free(a->lines[i]);
	free(a->lines);
	free(a->resolved);
	memset(a, 0, sizeof(*a));
}

/* the whole regular file at path in *buf (*len bytes, NUL-terminated):
 * 0 or -errno (-EFBIG over the cap, -EINVAL not a regular file, -ELOOP a
 * symbolic link) */
static int read_file(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;
	ssize_t r;
	int err = 0;

	*buf = NULL;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (st.st_size > SOURCE_MAX_FILE_BYTES)
		err = -EFBIG;
	else if (!(*buf = malloc((size_t)st.st_size + 1)))
		err = -ENOMEM;
	while (!err && got < (size_t)st.st_size) {
		r = read(fd, *buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = -errno;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (err) {
		free(*buf);
		*buf = NULL;
		return err;
	}
	(*buf)[got] = '\0';
	*len = got;
	return 0;
}

static size_t count_lines(const char *text, size_t len)
{
	size_t n = 0, i;

	for (i = 0; i < len; i++)
		n += text[i] == '\n';
	return n + (len && text[len - 1] != '\n');
}

/* lines [a->first_line, a->last_line] of text into a->lines */
static int cut_lines(const char *text, size_t len, struct source_answer *a)
{
	const char *p = text, *end = text + len, *nl;
	uint32_t line = 1;
	size_t n;

	a->n_lines = 0;
	a->lines = calloc(a->last_line - a->first_line + 1, sizeof(*a->lines));
	if (!a->lines)
		return -ENOMEM;
	for (; p < end && line <= a->last_line; line++, p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (line < a->first_line)
			continue;
		n = (size_t)(nl - p);
		if (n && p[n - 1] == '\r')
			n--;
		a->lines[a->n_lines] = strndup(p, n < SOURCE_MAX_LINE_BYTES ? n : SOURCE_MAX_LINE_BYTES);
		if (!a->lines[a->n_lines])
			return -ENOMEM;
		a->n_lines++;
	}
	return 0;
}

/* the extract's bounds: the lines wanted and their context, cut at
 * SOURCE_MAX_LINES from its start, within the file's n lines */
static void bounds(const struct source_request *rq, size_t n, struct source_answer *a)
{
	uint32_t first = rq->first_line > SOURCE_CONTEXT_LINES ? rq->first_line - SOURCE_CONTEXT_LINES : 1;
	uint32_t last = rq->last_line + SOURCE_CONTEXT_LINES;

	if (last > n)
		last = (uint32_t)n;
	if (last - first + 1 > SOURCE_MAX_LINES) {
		last = first + SOURCE_MAX_LINES - 1;
		a->truncated = 1;
	}
	a->first_line = first;
	a->last_line = last;
}

static int verify(const struct source_request *rq, const char *text, size_t len,
		  struct source_answer *a)
{
	unsigned char md5[MD5_DIGEST_BYTES];
	size_t n = count_lines(text, len);

	if (rq->has_md5) {
		md5_buffer(text, len, md5);
		if (memcmp(md5, rq->md5, sizeof(md5))) {
			a->status = SOURCE_STALE;
			snprintf(a->reason, sizeof(a->reason),
				 "'%s' changed since the build: its MD5 is not the one in the debug "
				 "information; not shown",
				 a->resolved);
			return 0;
		}
	}
	if (n < rq->last_line) {
		a->status = SOURCE_STALE;
		snprintf(a->reason, sizeof(a->reason),
			 "'%s' changed since the build: it has %zu lines, the debug information "
			 "points at line %u; not shown",
			 a->resolved, n, rq->last_line);
		return 0;
	}
	a->status = rq->has_md5 ? SOURCE_EMBEDDED : SOURCE_NOT_VERIFIED;
	if (!rq->has_md5)
		snprintf(a->reason, sizeof(a->reason), "not verified: %s",
			 rq->no_md5_reason ? rq->no_md5_reason : "no checksum in the debug info");
	bounds(rq, n, a);
	return cut_lines(text, len, a);
}

int source_fetch_one(const struct source_options *o, const struct source_request *rq,
		     struct source_answer *a)
{
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	int err;

	memset(a, 0, sizeof(*a));
	a->status = SOURCE_MISSING;
	err = source_resolve(o, rq->dwarf_path, path, sizeof(path), a->reason, sizeof(a->reason));
	if (err == -ENOTUNIQ)
		a->status = SOURCE_AMBIGUOUS;
	if (err == -ENAMETOOLONG)
		snprintf(a->reason, sizeof(a->reason), "'%s': path too long", rq->dwarf_path);
	if (err)
		return 0;
	a->resolved = strdup(path);
	if (!a->resolved)
		return -ENOMEM;
	err = read_file(path, &text, &len);
	if (err == -ENOMEM)
		return err;
	if (err) {
		snprintf(a->reason, sizeof(a->reason), "'%s' cannot be read as the Run's owner: %s",
			 path,
			 err == -ELOOP	   ? "it is a symbolic link"
			 : err == -EINVAL ? "not a regular file"
			 : err == -EFBIG  ? "larger than the source size bound"
					  : strerror(-err));
		return 0;
	}
	err = verify(rq, text, len, a);
	free(text);
	if (err)
		source_answer_release(a);
	return err;
}
