/* pivot_attribution — finalize's side of the pivot: which modules still
 * need attribution, storing what attribution found, and deriving the
 * sampling Measurements from it. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

struct module_list {
	struct pivot_module *modules;
	size_t n;
};

static void module_list_release(struct module_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free((char *)l->modules[i].identity);
		free((char *)l->modules[i].path);
		free((char *)l->modules[i].display_name);
	}
	free(l->modules);
	l->modules = NULL;
	l->n = 0;
}

static char *column_strdup(sqlite3_stmt *stmt, int col)
{
	const char *s = (const char *)sqlite3_column_text(stmt, col);

	return strdup(s ? s : "");
}

/* The walk reads the list first, so that callbacks may write. */
static int module_list_load(struct pivot *p, struct module_list *l)
{
	sqlite3_stmt *stmt;
	struct pivot_module *m;
	int rc, err;

	err = pivot_prepare(p,
			    "SELECT id, identity, path, display_name, has_build_id FROM modules"
			    " WHERE attribution IS NULL ORDER BY id",
			    &stmt);
	if (err)
		return err;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		m = reallocarray(l->modules, l->n + 1, sizeof(*m));
		if (!m) {
			err = -ENOMEM;
			goto cleanup;
		}
		l->modules = m;
		m = &l->modules[l->n++];
		m->id = sqlite3_column_int64(stmt, 0);
		m->identity = column_strdup(stmt, 1);
		m->path = column_strdup(stmt, 2);
		m->display_name = column_strdup(stmt, 3);
		m->has_build_id = sqlite3_column_int(stmt, 4);
		if (!m->identity || !m->path || !m->display_name) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	if (rc != SQLITE_DONE)
		err = pivot_sql_error(p, "list modules");
cleanup:
	sqlite3_finalize(stmt);
	return err;
}

static int module_offsets(struct pivot *p, int64_t module, uint64_t **offsets, size_t *n)
{
	sqlite3_stmt *stmt;
	uint64_t *o = NULL, *grown;
	size_t len = 0, cap = 0;
	int rc, err;

	err = pivot_prepare(p, "SELECT offset FROM addresses WHERE module = ? ORDER BY offset",
			    &stmt);
	if (err)
		return err;
	sqlite3_bind_int64(stmt, 1, module);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap ? 2 * cap : 64;
			grown = reallocarray(o, cap, sizeof(*o));
			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			o = grown;
		}
		o[len++] = (uint64_t)sqlite3_column_int64(stmt, 0);
	}
	if (rc != SQLITE_DONE)
		err = pivot_sql_error(p, "list addresses");
cleanup:
	sqlite3_finalize(stmt);
	if (err) {
		free(o);
		return err;
	}
	*offsets = o;
	*n = len;
	return 0;
}

int pivot_for_each_module_to_attribute(struct pivot *p,
				       int (*cb)(const struct pivot_module *m,
						 const uint64_t *offsets, size_t n, void *ctx),
				       void *ctx)
{
	struct module_list list = {0};
	uint64_t *offsets = NULL;
	size_t i, n;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = module_list_load(p, &list);
	for (i = 0; !err && i < list.n; i++) {
		err = module_offsets(p, list.modules[i].id, &offsets, &n);
		if (err)
			break;
		err = cb(&list.modules[i], offsets, n, ctx);
		free(offsets);
		offsets = NULL;
	}
	module_list_release(&list);
	return err;
}

struct symbol_walk {
	int (*cb)(uint64_t start, uint64_t size, const char *name, void *ctx);
	void *ctx;
};

static int symbol_row(sqlite3_stmt *stmt, void *arg)
{
	struct symbol_walk *w = arg;
	const char *name = pivot_column_text(stmt, 2);

	return w->cb((uint64_t)sqlite3_column_int64(stmt, 0), (uint64_t)sqlite3_column_int64(stmt, 1),
		     name ? name : "", w->ctx);
}

int pivot_for_each_module_symbol(struct pivot *p, int64_t module,
				 int (*cb)(uint64_t start, uint64_t size, const char *name,
					   void *ctx),
				 void *ctx)
{
	struct symbol_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	if (p->schema < 3)
		return 0;
	/* unsigned order: a start stored as a negative int64 sorts last */
	err = pivot_prepare(p,
			    "SELECT start, size, name FROM module_symbols WHERE module = ?"
			    " ORDER BY start >= 0 DESC, start",
			    &stmt);
	if (err)
		return err;
	sqlite3_bind_int64(stmt, 1, module);
	return pivot_walk(p, stmt, symbol_row, &w, "list module symbols");
}

