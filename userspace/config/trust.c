/* trust — see trust.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/config/trust.h"

/* "alice (uid 1000)", or "uid 1000" for a uid without a name */
static void owner_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *found = NULL;
	char scratch[1024];

	if (!getpwuid_r(uid, &pw, scratch, sizeof(scratch), &found) && found)
		snprintf(buf, len, "%s (uid %u)", found->pw_name, (unsigned)uid);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
}

static bool owner_trusted(uid_t uid)
{
	return uid == 0 || uid == geteuid();
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
		owner_name(st->st_uid, owner, sizeof(owner));
		if (geteuid() == 0) {
			snprintf(err, errlen,
				 "refusing '%s': %s owned by %s, not by root; a root nunatak "
				 "obeys only files root owns: remove it or chown it to root",
				 path, subject, owner);
		} else {
			owner_name(geteuid(), me, sizeof(me));
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

/* Opens the directory chain of @real (absolute, no symbolic links) from
 * "/" down, one component at a time without following links, checking
 * each. 0 and *@dirfd (an O_PATH descriptor of @real) or -errno. */
static int open_dir_chain(const char *path, const char *real, int *dirfd, char *err, size_t errlen)
{
	char walked[PATH_MAX] = "", comp[NAME_MAX + 1];
	const char *at = real;
	struct stat st;
	int fd, next, ret;
	size_t len;

	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
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
		if (len > NAME_MAX || strlen(walked) + 1 + len >= sizeof(walked)) {
			ret = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(comp, at, len);
		comp[len] = '\0';
		snprintf(walked + strlen(walked), sizeof(walked) - strlen(walked), "/%s", comp);
		at += len;
		next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			ret = -errno;
			if (ret == -ELOOP || ret == -ENOTDIR)
				snprintf(err, errlen,
					 "refusing '%s': '%s' was replaced while it was being "
					 "checked: try again, and find who changes it",
					 path, walked);
			goto fail;
		}
		close(fd);
		fd = next;
	}
	*dirfd = fd;
	return 0;
fail:
	close(fd);
	return ret;
}

/* The real path of the directory of @path and the name in it. */
static int split_path(const char *path, char **dir_real, const char **base)
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
	*dir_real = realpath(dir, NULL);
	free(dir);
	return *dir_real ? 0 : -errno;
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
	char *dir_real = NULL, no_err[1];
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
	ret = split_path(path, &dir_real, &base);
	if (ret == -EISDIR)
		snprintf(err, errlen,
			 "refusing '%s': not a regular file but a directory: name a file", path);
	else if (ret)
		snprintf(err, errlen, "cannot resolve the directory of '%s': %s", path,
			 strerror(-ret));
	if (ret)
		goto cleanup;
	ret = open_dir_chain(path, dir_real, &dirfd, err, errlen);
	if (ret)
		goto cleanup;
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat '%s': %s", path, strerror(-ret));
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
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(-ret));
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
	free(dir_real);
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
