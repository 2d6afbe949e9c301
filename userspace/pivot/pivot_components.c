/* pivot_components — the Component tables read back (pivot_components.h). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_components.h"
#include "userspace/pivot/pivot_internal.h"

int pivot_components_present(struct pivot *p)
{
	int64_t n = 0;
	int err;

	if (!p)
		return -EINVAL;
	/* schema 4 had placeholder `steps` and `component_costs` tables of
	 * one id column: the schema-5 ones have `components` beside them */
	err =
	    pivot_query_int64(p,
			      "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
			      " name = 'components') + (SELECT count(*) FROM"
			      " pragma_table_info('component_costs') WHERE name = 'wall_ns')",
			      "read the schema", &n);
	return err ? err : n == 2;
}

/* one walk: the callback of its kind */
struct walk {
	union {
		int (*component)(const struct pivot_component *c, void *ctx);
		int (*step)(const struct pivot_step *s, void *ctx);
		int (*cost)(const struct pivot_component_cost *c, void *ctx);
		void *any;
	} cb;
	void *ctx;
};

static int component_row(sqlite3_stmt *stmt, void *arg)
{
	struct walk *w = arg;
	struct pivot_component c = {
	    .id = sqlite3_column_int64(stmt, 0),
	    .name = pivot_column_text(stmt, 1),
	    .pattern = pivot_column_text(stmt, 2),
	    .is_step = sqlite3_column_int(stmt, 3) != 0,
	};

	return w->cb.component(&c, w->ctx);
}

/* the walk of sql through row: 0 when the tables are not there */
static int walk_sql(struct pivot *p, const char *sql, int (*row)(sqlite3_stmt *, void *),
		    struct walk *w, const char *what)
{
	sqlite3_stmt *stmt;
	int err;

	if (!p || !w->cb.any)
		return -EINVAL;
	err = pivot_components_present(p);
	if (err <= 0)
		return err;
	err = pivot_prepare(p, sql, &stmt);
	if (err)
		return err;
	return pivot_walk(p, stmt, row, w, what);
}

int pivot_for_each_component(struct pivot *p, int (*cb)(const struct pivot_component *c, void *ctx),
			     void *ctx)
{
	struct walk w = {.cb.component = cb, .ctx = ctx};

	return walk_sql(p, "SELECT id, name, pattern, is_step FROM components ORDER BY id",
			component_row, &w, "read components");
}

static int step_row(sqlite3_stmt *stmt, void *arg)
{
	struct walk *w = arg;
	struct pivot_step s = {
	    .node = pivot_column_text(stmt, 0),
	    .tgid = sqlite3_column_int64(stmt, 1),
	    .step = sqlite3_column_int64(stmt, 2),
	    .start_ns = sqlite3_column_int64(stmt, 3),
	    .has_end = sqlite3_column_type(stmt, 4) != SQLITE_NULL,
	    .end_ns = sqlite3_column_int64(stmt, 4),
	};

	return w->cb.step(&s, w->ctx);
}

int pivot_for_each_step(struct pivot *p, int (*cb)(const struct pivot_step *s, void *ctx),
			void *ctx)
{
	struct walk w = {.cb.step = cb, .ctx = ctx};

	return walk_sql(p,
			"SELECT l.node, l.tgid, s.step, s.start_ns, s.end_ns FROM steps s"
			" JOIN loci l ON l.id = s.locus ORDER BY l.node, l.tgid, s.step",
			step_row, &w, "read steps");
}

static int cost_row(sqlite3_stmt *stmt, void *arg)
{
	struct walk *w = arg;
	struct pivot_component_cost c = {
	    .node = pivot_column_text(stmt, 0),
	    .tgid = sqlite3_column_int64(stmt, 1),
	    .tid = sqlite3_column_int64(stmt, 2),
	    .phase = pivot_column_text(stmt, 3),
	    .step = sqlite3_column_int64(stmt, 4),
	    .component = sqlite3_column_int64(stmt, 5),
	    .parent = sqlite3_column_int64(stmt, 6), /* NULL reads 0 */
	    .calls = (uint64_t)sqlite3_column_int64(stmt, 7),
	};
	int i;

	for (i = 0; i < PIVOT_COST_COLUMNS; i++)
		c.cost[i] = sqlite3_column_type(stmt, 8 + i) == SQLITE_NULL
				? NAN
				: sqlite3_column_double(stmt, 8 + i);
	return w->cb.cost(&c, w->ctx);
}

int pivot_for_each_component_cost(struct pivot *p,
				  int (*cb)(const struct pivot_component_cost *c, void *ctx),
				  void *ctx)
{
	struct walk w = {.cb.cost = cb, .ctx = ctx};

	/* the columns in enum pivot_cost_column order */
	return walk_sql(p,
			"SELECT l.node, l.tgid, l.tid, c.phase, c.step, c.component, c.parent,"
			" c.calls, c.wall_ns, c.cpu_ns, c.minor_page_faults, c.major_page_faults,"
			" c.voluntary_context_switches, c.involuntary_context_switches,"
			" c.peak_rss_increase_bytes, c.instructions, c.cycles"
			" FROM component_costs c JOIN loci l ON l.id = c.locus"
			" ORDER BY l.node, l.tgid, l.tid, c.step, c.component, c.parent",
			cost_row, &w, "read component costs");
}

struct counter_sums {
	double probe, empty;
	int n_probe, n_empty;
	uint64_t lost;
};

static int counter_cb(const char *node, const char *name, uint64_t value, void *ctx)
{
	struct counter_sums *s = ctx;

	(void)node;
	if (!strcmp(name, "component_probe_ns")) {
		s->probe += (double)value;
		s->n_probe++;
	} else if (!strcmp(name, "empty_uprobe_pair_ns")) {
		s->empty += (double)value;
		s->n_empty++;
	} else if (!strcmp(name, "component_calls_lost")) {
		s->lost += value;
	}
	return 0;
}

int pivot_component_counters(struct pivot *p, struct pivot_component_counters *out)
{
	struct counter_sums s = {0};
	int err;

	if (!out)
		return -EINVAL;
	err = pivot_for_each_counter(p, counter_cb, &s);
	if (err)
		return err;
	out->probe_ns = s.n_probe ? s.probe / s.n_probe : NAN;
	out->empty_pair_ns = s.n_empty ? s.empty / s.n_empty : NAN;
	out->calls_lost = s.lost;
	out->probe_nodes = s.n_probe;
	return 0;
}
