/* pivot — lifecycle of the measured pivot: create (schema), open (checks),
 * free, and the SQL helpers the other pivot_*.c files share. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

#define PIVOT_BUSY_TIMEOUT_MS 10000

static const char pivot_schema[] =
    "CREATE TABLE batches(node TEXT NOT NULL, seq INTEGER NOT NULL, received TEXT NOT NULL,"
    " PRIMARY KEY(node, seq));\n"
    "CREATE TABLE modules(id INTEGER PRIMARY KEY, identity TEXT NOT NULL UNIQUE,"
    " path TEXT NOT NULL, display_name TEXT NOT NULL, has_build_id INTEGER NOT NULL,"
    " attribution TEXT, attribution_reason TEXT);\n"
    "CREATE TABLE loci(id INTEGER PRIMARY KEY, node TEXT NOT NULL, rank INTEGER,"
    " world_size INTEGER, tgid INTEGER NOT NULL, tid INTEGER NOT NULL, comm TEXT, exe TEXT,"
    " UNIQUE(node, tgid, tid));\n"
    "CREATE TABLE hotspots(id INTEGER PRIMARY KEY, module INTEGER NOT NULL REFERENCES"
    " modules(id), function_start INTEGER NOT NULL, name TEXT NOT NULL, source_file TEXT,"
    " resolution_level TEXT NOT NULL CHECK(resolution_level IN"
    " ('line','function','symbol','unresolved')), UNIQUE(module, function_start));\n"
    "CREATE TABLE addresses(id INTEGER PRIMARY KEY, module INTEGER NOT NULL REFERENCES"
    " modules(id), offset INTEGER NOT NULL, hotspot INTEGER REFERENCES hotspots(id),"
    " resolution_level TEXT, source_file TEXT, line INTEGER, UNIQUE(module, offset));\n"
    "CREATE TABLE frames(address INTEGER NOT NULL REFERENCES addresses(id),"
    " depth INTEGER NOT NULL, function TEXT, file TEXT, line INTEGER, column INTEGER,"
    " PRIMARY KEY(address, depth));\n"
    "CREATE TABLE extracts(file TEXT NOT NULL, line INTEGER NOT NULL, text TEXT NOT NULL,"
    " PRIMARY KEY(file, line));\n"
    "CREATE TABLE stacks(id INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE,"
    " depth INTEGER NOT NULL, truncated INTEGER NOT NULL);\n"
    "CREATE TABLE stack_frames(stack INTEGER NOT NULL REFERENCES stacks(id),"
    " position INTEGER NOT NULL, address INTEGER NOT NULL REFERENCES addresses(id),"
    " PRIMARY KEY(stack, position));\n"
    "CREATE TABLE samples(locus INTEGER NOT NULL REFERENCES loci(id), stack INTEGER NOT NULL"
    " REFERENCES stacks(id), counter TEXT NOT NULL, in_kernel INTEGER NOT NULL,"
    " sample_count INTEGER NOT NULL, value INTEGER NOT NULL,"
    " PRIMARY KEY(locus, stack, counter, in_kernel));\n"
    "CREATE TABLE measurements(id INTEGER PRIMARY KEY, hotspot INTEGER REFERENCES"
    " hotspots(id), locus INTEGER NOT NULL REFERENCES loci(id), counter TEXT NOT NULL,"
    " value REAL, unit TEXT NOT NULL, quality TEXT NOT NULL CHECK(quality IN"
    " ('measured','estimated','unavailable')), reason TEXT, sample_count INTEGER,"
    " coverage REAL, pass INTEGER NOT NULL DEFAULT 0);\n"
    "CREATE TABLE events(id INTEGER PRIMARY KEY, locus INTEGER NOT NULL REFERENCES loci(id),"
    " name TEXT NOT NULL, start_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,"
    " bytes INTEGER, peer INTEGER);\n"
    "CREATE TABLE steps(id INTEGER PRIMARY KEY);\n"
    "CREATE TABLE component_costs(id INTEGER PRIMARY KEY);\n"
    "CREATE TABLE calibration_rows(id INTEGER PRIMARY KEY);\n"
    "CREATE TABLE degradations(name TEXT PRIMARY KEY, message TEXT NOT NULL,"
    " remedy TEXT NOT NULL);\n"
    "CREATE TABLE counters(node TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL,"
    " PRIMARY KEY(node, name));\n"
    /* MPI per (rank process, function, call site): running totals, the
     * report with the most calls kept */
    "CREATE TABLE mpi_calls(locus INTEGER NOT NULL REFERENCES loci(id),"
    " function TEXT NOT NULL, call_site INTEGER NOT NULL REFERENCES addresses(id),"
    " calls INTEGER NOT NULL, total_ns INTEGER NOT NULL, min_ns INTEGER NOT NULL,"
    " max_ns INTEGER NOT NULL, bytes INTEGER, bytes_reason TEXT, sends INTEGER NOT NULL,"
    " PRIMARY KEY(locus, function, call_site));\n"
    "CREATE TABLE mpi_processes(locus INTEGER PRIMARY KEY REFERENCES loci(id),"
    " init_end_ns INTEGER, finalize_start_ns INTEGER, last_seen_ns INTEGER);\n"
    /* what finalize and the readers look up */
    "CREATE INDEX addresses_hotspot ON addresses(hotspot);\n"
    "CREATE INDEX stack_frames_address ON stack_frames(address);\n"
    "CREATE INDEX samples_stack ON samples(stack);\n"
    "CREATE INDEX measurements_hotspot ON measurements(hotspot, counter);\n"
    "CREATE INDEX measurements_locus ON measurements(locus, counter);\n"
    "CREATE INDEX events_locus ON events(locus, start_ns);\n"
    "CREATE INDEX mpi_calls_call_site ON mpi_calls(call_site);\n";

