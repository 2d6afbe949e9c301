/* library_closure — see library_closure.h. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/elf/elf_dynamic.h"
#include "userspace/launch/library_closure.h"
#include "userspace/launch/tool.h"
#include "userspace/log/log.h"

struct cache_entry {
	char *soname, *path;
};

struct closure {
	struct cache_entry *cache; /* the ldconfig cache, read once */
	size_t n_cache;
	int cache_read;
	char *seen[LIBRARY_CLOSURE_MAX]; /* real paths, in visiting order */
	size_t n_seen;
};

/* ldconfig is run by its absolute path, never found in PATH; its cache
 * listing is ~80 bytes a library */
static const char *const ldconfig_paths[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig"};
#define LDCONFIG_TIMEOUT_MS 5000
#define LDCONFIG_MAX_OUTPUT (8 << 20)

/* One "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1" line. */
static void cache_add_line(struct closure *c, char *line)
{
	char *arrow = strstr(line, " => "), *name = line;
	struct cache_entry *cache;

	if (!arrow || !strstr(line, "x86-64"))
		return; /* other architectures' libraries */
	while (*name == ' ' || *name == '\t')
		name++;
	name[strcspn(name, " \t")] = '\0';
	arrow += 4;
	cache = realloc(c->cache, (c->n_cache + 1) * sizeof(*cache));
	if (!cache)
		return;
	c->cache = cache;
	c->cache[c->n_cache].soname = strdup(name);
	c->cache[c->n_cache].path = strdup(arrow);
	if (c->cache[c->n_cache].soname && c->cache[c->n_cache].path) {
		c->n_cache++;
	} else {
		free(c->cache[c->n_cache].soname);
		free(c->cache[c->n_cache].path);
	}
}

/* The cache as `ldconfig -p` lists it, bounded in time and size; an empty
 * cache when no trusted ldconfig answers (the default directories remain). */
static void read_ldconfig_cache(struct closure *c)
{
	char path[PATH_MAX], *argv[] = {"ldconfig", "-p", NULL}, *out, *line, *save = NULL;
	struct tool_result res;
	size_t i;

	c->cache_read = 1;
	for (i = 0; i < sizeof(ldconfig_paths) / sizeof(ldconfig_paths[0]); i++)
		if (!tool_resolve_trusted(ldconfig_paths[i], path, sizeof(path), NULL, 0))
			break;
	if (i == sizeof(ldconfig_paths) / sizeof(ldconfig_paths[0]))
		return;
	out = malloc(LDCONFIG_MAX_OUTPUT);
	if (!out)
		return;
	if (!tool_run(path, argv, LDCONFIG_TIMEOUT_MS, out, LDCONFIG_MAX_OUTPUT, &res)) {
		/* a truncated listing loses its last, partial line */
		if (res.truncated && (line = strrchr(out, '\n')))
			line[1] = '\0';
		for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			cache_add_line(c, line);
	}
	free(out);
}

/* dir:dir list, with $ORIGIN (or ${ORIGIN}) as origin */
static int search_list(const char *list, const char *origin, const char *name, char *out,
		       size_t outlen)
{
	while (list && *list) {
		size_t len = strcspn(list, ":");
		char dir[PATH_MAX];

		if (!strncmp(list, "$ORIGIN", 7))
			snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)len - 7, list + 7);
		else if (!strncmp(list, "${ORIGIN}", 9))
			snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)len - 9, list + 9);
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)len, len ? list : ".");
		snprintf(out, outlen, "%s/%s", dir, name);
		if (!access(out, R_OK))
			return 0;
		list += len + (list[len] == ':');
	}
	return -ENOENT;
}

