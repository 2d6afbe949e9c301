/* pivot_read_samples — the readers of the samples themselves rather than of
 * their Hotspots: per Locus (the processes and threads view, the kernel's
 * share), per Stack (the folded export) and per rank process and Stack (a
 * sampled rank's MPI time, analysis/balance_samples.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

/* ?1 the counter; one row per Locus */
static const char locus_total_sql[] =
    "SELECT l.id, l.node, l.tgid, l.tid, l.comm, l.exe,"
    " (SELECT coalesce(sum(x.sample_count), 0) FROM measurements x WHERE x.locus = l.id"
    "  AND x.counter = ?1 AND x.hotspot IS NOT NULL),"
    " (SELECT coalesce(sum(x.value), 0.0) FROM measurements x WHERE x.locus = l.id"
    "  AND x.counter = ?1 AND x.hotspot IS NOT NULL),"
    " (SELECT coalesce(sum(s.sample_count), 0) FROM samples s WHERE s.locus = l.id"
    "  AND s.counter = ?1),"
    " (SELECT coalesce(sum(s.sample_count), 0) FROM samples s JOIN stack_frames f"
    "  ON f.stack = s.stack AND f.position = 0 JOIN addresses a ON a.id = f.address"
    "  JOIN modules m ON m.id = a.module WHERE s.locus = l.id AND s.counter = ?1"
    "  AND m.identity = 'pseudo:kernel'),"
    " (SELECT coalesce(sum(s.sample_count), 0) FROM samples s WHERE s.locus = l.id"
    "  AND s.counter = ?1 AND s.in_kernel),"
    " u.value, u.quality, u.reason, y.value, y.quality, y.reason FROM loci l"
    " LEFT JOIN measurements u ON u.locus = l.id AND u.hotspot IS NULL"
    "  AND u.counter = 'cpu_time_user'"
    " LEFT JOIN measurements y ON y.locus = l.id AND y.hotspot IS NULL"
    "  AND y.counter = 'cpu_time_system'"
    " ORDER BY l.node, l.tgid, l.tid";

struct locus_walk {
	int (*cb)(const struct pivot_locus_total *t, void *ctx);
	void *ctx;
};

static void read_locus_value(sqlite3_stmt *stmt, int col, struct pivot_locus_value *v)
{
	v->value =
	    sqlite3_column_type(stmt, col) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt, col);
	v->quality = pivot_column_text(stmt, col + 1);
	v->reason = pivot_column_text(stmt, col + 2);
}

static int locus_row(sqlite3_stmt *stmt, void *arg)
{
	struct locus_walk *w = arg;
	struct pivot_locus_total t = {
	    .locus = sqlite3_column_int64(stmt, 0),
	    .node = pivot_column_text(stmt, 1),
	    .tgid = sqlite3_column_int64(stmt, 2),
	    .tid = sqlite3_column_int64(stmt, 3),
	    .comm = pivot_column_text(stmt, 4),
	    .exe = pivot_column_text(stmt, 5),
	    .sample_count = (uint64_t)sqlite3_column_int64(stmt, 6),
	    .value = sqlite3_column_double(stmt, 7),
	    .stack_samples = (uint64_t)sqlite3_column_int64(stmt, 8),
	    .kernel_leaf_samples = (uint64_t)sqlite3_column_int64(stmt, 9),
	    .in_kernel_samples = (uint64_t)sqlite3_column_int64(stmt, 10),
	};

	read_locus_value(stmt, 11, &t.cpu_time_user);
	read_locus_value(stmt, 14, &t.cpu_time_system);
	return w->cb(&t, w->ctx);
}

int pivot_for_each_locus_total(struct pivot *p, const char *counter,
			       int (*cb)(const struct pivot_locus_total *t, void *ctx), void *ctx)
{
	struct locus_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !counter || !cb)
		return -EINVAL;
	err = pivot_prepare(p, locus_total_sql, &stmt);
	if (err)
		return err;
	pivot_bind_text(stmt, 1, counter);
	return pivot_walk(p, stmt, locus_row, &w, "read locus totals");
}

