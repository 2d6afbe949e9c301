/* pivot_read — the readers of the pivot, and Degradations recorded outside
 * of Batches. */
#include <errno.h>
#include <stdlib.h>

#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

int pivot_add_degradation(struct pivot *p, const char *name, const char *message,
			  const char *remedy)
{
	return pivot_add_node_degradation(p, "", name, message, remedy);
}

int pivot_add_node_degradation(struct pivot *p, const char *node, const char *name,
			       const char *message, const char *remedy)
{
	sqlite3_stmt *stmt = NULL;
	int err;

	if (!p || !node || !name || !message || !remedy)
		return -EINVAL;
	if (p->read_only)
		return -EROFS;
	err = pivot_prepare(p,
			    "INSERT OR IGNORE INTO degradations(node, name, message, remedy)"
			    " VALUES(?, ?, ?, ?)",
			    &stmt);
	if (err)
		return err;
	pivot_bind_text(stmt, 1, node);
	pivot_bind_text(stmt, 2, name);
	pivot_bind_text(stmt, 3, message);
	pivot_bind_text(stmt, 4, remedy);
	err = pivot_step_done(p, stmt, "store a degradation");
	sqlite3_finalize(stmt);
	return err;
}

const char *pivot_column_text(sqlite3_stmt *stmt, int col)
{
	return (const char *)sqlite3_column_text(stmt, col);
}

int pivot_walk(struct pivot *p, sqlite3_stmt *stmt, int (*row)(sqlite3_stmt *stmt, void *arg),
	       void *arg, const char *what)
{
	int rc, err = 0;

	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		err = row(stmt, arg);
		if (err)
			break;
	}
	if (!err && rc != SQLITE_DONE)
		err = pivot_sql_error(p, what);
	sqlite3_finalize(stmt);
	return err;
}

struct degradation_walk {
	int (*cb)(const char *node, const char *name, const char *message, const char *remedy,
		  void *ctx);
	int (*cb_named)(const char *name, const char *message, const char *remedy, void *ctx);
	void *ctx;
};

static int degradation_row(sqlite3_stmt *stmt, void *arg)
{
	struct degradation_walk *w = arg;

	if (w->cb_named)
		return w->cb_named(pivot_column_text(stmt, 1), pivot_column_text(stmt, 2),
				   pivot_column_text(stmt, 3), w->ctx);
	return w->cb(pivot_column_text(stmt, 0), pivot_column_text(stmt, 1),
		     pivot_column_text(stmt, 2), pivot_column_text(stmt, 3), w->ctx);
}

static int degradation_walk(struct pivot *p, struct degradation_walk *w)
{
	sqlite3_stmt *stmt;
	int err;

	/* schema 1 (read-only, not migrated) has no node: '' */
	err = pivot_prepare(p,
			    p->schema < 2 ? "SELECT '', name, message, remedy FROM degradations"
					    " ORDER BY name"
					  : "SELECT node, name, message, remedy FROM degradations"
					    " ORDER BY name, node",
			    &stmt);
	if (err)
		return err;
	return pivot_walk(p, stmt, degradation_row, w, "read degradations");
}

int pivot_for_each_degradation(struct pivot *p,
			       int (*cb)(const char *name, const char *message, const char *remedy,
					 void *ctx),
			       void *ctx)
{
	struct degradation_walk w = {.cb_named = cb, .ctx = ctx};

	if (!p || !cb)
		return -EINVAL;
	return degradation_walk(p, &w);
}

int pivot_for_each_node_degradation(struct pivot *p,
				    int (*cb)(const char *node, const char *name,
					      const char *message, const char *remedy, void *ctx),
				    void *ctx)
{
	struct degradation_walk w = {.cb = cb, .ctx = ctx};

	if (!p || !cb)
		return -EINVAL;
	return degradation_walk(p, &w);
}

struct counter_walk {
	int (*cb)(const char *node, const char *name, uint64_t value, void *ctx);
	void *ctx;
};

static int counter_row(sqlite3_stmt *stmt, void *arg)
{
	struct counter_walk *w = arg;

	return w->cb(pivot_column_text(stmt, 0), pivot_column_text(stmt, 1),
		     (uint64_t)sqlite3_column_int64(stmt, 2), w->ctx);
}

int pivot_for_each_counter(struct pivot *p,
			   int (*cb)(const char *node, const char *name, uint64_t value, void *ctx),
			   void *ctx)
{
	struct counter_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = pivot_prepare(p, "SELECT node, name, value FROM counters ORDER BY node, name", &stmt);
	if (err)
		return err;
	return pivot_walk(p, stmt, counter_row, &w, "read counters");
}

struct node_walk {
	int (*cb)(const char *node, void *ctx);
	void *ctx;
};

static int node_row(sqlite3_stmt *stmt, void *arg)
{
	struct node_walk *w = arg;

	return w->cb(pivot_column_text(stmt, 0), w->ctx);
}

