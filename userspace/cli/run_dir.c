/* run_dir — see run_dir.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/cli/run_dir.h"

static int mkdir_parents(const char *dir)
{
	char buf[4096];
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int run_dir_create(const char *runs_dir, const char *name, time_t when, char *path,
		   size_t pathlen, char *err, size_t errlen)
{
	char safe[128], stamp[32];
	struct tm tm;
	int i, e;

	snprintf(safe, sizeof(safe), "%s", name && name[0] ? name : "run");
	for (i = 0; safe[i]; i++)
		if (!isalnum((unsigned char)safe[i]) && !strchr("._-+", safe[i]))
			safe[i] = '_';
	localtime_r(&when, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	e = mkdir_parents(runs_dir);
	if (e) {
		snprintf(err, errlen, "cannot create runs directory '%s': %s", runs_dir,
			 strerror(-e));
		return e;
	}
	for (i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(path, pathlen, "%s/%s-%s", runs_dir, safe, stamp);
		else
			snprintf(path, pathlen, "%s/%s-%s-%d", runs_dir, safe, stamp, i);
		if (!mkdir(path, 0755))
			return 0;
		if (errno != EEXIST) {
			e = -errno;
			snprintf(err, errlen, "cannot create run directory '%s': %s", path,
				 strerror(-e));
			return e;
		}
	}
	snprintf(err, errlen, "too many runs named '%s' in the same second", safe);
	return -EEXIST;
}

static int is_run(const char *dir)
{
	char manifest[4096];

	snprintf(manifest, sizeof(manifest), "%s/manifest.json", dir);
	return access(manifest, F_OK) == 0;
}

static int digits(const char *s, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* the "YYYYMMDD-HHMMSS[-N]" part of a Run directory name, or NULL */
static const char *run_stamp(const char *name)
{
	const char *p;

	for (p = strchr(name, '-'); p; p = strchr(p + 1, '-'))
		if (digits(p + 1, 8) && p[9] == '-' && digits(p + 10, 6) &&
		    (p[16] == '\0' || p[16] == '-'))
			return p + 1;
	return NULL;
}

int run_dir_find(const char *runs_dir, const char *which, char *path, size_t pathlen, char *err,
		 size_t errlen)
{
	char best[256] = "", best_stamp[64] = "", candidate[4096];
	struct dirent *de;
	DIR *d;

	if (which) {
		if (is_run(which)) {
			snprintf(path, pathlen, "%s", which);
			return 0;
		}
		snprintf(candidate, sizeof(candidate), "%s/%s", runs_dir, which);
		if (is_run(candidate)) {
			snprintf(path, pathlen, "%s", candidate);
			return 0;
		}
		snprintf(err, errlen, "no Run at '%s' nor '%s' (a Run directory holds manifest.json)",
			 which, candidate);
		return -ENOENT;
	}
	d = opendir(runs_dir);
	if (!d) {
		snprintf(err, errlen, "no Run yet: cannot open runs directory '%s': %s", runs_dir,
			 strerror(errno));
		return -ENOENT;
	}
	while ((de = readdir(d))) {
		const char *stamp = run_stamp(de->d_name);

		if (!stamp || de->d_name[0] == '.')
			continue;
		snprintf(candidate, sizeof(candidate), "%s/%s", runs_dir, de->d_name);
		if (!is_run(candidate))
			continue;
		if (strcmp(stamp, best_stamp) > 0 ||
		    (!strcmp(stamp, best_stamp) && strcmp(de->d_name, best) > 0)) {
			snprintf(best_stamp, sizeof(best_stamp), "%s", stamp);
			snprintf(best, sizeof(best), "%s", de->d_name);
		}
	}
	closedir(d);
	if (!best[0]) {
		snprintf(err, errlen, "no Run in '%s'", runs_dir);
		return -ENOENT;
	}
	snprintf(path, pathlen, "%s/%s", runs_dir, best);
	return 0;
}
