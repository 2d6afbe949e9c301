/* trust — see trust.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/config/trust.h"
#include "userspace/log/log.h"

#define LINK_DEPTH_MAX 8

void trust_owner_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;
	char scratch[1024];

	if (!getpwuid_r(uid, &pw, scratch, sizeof(scratch), &found) && found)
		snprintf(buf, len, "%s (uid %u)", found->pw_name, (unsigned)uid);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
}

/* the user this thread acts as: its fsuid (setfsuid(-1) changes nothing
 * and returns it), the euid unless the service Aggregator writes a Run as
 * its owner (userspace/aggregator/as_owner.h) */
static uid_t acting_uid(void)
{
	return (uid_t)setfsuid((uid_t)-1);
}

static bool owner_trusted(uid_t uid)
{
	return uid == 0 || uid == geteuid() || uid == acting_uid();
}

/* -EPERM with the reason when the owner or the mode of @st (the file @path,
 * or the directory @dir above it when @dir is not NULL) makes it unsafe */
static int check_owner_mode(const char *path, const char *dir, const struct stat *st, char *err,
			    size_t errlen)
{
	char owner[160], me[160], subject[PATH_MAX + 64];
	bool writable = st->st_mode & (S_IWGRP | S_IWOTH);

	if (dir)
		snprintf(subject, sizeof(subject), "the directory '%s' above it is", dir);
	else
		snprintf(subject, sizeof(subject), "it is");
	if (!owner_trusted(st->st_uid)) {
		trust_owner_name(st->st_uid, owner, sizeof(owner));
		if (geteuid() == 0 && acting_uid() == 0) {
			snprintf(err, errlen,
				 "refusing '%s': %s owned by %s, not by root; a root nunatak "
				 "obeys only files root owns: remove it or chown it to root",
				 path, subject, owner);
		} else {
			trust_owner_name(acting_uid(), me, sizeof(me));
			snprintf(
			    err, errlen,
			    "refusing '%s': %s owned by %s, not by %s or root; nunatak "
			    "obeys only files its own user or root owns: remove it or chown it",
			    path, subject, owner, me);
		}
		return -EPERM;
	}
	if (writable && !(dir && (st->st_mode & S_ISVTX))) {
		snprintf(err, errlen,
			 "refusing '%s': %s writable by %s (mode %04o)%s; what others can "
			 "write is not obeyed: chmod go-w %s",
			 path, subject, st->st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(st->st_mode & 07777), dir ? " and not sticky" : "",
			 dir ? dir : path);
		return -EPERM;
	}
	return 0;
}

static int walk_chain(const char *path, const char *abs, int depth, int *dirfd, char *walked,
		      char *err, size_t errlen);

/* @comp under @fd (the checked directory @walked) is not a directory
 * opened without following: a symbolic link is followed when its owner is
 * trusted (its directory is, it was checked), its target walked and
 * checked in turn; *@fd and @walked become the target's. 0 or -errno. */
static int follow_link(const char *path, int *fd, const char *comp, int depth, char *walked,
		       char *err, size_t errlen)
{
	char target[PATH_MAX], next_abs[PATH_MAX], owner[160];
	struct stat lst;
	ssize_t n;
	int next, ret;

	if (fstatat(*fd, comp, &lst, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISLNK(lst.st_mode)) {
		snprintf(err, errlen, "refusing '%s': '%s/%s' above it is not a directory", path,
			 walked, comp);
		return -ENOTDIR;
	}
	if (!owner_trusted(lst.st_uid)) {
		trust_owner_name(lst.st_uid, owner, sizeof(owner));
		snprintf(err, errlen,
			 "refusing '%s': '%s/%s' on its way is a symbolic link owned by %s, who "
			 "could point it elsewhere: give the path it points to",
			 path, walked, comp, owner);
		return -EPERM;
	}
	if (depth >= LINK_DEPTH_MAX)
		return -ELOOP;
	n = readlinkat(*fd, comp, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	if (target[0] == '/')
		ret = snprintf(next_abs, sizeof(next_abs), "%s", target);
	else
		ret = snprintf(next_abs, sizeof(next_abs), "%s/%s", walked, target);
	if (ret >= (int)sizeof(next_abs))
		return -ENAMETOOLONG;
	ret = walk_chain(path, next_abs, depth + 1, &next, walked, err, errlen);
	if (ret)
		return ret;
	close(*fd);
	*fd = next;
	return 0;
}

/* one step of the walk: @comp under *@fd, @walked updated */
static int walk_step(const char *path, int *fd, const char *comp, int depth, char *walked,
		     char *err, size_t errlen)
{
	char why[128];
	size_t len = strlen(walked);
	int next, ret;

	if (!strcmp(comp, "."))
		return 0;
	if (len + 2 + strlen(comp) >= PATH_MAX)
		return -ENAMETOOLONG;
	next = openat(*fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (next < 0 && (errno == ELOOP || errno == ENOTDIR))
		return follow_link(path, fd, comp, depth, walked, err, errlen);
	if (next < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open '%s/%s' on the way to '%s': %s", walked, comp,
			 path, errno_text(ret, why, sizeof(why)));
		return ret;
	}
	close(*fd);
	*fd = next;
	if (!strcmp(comp, "..")) { /* walked holds no link: its parent is the real one */
		char *slash = strrchr(walked, '/');

		if (slash)
			*slash = '\0';
	} else {
		snprintf(walked + len, PATH_MAX - len, "/%s", comp);
	}
	return 0;
}

/* Walks @abs (absolute) from "/" one component at a time, each opened
 * without following links (a link: follow_link()), checking each
 * directory. 0 with *@dirfd (O_PATH) and @walked (PATH_MAX: its real path,
 * "" for "/"), or -errno. */
static int walk_chain(const char *path, const char *abs, int depth, int *dirfd, char *walked,
		      char *err, size_t errlen)
{
	char comp[NAME_MAX + 1];
	const char *at = abs;
	struct stat st;
	int fd, ret;
	size_t len;

	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	walked[0] = '\0';
	for (;;) {
		if (fstat(fd, &st)) {
			ret = -errno;
			goto fail;
		}
		ret = check_owner_mode(path, walked[0] ? walked : "/", &st, err, errlen);
		if (ret)
			goto fail;
		at += strspn(at, "/");
		if (!*at)
			break;
		len = strcspn(at, "/");
		if (len > NAME_MAX) {
			ret = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(comp, at, len);
		comp[len] = '\0';
		at += len;
		ret = walk_step(path, &fd, comp, depth, walked, err, errlen);
		if (ret)
			goto fail;
	}
	*dirfd = fd;
	return 0;
fail:
	close(fd);
	return ret;
}

int trust_open_dir_chain(const char *path, const char *dir, int *dirfd, char *err, size_t errlen)
{
	char abs[PATH_MAX], walked[PATH_MAX], cwd[PATH_MAX], no_err[1];

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	*dirfd = -1;
	if (!dir || !*dir)
		return -EINVAL;
	if (dir[0] == '/') {
		if (snprintf(abs, sizeof(abs), "%s", dir) >= (int)sizeof(abs))
			return -ENAMETOOLONG;
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) >= (int)sizeof(abs))
			return -ENAMETOOLONG;
	}
	return walk_chain(path ? path : dir, abs, 0, dirfd, walked, err, errlen);
}

/* The directory of @path (as written: trust_open_dir_chain() walks it)
 * and the name in it. */
static int split_path(const char *path, char **dir_path, const char **base)
{
	const char *slash = strrchr(path, '/');
	char *dir;

	*base = slash ? slash + 1 : path;
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, ".."))
		return -EISDIR;
	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, slash - path);
	if (!dir)
		return -ENOMEM;
	*dir_path = dir;
	return 0;
}

