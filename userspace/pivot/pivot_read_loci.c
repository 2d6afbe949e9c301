/* pivot_read_loci — see pivot_read_loci.h */
#include <errno.h>

#include <sqlite3.h>

#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"
#include "userspace/pivot/pivot_read_loci.h"

struct walk {
	void *cb;
	void *ctx;
};

static int locus_row(sqlite3_stmt *stmt, void *arg)
{
	struct walk *w = arg;
	int (*cb)(const struct pivot_locus *, void *) = w->cb;
	struct pivot_locus l = {
		.id = sqlite3_column_int64(stmt, 0),
		.node = pivot_column_text(stmt, 1),
		.has_rank = sqlite3_column_type(stmt, 2) != SQLITE_NULL,
		.rank = sqlite3_column_int(stmt, 2),
		.world_size = sqlite3_column_int(stmt, 3),
		.tgid = sqlite3_column_int64(stmt, 4),
		.tid = sqlite3_column_int64(stmt, 5),
		.comm = pivot_column_text(stmt, 6),
		.exe = pivot_column_text(stmt, 7),
	};

	return cb(&l, w->ctx);
}

int pivot_for_each_locus(struct pivot *p, int (*cb)(const struct pivot_locus *l, void *ctx),
			 void *ctx)
{
	struct walk w = {(void *)cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = pivot_prepare(p,
			    "SELECT id, node, rank, world_size, tgid, tid, comm, exe FROM loci"
			    " ORDER BY id",
			    &stmt);
	return err ?: pivot_walk(p, stmt, locus_row, &w, "read loci");
}

static int locus_stack_row(sqlite3_stmt *stmt, void *arg)
{
	struct walk *w = arg;
	int (*cb)(const struct pivot_locus_stack *, void *) = w->cb;
	struct pivot_locus_stack s = {
		.locus = sqlite3_column_int64(stmt, 0),
		.stack = sqlite3_column_int64(stmt, 1),
		.sample_count = (uint64_t)sqlite3_column_int64(stmt, 2),
		.value = sqlite3_column_double(stmt, 3),
	};

	return cb(&s, w->ctx);
}

int pivot_for_each_locus_stack(struct pivot *p, const char *counter,
			       int (*cb)(const struct pivot_locus_stack *s, void *ctx), void *ctx)
{
	struct walk w = {(void *)cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !counter || !cb)
		return -EINVAL;
	err = pivot_prepare(p,
			    "SELECT locus, stack, sum(sample_count), sum(value) FROM samples"
			    " WHERE counter = ?1 GROUP BY stack, locus ORDER BY stack, locus",
			    &stmt);
	if (err)
		return err;
	pivot_bind_text(stmt, 1, counter);
	return pivot_walk(p, stmt, locus_stack_row, &w, "read stacks per locus");
}

static int event_row(sqlite3_stmt *stmt, void *arg)
{
	struct walk *w = arg;
	int (*cb)(const struct pivot_event *, void *) = w->cb;
	struct pivot_event e = {
		.id = sqlite3_column_int64(stmt, 0),
		.locus = sqlite3_column_int64(stmt, 1),
		.name = pivot_column_text(stmt, 2),
		.start_ns = sqlite3_column_int64(stmt, 3),
		.duration_ns = sqlite3_column_int64(stmt, 4),
		.has_bytes = sqlite3_column_type(stmt, 5) != SQLITE_NULL,
		.bytes = (uint64_t)sqlite3_column_int64(stmt, 5),
		.has_peer = sqlite3_column_type(stmt, 6) != SQLITE_NULL,
		.peer = sqlite3_column_int64(stmt, 6),
	};

	if (!e.name)
		return 0; /* NOT NULL in the schema: never seen */
	return cb(&e, w->ctx);
}

int pivot_for_each_event(struct pivot *p, int (*cb)(const struct pivot_event *e, void *ctx),
			 void *ctx)
{
	struct walk w = {(void *)cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = pivot_prepare(p,
			    "SELECT id, locus, name, start_ns, duration_ns, bytes, peer FROM events"
			    " ORDER BY locus, start_ns, id",
			    &stmt);
	return err ?: pivot_walk(p, stmt, event_row, &w, "read events");
}

int64_t pivot_event_count(struct pivot *p)
{
	int64_t n = 0;
	int err;

	if (!p)
		return -EINVAL;
	err = pivot_query_int64(p, "SELECT count(*) FROM events", "count events", &n);
	return err ? err : n;
}

static int module_row(sqlite3_stmt *stmt, void *arg)
{
	struct walk *w = arg;
	int (*cb)(const struct pivot_module *, void *) = w->cb;
	struct pivot_module m = {
		.id = sqlite3_column_int64(stmt, 0),
		.identity = pivot_column_text(stmt, 1),
		.path = pivot_column_text(stmt, 2),
		.display_name = pivot_column_text(stmt, 3),
		.has_build_id = sqlite3_column_int(stmt, 4) != 0,
	};

	return cb(&m, w->ctx);
}

int pivot_for_each_module(struct pivot *p, int (*cb)(const struct pivot_module *m, void *ctx),
			  void *ctx)
{
	struct walk w = {(void *)cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = pivot_prepare(p,
			    "SELECT id, identity, path, display_name, has_build_id FROM modules"
			    " ORDER BY id",
			    &stmt);
	return err ?: pivot_walk(p, stmt, module_row, &w, "read modules");
}
