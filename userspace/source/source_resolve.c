/* source_resolve — finding a source file the debug information names
 * (source.h): as it is, through the prefix map, by base name under the
 * project root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/source/source.h"

/* 1 when path names something (a file, a link) without following its last
 * component */
static int exists(const char *path)
{
	struct stat st;

	return !fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW);
}

/* path with the prefix old (whole components) replaced by new, in out:
 * 1 when old is a prefix, 0 when not */
static int map_one(const char *path, const char *old, const char *new, char *out, size_t len)
{
	size_t n = strlen(old);

	while (n > 1 && old[n - 1] == '/')
		n--;
	if (strncmp(path, old, n) || (path[n] != '/' && path[n] != '\0'))
		return 0;
	return snprintf(out, len, "%s%s", new, path + n) < (int)len;
}

struct search {
	const struct source_options *o;
	const char *base;
	char found[2][PATH_MAX];
	size_t n_found, entries;
	int capped;
};

static void search_dir(struct search *s, const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || (s->o->has_skip && st.st_dev == s->o->skip_dev &&
			       st.st_ino == s->o->skip_ino)) {
		close(fd);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) && s->n_found < 2) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (++s->entries > SOURCE_SEARCH_MAX_ENTRIES) {
			s->capped = 1;
			break;
		}
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (e->d_type == DT_UNKNOWN && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (e->d_type == DT_REG || (e->d_type == DT_UNKNOWN && S_ISREG(st.st_mode))) {
			if (!strcmp(e->d_name, s->base))
				snprintf(s->found[s->n_found++], PATH_MAX, "%s", path);
		} else if (e->d_type == DT_DIR || (e->d_type == DT_UNKNOWN && S_ISDIR(st.st_mode))) {
			if (!strcmp(e->d_name, ".git"))
				continue;
			if (depth + 1 >= SOURCE_SEARCH_MAX_DEPTH) {
				s->capped = 1;
				continue;
			}
			search_dir(s, path, depth + 1);
		}
	}
	closedir(d);
}

static int search_base_name(const struct source_options *o, const char *dwarf_path, char *out,
			    size_t outlen, char *reason, size_t reasonlen)
{
	struct search s = {.o = o};
	const char *slash = strrchr(dwarf_path, '/');

	s.base = slash ? slash + 1 : dwarf_path;
	if (!s.base[0]) {
		snprintf(reason, reasonlen, "'%s' names no file", dwarf_path);
		return -ENOENT;
	}
	search_dir(&s, o->root, 0);
	if (s.n_found == 1) {
		if (snprintf(out, outlen, "%s", s.found[0]) >= (int)outlen)
			return -ENAMETOOLONG;
		return 0;
	}
	if (s.n_found > 1) {
		snprintf(reason, reasonlen,
			 "'%s' is not where the debug information says, and the project root "
			 "'%s' holds several files of that name ('%s', '%s'...): give "
			 "--source-map OLD=NEW",
			 dwarf_path, o->root, s.found[0], s.found[1]);
		return -ENOTUNIQ;
	}
	snprintf(reason, reasonlen, "'%s' not found, nor a '%s' under the project root '%s'%s",
		 dwarf_path, s.base, o->root,
		 s.capped ? " (the search stopped at its depth or entry bound)" : "");
	return -ENOENT;
}

int source_resolve(const struct source_options *o, const char *dwarf_path, char *out,
		   size_t outlen, char *reason, size_t reasonlen)
{
	char mapped[PATH_MAX];
	size_t i;

	reason[0] = '\0';
	if (dwarf_path[0] == '/' && exists(dwarf_path)) {
		if (snprintf(out, outlen, "%s", dwarf_path) >= (int)outlen)
			return -ENAMETOOLONG;
		return 0;
	}
	for (i = 0; i < o->n_map; i++) {
		if (!map_one(dwarf_path, o->map_old[i], o->map_new[i], mapped, sizeof(mapped)) ||
		    !exists(mapped))
			continue;
		if (snprintf(out, outlen, "%s", mapped) >= (int)outlen)
			return -ENAMETOOLONG;
		return 0;
	}
	if (o->root && o->root[0])
		return search_base_name(o, dwarf_path, out, outlen, reason, reasonlen);
	snprintf(reason, reasonlen, "'%s' not found (no project root to search, no --source-map "
				    "that leads to it)",
		 dwarf_path);
	return -ENOENT;
}
