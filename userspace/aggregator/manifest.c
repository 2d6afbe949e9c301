/* manifest — see manifest.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/aggregator/manifest.h"
#include "userspace/log/log.h"

/* the temporary file, new: O_EXCL|O_NOFOLLOW, so nothing planted at its
 * name is followed or truncated; a stale one is unlinked (the name only) */
static int manifest_create_tmp(int dirfd)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd, err;

	fd = openat(dirfd, MANIFEST_TMP_FILE, flags, 0600);
	if (fd < 0 && errno == EEXIST) {
		if (unlinkat(dirfd, MANIFEST_TMP_FILE, 0))
			return -errno;
		fd = openat(dirfd, MANIFEST_TMP_FILE, flags, 0600);
	}
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600)) { /* 0600 whatever the umask */
		err = -errno;
		close(fd);
		unlinkat(dirfd, MANIFEST_TMP_FILE, 0);
		return err;
	}
	return fd;
}

int manifest_write(int run_dir_fd, json_t *manifest)
{
	int fd, err = 0;

	fd = manifest_create_tmp(run_dir_fd);
	if (fd < 0)
		return fd;
	errno = 0;
	if (json_dumpfd(manifest, fd, JSON_INDENT(2) | JSON_SORT_KEYS) || write(fd, "\n", 1) != 1)
		err = errno ? -errno : -EIO;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(run_dir_fd, MANIFEST_TMP_FILE, run_dir_fd, MANIFEST_FILE))
		err = -errno;
	if (err)
		unlinkat(run_dir_fd, MANIFEST_TMP_FILE, 0);
	else if (fsync(run_dir_fd)) /* the rename itself survives a crash */
		err = -errno;
	return err;
}

/* what a Run directory's manifest.json may be that it is not: refused
 * before it is opened (a FIFO would block summary forever) */
static int manifest_check_kind(const char *path, const struct stat *st, char *err, size_t errlen)
{
	const char *kind = S_ISLNK(st->st_mode)	   ? "a symbolic link"
			   : S_ISDIR(st->st_mode)  ? "a directory"
			   : S_ISFIFO(st->st_mode) ? "a FIFO"
			   : S_ISSOCK(st->st_mode) ? "a socket"
						   : "a device";

	if (S_ISREG(st->st_mode)) {
		if (st->st_size <= MANIFEST_MAX_BYTES)
			return 0;
		snprintf(err, errlen,
			 "'%s' is %lld bytes, more than the %d MiB a nunatak manifest can be: not "
			 "a manifest nunatak wrote",
			 path, (long long)st->st_size, MANIFEST_MAX_BYTES >> 20);
		return -EFBIG;
	}
	snprintf(err, errlen,
		 "'%s' is not a regular file but %s: not a manifest nunatak wrote; remove it, "
		 "or name another Run",
		 path, kind);
	return S_ISLNK(st->st_mode) ? -ELOOP : -EINVAL;
}

/* the manifest's bytes (NUL-terminated, *len of them) read under dirfd:
 * a regular file, not a link, at most MANIFEST_MAX_BYTES; NULL + errno */
static char *manifest_slurp(int dirfd, const char *path, size_t *len, char *err, size_t errlen)
{
	struct stat before, st;
	char *buf = NULL, why[128];
	ssize_t n;
	int fd = -1, e;

	if (fstatat(dirfd, MANIFEST_FILE, &before, AT_SYMLINK_NOFOLLOW))
		return NULL; /* errno from fstatat: ENOENT, no manifest */
	e = manifest_check_kind(path, &before, err, errlen);
	if (e) {
		errno = -e;
		return NULL;
	}
	fd =
	    openat(dirfd, MANIFEST_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		e = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path,
			 errno_text(e, why, sizeof(why)));
		goto out;
	}
	e = manifest_check_kind(path, &st, err, errlen);
	if (!e && (st.st_dev != before.st_dev || st.st_ino != before.st_ino)) {
		e = -ESTALE;
		snprintf(err, errlen, "'%s' was replaced while it was read: try again", path);
	}
	if (e)
		goto out;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		e = -ENOMEM;
		snprintf(err, errlen, "cannot read '%s': out of memory", path);
		goto out;
	}
	*len = 0;
	while (*len < (size_t)st.st_size &&
	       (n = read(fd, buf + *len, (size_t)st.st_size - *len)) > 0)
		*len += (size_t)n;
	buf[*len] = '\0';
out:
	if (fd >= 0)
		close(fd);
	if (e) {
		free(buf);
		errno = -e;
		return NULL;
	}
	return buf;
}

json_t *manifest_read(const char *run_dir, char *err, size_t errlen)
{
	char path[PATH_MAX], why[128], *bytes = NULL;
	json_error_t jerr;
	json_t *m = NULL, *format;
	size_t len = 0;
	int dirfd, e = 0;

	snprintf(path, sizeof(path), "%s/%s", run_dir, MANIFEST_FILE);
	dirfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bytes = dirfd < 0 ? NULL : manifest_slurp(dirfd, path, &len, err, errlen);
	if (!bytes) {
		e = -errno;
		if (e == -ENOENT || e == -ENOTDIR)
			snprintf(err, errlen, "no manifest in '%s'", run_dir);
		else if (dirfd < 0)
			snprintf(err, errlen, "cannot open the Run directory '%s': %s", run_dir,
				 errno_text(e, why, sizeof(why)));
		if (e == -ENOTDIR)
			e = -ENOENT;
		goto out;
	}
	m = json_loadb(bytes, len, 0, &jerr);
	if (!m) {
		snprintf(err, errlen, "'%s' line %d: %s", path, jerr.line, jerr.text);
		e = -EBADMSG;
		goto out;
	}
	format = json_object_get(json_object_get(m, "format"), "name");
	if (!json_is_string(format) || strcmp(json_string_value(format), MANIFEST_FORMAT)) {
		snprintf(err, errlen, "'%s' is not a nunatak manifest (format.name is not \"%s\")",
			 path, MANIFEST_FORMAT);
		json_decref(m);
		m = NULL;
		e = -EBADMSG;
	}
out:
	free(bytes);
	if (dirfd >= 0)
		close(dirfd);
	if (e)
		errno = -e;
	return m;
}

int manifest_finalized(const json_t *manifest)
{
	json_t *passes = json_object_get(manifest, "passes"), *degradations, *d;
	const char *name;
	size_t i;

	if (json_is_integer(json_object_get(json_object_get(manifest, "run"), "exit_code")))
		return 1;
	/* a Run without an exit code (an attach to a job, a job's Run): its
	 * pass got its end at FINALIZE, the first manifest has none */
	if (json_is_string(json_object_get(json_array_get(passes, json_array_size(passes) - 1),
					   "end")))
		return 1;
	degradations = json_object_get(manifest, "degradations");
	json_array_foreach(degradations, i, d)
	{
		name = json_string_value(json_object_get(d, "name"));
		if (name && !strcmp(name, "run-interrupted"))
			return 1;
	}
	return 0;
}
