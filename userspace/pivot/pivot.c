/* pivot — lifecycle of the measured pivot: create (schema), open (checks), seal,
 * free, and the SQL helpers the other pivot_*.c files share. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

#define PIVOT_BUSY_TIMEOUT_MS 10000

int pivot_errno(struct pivot *p)
{
	int rc, sys;

	if (!p || !p->db)
		return -EIO;
	rc = sqlite3_extended_errcode(p->db);
	sys = sqlite3_system_errno(p->db);
	switch (rc & 0xff) {
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_IOERR:
		if (rc == SQLITE_IOERR_NOMEM)
			return -ENOMEM;
		return sys > 0 ? -sys : -EIO;
	case SQLITE_CANTOPEN:
		return sys > 0 ? -sys : -EIO;
	default:
		return -EIO;
	}
}

int pivot_sql_error(struct pivot *p, const char *what)
{
	pr_warn("pivot '%s': cannot %s: %s", p->path, what, sqlite3_errmsg(p->db));
	return pivot_errno(p);
}

int pivot_prepare(struct pivot *p, const char *sql, sqlite3_stmt **stmt)
{
	if (sqlite3_prepare_v2(p->db, sql, -1, stmt, NULL) != SQLITE_OK) {
		*stmt = NULL;
		return pivot_sql_error(p, "prepare a statement");
	}
	return 0;
}

int pivot_exec(struct pivot *p, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(p->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		pr_warn("pivot '%s': cannot run '%.40s': %s", p->path, sql, msg ? msg : "?");
		sqlite3_free(msg);
		return pivot_errno(p);
	}
	return 0;
}

int pivot_begin(struct pivot *p)
{
	if (p->read_only)
		return -EROFS;
	return pivot_exec(p, "BEGIN IMMEDIATE");
}

int pivot_commit(struct pivot *p)
{
	return pivot_exec(p, "COMMIT");
}

void pivot_rollback(struct pivot *p)
{
	if (!sqlite3_get_autocommit(p->db))
		sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL);
}

int pivot_in_transaction(struct pivot *p, int (*body)(struct pivot *p))
{
	int err;

	err = pivot_begin(p);
	if (err)
		return err;
	err = body(p);
	if (!err)
		err = pivot_commit(p);
	if (err)
		pivot_rollback(p);
	return err;
}

int pivot_bind_text(sqlite3_stmt *stmt, int idx, const char *s)
{
	int rc =
	    s ? sqlite3_bind_text(stmt, idx, s, -1, SQLITE_STATIC) : sqlite3_bind_null(stmt, idx);

	return rc == SQLITE_OK ? 0 : -EIO;
}

int pivot_step_done(struct pivot *p, sqlite3_stmt *stmt, const char *what)
{
	int rc, err = 0;

	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE)
		err = pivot_sql_error(p, what);
	sqlite3_reset(stmt);
	return err;
}

int pivot_query_int64(struct pivot *p, const char *sql, const char *what, int64_t *value)
{
	sqlite3_stmt *stmt;
	int err;

	err = pivot_prepare(p, sql, &stmt);
	if (err)
		return err;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		*value = sqlite3_column_int64(stmt, 0);
	else
		err = pivot_sql_error(p, what);
	sqlite3_finalize(stmt);
	return err;
}

sqlite3 *pivot_sqlite(struct pivot *p)
{
	return p ? p->db : NULL;
}

void pivot__free(struct pivot *p)
{
	if (!p)
		return;
	if (p->db)
		sqlite3_close_v2(p->db);
	free(p->path);
	free(p);
}

/* SQLite resolves the symbolic links in a database's name (3.40: every
 * component, /proc/self/fd/N included) and then opens the -wal, -shm and
 * -journal files by the resolved path: a Run directory replaced by a link
 * would then receive them. This VFS is the default one with names kept as
 * given, for the pivots opened under a directory descriptor only. */
#define PIVOT_DIRFD_VFS "nunatak-dirfd"

static sqlite3_vfs pivot_dirfd_vfs;
static pthread_once_t pivot_dirfd_vfs_once = PTHREAD_ONCE_INIT;
static int pivot_dirfd_vfs_err;

static int pivot_dirfd_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	size_t len = strlen(name);

	(void)vfs;
	if (name[0] != '/' || len >= (size_t)n)
		return SQLITE_CANTOPEN;
	memcpy(out, name, len + 1);
	return SQLITE_OK;
}

static void pivot_dirfd_vfs_register(void)
{
	sqlite3_vfs *base = sqlite3_vfs_find(NULL);

	if (!base) {
		pivot_dirfd_vfs_err = -EIO;
		return;
	}
	pivot_dirfd_vfs = *base;
	pivot_dirfd_vfs.pNext = NULL;
	pivot_dirfd_vfs.zName = PIVOT_DIRFD_VFS;
	pivot_dirfd_vfs.xFullPathname = pivot_dirfd_full_pathname;
	if (sqlite3_vfs_register(&pivot_dirfd_vfs, 0) != SQLITE_OK)
		pivot_dirfd_vfs_err = -EIO;
}

