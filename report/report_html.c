/* report_html — see report_html.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/html_escape.h"
#include "report/payload.h"
#include "report/report_assets.h"
#include "report/report_html.h"
#include "report/run_model.h"
#include "userspace/log/log.h"

#define TMP_TRIES 8

static const char *const style_forbidden[] = {"</style", NULL};
static const char *const script_forbidden[] = {"</script", "<!--", NULL};

/* the page's parts, each a whole string the page holds as it is */
struct page_parts {
	char *title, *summary_text, *payload;
	size_t payload_len;
	char *style, *script;
};

static size_t asset_size(const struct report_asset *a)
{
	return (size_t)(a->end - a->data);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* the first of the texts that asset holds (case ignored), or NULL */
static const char *asset_holds(const struct report_asset *a, const char *const *texts)
{
	for (; *texts; texts++)
		if (strcasestr((const char *)a->data, *texts))
			return *texts;
	return NULL;
}

/* every asset named *suffix, in name order, joined by sep; -EINVAL when
 * one holds one of the texts that would end its element early (or, "<!--"
 * in a script, change how the browser reads the rest) */
static int assets_join(const char *suffix, const char *sep, const char *const *forbidden,
		       char **out)
{
	const char *bad;
	char *buf = NULL;
	size_t len = 0, i, n = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	for (i = 0; i < report_n_assets; i++) {
		const struct report_asset *a = &report_assets[i];

		if (!ends_with(a->name, suffix))
			continue;
		bad = asset_holds(a, forbidden);
		if (bad) {
			pr_warn("report: the page's '%s' holds '%s': it would break its element\n",
				a->name, bad);
			fclose(f);
			free(buf);
			return -EINVAL;
		}
		if (n++)
			fputs(sep, f);
		fwrite(a->data, 1, asset_size(a), f);
	}
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	return 0;
}

static const struct report_asset *asset_find(const char *name)
{
	size_t i;

	for (i = 0; i < report_n_assets; i++)
		if (!strcmp(report_assets[i].name, name))
			return &report_assets[i];
	return NULL;
}

/* "nunatak — NAME", escaped */
static char *title_of(const struct run_model *m)
{
	const char *name = json_string_value(
	    json_object_get(json_object_get(m->manifest, "run"), "name"));
	const char *slash;
	char *raw, *t;

	if (!name && m->run_dir) {
		slash = strrchr(m->run_dir, '/');
		name = slash && slash[1] ? slash + 1 : m->run_dir;
	}
	if (asprintf(&raw, "nunatak \xe2\x80\x94 %s", name ? name : "Run") < 0)
		return NULL;
	t = html_escape(raw);
	free(raw);
	return t;
}

static void parts_release(struct page_parts *pp)
{
	free(pp->title);
	free(pp->summary_text);
	free(pp->payload);
	free(pp->style);
	free(pp->script);
}

static int parts_make(struct page_parts *pp, const struct run_model *m, unsigned flags)
{
	json_t *payload;
	int err;

	memset(pp, 0, sizeof(*pp));
	errno = 0;
	payload = payload_json(m, flags);
	if (!payload)
		return errno ? -errno : -ENOMEM;
	pp->payload = json_for_script(payload, &pp->payload_len);
	pp->summary_text =
	    html_escape(json_string_value(json_object_get(payload, "summary_text")) ?: "");
	json_decref(payload);
	pp->title = title_of(m);
	if (!pp->payload || !pp->summary_text || !pp->title)
		return -ENOMEM;
	err = assets_join(".css", "\n", style_forbidden, &pp->style);
	return err ?: assets_join(".js", "\n;\n", script_forbidden, &pp->script);
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* page.html with its markers filled, to fd; *bytes the size written */
static int page_write(int fd, const struct page_parts *pp, size_t *bytes)
{
	const struct {
		const char *marker, *text;
		size_t len;
	} fills[] = {
	    {"{{TITLE}}", pp->title, strlen(pp->title)},
	    {"{{STYLE}}", pp->style, strlen(pp->style)},
	    {"{{SUMMARY_TEXT}}", pp->summary_text, strlen(pp->summary_text)},
	    {"{{PAYLOAD}}", pp->payload, pp->payload_len},
	    {"{{SCRIPT}}", pp->script, strlen(pp->script)},
	};
	const struct report_asset *page = asset_find("page.html");
	const char *s, *at, *end;
	size_t i;
	int err = 0;

	if (!page)
		return -EINVAL;
	s = (const char *)page->data;
	end = (const char *)page->end;
	*bytes = 0;
	while (!err && s < end) {
		at = memmem(s, (size_t)(end - s), "{{", 2);
		if (!at)
			at = end;
		err = write_all(fd, s, (size_t)(at - s));
		*bytes += (size_t)(at - s);
		s = at;
		if (err || s == end)
			break;
		for (i = 0; i < sizeof(fills) / sizeof(fills[0]); i++)
			if (!strncmp(s, fills[i].marker, strlen(fills[i].marker)))
				break;
		if (i == sizeof(fills) / sizeof(fills[0])) { /* not a marker: as it is */
			err = write_all(fd, s, 2);
			*bytes += 2;
			s += 2;
			continue;
		}
		err = write_all(fd, fills[i].text, fills[i].len);
		*bytes += fills[i].len;
		s += strlen(fills[i].marker);
	}
	return err;
}

/* a new temporary file in dirfd: its fd and name in tmp, or -errno */
static int tmp_open(int dirfd, const char *name, char *tmp, size_t len)
{
	unsigned int r;
	int fd = -EEXIST, i;

	for (i = 0; i < TMP_TRIES && fd == -EEXIST; i++) {
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (unsigned int)getpid() * 2654435761u + (unsigned int)i;
		snprintf(tmp, len, ".%s.%08x.tmp", name, r);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

/* root writes a file the Run's owner can read: the directory's owner */
static int own_as_dir(int fd, int dirfd)
{
	struct stat st;

	if (geteuid() != 0)
		return 0;
	if (fstat(dirfd, &st) || fchown(fd, st.st_uid, st.st_gid))
		return -errno;
	return 0;
}

static int valid_name(const char *name)
{
	return name && name[0] && name[0] != '.' && !strchr(name, '/') && strlen(name) < 200;
}

int report_html_write(int run_dirfd, const char *name, const struct run_model *m,
		      unsigned flags, struct report_html_stats *st)
{
	struct page_parts pp;
	char tmp[256];
	size_t bytes = 0;
	int fd = -1, err;

	if (!valid_name(name) || !m || run_dirfd < 0)
		return -EINVAL;
	err = parts_make(&pp, m, flags);
	if (err)
		goto cleanup;
	fd = tmp_open(run_dirfd, name, tmp, sizeof(tmp));
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	err = own_as_dir(fd, run_dirfd);
	err = err ?: fchmod(fd, 0600) ? -errno : 0;
	err = err ?: page_write(fd, &pp, &bytes);
	err = err ?: fsync(fd) ? -errno : 0;
	if (close(fd) && !err)
		err = -errno;
	fd = -1;
	if (!err && renameat(run_dirfd, tmp, run_dirfd, name))
		err = -errno;
	if (err) {
		unlinkat(run_dirfd, tmp, 0);
		goto cleanup;
	}
	fsync(run_dirfd); /* the rename itself: best effort */
	if (st) {
		st->bytes = bytes;
		st->payload_bytes = pp.payload_len;
	}
cleanup:
	parts_release(&pp);
	return err;
}
