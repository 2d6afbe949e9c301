/* spool — see spool.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "userspace/agent/spool.h"
#include "userspace/log/log.h"

#define SPOOL_SUFFIX ".batch"
#define SPOOL_FILE_MAX (256u << 20) /* no Batch is bigger: a larger file is not ours */

struct spool {
	char *dir;
	int dir_fd;
	uint64_t cap_bytes, bytes;
	struct spool_entry *entries; /* sorted by name: oldest first */
	size_t n, cap;
	unsigned tmp_counter;
};

/* "<16 hex>-<16 hex>-<16 hex>-<run_id>.batch" → e; 0 or -EINVAL */
static int spool_parse_name(const char *name, struct spool_entry *e)
{
	size_t len = strlen(name), slen = strlen(SPOOL_SUFFIX), idlen;
	uint64_t ns;
	int used = 0;

	if (len >= sizeof(e->name) || len < 51 + slen || strcmp(name + len - slen, SPOOL_SUFFIX))
		return -EINVAL;
	if (sscanf(name, "%16" SCNx64 "-%16" SCNx64 "-%16" SCNx64 "-%n", &ns, &e->incarnation,
		   &e->seq, &used) != 3 ||
	    used != 51)
		return -EINVAL;
	idlen = len - slen - 51;
	if (!idlen || idlen > SPOOL_RUN_ID_MAX)
		return -EINVAL;
	memcpy(e->run_id, name + 51, idlen);
	e->run_id[idlen] = '\0';
	if (strchr(e->run_id, '/'))
		return -EINVAL;
	snprintf(e->name, sizeof(e->name), "%s", name);
	return 0;
}

static int spool_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct spool_entry *)a)->name, ((const struct spool_entry *)b)->name);
}