/* The name SQLite is given for name under dirfd, and its VFS (NULL: the
 * default). 0 or -errno. */
static int pivot_sqlite_name(int dirfd, const char *name, char *buf, size_t len,
			     const char **vfs)
{
	*vfs = NULL;
	if (dirfd == AT_FDCWD) {
		if (snprintf(buf, len, "%s", name) >= (int)len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (strchr(name, '/'))
		return -EINVAL; /* a name in dirfd, not a path */
	pthread_once(&pivot_dirfd_vfs_once, pivot_dirfd_vfs_register);
	if (pivot_dirfd_vfs_err)
		return pivot_dirfd_vfs_err;
	*vfs = PIVOT_DIRFD_VFS;
	if (snprintf(buf, len, "/proc/self/fd/%d/%s", dirfd, name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static struct pivot *pivot_connect(int dirfd, const char *name, const char *shown_as, int flags,
				   int read_only)
{
	char sqlite_name[PATH_MAX];
	const char *vfs;
	struct pivot *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->read_only = read_only;
	p->path = strdup(shown_as ? shown_as : name);
	if (!p->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = pivot_sqlite_name(dirfd, name, sqlite_name, sizeof(sqlite_name), &vfs);
	if (err)
		goto cleanup;
	if (sqlite3_open_v2(sqlite_name, &p->db, flags, vfs) != SQLITE_OK) {
		err = p->db && sqlite3_errcode(p->db) == SQLITE_NOMEM ? -ENOMEM : -EIO;
		if (err == -EIO)
			pivot_sql_error(p, "open");
		goto cleanup;
	}
	sqlite3_extended_result_codes(p->db, 0);
	sqlite3_busy_timeout(p->db, PIVOT_BUSY_TIMEOUT_MS);
	return p;
cleanup:
	pivot__free(p);
	errno = -err;
	return NULL;
}

/* Per-connection settings. Batches are acknowledged once stored, so a
 * commit must survive a power loss: synchronous FULL. */
static int pivot_configure(struct pivot *p)
{
	int err;

	err = pivot_exec(p, "PRAGMA foreign_keys = ON");
	if (err)
		return err;
	if (p->read_only)
		return 0;
	/* a Batch of deep Stacks writes hundreds of thousands of frame rows in
	 * one transaction: 32 MiB of page cache keeps it from spilling */
	err = pivot_exec(p, "PRAGMA cache_size = -32768");
	if (err)
		return err;
	return pivot_exec(p, "PRAGMA synchronous = FULL");
}

static void pivot_unlink_all(int dirfd, const char *name)
{
	static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };
	char aux[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(aux, sizeof(aux), "%s%s", name, suffixes[i]);
		unlinkat(dirfd, aux, 0);
	}
}

/* the empty main file, made here so that nothing is written over and the
 * mode is 0600 (SQLite gives its -wal, -shm and -journal the same) */
static int pivot_precreate(int dirfd, const char *name)
{
	int fd, err = 0;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600)) /* whatever the umask */
		err = -errno;
	close(fd);
	if (err)
		unlinkat(dirfd, name, 0);
	return err;
}

struct pivot *pivot__create_at(int dirfd, const char *name, const char *shown_as)
{
	struct pivot *p = NULL;
	int err;

	if (!name) {
		errno = EINVAL;
		return NULL;
	}
	err = pivot_precreate(dirfd, name);
	if (err) {
		errno = -err;
		return NULL;
	}
	p = pivot_connect(dirfd, name, shown_as, SQLITE_OPEN_READWRITE, 0);
	if (!p) {
		err = -errno;
		goto cleanup;
	}
	err = pivot_exec(p, "PRAGMA journal_mode = WAL");
	err = err ?: pivot_configure(p);
	err = err ?: pivot_begin(p);
	err = err ?: pivot_schema_create(p);
	err = err ?: pivot_commit(p);
	if (err)
		goto cleanup;
	p->schema = PIVOT_SCHEMA_VERSION;
	return p;
cleanup:
	if (err == -EIO && p)
		err = pivot_errno(p); /* a full disk said as such, not as EIO */
	if (p)
		pivot_rollback(p);
	pivot__free(p);
	pivot_unlink_all(dirfd, name);
	errno = -err;
	return NULL;
}

struct pivot *pivot__create(const char *path)
{
	return pivot__create_at(AT_FDCWD, path, path);
}

#define PIVOT_SEAL_TRIES 50 /* x 100 ms: readers of a live Run are brief */

/* the journal mode after "PRAGMA journal_mode = DELETE": "delete" when the
 * pivot is sealed, "wal" while another connection keeps it open */
static int pivot_set_journal_delete(struct pivot *p, char *mode, size_t len)
{
	sqlite3_stmt *stmt;
	int rc, err;

	err = pivot_prepare(p, "PRAGMA journal_mode = DELETE", &stmt);
	if (err)
		return err;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		snprintf(mode, len, "%s", (const char *)sqlite3_column_text(stmt, 0));
	else
		err = pivot_errno(p);
	sqlite3_finalize(stmt);
	return err;
}

int pivot_seal(struct pivot *p)
{
	char mode[32] = "";
	int i, err = -EBUSY;

	if (!p)
		return -EINVAL;
	if (p->read_only)
		return -EROFS;
	for (i = 0; i < PIVOT_SEAL_TRIES && err == -EBUSY; i++) {
		if (i)
			usleep(100 * 1000);
		err = pivot_set_journal_delete(p, mode, sizeof(mode));
		if (!err && strcmp(mode, "delete"))
			err = -EBUSY;
	}
	if (err == -EBUSY)
		pr_warn("pivot '%s': cannot seal it (still in %s mode): another process keeps it "
			"open; close it and run `nunatak summary` on the Run",
			p->path, mode[0] ? mode : "WAL");
	else if (err)
		pivot_sql_error(p, "seal it (journal_mode DELETE)");
	return err;
}

int pivot_is_sealed(struct pivot *p)
{
	sqlite3_stmt *stmt;
	int sealed, err;

	if (!p)
		return -EINVAL;
	err = pivot_prepare(p, "PRAGMA journal_mode", &stmt);
	if (err)
		return err;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		sealed = strcmp((const char *)sqlite3_column_text(stmt, 0), "wal") != 0;
	else
		sealed = pivot_sql_error(p, "read the journal mode");
	sqlite3_finalize(stmt);
	return sealed;
}

/* 0 when the file is a pivot this nunatak can read */
static int pivot_check(struct pivot *p)
{
	sqlite3_stmt *stmt = NULL;
	int64_t tables;
	int rc, version, err;

	rc = sqlite3_prepare_v2(p->db, "PRAGMA user_version", -1, &stmt, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW) {
		err = rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT ? -EBADMSG : -EIO;
		pr_warn("pivot '%s': not readable as SQLite: %s", p->path, sqlite3_errmsg(p->db));
		goto cleanup;
	}
	version = sqlite3_column_int(stmt, 0);
	p->schema = version;
	sqlite3_finalize(stmt);
	stmt = NULL;
	if (version > PIVOT_SCHEMA_VERSION) {
		pr_warn("pivot '%s': schema version %d is newer than this nunatak's (%d)", p->path,
			version, PIVOT_SCHEMA_VERSION);
		err = -EPROTONOSUPPORT;
		goto cleanup;
	}
	if (version < 1) {
		pr_warn("pivot '%s': not a nunatak pivot (no schema version)", p->path);
		err = -EBADMSG;
		goto cleanup;
	}
	err =
	    pivot_query_int64(p,
			      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
			      " ('batches','modules','loci','samples','measurements')",
			      "read the schema", &tables);
	if (err)
		goto cleanup;
	if (tables != 5) {
		pr_warn("pivot '%s': not a nunatak pivot (tables missing)", p->path);
		err = -EBADMSG;
		goto cleanup;
	}
	err = 0;
cleanup:
	sqlite3_finalize(stmt);
	return err;
}

struct pivot *pivot__open_at(int dirfd, const char *name, int read_only, const char *shown_as)
{
	struct pivot *p = NULL;
	struct stat st;
	int err;

	if (!name) {
		errno = EINVAL;
		return NULL;
	}
	if (fstatat(dirfd, name, &st, 0) < 0)
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = EBADMSG;
		return NULL;
	}
	p = pivot_connect(dirfd, name, shown_as,
			  read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, read_only);
	if (!p)
		return NULL;
	err = pivot_check(p);
	if (err)
		goto cleanup;
	err = pivot_configure(p);
	if (!err && !read_only && p->schema < PIVOT_SCHEMA_VERSION) {
		err = pivot_begin(p);
		err = err ?: pivot_schema_migrate(p);
		err = err ?: pivot_commit(p);
		if (err)
			pivot_rollback(p);
		else
			p->schema = PIVOT_SCHEMA_VERSION;
	}
	if (err)
		goto cleanup;
	return p;
cleanup:
	pivot__free(p);
	errno = -err;
	return NULL;
}

struct pivot *pivot__open(const char *path, int read_only)
{
	return pivot__open_at(AT_FDCWD, path, read_only, path);
}