static int resolve(struct closure *c, const char *name, const char *runpath, const char *origin,
		   char *out, size_t outlen)
{
	static const char *const defaults = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:"
					    "/lib64:/usr/lib64:/lib:/usr/lib";
	size_t i;

	if (strchr(name, '/')) {
		snprintf(out, outlen, "%s", name);
		return access(out, R_OK) ? -ENOENT : 0;
	}
	if (!search_list(runpath, origin, name, out, outlen) ||
	    !search_list(getenv("LD_LIBRARY_PATH"), origin, name, out, outlen))
		return 0;
	if (!c->cache_read)
		read_ldconfig_cache(c);
	for (i = 0; i < c->n_cache; i++) {
		if (!strcmp(c->cache[i].soname, name)) {
			snprintf(out, outlen, "%s", c->cache[i].path);
			return 0;
		}
	}
	return search_list(defaults, origin, name, out, outlen);
}

/* 1 when path is new (and now remembered), 0 when seen or no room */
static int remember(struct closure *c, const char *path)
{
	char *real = realpath(path, NULL);
	size_t i;

	if (!real)
		return 0;
	for (i = 0; i < c->n_seen; i++) {
		if (!strcmp(c->seen[i], real)) {
			free(real);
			return 0;
		}
	}
	if (c->n_seen == LIBRARY_CLOSURE_MAX) {
		free(real);
		return 0;
	}
	c->seen[c->n_seen++] = real;
	return 1;
}

static void closure_release(struct closure *c)
{
	size_t i;

	for (i = 0; i < c->n_seen; i++)
		free(c->seen[i]);
	for (i = 0; i < c->n_cache; i++) {
		free(c->cache[i].soname);
		free(c->cache[i].path);
	}
	free(c->cache);
}

int library_installed(const char *word, void (*fn)(const char *path, void *ctx), void *ctx)
{
	const char *ldpath = getenv("LD_LIBRARY_PATH");
	struct closure c = {};
	size_t i;

	read_ldconfig_cache(&c);
	for (i = 0; i < c.n_cache; i++)
		if (strstr(c.cache[i].soname, word))
			fn(c.cache[i].path, ctx);
	closure_release(&c);
	while (ldpath && *ldpath) {
		size_t len = strcspn(ldpath, ":");
		char dir_path[PATH_MAX], path[PATH_MAX + 256];
		struct dirent *de;
		DIR *dir;

		snprintf(dir_path, sizeof(dir_path), "%.*s", (int)len, len ? ldpath : ".");
		dir = opendir(dir_path);
		while (dir && (de = readdir(dir))) {
			if (strncmp(de->d_name, "lib", 3) || !strstr(de->d_name, word) ||
			    !strstr(de->d_name, ".so"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir_path, de->d_name);
			fn(path, ctx);
		}
		if (dir)
			closedir(dir);
		ldpath += len + (ldpath[len] == ':');
	}
	return 0;
}

int library_closure(const char *exe, void (*fn)(const char *path, void *ctx), void *ctx)
{
	struct closure c = {};
	struct elf_dynamic d;
	size_t next, i;
	int err;

	err = elf_dynamic_read(exe, &d);
	if (err)
		return err == -ENODATA ? -ENOEXEC : err;
	elf_dynamic_release(&d);
	remember(&c, exe);
	/* breadth first: c.seen grows while it is walked */
	for (next = 0; next < c.n_seen; next++) {
		char origin[PATH_MAX], path[PATH_MAX];
		char *slash;

		err = elf_dynamic_read(c.seen[next], &d);
		if (err == -EINVAL) /* elf_open_regular() opened nothing */
			pr_warn("not reading library '%s' needed by '%s': not a regular file "
				"(a FIFO, socket or device in its search path); its MPI calls, "
				"if any, will not be counted",
				c.seen[next], exe);
		if (err)
			continue;
		snprintf(origin, sizeof(origin), "%s", c.seen[next]);
		slash = strrchr(origin, '/');
		if (slash)
			*slash = '\0';
		for (i = 0; i < d.n_needed; i++)
			if (!resolve(&c, d.needed[i], d.runpath, origin, path, sizeof(path)) &&
			    remember(&c, path))
				fn(c.seen[c.n_seen - 1], ctx);
		elf_dynamic_release(&d);
	}
	closure_release(&c);
	return 0;
}
