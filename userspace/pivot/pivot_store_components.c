/* pivot_store_components — the Component entries of a Batch, stored inside
 * the transaction of pivot_store_batch() (pivot_store.c): Components by
 * name, their costs as running totals per (Locus, phase, step, Component,
 * parent), and the Steps (schema 5, pivot_schema.c; contract in pivot.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

int store_components_check(const Nunatak__Wire__Batch *b)
{
	size_t i;

	for (i = 0; i < b->n_components; i++)
		if (!b->components[i] || !b->components[i]->name || !b->components[i]->pattern)
			return -EINVAL;
	for (i = 0; i < b->n_component_costs; i++) {
		const Nunatak__Wire__ComponentCost *c = b->component_costs[i];

		if (!c || !c->phase || c->locus >= b->n_loci || c->component >= b->n_components ||
		    (c->has_parent && c->parent >= b->n_components) ||
		    (strcmp(c->phase, "setup") && strcmp(c->phase, "step") &&
		     strcmp(c->phase, "between") && strcmp(c->phase, "teardown")))
			return -EINVAL;
	}
	for (i = 0; i < b->n_steps; i++)
		if (!b->steps[i] || b->steps[i]->locus >= b->n_loci)
			return -EINVAL;
	return 0;
}

enum {
	CS_COMPONENT,
	CS_COMPONENT_ID,
	CS_COST,
	CS_STEP,
	CS_COUNT,
};

static const char *const component_sql[CS_COUNT] = {
    [CS_COMPONENT] = "INSERT OR IGNORE INTO components(name, pattern, is_step) VALUES(?, ?, ?)",
    [CS_COMPONENT_ID] = "SELECT id FROM components WHERE name = ?",
    /* running totals: a repeated or older report (fewer calls) never wins */
    [CS_COST] = "INSERT INTO component_costs(locus, phase, step, component, parent, calls,"
		" wall_ns, cpu_ns, minor_page_faults, major_page_faults,"
		" voluntary_context_switches, involuntary_context_switches,"
		" peak_rss_increase_bytes, instructions, cycles)"
		" VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		" ON CONFLICT(locus, phase, step, component, IFNULL(parent, 0)) DO UPDATE SET"
		" calls = excluded.calls, wall_ns = excluded.wall_ns, cpu_ns = excluded.cpu_ns,"
		" minor_page_faults = excluded.minor_page_faults,"
		" major_page_faults = excluded.major_page_faults,"
		" voluntary_context_switches = excluded.voluntary_context_switches,"
		" involuntary_context_switches = excluded.involuntary_context_switches,"
		" peak_rss_increase_bytes = excluded.peak_rss_increase_bytes,"
		" instructions = excluded.instructions, cycles = excluded.cycles"
		" WHERE excluded.calls >= calls",
    [CS_STEP] = "INSERT INTO steps(locus, step, start_ns, end_ns) VALUES(?, ?, ?, ?)"
		" ON CONFLICT(locus, step) DO UPDATE SET"
		" end_ns = coalesce(excluded.end_ns, end_ns)",
};

/* the pivot ids of the Batch's Components, ids[i] of Batch.components[i] */
static int store_component_rows(struct store *s, sqlite3_stmt *const *st, int64_t *ids)
{
	size_t i;
	int err, rc;

	for (i = 0; i < s->b->n_components; i++) {
		const Nunatak__Wire__Component *c = s->b->components[i];

		pivot_bind_text(st[CS_COMPONENT], 1, c->name);
		pivot_bind_text(st[CS_COMPONENT], 2, c->pattern);
		sqlite3_bind_int(st[CS_COMPONENT], 3, c->is_step ? 1 : 0);
		err = pivot_step_done(s->p, st[CS_COMPONENT], "store a component");
		if (err)
			return err;
		pivot_bind_text(st[CS_COMPONENT_ID], 1, c->name);
		rc = sqlite3_step(st[CS_COMPONENT_ID]);
		ids[i] = rc == SQLITE_ROW ? sqlite3_column_int64(st[CS_COMPONENT_ID], 0) : 0;
		sqlite3_reset(st[CS_COMPONENT_ID]);
		if (!ids[i])
			return pivot_sql_error(s->p, "read a component's id");
	}
	return 0;
}

static int store_cost(struct store *s, sqlite3_stmt *st, const int64_t *ids,
		      const Nunatak__Wire__ComponentCost *c)
{
	sqlite3_bind_int64(st, 1, s->locus_ids[c->locus]);
	pivot_bind_text(st, 2, c->phase);
	sqlite3_bind_int(st, 3, c->step);
	sqlite3_bind_int64(st, 4, ids[c->component]);
	if (c->has_parent)
		sqlite3_bind_int64(st, 5, ids[c->parent]);
	else
		sqlite3_bind_null(st, 5);
	sqlite3_bind_int64(st, 6, (int64_t)c->calls);
	sqlite3_bind_int64(st, 7, (int64_t)c->wall_ns);
	sqlite3_bind_int64(st, 8, (int64_t)c->cpu_ns);
	sqlite3_bind_int64(st, 9, (int64_t)c->minor_page_faults);
	sqlite3_bind_int64(st, 10, (int64_t)c->major_page_faults);
	sqlite3_bind_int64(st, 11, (int64_t)c->voluntary_context_switches);
	sqlite3_bind_int64(st, 12, (int64_t)c->involuntary_context_switches);
	sqlite3_bind_int64(st, 13, (int64_t)c->peak_rss_increase_bytes);
	if (c->has_instructions)
		sqlite3_bind_int64(st, 14, (int64_t)c->instructions);
	else
		sqlite3_bind_null(st, 14);
	if (c->has_cycles)
		sqlite3_bind_int64(st, 15, (int64_t)c->cycles);
	else
		sqlite3_bind_null(st, 15);
	return pivot_step_done(s->p, st, "store a component cost");
}

static int store_step(struct store *s, sqlite3_stmt *st, const Nunatak__Wire__Step *step)
{
	sqlite3_bind_int64(st, 1, s->locus_ids[step->locus]);
	sqlite3_bind_int64(st, 2, step->step);
	sqlite3_bind_int64(st, 3, (int64_t)step->start_ns);
	if (step->has_end_ns)
		sqlite3_bind_int64(st, 4, (int64_t)step->end_ns);
	else
		sqlite3_bind_null(st, 4);
	return pivot_step_done(s->p, st, "store a step");
}

int store_components(struct store *s)
{
	const Nunatak__Wire__Batch *b = s->b;
	sqlite3_stmt *st[CS_COUNT] = {};
	int64_t *ids = NULL;
	size_t i;
	int err = 0;

	if (!b->n_components && !b->n_component_costs && !b->n_steps)
		return 0;
	ids = calloc(b->n_components + 1, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (i = 0; i < CS_COUNT && !err; i++)
		err = pivot_prepare(s->p, component_sql[i], &st[i]);
	if (!err)
		err = store_component_rows(s, st, ids);
	for (i = 0; i < b->n_component_costs && !err; i++)
		err = store_cost(s, st[CS_COST], ids, b->component_costs[i]);
	for (i = 0; i < b->n_steps && !err; i++)
		err = store_step(s, st[CS_STEP], b->steps[i]);
	for (i = 0; i < CS_COUNT; i++)
		sqlite3_finalize(st[i]);
	free(ids);
	return err;
}
