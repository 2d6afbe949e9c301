/* pivot_sources — the source extracts of a Run's Hotspots (schema 4): the
 * Hotspots to extract, storing an extract, reading it back with the
 * samples of each line. See pivot.h. */
#include <errno.h>
#include <string.h>

#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

/* the leaf samples of the time counter ?1 on the lines of a Hotspot's own
 * source file (an inlined header's lines are not in its extract) */
#define SAMPLED_LINES                                                                              \
	"SELECT a.hotspot AS hotspot, a.line AS line, sum(s.sample_count) AS n"                    \
	" FROM samples s JOIN stack_frames f ON f.stack = s.stack AND f.position = 0"              \
	" JOIN addresses a ON a.id = f.address JOIN hotspots h ON h.id = a.hotspot"                \
	" WHERE s.counter = ?1 AND a.line IS NOT NULL AND a.source_file = h.source_file"

struct candidate_walk {
	int (*cb)(const struct pivot_source_candidate *c, void *ctx);
	void *ctx;
};

static int candidate_row(sqlite3_stmt *st, void *arg)
{
	struct candidate_walk *w = arg;
	struct pivot_source_candidate c = {
	    .hotspot = sqlite3_column_int64(st, 0),
	    .name = pivot_column_text(st, 1),
	    .source_file = pivot_column_text(st, 2),
	    .start_line = (uint32_t)sqlite3_column_int64(st, 3),
	    .module_path = pivot_column_text(st, 4),
	    .module_identity = pivot_column_text(st, 5),
	    .first_sampled = (uint32_t)sqlite3_column_int64(st, 6),
	    .last_sampled = (uint32_t)sqlite3_column_int64(st, 7),
	    .samples = (uint64_t)sqlite3_column_int64(st, 8),
	};

	return w->cb(&c, w->ctx);
}

int pivot_for_each_source_candidate(struct pivot *p, size_t max,
				    int (*cb)(const struct pivot_source_candidate *c, void *ctx),
				    void *ctx)
{
	struct candidate_walk w = {cb, ctx};
	int64_t has_clock = 0;
	sqlite3_stmt *st;
	int err;

	if (!p || !cb)
		return -EINVAL;
	if (p->schema < 4)
		return 0;
	/* the time counter, else cycles (as analysis/diagnose.h) */
	err = pivot_query_int64(p,
				"SELECT count(*) FROM (SELECT 1 FROM samples WHERE counter ="
				" 'cpu-clock' LIMIT 1)",
				"look for the time counter", &has_clock);
	err = err ?: pivot_prepare(
	    p,
	    "WITH l AS (" SAMPLED_LINES " GROUP BY a.hotspot, a.line)"
	    " SELECT h.id, h.name, h.source_file, h.start_line, m.path, m.identity,"
	    " min(l.line), max(l.line), sum(l.n) AS total FROM l JOIN hotspots h ON h.id = l.hotspot"
	    " JOIN modules m ON m.id = h.module GROUP BY h.id ORDER BY total DESC, h.id LIMIT ?2",
	    &st);
	if (err)
		return err;
	sqlite3_bind_text(st, 1, has_clock ? "cpu-clock" : "cycles", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)max);
	return pivot_walk(p, st, candidate_row, &w, "list the Hotspots to extract");
}

static int status_valid(const char *status)
{
	static const char *const valid[] = {"embedded", "not-verified", "stale",
					    "missing",	"ambiguous",	"disabled"};
	size_t i;

	for (i = 0; status && i < sizeof(valid) / sizeof(valid[0]); i++)
		if (!strcmp(status, valid[i]))
			return 1;
	return 0;
}

static int store_source_rows(struct pivot *p, const struct pivot_source *s,
			     const char *const *lines, size_t n_lines)
{
	sqlite3_stmt *st = NULL;
	int64_t id;
	size_t i;
	int err;

	err = pivot_prepare(p,
			    "DELETE FROM extracts WHERE source IN (SELECT id FROM sources WHERE"
			    " hotspot = ?)",
			    &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, s->hotspot);
	err = pivot_step_done(p, st, "replace an extract");
	sqlite3_finalize(st);
	err = err ?: pivot_prepare(p,
				   "INSERT INTO sources(hotspot, dwarf_path, resolved_path, status,"
				   " reason, first_line, last_line, truncated)"
				   " VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(hotspot) DO UPDATE SET"
				   " dwarf_path = excluded.dwarf_path, resolved_path ="
				   " excluded.resolved_path, status = excluded.status, reason ="
				   " excluded.reason, first_line = excluded.first_line, last_line ="
				   " excluded.last_line, truncated = excluded.truncated",
				   &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, s->hotspot);
	pivot_bind_text(st, 2, s->dwarf_path);
	pivot_bind_text(st, 3, s->resolved_path);
	pivot_bind_text(st, 4, s->status);
	pivot_bind_text(st, 5, s->reason && s->reason[0] ? s->reason : NULL);
	if (n_lines) {
		sqlite3_bind_int64(st, 6, s->first_line);
		sqlite3_bind_int64(st, 7, s->last_line);
	}
	sqlite3_bind_int(st, 8, s->truncated ? 1 : 0);
	err = pivot_step_done(p, st, "store a source");
	sqlite3_finalize(st);
	if (err || !n_lines)
		return err;
	err = pivot_prepare(p, "SELECT id FROM sources WHERE hotspot = ?", &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, s->hotspot);
	err = sqlite3_step(st) == SQLITE_ROW ? 0 : pivot_sql_error(p, "find a source");
	id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	err = err ?: pivot_prepare(p, "INSERT INTO extracts(source, line, text) VALUES(?, ?, ?)", &st);
	for (i = 0; !err && i < n_lines; i++) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, (int64_t)(s->first_line + i));
		sqlite3_bind_text(st, 3, lines[i], -1, SQLITE_STATIC);
		err = pivot_step_done(p, st, "store an extract line");
	}
	sqlite3_finalize(st);
	return err;
}

