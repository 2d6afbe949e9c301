/* machine_cache — see machine_cache.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "userspace/calibration/calibration_rows.h"
#include "userspace/log/log.h"
#include "userspace/machine/machine.h"
#include "userspace/machine/machine_cache.h"
#include "userspace/machine/sha256.h"

#define PROFILE_MAX_BYTES (1024 * 1024)
#define IDENTITY_MAX 128

/* The fields that make two Machines the same one: hardware and allocation
 * shape; never the current frequency, the host name or the Ceilings. */
static const char *const identity_keys[] = { "architecture", "cpu", "cpu_model",
					     "logical_cores", "allocation" };

char *machine_identity(const json_t *machine)
{
	json_t *basis;
	char *text, *hex = NULL;
	size_t i;

	if (!json_is_object(machine)) {
		errno = EINVAL;
		return NULL;
	}
	basis = json_object();
	for (i = 0; basis && i < sizeof(identity_keys) / sizeof(identity_keys[0]); i++) {
		json_t *v = json_object_get(machine, identity_keys[i]);

		json_object_set_new(basis, identity_keys[i], v ? json_deep_copy(v) : json_null());
	}
	text = basis ? json_dumps(basis, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(basis);
	if (text)
		hex = malloc(SHA256_HEX_LEN + 1);
	if (hex)
		sha256_hex(text, strlen(text), hex);
	free(text);
	if (!hex)
		errno = ENOMEM;
	return hex;
}

int machine_cache_dir(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	/* XDG base directory spec: a relative XDG_CACHE_HOME is invalid, ignored */
	if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/nunatak/machines", xdg);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/nunatak/machines", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* 0 if fd (named name, for the message) is ours and not world-writable;
 * else -EPERM with the reason said (group-writable is left alone: a
 * user-private group with umask 002 is common) */
static int check_ours(int fd, const char *name)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_uid != geteuid()) {
		pr_warn("refusing '%s': owned by uid %u, not %u", name, (unsigned)st.st_uid,
			(unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & S_IWOTH) {
		pr_warn("refusing '%s': writable by anyone (mode %03o)", name,
			(unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

/* openat(at, name) as a directory, never through a link, created 0700 when
 * create; checked to be ours. The fd, or -errno. */
static int open_dir_at(int at, const char *name, const char *shown, int create)
{
	int fd, err;

	if (create && mkdirat(at, name, 0700) && errno != EEXIST)
		return -errno;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP || err == -ENOTDIR)
			pr_warn("refusing '%s': not a directory (a symbolic link?)", shown);
		return err == -ENOTDIR ? -ELOOP : err;
	}
	err = check_ours(fd, shown);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* The machines directory's fd (created when create), or -errno */
static int open_cache(int create)
{
	char path[4096], *base_end;
	int base, nunatak, machines, err;

	err = machine_cache_dir(path, sizeof(path));
	if (err)
		return err;
	/* path = BASE/nunatak/machines; BASE itself may need creating */
	base_end = strstr(path, "/nunatak/machines");
	*base_end = '\0';
	if (create && mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	base = open_dir_at(AT_FDCWD, path, path, 0);
	if (base < 0)
		return base;
	*base_end = '/';
	base_end[8] = '\0'; /* BASE/nunatak */
	nunatak = open_dir_at(base, "nunatak", path, create);
	close(base);
	if (nunatak < 0)
		return nunatak;
	base_end[8] = '/';
	machines = open_dir_at(nunatak, "machines", path, create);
	close(nunatak);
	return machines;
}

static int identity_ok(const char *identity)
{
	size_t n = identity ? strlen(identity) : 0;

	return n > 0 && n <= IDENTITY_MAX && strspn(identity, "0123456789abcdef") == n;
}

/* the whole file name (regular, ours, capped) as a JSON object, or -errno;
 * shown = its path for the messages */
static int read_profile(int dir, const char *name, const char *shown, json_t **out)
{
	struct stat st;
	json_error_t jerr;
	char *buf = NULL;
	ssize_t n;
	int fd, err;

	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP)
			pr_warn("refusing Machine profile '%s': a symbolic link", shown);
		return err;
	}
	err = check_ours(fd, shown);
	if (err)
		goto cleanup;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > PROFILE_MAX_BYTES) {
		pr_warn("refusing Machine profile '%s': not a regular file under 1 MiB", shown);
		err = -EINVAL;
		goto cleanup;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	n = read(fd, buf, (size_t)st.st_size);
	if (n < 0) {
		err = -errno;
		goto cleanup;
	}
	*out = json_loadb(buf, (size_t)n, 0, &jerr);
	if (!json_is_object(*out)) {
		pr_warn("ignoring Machine profile '%s': not JSON: %s", shown, jerr.text);
		json_decref(*out);
		*out = NULL;
		err = -EINVAL;
	}
cleanup:
	free(buf);
	close(fd);
	return err;
}

int machine_cache_load(const char *identity, json_t **profile)
{
	char name[IDENTITY_MAX + 8], shown[4096 + sizeof(name)] = "";
	json_t *p = NULL, *version;
	int dir, err;

	if (!identity_ok(identity) || !profile)
		return -EINVAL;
	*profile = NULL;
	dir = open_cache(0);
	if (dir < 0)
		return dir;
	snprintf(name, sizeof(name), "%s.json", identity);
	machine_cache_dir(shown, 4096);
	snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "/%s", name);
	err = read_profile(dir, name, shown, &p);
	close(dir);
	if (err)
		return err;
	version = json_object_get(p, "calibration_version");
	if (!json_is_integer(version) || json_integer_value(version) != CALIBRATION_VERSION ||
	    !json_is_string(json_object_get(p, "identity")) ||
	    strcmp(json_string_value(json_object_get(p, "identity")), identity) ||
	    !json_is_array(json_object_get(p, "ceilings"))) {
		pr_debug("Machine profile '%s' is stale or of another Machine: not cached", shown);
		json_decref(p);
		return -ENOENT;
	}
	*profile = p;
	return 0;
}

int machine_cache_open_rows(const char *identity, char *shown, size_t len)
{
	char name[IDENTITY_MAX + 16];
	int dir, fd;

	if (!identity_ok(identity))
		return -EINVAL;
	snprintf(name, sizeof(name), "%s.rows.tsv", identity);
	if (machine_cache_dir(shown, len) == 0)
		snprintf(shown + strlen(shown), len - strlen(shown), "/%s", name);
	dir = open_cache(1);
	if (dir < 0)
		return dir;
	fd = calibration_rows_open_at(dir, name, shown);
	close(dir);
	return fd;
}

/* write all of text to fd: 0 or -errno */
static int write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		text += n, len -= (size_t)n;
	}
	return 0;
}

static json_t *profile_new(const char *identity, const json_t *machine, json_t *ceilings)
{
	char when[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:s, s:i, s:s, s:O, s:O}", "identity", identity, "calibration_version",
			 CALIBRATION_VERSION, "calibrated", when, "machine", (json_t *)machine,
			 "ceilings", ceilings);
}

