/* run_dir — see run_dir.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/aggregator/as_owner.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/aggregator/run_dir.h"
#include "userspace/config/trust.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

/* "/pivot.sqlite-journal" and " (deleted)", rounded up */
#define RUN_DIR_FILE_ROOM 40

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

/* -EPERM with err filled when the runs directory st is not safe to create
 * a Run in: another user could then rename or replace the Run */
static int runs_dir_check(const char *dir, const struct stat *st, char *err, size_t errlen)
{
	char owner[160], me[160];

	trust_owner_name(st->st_uid, owner, sizeof(owner));
	if (st->st_uid != as_owner_fsuid()) {
		trust_owner_name(as_owner_fsuid(), me, sizeof(me));
		snprintf(err, errlen,
			 "refusing runs directory '%s': it is owned by %s, not by %s, who would "
			 "write the Run; use a directory of your own (-o DIR or runs_dir in "
			 "nunatak.toml), or chown it",
			 dir, owner, me);
		return -EPERM;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		snprintf(err, errlen,
			 "refusing runs directory '%s' (owner %s, mode %04o): it is writable by %s "
			 "and not sticky, so %s could replace a Run in it; chmod %s it, or "
			 "use another directory (-o DIR)",
			 dir, owner, (unsigned)(st->st_mode & 07777),
			 st->st_mode & S_IWOTH ? "every user" : "its group",
			 st->st_mode & S_IWOTH ? "anyone" : "its members",
			 st->st_mode & S_IWOTH ? (st->st_mode & S_IWGRP ? "o-w,g-w" : "o-w")
					       : "g-w");
		return -EPERM;
	}
	return 0;
}

/* dir split at its last '/': its parent into parent (PATH_MAX), base
 * pointing into dir */
static void split_dir(const char *dir, char *parent, const char **base)
{
	const char *slash = strrchr(dir, '/');

	*base = dir;
	snprintf(parent, PATH_MAX, "%s", ".");
	if (slash == dir) {
		snprintf(parent, PATH_MAX, "%s", "/");
		*base = dir[1] ? dir + 1 : ".";
	} else if (slash) {
		snprintf(parent, PATH_MAX, "%.*s", (int)(slash - dir), dir);
		*base = slash + 1;
	}
}

/* *fd: an O_PATH descriptor of dir whose chain trust_open_dir_chain()
 * checked, dir made (0755) under its checked parent when missing, so no
 * directory is made through a link another user could point elsewhere.
 * 0 or -errno with err filled (naming subject, the runs directory). */
static int open_checked_dir(const char *subject, const char *dir, int *fd, char *err, size_t errlen)
{
	char parent[PATH_MAX], why[128];
	const char *base;
	int parent_fd, e;

	e = trust_open_dir_chain(subject, dir, fd, err, errlen);
	if (e != -ENOENT)
		return e;
	split_dir(dir, parent, &base);
	if (!strcmp(parent, dir))
		return e;
	e = open_checked_dir(subject, parent, &parent_fd, err, errlen);
	if (e)
		return e;
	e = mkdirat(parent_fd, base, 0755) && errno != EEXIST ? -errno : 0;
	close(parent_fd);
	if (e) {
		snprintf(err, errlen, "cannot create runs directory '%s': cannot make '%s': %s",
			 subject, dir, errno_text(e, why, sizeof(why)));
		return e;
	}
	return trust_open_dir_chain(subject, dir, fd, err, errlen);
}

/* the runs directory dir opened without following a symbolic link under
 * its parent (made if missing, see open_checked_dir()), the runs directory
 * made 0700 when missing: its descriptor, or -errno with err filled */
