/* manifest — see manifest.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/aggregator/manifest.h"

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

json_t *manifest_read(const char *run_dir, char *err, size_t errlen)
{
	char path[PATH_MAX];
	json_error_t jerr;
	json_t *m, *format;

	snprintf(path, sizeof(path), "%s/%s", run_dir, MANIFEST_FILE);
	m = json_load_file(path, 0, &jerr);
	if (!m) {
		if (access(path, F_OK)) {
			snprintf(err, errlen, "no manifest in '%s'", run_dir);
			errno = ENOENT;
		} else {
			snprintf(err, errlen, "'%s' line %d: %s", path, jerr.line, jerr.text);
			errno = EBADMSG;
		}
		return NULL;
	}
	format = json_object_get(json_object_get(m, "format"), "name");
	if (!json_is_string(format) || strcmp(json_string_value(format), MANIFEST_FORMAT)) {
		snprintf(err, errlen, "'%s' is not a nunatak manifest (format.name is not \"%s\")",
			 path, MANIFEST_FORMAT);
		json_decref(m);
		errno = EBADMSG;
		return NULL;
	}
	return m;
}

int manifest_finalized(const json_t *manifest)
{
	json_t *degradations, *d;
	const char *name;
	size_t i;

	if (json_is_integer(json_object_get(json_object_get(manifest, "run"), "exit_code")))
		return 1;
	degradations = json_object_get(manifest, "degradations");
	json_array_foreach(degradations, i, d) {
		name = json_string_value(json_object_get(d, "name"));
		if (name && !strcmp(name, "run-interrupted"))
			return 1;
	}
	return 0;
}