int machine_cache_store_profile(const char *identity, const json_t *machine, json_t *ceilings)
{
	char name[IDENTITY_MAX + 8], tmp[IDENTITY_MAX + 48];
	json_t *profile = NULL;
	char *text = NULL;
	int dir, fd = -1, err;

	if (!identity_ok(identity) || !json_is_object(machine) || !json_is_array(ceilings))
		return -EINVAL;
	dir = open_cache(1);
	if (dir < 0)
		return dir;
	profile = profile_new(identity, machine, ceilings);
	text = profile ? json_dumps(profile, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
	if (!text) {
		err = -ENOMEM;
		goto cleanup;
	}
	snprintf(name, sizeof(name), "%s.json", identity);
	snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", identity, (long)getpid());
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = write_all(fd, text, strlen(text));
	if (!err && (write_all(fd, "\n", 1) || fsync(fd)))
		err = -errno;
	if (!err && renameat(dir, tmp, dir, name))
		err = -errno;
	if (err)
		unlinkat(dir, tmp, 0);
cleanup:
	if (fd >= 0)
		close(fd);
	close(dir);
	free(text);
	json_decref(profile);
	return err;
}

int machine_cache_store(const char *identity, json_t *ceilings)
{
	json_t *machine = machine_describe();
	int err;

	if (!machine)
		return -errno;
	err = machine_cache_store_profile(identity, machine, ceilings);
	json_decref(machine);
	return err;
}