int pivot_store_source(struct pivot *p, const struct pivot_source *s, const char *const *lines,
		       size_t n_lines)
{
	int err;

	if (!p || !s || !s->dwarf_path || !status_valid(s->status) || (n_lines && !lines) ||
	    (n_lines && (s->first_line < 1 || s->last_line < s->first_line ||
			 s->last_line - s->first_line + 1 != n_lines)))
		return -EINVAL;
	err = pivot_begin(p);
	if (err)
		return err;
	err = store_source_rows(p, s, lines, n_lines);
	if (err) {
		pivot_rollback(p);
		return err;
	}
	return pivot_commit(p);
}

struct source_walk {
	int (*cb)(const struct pivot_source *s, void *ctx);
	void *ctx;
	int found;
};

static int source_row(sqlite3_stmt *st, void *arg)
{
	struct source_walk *w = arg;
	struct pivot_source s = {
	    .hotspot = sqlite3_column_int64(st, 0),
	    .dwarf_path = pivot_column_text(st, 1),
	    .resolved_path = pivot_column_text(st, 2),
	    .status = pivot_column_text(st, 3),
	    .reason = pivot_column_text(st, 4),
	    .first_line = (uint32_t)sqlite3_column_int64(st, 5),
	    .last_line = (uint32_t)sqlite3_column_int64(st, 6),
	    .truncated = sqlite3_column_int(st, 7),
	};

	w->found = 1;
	return w->cb(&s, w->ctx);
}

int pivot_source_of_hotspot(struct pivot *p, int64_t hotspot,
			    int (*cb)(const struct pivot_source *s, void *ctx), void *ctx)
{
	struct source_walk w = {cb, ctx, 0};
	sqlite3_stmt *st;
	int err;

	if (!p || !cb)
		return -EINVAL;
	if (p->schema < 4)
		return -ENOENT;
	err = pivot_prepare(p,
			    "SELECT hotspot, dwarf_path, resolved_path, status, reason, first_line,"
			    " last_line, truncated FROM sources WHERE hotspot = ?",
			    &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, hotspot);
	err = pivot_walk(p, st, source_row, &w, "read a source");
	return err ?: w.found ? 0 : -ENOENT;
}

struct line_walk {
	int (*cb)(uint32_t line, const char *text, uint64_t samples, void *ctx);
	void *ctx;
};

static int line_row(sqlite3_stmt *st, void *arg)
{
	struct line_walk *w = arg;

	return w->cb((uint32_t)sqlite3_column_int64(st, 0), pivot_column_text(st, 1),
		     (uint64_t)sqlite3_column_int64(st, 2), w->ctx);
}

int pivot_for_each_source_line(struct pivot *p, int64_t hotspot, const char *counter,
			       int (*cb)(uint32_t line, const char *text, uint64_t samples,
					 void *ctx),
			       void *ctx)
{
	struct line_walk w = {cb, ctx};
	sqlite3_stmt *st;
	int err;

	if (!p || !cb || !counter)
		return -EINVAL;
	if (p->schema < 4)
		return 0;
	err = pivot_prepare(
	    p,
	    "WITH sm AS (" SAMPLED_LINES " AND a.hotspot = ?2 GROUP BY a.line),"
	    " ex AS (SELECT e.line AS line, e.text AS text FROM extracts e JOIN sources so"
	    " ON so.id = e.source WHERE so.hotspot = ?2),"
	    " l AS (SELECT line FROM sm UNION SELECT line FROM ex)"
	    " SELECT l.line, ex.text, coalesce(sm.n, 0) FROM l LEFT JOIN ex ON ex.line = l.line"
	    " LEFT JOIN sm ON sm.line = l.line ORDER BY l.line",
	    &st);
	if (err)
		return err;
	sqlite3_bind_text(st, 1, counter, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, hotspot);
	return pivot_walk(p, st, line_row, &w, "read an extract");
}
