/* cache_size — see cache_size.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/calibration/cache_size.h"

#define MAX_INSTANCES 256
#define MAX_INDEX 16

/* the first line of DIR/FILE into buf: 0 or -errno */
static int read_line(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		ret = -EIO;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ret;
}

/* "32768K", "1M", "512" (bytes) */
static long long parse_size(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (end == s || v <= 0)
		return -1;
	if (*end == 'K')
		return v << 10;
	if (*end == 'M')
		return v << 20;
	if (*end == 'G')
		return v << 30;
	return *end ? -1 : v;
}

/* the highest-level cache of one CPU: its size and who shares it */
static int cpu_llc(const char *root, int cpu, long long *size, char *shared, size_t len)
{
	char dir[PATH_MAX], buf[64];
	int k, level, best = -1;

	for (k = 0; k < MAX_INDEX; k++) {
		snprintf(dir, sizeof(dir), "%s/cpu%d/cache/index%d", root, cpu, k);
		if (read_line(dir, "level", buf, sizeof(buf)))
			continue;
		level = atoi(buf);
		if (level <= best || read_line(dir, "size", buf, sizeof(buf)) ||
		    parse_size(buf) < 0 || read_line(dir, "shared_cpu_list", shared, len))
			continue;
		best = level;
		*size = parse_size(buf);
	}
	return best < 0 ? -ENOENT : 0;
}

int llc_bytes(const char *sysfs_cpu_root, const int *cpus, int n, long long *bytes)
{
	char(*seen)[256], shared[256];
	int i, j, nseen = 0;
	long long size, total = 0;

	if (!sysfs_cpu_root || !cpus || n < 1 || !bytes)
		return -EINVAL;
	seen = calloc(MAX_INSTANCES, sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (cpu_llc(sysfs_cpu_root, cpus[i], &size, shared, sizeof(shared)))
			continue;
		for (j = 0; j < nseen && strcmp(seen[j], shared); j++)
			;
		if (j < nseen)
			continue; /* an instance already counted */
		if (nseen < MAX_INSTANCES)
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", shared);
		total += size;
	}
	free(seen);
	if (!total)
		return -ENOENT;
	*bytes = total;
	return 0;
}