static int status_valid(const char *status)
{
	static const char *const valid[] = {"done", "missing", "stale", "pseudo", "no-symbolizer"};
	size_t i;

	for (i = 0; status && i < sizeof(valid) / sizeof(valid[0]); i++)
		if (!strcmp(status, valid[i]))
			return 1;
	return 0;
}

enum {
	AT_HOTSPOT,
	AT_ADDRESS,
	AT_FRAMES_DELETE,
	AT_FRAME,
	AT_MODULE,
	AT_COUNT,
};

/* Level rank: lower is better; the Hotspot keeps the best of its
 * addresses, its name and source file the first stored. */
#define LEVEL_RANK(x)                                                                              \
	"(CASE " x " WHEN 'line' THEN 0 WHEN 'function' THEN 1 WHEN 'symbol' THEN 2 ELSE 3 END)"

static const char *const attribution_sql[AT_COUNT] = {
    [AT_HOTSPOT] =
	"INSERT INTO hotspots(module, function_start, name, source_file,"
	" resolution_level) VALUES(?, ?, ?, ?, ?)"
	" ON CONFLICT(module, function_start) DO UPDATE SET"
	" source_file = coalesce(source_file, excluded.source_file),"
	" resolution_level = CASE WHEN " LEVEL_RANK("excluded.resolution_level") " < " LEVEL_RANK(
	    "resolution_level") " THEN excluded.resolution_level"
				" ELSE resolution_level END RETURNING id",
    [AT_ADDRESS] = "INSERT INTO addresses(module, offset, hotspot, resolution_level,"
		   " source_file, line) VALUES(?, ?, ?, ?, ?, ?)"
		   " ON CONFLICT(module, offset) DO UPDATE SET hotspot = excluded.hotspot,"
		   " resolution_level = excluded.resolution_level,"
		   " source_file = excluded.source_file, line = excluded.line RETURNING id",
    [AT_FRAMES_DELETE] = "DELETE FROM frames WHERE address = ?",
    [AT_FRAME] = "INSERT INTO frames(address, depth, function, file, line, column)"
		 " VALUES(?, ?, ?, ?, ?, ?)",
    [AT_MODULE] = "UPDATE modules SET attribution = ?, attribution_reason = ? WHERE id = ?",
};

static int step_row_id(struct pivot *p, sqlite3_stmt *stmt, int64_t *id, const char *what)
{
	int rc = sqlite3_step(stmt);

	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(stmt, 0);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
			;
	}
	sqlite3_reset(stmt);
	return rc == SQLITE_DONE ? 0 : pivot_sql_error(p, what);
}

static void bind_positive(sqlite3_stmt *stmt, int idx, uint32_t v)
{
	if (v)
		sqlite3_bind_int64(stmt, idx, v);
	else
		sqlite3_bind_null(stmt, idx);
}

static int store_one(struct pivot *p, sqlite3_stmt **st, int64_t module,
		     const struct attributed_address *a)
{
	const char *level = resolution_level_name(a->level);
	const char *file = a->source_file;
	int64_t hotspot, address;
	size_t i;
	int err;

	if (!a->function || !strcmp(level, "invalid") || (a->n_frames && !a->frames))
		return -EINVAL;
	sqlite3_bind_int64(st[AT_HOTSPOT], 1, module);
	sqlite3_bind_int64(st[AT_HOTSPOT], 2, (int64_t)a->function_start);
	pivot_bind_text(st[AT_HOTSPOT], 3, a->function);
	pivot_bind_text(st[AT_HOTSPOT], 4, a->source_file);
	pivot_bind_text(st[AT_HOTSPOT], 5, level);
	err = step_row_id(p, st[AT_HOTSPOT], &hotspot, "store a hotspot");
	if (err)
		return err;

	/* the line belongs to the innermost frame, so does its file */
	if (a->n_frames && a->frames[0].file)
		file = a->frames[0].file;
	sqlite3_bind_int64(st[AT_ADDRESS], 1, module);
	sqlite3_bind_int64(st[AT_ADDRESS], 2, (int64_t)a->address);
	sqlite3_bind_int64(st[AT_ADDRESS], 3, hotspot);
	pivot_bind_text(st[AT_ADDRESS], 4, level);
	pivot_bind_text(st[AT_ADDRESS], 5, a->line ? file : a->source_file);
	bind_positive(st[AT_ADDRESS], 6, a->line);
	err = step_row_id(p, st[AT_ADDRESS], &address, "store an address");
	if (err)
		return err;

	sqlite3_bind_int64(st[AT_FRAMES_DELETE], 1, address);
	err = pivot_step_done(p, st[AT_FRAMES_DELETE], "replace inline frames");
	for (i = 0; !err && i < a->n_frames; i++) {
		const struct attribution_frame *f = &a->frames[i];

		sqlite3_bind_int64(st[AT_FRAME], 1, address);
		sqlite3_bind_int64(st[AT_FRAME], 2, (int64_t)i);
		pivot_bind_text(st[AT_FRAME], 3, f->function);
		pivot_bind_text(st[AT_FRAME], 4, f->file);
		bind_positive(st[AT_FRAME], 5, f->line);
		bind_positive(st[AT_FRAME], 6, f->column);
		err = pivot_step_done(p, st[AT_FRAME], "store an inline frame");
	}
	return err;
}