static int spool_append(struct spool *sp, const struct spool_entry *e)
{
	size_t i;

	if (sp->n == sp->cap) {
		size_t cap = sp->cap ? sp->cap * 2 : 64;
		struct spool_entry *ne = realloc(sp->entries, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		sp->entries = ne;
		sp->cap = cap;
	}
	/* names grow with time: the place is almost always the end */
	for (i = sp->n; i > 0 && strcmp(sp->entries[i - 1].name, e->name) > 0; i--)
		;
	memmove(&sp->entries[i + 1], &sp->entries[i], (sp->n - i) * sizeof(*e));
	sp->entries[i] = *e;
	sp->n++;
	sp->bytes += e->bytes;
	return 0;
}

/* The directory: created 0700 when missing, then it must be ours and
 * not writable by others. */
static int spool_open_dir(struct spool *sp, const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the spool directory '%s': %s; create it (root, 0700)",
			 dir, strerror(errno));
		return -errno;
	}
	sp->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sp->dir_fd < 0 || fstat(sp->dir_fd, &st)) {
		snprintf(err, errlen, "cannot open the spool directory '%s': %s (a symbolic link is "
			 "refused); make it a directory owned by uid %u, mode 0700",
			 dir, strerror(errno), (unsigned)geteuid());
		return -errno;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(err, errlen, "the spool directory '%s' is owned by uid %u with mode %04o: "
			 "another user could plant Batches there; chown %u and chmod 0700 it",
			 dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			 (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

/* Lists the Batches earlier incarnations left; removes temporary files. */
static int spool_scan(struct spool *sp)
{
	int fd = dup(sp->dir_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int err = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		struct spool_entry e = {0};
		struct stat st;

		if (!strncmp(de->d_name, ".tmp-", 5)) {
			unlinkat(sp->dir_fd, de->d_name, 0); /* an interrupted write */
			continue;
		}
		if (spool_parse_name(de->d_name, &e) ||
		    fstatat(sp->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size > SPOOL_FILE_MAX)
			continue;
		e.bytes = (uint64_t)st.st_size;
		err = spool_append(sp, &e);
	}
	closedir(d);
	if (sp->n)
		qsort(sp->entries, sp->n, sizeof(*sp->entries), spool_entry_cmp);
	return err;
}

struct spool *spool__open(const char *dir, uint64_t cap_bytes, char *err, size_t errlen)
{
	struct spool *sp = calloc(1, sizeof(*sp));
	int e;

	if (!sp || !(sp->dir = strdup(dir))) {
		free(sp);
		snprintf(err, errlen, "out of memory opening the spool");
		errno = ENOMEM;
		return NULL;
	}
	sp->dir_fd = -1;
	sp->cap_bytes = cap_bytes ? cap_bytes : SPOOL_DEFAULT_CAP_BYTES;
	e = spool_open_dir(sp, dir, err, errlen);
	if (!e) {
		e = spool_scan(sp);
		if (e)
			snprintf(err, errlen, "cannot list the spool directory '%s': %s", dir,
				 strerror(-e));
	}
	if (e) {
		spool__free(sp);
		errno = -e;
		return NULL;
	}
	if (sp->n)
		pr_info("spool '%s': %zu Batches (%llu bytes) of earlier runs of the agent to replay",
			dir, sp->n, (unsigned long long)sp->bytes);
	return sp;
}

void spool__free(struct spool *sp)
{
	if (!sp)
		return;
	if (sp->dir_fd >= 0)
		close(sp->dir_fd);
	free(sp->entries);
	free(sp->dir);
	free(sp);
}

static int spool_write_file(struct spool *sp, const char *tmp, const void *buf, size_t len)
{
	int fd = openat(sp->dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	const char *p = buf;
	int err = 0;

	if (fd < 0)
		return -errno;
	while (len && !err) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno != EINTR)
			err = -errno;
		else if (w > 0) {
			p += w;
			len -= (size_t)w;
		}
	}
	if (close(fd) && !err)
		err = -errno;
	return err;
}

int spool_put(struct spool *sp, const char *run_id, uint64_t incarnation, uint64_t seq,
	      const void *buf, size_t len, uint64_t samples)
{
	struct spool_entry e = {0};
	struct timespec ts;
	char tmp[64], name[160];
	int err;

	if (strlen(run_id) > SPOOL_RUN_ID_MAX || strchr(run_id, '/') || !*run_id)
		return -ENAMETOOLONG;
	if (sp->bytes + len > sp->cap_bytes)
		return -ENOSPC;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "%016" PRIx64 "-%016" PRIx64 "-%016" PRIx64 "-%s" SPOOL_SUFFIX,
		 (uint64_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec), incarnation, seq,
		 run_id);
	if (spool_parse_name(name, &e))
		return -EINVAL;
	snprintf(tmp, sizeof(tmp), ".tmp-%d-%u", (int)getpid(), sp->tmp_counter++);
	err = spool_write_file(sp, tmp, buf, len);
	if (!err && renameat2(sp->dir_fd, tmp, sp->dir_fd, name, RENAME_NOREPLACE))
		err = -errno;
	if (err) {
		unlinkat(sp->dir_fd, tmp, 0);
		return err;
	}
	e.bytes = len;
	e.samples = samples;
	err = spool_append(sp, &e);
	if (err)
		unlinkat(sp->dir_fd, name, 0);
	return err;
}

static int spool_match(const struct spool_entry *e, const char *run_id, uint64_t incarnation)
{
	return e->incarnation == incarnation && !strcmp(e->run_id, run_id);
}

const struct spool_entry *spool_oldest(const struct spool *sp, const char *run_id,
				       uint64_t incarnation)
{
	size_t i;

	for (i = 0; i < sp->n; i++)
		if (spool_match(&sp->entries[i], run_id, incarnation))
			return &sp->entries[i];
	return NULL;
}

const struct spool_entry *spool_entry_at(const struct spool *sp, size_t i)
{
	return i < sp->n ? &sp->entries[i] : NULL;
}

size_t spool_count(const struct spool *sp, const char *run_id, uint64_t incarnation)
{
	size_t i, n = 0;

	for (i = 0; i < sp->n; i++)
		n += spool_match(&sp->entries[i], run_id, incarnation);
	return n;
}

int spool_read(struct spool *sp, const struct spool_entry *e, void **buf, size_t *len)
{
	int fd = openat(sp->dir_fd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	ssize_t r = -1;
	void *b = NULL;
	int err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > SPOOL_FILE_MAX)
		err = -EINVAL;
	if (!err && !(b = malloc(st.st_size ? (size_t)st.st_size : 1)))
		err = -ENOMEM;
	if (!err) {
		r = pread(fd, b, (size_t)st.st_size, 0);
		if (r != st.st_size)
			err = r < 0 ? -errno : -EIO;
	}
	close(fd);
	if (err) {
		free(b);
		return err;
	}
	*buf = b;
	*len = (size_t)st.st_size;
	return 0;
}

int spool_remove(struct spool *sp, const char *run_id, uint64_t incarnation, uint64_t seq)
{
	size_t i;

	for (i = 0; i < sp->n; i++) {
		struct spool_entry *e = &sp->entries[i];

		if (e->seq != seq || !spool_match(e, run_id, incarnation))
			continue;
		if (unlinkat(sp->dir_fd, e->name, 0) && errno != ENOENT)
			pr_warn("cannot remove the spooled Batch '%s/%s': %s", sp->dir, e->name,
				strerror(errno));
		sp->bytes -= e->bytes;
		memmove(e, e + 1, (sp->n - i - 1) * sizeof(*e));
		sp->n--;
		return 0;
	}
	return -ENOENT;
}

uint64_t spool_bytes(const struct spool *sp)
{
	return sp->bytes;
}

size_t spool_files(const struct spool *sp)
{
	return sp->n;
}

const char *spool_dir(const struct spool *sp)
{
	return sp->dir;
}