int pivot_sql_error(struct pivot *p, const char *what)
{
	pr_warn("pivot '%s': cannot %s: %s", p->path, what, sqlite3_errmsg(p->db));
	return -EIO;
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
		return -EIO;
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

static struct pivot *pivot_connect(const char *path, int flags, int read_only)
{
	struct pivot *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->read_only = read_only;
	p->path = strdup(path);
	if (!p->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (sqlite3_open_v2(path, &p->db, flags, NULL) != SQLITE_OK) {
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
	return pivot_exec(p, "PRAGMA synchronous = FULL");
}

static void pivot_unlink_all(const char *path)
{
	char aux[4096];

	unlink(path);
	snprintf(aux, sizeof(aux), "%s-wal", path);
	unlink(aux);
	snprintf(aux, sizeof(aux), "%s-shm", path);
	unlink(aux);
	snprintf(aux, sizeof(aux), "%s-journal", path);
	unlink(aux);
}

struct pivot *pivot__create(const char *path)
{
	struct pivot *p = NULL;
	char version[64];
	int fd, err;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	/* O_EXCL: a Run's pivot is never written over */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	close(fd);

	p = pivot_connect(path, SQLITE_OPEN_READWRITE, 0);
	if (!p) {
		err = -errno;
		goto cleanup;
	}
	err = pivot_exec(p, "PRAGMA journal_mode = WAL");
	if (err)
		goto cleanup;
	err = pivot_configure(p);
	if (err)
		goto cleanup;
	err = pivot_begin(p);
	if (err)
		goto cleanup;
	err = pivot_exec(p, pivot_schema);
	if (err)
		goto cleanup;
	snprintf(version, sizeof(version), "PRAGMA user_version = %d", PIVOT_SCHEMA_VERSION);
	err = pivot_exec(p, version);
	if (err)
		goto cleanup;
	err = pivot_commit(p);
	if (err)
		goto cleanup;
	return p;
cleanup:
	if (p)
		pivot_rollback(p);
	pivot__free(p);
	pivot_unlink_all(path);
	errno = -err;
	return NULL;
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

struct pivot *pivot__open(const char *path, int read_only)
{
	struct pivot *p = NULL;
	struct stat st;
	int err;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	if (stat(path, &st) < 0)
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = EBADMSG;
		return NULL;
	}
	p = pivot_connect(path, read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE,
			  read_only);
	if (!p)
		return NULL;
	err = pivot_check(p);
	if (err)
		goto cleanup;
	err = pivot_configure(p);
	if (err)
		goto cleanup;
	return p;
cleanup:
	pivot__free(p);
	errno = -err;
	return NULL;
}