int pivot_store_attribution(struct pivot *p, int64_t module_id, const struct attributed_address *aa,
			    size_t n, const char *status, const char *reason)
{
	sqlite3_stmt *st[AT_COUNT] = {0};
	size_t i;
	int err, began = 0;

	if (!p || (n && !aa) || !status_valid(status))
		return -EINVAL;
	if (p->read_only)
		return -EROFS;
	for (i = 0; i < AT_COUNT; i++) {
		err = pivot_prepare(p, attribution_sql[i], &st[i]);
		if (err)
			goto cleanup;
	}
	err = pivot_begin(p);
	if (err)
		goto cleanup;
	began = 1;
	pivot_bind_text(st[AT_MODULE], 1, status);
	pivot_bind_text(st[AT_MODULE], 2, reason && *reason ? reason : NULL);
	sqlite3_bind_int64(st[AT_MODULE], 3, module_id);
	err = pivot_step_done(p, st[AT_MODULE], "record a module attribution");
	if (err)
		goto cleanup;
	if (sqlite3_changes(p->db) != 1) {
		err = -ENOENT;
		goto cleanup;
	}
	for (i = 0; i < n && !err; i++)
		err = store_one(p, st, module_id, &aa[i]);
	if (!err)
		err = pivot_commit(p);
cleanup:
	if (err && began)
		pivot_rollback(p);
	for (i = 0; i < AT_COUNT; i++)
		sqlite3_finalize(st[i]);
	return err;
}

#define DRAM_BYTES_REASON                                                                          \
	"cache lines filled from DRAM x 64 B: no write-back nor L2 prefetch, a lower bound"

/* the Hotspot-level Measurements from the samples, then the MPI ones */
static int derive_in_transaction(struct pivot *p)
{
	int64_t unattributed = 0;
	int err;

	err = pivot_exec(p, "DELETE FROM measurements WHERE hotspot IS NOT NULL AND counter IN"
			    " (SELECT DISTINCT counter FROM samples)");
	if (err)
		return err;
	err = pivot_exec(
	    p, "INSERT INTO measurements(hotspot, locus, counter, value, unit, quality,"
	       " reason, sample_count)"
	       " SELECT a.hotspot, s.locus, s.counter, sum(s.value),"
	       " CASE s.counter WHEN 'cpu-clock' THEN 'ns' WHEN 'cycles' THEN 'cycles'"
	       " WHEN 'flop_dp' THEN 'flop' WHEN 'flop_sp' THEN 'flop'"
	       " WHEN 'dram_bytes' THEN 'B' ELSE 'count' END,"
	       /* the sampling group's DRAM event counts cache-line fills
		* (userspace/agent/pmu_events.h): read traffic only */
	       " CASE s.counter WHEN 'dram_bytes' THEN 'estimated' ELSE 'measured' END,"
	       " CASE s.counter WHEN 'dram_bytes' THEN '" DRAM_BYTES_REASON "' END,"
	       " sum(s.sample_count)"
	       " FROM samples s JOIN stack_frames f ON f.stack = s.stack AND f.position = 0"
	       " JOIN addresses a ON a.id = f.address WHERE a.hotspot IS NOT NULL"
	       " GROUP BY a.hotspot, s.locus, s.counter ORDER BY a.hotspot, s.locus, s.counter");
	if (err)
		return err;
	err =
	    pivot_query_int64(p,
			      "SELECT coalesce(sum(s.sample_count), 0) FROM samples s"
			      " LEFT JOIN stack_frames f ON f.stack = s.stack AND f.position = 0"
			      " LEFT JOIN addresses a ON a.id = f.address WHERE a.hotspot IS NULL",
			      "count unattributed samples", &unattributed);
	if (err)
		return err;
	if (unattributed)
		pr_debug("pivot '%s': %" PRId64 " samples have no hotspot (empty stack or"
			 " module not attributed)",
			 p->path, unattributed);
	return pivot_derive_mpi_in_transaction(p);
}

int pivot_derive_measurements(struct pivot *p)
{
	if (!p)
		return -EINVAL;
	return pivot_in_transaction(p, derive_in_transaction);
}
