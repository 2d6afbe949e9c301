/* manifest — see manifest.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "userspace/aggregator/manifest.h"

int manifest_write(const char *run_dir, json_t *manifest)
{
	char path[4096], tmp[4096];
	int fd, err = 0;

	if (snprintf(path, sizeof(path), "%s/%s", run_dir, MANIFEST_FILE) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", run_dir, MANIFEST_FILE) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (json_dumpfd(manifest, fd, JSON_INDENT(2) | JSON_SORT_KEYS) || write(fd, "\n", 1) != 1)
		err = -EIO;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

json_t *manifest_read(const char *run_dir, char *err, size_t errlen)
{
	char path[4096];
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
