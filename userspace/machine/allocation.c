/* allocation — see allocation.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/machine/allocation.h"

/* v1's "no limit" is PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB
 * pages); anything this large is no limit */
#define V1_MEMORY_UNLIMITED (INT64_C(1) << 62)
#define CGROUP_TEXT_MAX 65536

/* the first line of dir/file into buf (newline cut); 0 or -errno */
static int read_line(const char *dir, const char *file, char *buf, size_t len)
{
	char path[4096];
	ssize_t n;
	int fd, err = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* One cgroup directory's limits, merged into the smallest seen so far */
struct limits {
	double quota; /* cores, NAN: none */
	int64_t memory; /* bytes, -1: none */
};

static void keep_quota(struct limits *l, double cores)
{
	if (cores > 0 && (isnan(l->quota) || cores < l->quota))
		l->quota = cores;
}

static void keep_memory(struct limits *l, int64_t bytes)
{
	if (bytes >= 0 && (l->memory < 0 || bytes < l->memory))
		l->memory = bytes;
}

static void read_v1_cpu(const char *dir, struct limits *l)
{
	char q[64], p[64];
	long long quota, period;

	if (read_line(dir, "cpu.cfs_quota_us", q, sizeof(q)) ||
	    read_line(dir, "cpu.cfs_period_us", p, sizeof(p)))
		return;
	quota = strtoll(q, NULL, 10);
	period = strtoll(p, NULL, 10);
	if (quota > 0 && period > 0) /* -1: no quota */
		keep_quota(l, (double)quota / (double)period);
}

static void read_v1_memory(const char *dir, struct limits *l)
{
	char buf[64], *end;
	long long v;

	if (read_line(dir, "memory.limit_in_bytes", buf, sizeof(buf)))
		return;
	v = strtoll(buf, &end, 10);
	if (end != buf && v >= 0 && v < V1_MEMORY_UNLIMITED)
		keep_memory(l, v);
}

static void read_v2(const char *dir, struct limits *l)
{
	char buf[128], *end;
	long long quota, period, v;

	if (!read_line(dir, "cpu.max", buf, sizeof(buf)) &&
	    sscanf(buf, "%lld %lld", &quota, &period) == 2 && quota > 0 && period > 0)
		keep_quota(l, (double)quota / (double)period); /* "max ...": no quota */
	if (!read_line(dir, "memory.max", buf, sizeof(buf))) {
		v = strtoll(buf, &end, 10);
		if (end != buf && v >= 0) /* "max": none */
			keep_memory(l, v);
	}
}

/* Calls fn on mount/path and each ancestor up to mount itself: a limit on an
 * ancestor binds the cgroup too. Missing directories (a cgroup namespace)
 * are simply not there to read. */
static void walk_up(const char *mount, const char *path, struct limits *l,
		    void (*fn)(const char *, struct limits *))
{
	char dir[4096];
	char *slash;
	size_t base;

	if (snprintf(dir, sizeof(dir), "%s", mount) >= (int)sizeof(dir))
		return;
	base = strlen(dir);
	if (snprintf(dir + base, sizeof(dir) - base, "%s", path[0] == '/' ? path : "/") >=
	    (int)(sizeof(dir) - base))
		return;
	for (;;) {
		while (strlen(dir) > base + 1 && dir[strlen(dir) - 1] == '/')
			dir[strlen(dir) - 1] = '\0';
		fn(dir, l);
		slash = strrchr(dir + base, '/');
		if (!slash || slash == dir + base)
			break;
		*slash = '\0';
	}
	if (strlen(dir) > base)
		dir[base] = '\0', fn(dir, l); /* the mount's own root */
}

/* 1 if word is one of the comma-separated controllers of list */
static int has_controller(const char *list, size_t n, const char *word)
{
	size_t w = strlen(word);
	const char *p = list, *end = list + n;

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (len == w && !strncmp(p, word, w))
			return 1;
		p += len + 1;
	}
	return 0;
}

/* v1 controller directory: root/<controllers as listed>, else root/<name> */
static void v1_mount(const char *root, const char *controllers, size_t n, const char *name,
		     char *out, size_t len)
{
	char test[4096];

	snprintf(out, len, "%s/%.*s", root, (int)n, controllers);
	snprintf(test, sizeof(test), "%s/.", out);
	if (access(test, F_OK))
		snprintf(out, len, "%s/%s", root, name);
}

static void parse_line(const char *root, const char *line, struct limits *l)
{
	const char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char mount[4096], path[2048];
	size_t n;

	if (!c2)
		return;
	n = (size_t)(c2 - c1 - 1);
	snprintf(path, sizeof(path), "%s", c2 + 1);
	path[strcspn(path, "\n")] = '\0';
	if (strstr(path, "/..")) /* outside our cgroup namespace: its root is all we see */
		snprintf(path, sizeof(path), "/");
	if (n == 0 && !strncmp(line, "0:", 2)) {
		/* v2: root itself (unified), else root/unified (hybrid) */
		snprintf(mount, sizeof(mount), "%s/unified/cgroup.controllers", root);
		if (!access(mount, F_OK))
			snprintf(mount, sizeof(mount), "%s/unified", root);
		else
			snprintf(mount, sizeof(mount), "%s", root);
		walk_up(mount, path, l, read_v2);
		return;
	}
	if (has_controller(c1 + 1, n, "cpu")) {
		v1_mount(root, c1 + 1, n, "cpu", mount, sizeof(mount));
		walk_up(mount, path, l, read_v1_cpu);
	}
	if (has_controller(c1 + 1, n, "memory")) {
		v1_mount(root, c1 + 1, n, "memory", mount, sizeof(mount));
		walk_up(mount, path, l, read_v1_memory);
	}
}

int allocation_parse(const char *cgroup_root, const char *proc_self_cgroup,
		     const cpu_set_t *mask, struct allocation *out)
{
	struct limits l = { .quota = NAN, .memory = -1 };
	const char *line = proc_self_cgroup;

	if (!cgroup_root || !proc_self_cgroup || !mask || !out)
		return -EINVAL;
	while (line && *line) {
		parse_line(cgroup_root, line, &l);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	memcpy(&out->mask, mask, sizeof(out->mask));
	out->visible_cores = CPU_COUNT(&out->mask);
	out->cpu_quota = l.quota;
	out->memory_limit_bytes = l.memory;
	return 0;
}

int allocation_read(struct allocation *out)
{
	char *text = calloc(1, CGROUP_TEXT_MAX + 1);
	cpu_set_t mask;
	size_t used = 0;
	ssize_t n = 0;
	int fd, err;

	if (!text)
		return -ENOMEM;
	CPU_ZERO(&mask);
	if (sched_getaffinity(0, sizeof(mask), &mask)) {
		err = -errno;
		goto cleanup;
	}
	fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) { /* no /proc/self/cgroup: no cgroup limit known */
		while (used < CGROUP_TEXT_MAX &&
		       (n = read(fd, text + used, CGROUP_TEXT_MAX - used)) > 0)
			used += (size_t)n;
		close(fd);
	}
	err = allocation_parse("/sys/fs/cgroup", text, &mask, out);
cleanup:
	free(text);
	return err;
}

int allocation_threads(const struct allocation *a)
{
	int threads = a->visible_cores;

	if (!isnan(a->cpu_quota) && a->cpu_quota > 0 && ceil(a->cpu_quota) < threads)
		threads = (int)ceil(a->cpu_quota);
	return threads > 0 ? threads : 1;
}