/* ?1 the counter; one row per frame (a Stack without frames: one row with
 * position NULL), by Stack then position */
static const char stack_total_sql[] =
    "SELECT st.id, st.truncated, t.n, t.v, f.position, a.offset, m.display_name, h.name,"
    " a.module, h.source_file, a.line, h.id"
    " FROM (SELECT stack, sum(sample_count) AS n, sum(value) AS v FROM samples"
    "  WHERE counter = ?1 GROUP BY stack) t JOIN stacks st ON st.id = t.stack"
    " LEFT JOIN stack_frames f ON f.stack = st.id"
    " LEFT JOIN addresses a ON a.id = f.address LEFT JOIN modules m ON m.id = a.module"
    " LEFT JOIN hotspots h ON h.id = a.hotspot ORDER BY st.id, f.position";

/* the Stack being read: its frames' strings are copies, since the next
 * row overwrites what SQLite returned */
struct stack_walk {
	int (*cb)(const struct pivot_stack_total *s, void *ctx);
	void *ctx;
	struct pivot_stack_total cur;
	struct pivot_stack_frame *frames;
	size_t cap;
	int have;
};

static void stack_walk_clear(struct stack_walk *w)
{
	size_t i;

	for (i = 0; i < w->cur.n_frames; i++) {
		free((char *)w->frames[i].module);
		free((char *)w->frames[i].hotspot);
		free((char *)w->frames[i].source_file);
	}
	w->cur.n_frames = 0;
	w->have = 0;
}

/* calls cb for the Stack read so far, if any */
static int stack_walk_flush(struct stack_walk *w)
{
	int err = 0;

	if (w->have) {
		w->cur.frames = w->frames;
		err = w->cb(&w->cur, w->ctx);
	}
	stack_walk_clear(w);
	return err;
}

static int stack_add_frame(struct stack_walk *w, sqlite3_stmt *stmt)
{
	const char *module = pivot_column_text(stmt, 6), *hotspot = pivot_column_text(stmt, 7);
	const char *source_file = pivot_column_text(stmt, 9);
	struct pivot_stack_frame *f;

	if (w->cur.n_frames == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;

		f = reallocarray(w->frames, cap, sizeof(*f));
		if (!f)
			return -ENOMEM;
		w->frames = f;
		w->cap = cap;
	}
	f = &w->frames[w->cur.n_frames];
	f->offset = (uint64_t)sqlite3_column_int64(stmt, 5);
	f->module = strdup(module ? module : "");
	f->hotspot = hotspot ? strdup(hotspot) : NULL;
	f->module_id = sqlite3_column_int64(stmt, 8);
	f->source_file = source_file ? strdup(source_file) : NULL;
	f->line = sqlite3_column_int(stmt, 10);
	f->hotspot_id = sqlite3_column_int64(stmt, 11); /* NULL reads 0 */
	w->cur.n_frames++; /* counted now: cleared with the others on failure */
	if (!f->module || (hotspot && !f->hotspot) || (source_file && !f->source_file))
		return -ENOMEM;
	return 0;
}

static int stack_row(sqlite3_stmt *stmt, void *arg)
{
	struct stack_walk *w = arg;
	int64_t id = sqlite3_column_int64(stmt, 0);
	int err;

	if (!w->have || w->cur.id != id) {
		err = stack_walk_flush(w);
		if (err)
			return err;
		w->have = 1;
		w->cur.id = id;
		w->cur.truncated = sqlite3_column_int(stmt, 1) != 0;
		w->cur.sample_count = (uint64_t)sqlite3_column_int64(stmt, 2);
		w->cur.value = sqlite3_column_double(stmt, 3);
	}
	if (sqlite3_column_type(stmt, 4) == SQLITE_NULL)
		return 0; /* a Stack stored without frames */
	return stack_add_frame(w, stmt);
}