static int runs_dir_open_in_parent(const char *dir, char *err, size_t errlen)
{
	char why[128], parent[PATH_MAX];
	const char *base;
	int parent_fd, fd, e;

	split_dir(dir, parent, &base);
	e = open_checked_dir(dir, parent, &parent_fd, err, errlen);
	if (e)
		return e;
	if (mkdirat(parent_fd, base, 0700) && errno != EEXIST) {
		fd = -errno;
		snprintf(err, errlen, "cannot create runs directory '%s': %s", dir,
			 errno_text(fd, why, sizeof(why)));
		close(parent_fd);
		return fd;
	}
	fd = open_dir_nofollow(parent_fd, base);
	close(parent_fd);
	if (fd == -ELOOP)
		snprintf(err, errlen,
			 "refusing runs directory '%s': it is a symbolic link; give the "
			 "directory it points to (-o DIR or runs_dir)",
			 dir);
	else if (fd < 0)
		snprintf(err, errlen, "cannot open runs directory '%s': %s", dir,
			 errno_text(fd, why, sizeof(why)));
	return fd;
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
	fd = runs_dir_open_in_parent(dir, err, errlen);
	if (fd < 0)
		return fd;
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
	else if (st->st_uid != as_owner_fsuid() || (st->st_mode & 07777) != 0700)
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
		/* room for the longest file name of a Run and the " (deleted)"
		 * the kernel may add to it in /proc/PID/maps (PATH_MAX there) */
		if (snprintf(path, pathlen, "%s/%s", dir, base) >= (int)pathlen ||
		    strlen(path) + RUN_DIR_FILE_ROOM >= PATH_MAX) {
			snprintf(
			    err, errlen,
			    "cannot create a Run in '%.200s...': its path would be longer than "
			    "%d characters; use a shorter runs directory (-o DIR)",
			    dir, PATH_MAX - 1 - RUN_DIR_FILE_ROOM);
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

/* What the entry name of the runs directory runs_fd is: 1 a Run of ours
 * (a directory, not a link, owned by the euid, holding a manifest), 0 not
 * a Run, -1 to skip (not a directory, a link, or another user's) */
static int own_run_at(int runs_fd, const char *name)
{
	struct stat st;
	int fd, found;

	if (fstatat(runs_fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;
	if (!S_ISDIR(st.st_mode) || st.st_uid != as_owner_fsuid())
		return -1;
	fd = openat(runs_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	found = !fstatat(fd, MANIFEST_FILE, &st, AT_SYMLINK_NOFOLLOW);
	close(fd);
	return found;
}

/* the most recent Run of ours in the open runs directory d into best
 * (bestlen); the number of entries skipped (own_run_at() -1) */
static int newest_own_run(DIR *d, char *best, size_t bestlen)
{
	char best_stamp[64] = "";
	struct dirent *de;
	int skipped = 0;

	best[0] = '\0';
	while ((de = readdir(d))) {
		const char *stamp = run_stamp(de->d_name);
		int own;

		if (!stamp || de->d_name[0] == '.')
			continue;
		own = own_run_at(dirfd(d), de->d_name);
		if (own < 0)
			skipped++;
		if (own <= 0)
			continue;
		if (strcmp(stamp, best_stamp) > 0 ||
		    (!strcmp(stamp, best_stamp) && strcmp(de->d_name, best) > 0)) {
			snprintf(best_stamp, sizeof(best_stamp), "%s", stamp);
			snprintf(best, bestlen, "%s", de->d_name);
		}
	}
	return skipped;
}

/* the most recent Run of ours in runs_dir into path: 0 or -ENOENT, said */
static int newest_run_in(const char *runs_dir, char *path, size_t pathlen, char *err, size_t errlen)
{
	char best[256], why[128], me[160];
	int skipped;
	DIR *d;

	d = opendir(runs_dir);
	if (!d) {
		snprintf(err, errlen, "no Run yet: cannot open runs directory '%s': %s", runs_dir,
			 errno_text(errno, why, sizeof(why)));
		return -ENOENT;
	}
	skipped = newest_own_run(d, best, sizeof(best));
	closedir(d);
	if (!best[0] && skipped) {
		trust_owner_name(as_owner_fsuid(), me, sizeof(me));
		snprintf(err, errlen,
			 "no Run of yours in '%s': %d entr%s skipped (not a directory, a symbolic "
			 "link, or not owned by %s); name a Run to read it (nunatak summary DIR)",
			 runs_dir, skipped, skipped == 1 ? "y" : "ies", me);
		return -ENOENT;
	}
	if (!best[0]) {
		snprintf(err, errlen, "no Run in '%s'", runs_dir);
		return -ENOENT;
	}
	snprintf(path, pathlen, "%s/%s", runs_dir, best);
	return 0;
}

/* 1 when dir is a directory (links followed: the user named it) */
static int is_directory(const char *dir)
{
	struct stat st;

	return !stat(dir, &st) && S_ISDIR(st.st_mode);
}

int run_dir_find(const char *runs_dir, const char *which, char *path, size_t pathlen, char *err,
		 size_t errlen)
{
	char candidate[PATH_MAX];

	if (!which)
		return newest_run_in(runs_dir, path, pathlen, err, errlen);
	if (is_run(which)) {
		snprintf(path, pathlen, "%s", which);
		return 0;
	}
	snprintf(candidate, sizeof(candidate), "%s/%s", runs_dir, which);
	if (is_run(candidate)) {
		snprintf(path, pathlen, "%s", candidate);
		return 0;
	}
	/* a runs directory (`nunatak run -o DIR`): its most recent Run */
	if (is_directory(which)) {
		if (!newest_run_in(which, path, pathlen, err, errlen))
			return 0;
		snprintf(err + strlen(err), errlen - strlen(err),
			 ": '%s' is neither a Run (it holds no manifest.json) nor a runs "
			 "directory holding one",
			 which);
		return -ENOENT;
	}
	snprintf(err, errlen, "no Run at '%s' nor '%s' (a Run directory holds manifest.json)",
		 which, candidate);
	return -ENOENT;
}