int pivot_nodes(struct pivot *p, int (*cb)(const char *node, void *ctx), void *ctx)
{
	struct node_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = pivot_prepare(p, "SELECT node FROM batches UNION SELECT node FROM loci ORDER BY 1",
			    &stmt);
	if (err)
		return err;
	return pivot_walk(p, stmt, node_row, &w, "read nodes");
}

struct hotspot_walk {
	int (*cb)(const struct pivot_hotspot_total *t, void *ctx);
	void *ctx;
};

static int hotspot_row(sqlite3_stmt *stmt, void *arg)
{
	struct hotspot_walk *w = arg;
	struct pivot_hotspot_total t = {
	    .id = sqlite3_column_int64(stmt, 0),
	    .name = pivot_column_text(stmt, 1),
	    .module = pivot_column_text(stmt, 2),
	    .source_file = pivot_column_text(stmt, 3),
	    .resolution_level = pivot_column_text(stmt, 4),
	    .sample_count = (uint64_t)sqlite3_column_int64(stmt, 5),
	    .value = sqlite3_column_double(stmt, 6),
	    .comm = pivot_column_text(stmt, 7),
	    .module_path = pivot_column_text(stmt, 8),
	    .module_identity = pivot_column_text(stmt, 9),
	};

	return w->cb(&t, w->ctx);
}

int pivot_for_each_hotspot_total(struct pivot *p, const char *counter,
				 int (*cb)(const struct pivot_hotspot_total *t, void *ctx),
				 void *ctx)
{
	struct hotspot_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !counter || !cb)
		return -EINVAL;
	err =
	    pivot_prepare(p,
			  "SELECT h.id, h.name, m.display_name, h.source_file, h.resolution_level,"
			  " coalesce(sum(x.sample_count), 0), coalesce(sum(x.value), 0.0), l.comm,"
			  " m.path, m.identity"
			  " FROM measurements x JOIN hotspots h ON h.id = x.hotspot"
			  " JOIN modules m ON m.id = h.module JOIN loci l ON l.id = x.locus"
			  " WHERE x.counter = ?"
			  " GROUP BY h.id, l.comm ORDER BY h.id, l.comm",
			  &stmt);
	if (err)
		return err;
	pivot_bind_text(stmt, 1, counter);
	return pivot_walk(p, stmt, hotspot_row, &w, "read hotspot totals");
}

int pivot_needs_finalize(struct pivot *p)
{
	int64_t n;
	int err;

	if (!p)
		return -EINVAL;
	err = pivot_query_int64(p, "SELECT count(*) FROM modules WHERE attribution IS NULL",
				"find modules not attributed", &n);
	return err ? err : n > 0;
}

struct batch_node_walk {
	int (*cb)(const char *node, uint64_t batches, int last, void *ctx);
	void *ctx;
};

static int batch_node_row(sqlite3_stmt *stmt, void *arg)
{
	struct batch_node_walk *w = arg;

	return w->cb(pivot_column_text(stmt, 0), (uint64_t)sqlite3_column_int64(stmt, 1),
		     sqlite3_column_int(stmt, 2), w->ctx);
}

int pivot_for_each_batch_node(struct pivot *p,
			      int (*cb)(const char *node, uint64_t batches, int last, void *ctx),
			      void *ctx)
{
	struct batch_node_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = pivot_prepare(p,
			    p->schema < 2 ? "SELECT node, count(*), 0 FROM batches GROUP BY node"
					    " ORDER BY node"
					  : "SELECT node, count(*), max(last) FROM batches"
					    " GROUP BY node ORDER BY node",
			    &stmt);
	if (err)
		return err;
	return pivot_walk(p, stmt, batch_node_row, &w, "read batches");
}

int pivot_sample_total(struct pivot *p, uint64_t *samples)
{
	int64_t n = 0;
	int err;

	if (!p || !samples)
		return -EINVAL;
	err = pivot_query_int64(p, "SELECT coalesce(sum(sample_count), 0) FROM samples",
				"count samples", &n);
	*samples = err ? 0 : (uint64_t)n;
	return err;
}

int pivot_for_each_module_node(struct pivot *p, int64_t module,
			       int (*cb)(const char *node, void *ctx), void *ctx)
{
	struct node_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = pivot_prepare(p,
			    "SELECT l.node FROM addresses a JOIN stack_frames f ON f.address = a.id"
			    " JOIN samples s ON s.stack = f.stack JOIN loci l ON l.id = s.locus"
			    " WHERE a.module = ?1 UNION SELECT l.node FROM addresses a JOIN"
			    " mpi_calls c ON c.call_site = a.id JOIN loci l ON l.id = c.locus"
			    " WHERE a.module = ?1 ORDER BY 1",
			    &stmt);
	if (err)
		return err;
	sqlite3_bind_int64(stmt, 1, module);
	return pivot_walk(p, stmt, node_row, &w, "read the nodes of a module");
}