int pivot_for_each_stack_total(struct pivot *p, const char *counter,
			       int (*cb)(const struct pivot_stack_total *s, void *ctx), void *ctx)
{
	struct stack_walk w = {.cb = cb, .ctx = ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !counter || !cb)
		return -EINVAL;
	err = pivot_prepare(p, stack_total_sql, &stmt);
	if (err)
		return err;
	pivot_bind_text(stmt, 1, counter);
	err = pivot_walk(p, stmt, stack_row, &w, "read stacks");
	if (!err)
		err = stack_walk_flush(&w); /* the last Stack */
	stack_walk_clear(&w);
	free(w.frames);
	return err;
}

/* ?1 the counter */
static const char stack_comm_sql[] =
    "SELECT s.stack, l.comm, sum(s.sample_count), sum(s.value) FROM samples s"
    " JOIN loci l ON l.id = s.locus WHERE s.counter = ?1 GROUP BY s.stack, l.comm"
    " ORDER BY s.stack, l.comm";

struct stack_comm_walk {
	int (*cb)(int64_t stack, const char *comm, uint64_t sample_count, double value, void *ctx);
	void *ctx;
};

static int stack_comm_row(sqlite3_stmt *stmt, void *arg)
{
	struct stack_comm_walk *w = arg;

	return w->cb(sqlite3_column_int64(stmt, 0), pivot_column_text(stmt, 1),
		     (uint64_t)sqlite3_column_int64(stmt, 2), sqlite3_column_double(stmt, 3),
		     w->ctx);
}

int pivot_for_each_stack_comm(struct pivot *p, const char *counter,
			      int (*cb)(int64_t stack, const char *comm, uint64_t sample_count,
					double value, void *ctx),
			      void *ctx)
{
	struct stack_comm_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !counter || !cb)
		return -EINVAL;
	err = pivot_prepare(p, stack_comm_sql, &stmt);
	if (err)
		return err;
	pivot_bind_text(stmt, 1, counter);
	return pivot_walk(p, stmt, stack_comm_row, &w, "read stacks by command");
}

/* ?1 the counter */
static const char rank_stack_sql[] =
    "SELECT mp.locus, s.stack, sum(s.sample_count) FROM mpi_processes mp"
    " JOIN loci r ON r.id = mp.locus JOIN loci l ON l.node = r.node AND l.tgid = r.tgid"
    " JOIN samples s ON s.locus = l.id AND s.counter = ?1"
    " GROUP BY mp.locus, s.stack ORDER BY mp.locus, s.stack";

struct rank_stack_walk {
	int (*cb)(int64_t rank_locus, int64_t stack, uint64_t sample_count, void *ctx);
	void *ctx;
};

static int rank_stack_row(sqlite3_stmt *stmt, void *arg)
{
	struct rank_stack_walk *w = arg;

	return w->cb(sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1),
		     (uint64_t)sqlite3_column_int64(stmt, 2), w->ctx);
}

int pivot_for_each_rank_stack(struct pivot *p, const char *counter,
			      int (*cb)(int64_t rank_locus, int64_t stack, uint64_t sample_count,
					void *ctx),
			      void *ctx)
{
	struct rank_stack_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int64_t tables;
	int err;

	if (!p || !counter || !cb)
		return -EINVAL;
	err = pivot_query_int64(p,
				"SELECT count(*) FROM sqlite_master WHERE type = 'table'"
				" AND name = 'mpi_processes'",
				"read the schema", &tables);
	if (err || !tables)
		return err;
	err = pivot_prepare(p, rank_stack_sql, &stmt);
	if (err)
		return err;
	pivot_bind_text(stmt, 1, counter);
	return pivot_walk(p, stmt, rank_stack_row, &w, "read the ranks' stacks");
}