/* The kind of a file that is not a regular one, refused before any open. */
static int check_kind(const char *path, const struct stat *st, char *err, size_t errlen)
{
	const char *kind;
	int ret = -EINVAL;

	if (S_ISREG(st->st_mode))
		return 0;
	if (S_ISLNK(st->st_mode)) {
		snprintf(err, errlen,
			 "refusing '%s': a symbolic link; nunatak obeys no file through a "
			 "link: replace it by the file it points to",
			 path);
		return -ELOOP;
	}
	if (S_ISDIR(st->st_mode)) {
		kind = "a directory";
		ret = -EISDIR;
	} else if (S_ISFIFO(st->st_mode)) {
		kind = "a FIFO";
	} else if (S_ISSOCK(st->st_mode)) {
		kind = "a socket";
	} else {
		kind = "a device";
	}
	snprintf(err, errlen,
		 "refusing '%s': not a regular file but %s: remove it or make it a regular file",
		 path, kind);
	return ret;
}

/* The checks of trust.h, then @path opened with @flags (O_PATH or
 * O_RDONLY) into *@fd. */
static int trust_at(const char *path, int flags, int *fd, char *err, size_t errlen)
{
	char *dir_path = NULL, no_err[1], why[128];
	struct stat st, opened;
	const char *base;
	int dirfd = -1, ret;

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	*fd = -1;
	if (!path || !*path)
		return -EINVAL;
	ret = split_path(path, &dir_path, &base);
	if (ret == -EISDIR)
		snprintf(err, errlen,
			 "refusing '%s': not a regular file but a directory: name a file", path);
	else if (ret)
		snprintf(err, errlen, "cannot examine '%s': %s", path,
			 errno_text(ret, why, sizeof(why)));
	if (ret)
		goto cleanup;
	ret = trust_open_dir_chain(path, dir_path, &dirfd, err, errlen);
	if (ret)
		goto cleanup;
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat '%s': %s", path,
			 errno_text(ret, why, sizeof(why)));
		goto cleanup;
	}
	ret = check_kind(path, &st, err, errlen);
	if (!ret)
		ret = check_owner_mode(path, NULL, &st, err, errlen);
	if (ret)
		goto cleanup;
	*fd = openat(dirfd, base, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &opened)) {
		ret = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path,
			 errno_text(ret, why, sizeof(why)));
		goto cleanup;
	}
	if (opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
		ret = -EPERM;
		snprintf(err, errlen,
			 "refusing '%s': replaced while it was being checked: try again, and "
			 "find who changes it",
			 path);
	}
cleanup:
	if (ret && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	if (dirfd >= 0)
		close(dirfd);
	free(dir_path);
	return ret;
}

int trust_file(const char *path, char *err, size_t errlen)
{
	int fd, ret;

	ret = trust_at(path, O_PATH, &fd, err, errlen);
	if (!ret)
		close(fd);
	return ret;
}

int trust_open(const char *path, int *fd, char *err, size_t errlen)
{
	return trust_at(path, O_RDONLY, fd, err, errlen);
}
