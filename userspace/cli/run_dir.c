/* run_dir — see run_dir.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/aggregator/manifest.h"
#include "userspace/cli/run_dir.h"
#include "userspace/pivot/pivot.h"

const char *const run_dir_own_files[] = {
    MANIFEST_FILE,
    MANIFEST_TMP_FILE,
    PIVOT_FILE,
    PIVOT_FILE "-wal",
    PIVOT_FILE "-shm",
    PIVOT_FILE "-journal",
    RUN_STORAGE_RESERVE_FILE,
    NULL,
};

/* strerror() as the messages write it: "no space left on device" */
static const char *errno_text(int e, char *buf, size_t len)
{
	snprintf(buf, len, "%s", strerror(e < 0 ? -e : e));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

/* "alice (uid 1000)", or "uid 1000" for a uid without a name */
static void owner_text(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;
	char scratch[1024];

	if (!getpwuid_r(uid, &pw, scratch, sizeof(scratch), &found) && found)
		snprintf(buf, len, "%s (uid %u)", found->pw_name, (unsigned)uid);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
}

/* openat(O_DIRECTORY|O_NOFOLLOW): the descriptor, or -errno; -ELOOP for a
 * symbolic link (the kernel says ENOTDIR for one to a directory) */
static int open_dir_nofollow(int at, const char *path)
{
	struct stat st;
	int fd;

	fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno == ENOTDIR && !fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
		return -ELOOP;
	return -errno;
}

/* mkdir -p: the parents 0755, the last level 0700 (it holds Runs) */
static int mkdir_parents(char *dir)
{
	char *p;

	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			int e = -errno;

			*p = '/';
			return e;
		}
		*p = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* -EPERM with err filled when the runs directory st is not safe to create
 * a Run in: another user could then rename or replace the Run */
static int runs_dir_check(const char *dir, const struct stat *st, char *err, size_t errlen)
{
	char owner[160], me[160];

	owner_text(st->st_uid, owner, sizeof(owner));
	if (st->st_uid != geteuid()) {
		owner_text(geteuid(), me, sizeof(me));
		snprintf(err, errlen,
			 "refusing runs directory '%s': it is owned by %s, not by %s, who would "
			 "write the Run; use a directory of your own (-o DIR or runs_dir in "
			 "nunatak.toml), or chown it",
			 dir, owner, me);
		return -EPERM;
	}
	if ((st->st_mode & S_IWOTH) && !(st->st_mode & S_ISVTX)) {
		snprintf(err, errlen,
			 "refusing runs directory '%s' (owner %s): it is writable by every user "
			 "and not sticky, so anyone could replace a Run in it; chmod o-w it, or "
			 "use another directory (-o DIR)",
			 dir, owner);
		return -EPERM;
	}
	return 0;
}

/* the runs directory, created if missing, opened without following a
 * symbolic link and checked: its descriptor, with dir its path without
 * trailing '/', or -errno with err filled */
static int runs_dir_open(const char *runs_dir, char *dir, size_t dirlen, char *err, size_t errlen)
{
	char why[128];
	size_t len;
	struct stat st;
	int fd, e;

	len = strlen(runs_dir);
	while (len > 1 && runs_dir[len - 1] == '/')
		len--;
	if (!len || len >= dirlen) {
		snprintf(err, errlen, "invalid runs directory '%s': %s", runs_dir,
			 len ? "its path is too long" : "empty");
		return len ? -ENAMETOOLONG : -EINVAL;
	}
	memcpy(dir, runs_dir, len);
	dir[len] = '\0';
	e = mkdir_parents(dir);
	if (e) {
		snprintf(err, errlen, "cannot create runs directory '%s': %s", dir,
			 errno_text(e, why, sizeof(why)));
		return e;
	}
	fd = open_dir_nofollow(AT_FDCWD, dir);
	if (fd < 0) {
		e = fd;
		if (e == -ELOOP)
			snprintf(err, errlen,
				 "refusing runs directory '%s': it is a symbolic link; give the "
				 "directory it points to (-o DIR or runs_dir)",
				 dir);
		else
			snprintf(err, errlen, "cannot open runs directory '%s': %s", dir,
				 errno_text(e, why, sizeof(why)));
		return e;
	}
	e = fstat(fd, &st) ? -errno : runs_dir_check(dir, &st, err, errlen);
	if (e) {
		if (e != -EPERM)
			snprintf(err, errlen, "cannot examine runs directory '%s': %s", dir,
				 errno_text(e, why, sizeof(why)));
		close(fd);
		return e;
	}
	return fd;
}

/* name made safe as a file name that is neither hidden, "." nor ".." */
static void run_name_sanitize(const char *name, char *safe, size_t len)
{
	size_t i;

	snprintf(safe, len, "%s", name && name[0] ? name : "run");
	for (i = 0; safe[i]; i++)
		if (!isalnum((unsigned char)safe[i]) && !strchr("._-+", safe[i]))
			safe[i] = '_';
	if (safe[0] == '.')
		safe[0] = '_';
}

/* the Run directory base (made by mkdirat under runs_fd) checked on its own
 * descriptor: a directory, ours, 0700 whatever the umask */
static int run_dir_verify(int runs_fd, const char *base, const char *path, struct stat *st,
			  char *err, size_t errlen)
{
	char why[128];
	int fd, e = 0;

	fd = open_dir_nofollow(runs_fd, base);
	if (fd < 0)
		e = fd;
	else if (fstat(fd, st) || ((st->st_mode & 07777) != 0700 && fchmod(fd, 0700)) ||
		 fstat(fd, st))
		e = -errno;
	else if (st->st_uid != geteuid() || (st->st_mode & 07777) != 0700)
		e = -EPERM;
	if (fd >= 0)
		close(fd);
	if (e)
		snprintf(err, errlen, "cannot make run directory '%s' private (0700, yours): %s",
			 path, errno_text(e, why, sizeof(why)));
	return e;
}

int run_dir_create(const char *runs_dir, const char *name, time_t when, char *path, size_t pathlen,
		   struct stat *st, char *err, size_t errlen)
{
	char safe[128], stamp[32], base[192], why[128], dir[PATH_MAX];
	struct stat own;
	struct tm tm;
	int i, e, runs_fd;

	run_name_sanitize(name, safe, sizeof(safe));
	localtime_r(&when, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	runs_fd = runs_dir_open(runs_dir, dir, sizeof(dir), err, errlen);
	if (runs_fd < 0)
		return runs_fd;
	e = -EEXIST;
	for (i = 1; i < 1000 && e == -EEXIST; i++) {
		if (i == 1)
			snprintf(base, sizeof(base), "%s-%s", safe, stamp);
		else
			snprintf(base, sizeof(base), "%s-%s-%d", safe, stamp, i);
		if (snprintf(path, pathlen, "%s/%s", dir, base) >= (int)pathlen) {
			snprintf(
			    err, errlen,
			    "cannot create a Run in '%.200s...': its path would be longer than "
			    "%zu characters; use a shorter runs directory (-o DIR)",
			    dir, pathlen - 1);
			e = -ENAMETOOLONG;
			goto out;
		}
		e = mkdirat(runs_fd, base, 0700) ? -errno : 0;
	}
	if (e == -EEXIST) {
		snprintf(err, errlen, "too many runs named '%s' in the same second in '%s'", safe,
			 dir);
	} else if (e) {
		snprintf(err, errlen, "cannot create run directory '%s': %s", path,
			 errno_text(e, why, sizeof(why)));
	} else {
		e = run_dir_verify(runs_fd, base, path, st ? st : &own, err, errlen);
		if (e)
			unlinkat(runs_fd, base, AT_REMOVEDIR);
	}
out:
	close(runs_fd);
	return e;
}

static int is_own_file(const char *name)
{
	int i;

	for (i = 0; run_dir_own_files[i]; i++)
		if (!strcmp(name, run_dir_own_files[i]))
			return 1;
	return 0;
}

int run_dir_discard(const char *path)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, i, e = 0;

	fd = open_dir_nofollow(AT_FDCWD, path);
	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		e = -errno;
		close(fd);
		return e;
	}
	/* everything is checked before anything is removed */
	while (!e && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!is_own_file(de->d_name) || fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			e = -ENOTEMPTY;
	}
	for (i = 0; !e && run_dir_own_files[i]; i++)
		if (unlinkat(fd, run_dir_own_files[i], 0) && errno != ENOENT)
			e = -errno;
	closedir(d);
	if (!e && rmdir(path))
		e = -errno;
	return e;
}

int run_dir_lock(const char *path, int *dirfd)
{
	int fd, e;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		e = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
		close(fd);
		return e;
	}
	*dirfd = fd;
	return 0;
}

static int is_run(const char *dir)
{
	char manifest[PATH_MAX];

	snprintf(manifest, sizeof(manifest), "%s/" MANIFEST_FILE, dir);
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
	char best[256] = "", best_stamp[64] = "", candidate[PATH_MAX];
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
		snprintf(err, errlen,
			 "no Run at '%s' nor '%s' (a Run directory holds manifest.json)", which,
			 candidate);
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
