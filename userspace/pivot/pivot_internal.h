/* pivot_internal — what the pivot_*.c files share; not for other modules. */
#ifndef NUNATAK_PIVOT_INTERNAL_H
#define NUNATAK_PIVOT_INTERNAL_H

#include <sqlite3.h>
#include <stdint.h>

#include "userspace/wire/nunatak.pb-c.h"

struct pivot {
	sqlite3 *db;
	char *path;
	int read_only;
	int schema; /* PRAGMA user_version: an older one is read as it is
		     * (read-only) or migrated when opened to write */
};

/* The tables of a new pivot and PRAGMA user_version = PIVOT_SCHEMA_VERSION
 * (pivot_schema.c); inside the caller's transaction. 0 or -EIO. */
int pivot_schema_create(struct pivot *p);
/* Brings a pivot of schema p->schema (older) to PIVOT_SCHEMA_VERSION, its
 * rows kept; inside the caller's transaction. 0 or -EIO. */
int pivot_schema_migrate(struct pivot *p);

/* The errno the last SQLite failure of p stands for: -ENOSPC for a full
 * disk, -EBUSY for a lock another connection holds, -EROFS, -ENOMEM, the
 * system call's errno for an I/O error, else -EIO. */
int pivot_errno(struct pivot *p);

/* Logs the SQLite error of p with what was attempted; returns
 * pivot_errno(p). */
int pivot_sql_error(struct pivot *p, const char *what);

/* Prepares sql; pivot_errno() (logged) on failure. */
int pivot_prepare(struct pivot *p, const char *sql, sqlite3_stmt **stmt);

/* Runs sql (no result rows); pivot_errno() (logged) on failure. */
int pivot_exec(struct pivot *p, const char *sql);

/* BEGIN IMMEDIATE, after checking the pivot is writable: -EROFS, -EIO. */
int pivot_begin(struct pivot *p);
int pivot_commit(struct pivot *p);
/* ROLLBACK, ignoring errors (used on paths that already failed) */
void pivot_rollback(struct pivot *p);

/* body(p) between pivot_begin() and pivot_commit(), rolled back when either
 * fails: 0, body's error, or pivot_begin()'s or pivot_commit()'s. */
int pivot_in_transaction(struct pivot *p, int (*body)(struct pivot *p));

/* Binds a possibly NULL string */
int pivot_bind_text(sqlite3_stmt *stmt, int idx, const char *s);

/* Steps stmt to its end (SQLITE_DONE) and resets it for the next bindings:
 * 0, or -EIO (logged) with what was attempted. */
int pivot_step_done(struct pivot *p, sqlite3_stmt *stmt, const char *what);

/* The first column of the first row of sql (no parameters) in *value: 0,
 * or -EIO (logged with what) when it gives no row. */
int pivot_query_int64(struct pivot *p, const char *sql, const char *what, int64_t *value);

/* Column col of the current row of stmt as text; NULL for SQL NULL. */
const char *pivot_column_text(sqlite3_stmt *stmt, int col);

/* Steps through the rows of stmt (already bound), calling row(stmt, arg)
 * for each until it returns non-zero, which is returned; -EIO (logged with
 * what) when a step fails. Finalizes stmt in every case. */
int pivot_walk(struct pivot *p, sqlite3_stmt *stmt, int (*row)(sqlite3_stmt *stmt, void *arg),
	       void *arg, const char *what);

/* The MPI Locus-level Measurements, inside the caller's transaction
 * (pivot_derive_mpi_measurements() without BEGIN/COMMIT). */
int pivot_derive_mpi_in_transaction(struct pivot *p);

/* ---- the Batch being stored: pivot_store.c and pivot_store_locus.c ---- */

/* the prepared statements of one pivot_store_batch(), by what they store */
enum {
	ST_BATCH,
	ST_MODULE,
	ST_MODULE_UNATTRIBUTE,
	ST_MODULE_SYMBOL,
	ST_LOCUS,
	ST_STACK,
	ST_STACK_FRAME,
	ST_STACK_SELECT,
	ST_ADDRESS_INSERT,
	ST_ADDRESS_SELECT,
	ST_SAMPLE,
	ST_DEGRADATION,
	ST_COUNTER,
	ST_EXIT_DELETE,
	ST_EXIT_INSERT,
	ST_EXIT_UNAVAILABLE,
	ST_MPI_CALL,
	ST_MPI_PROCESS,
	ST_MPI_EVENT,
	ST_COUNT,
};

/* one pivot_store_batch() under way: the Batch, its statements, and the
 * pivot ids its modules, Loci and Stacks were given (by Batch index) */
struct address_slot {
	uint32_t module; /* of the Batch */
	uint64_t offset;
	int64_t id;      /* 0: an empty slot (rowids start at 1) */
};

struct store {
	struct pivot *p;
	const Nunatak__Wire__Batch *b;
	sqlite3_stmt *st[ST_COUNT];
	int64_t *module_ids, *locus_ids, *stack_ids;
	char *new_address; /* per batch module: a new address arrived */
	struct address_slot *acache; /* pivot_store_addresses.c */
	size_t acache_cap, acache_n;
};

/* The address (module of the Batch, offset) in *id, stored when new (the
 * module then has a new address: its attribution is made again). 0, -EIO. */
int store_address(struct store *s, uint32_t module, uint64_t offset, int64_t *id);
/* store_address(), each (module, offset) of the Batch asked of SQLite once */
int store_address_cached(struct store *s, uint32_t module, uint64_t offset, int64_t *id);
void store_address_cache_release(struct store *s);

/* The Batch's process exits as Locus-level Measurements; its MPI call
 * sites; its MPI processes and Events: 0, or -EIO (logged). */
int store_exits(struct store *s);
int store_mpi_call_sites(struct store *s);
int store_mpi_processes_events(struct store *s);
/* pivot_store_components.c: every index of the Batch's Component entries
 * in range, every string present (0 or -EINVAL); and storing them */
int store_components_check(const Nunatak__Wire__Batch *b);
int store_components(struct store *s);

#endif
