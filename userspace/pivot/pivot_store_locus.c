/* pivot_store_locus — what a Batch says of each Locus, stored inside the
 * transaction of pivot_store_batch() (pivot_store.c): the Measurements of a
 * process that exited (CPU time, context switches, page faults, peak RSS,
 * wall time, hardware counters or why they are unavailable), replacing any
 * earlier ones of that Locus, and the MPI call sites (running totals: an
 * older report never wins), MPI processes and Events. */
#include <math.h>
#include <stdint.h>

#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

/* Drops the locus-level measurement of counter stored for locus before, so
 * that the one stored next replaces it. */
static int delete_exit_measurement(struct store *s, int64_t locus, const char *counter)
{
	sqlite3_stmt *del = s->st[ST_EXIT_DELETE];

	sqlite3_bind_int64(del, 1, locus);
	sqlite3_bind_text(del, 2, counter, -1, SQLITE_STATIC);
	return pivot_step_done(s->p, del, "replace a locus measurement");
}

static int store_exit_measurement(struct store *s, int64_t locus, const char *counter,
				  uint64_t value, const char *unit)
{
	sqlite3_stmt *ins = s->st[ST_EXIT_INSERT];
	int err;

	err = delete_exit_measurement(s, locus, counter);
	if (err)
		return err;
	sqlite3_bind_int64(ins, 1, locus);
	sqlite3_bind_text(ins, 2, counter, -1, SQLITE_STATIC);
	sqlite3_bind_double(ins, 3, (double)value);
	sqlite3_bind_text(ins, 4, unit, -1, SQLITE_STATIC);
	return pivot_step_done(s->p, ins, "store a locus measurement");
}

/* a counter the Agent could not read: no value, and why */
static int store_exit_unavailable(struct store *s, int64_t locus, const char *counter,
				  const char *unit, const char *reason)
{
	sqlite3_stmt *ins = s->st[ST_EXIT_UNAVAILABLE];
	int err;

	err = delete_exit_measurement(s, locus, counter);
	if (err)
		return err;
	sqlite3_bind_int64(ins, 1, locus);
	sqlite3_bind_text(ins, 2, counter, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 3, unit, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 4, reason ? reason : "not collected", -1, SQLITE_TRANSIENT);
	return pivot_step_done(s->p, ins, "store an unavailable locus measurement");
}

static int store_hardware_counter(struct store *s, int64_t locus, const char *counter, int has,
				  uint64_t value, const char *reason)
{
	if (has)
		return store_exit_measurement(s, locus, counter, value, "count");
	return store_exit_unavailable(s, locus, counter, "count", reason);
}

int store_exits(struct store *s)
{
	size_t i;
	int err = 0;

	for (i = 0; i < s->b->n_exits && !err; i++) {
		const Nunatak__Wire__ProcessExit *e = s->b->exits[i];
		int64_t locus = s->locus_ids[e->locus];

		err = store_exit_measurement(s, locus, "cpu_time_user", e->utime_ns, "ns");
		if (!err)
			err =
			    store_exit_measurement(s, locus, "cpu_time_system", e->stime_ns, "ns");
		if (!err)
			err = store_exit_measurement(s, locus, "context_switches_voluntary",
						     e->nvcsw, "count");
		if (!err)
			err = store_exit_measurement(s, locus, "context_switches_involuntary",
						     e->nivcsw, "count");
		if (!err)
			err = store_exit_measurement(s, locus, "page_faults_minor", e->min_flt,
						     "count");
		if (!err)
			err = store_exit_measurement(s, locus, "page_faults_major", e->maj_flt,
						     "count");
		if (!err)
			err =
			    store_exit_measurement(s, locus, "peak_rss", e->maxrss_bytes, "bytes");
		if (!err)
			err = store_exit_measurement(s, locus, "wall_time", e->wall_ns, "ns");
		if (!err && e->has_run_delay_ns)
			err = store_exit_measurement(s, locus, "run_delay", e->run_delay_ns, "ns");
		else if (!err)
			err = store_exit_unavailable(
			    s, locus, "run_delay", "ns",
			    "not recorded: the kernel keeps no run-queue delay "
			    "(CONFIG_SCHED_INFO), or the Agent predates it");
		if (!err)
			err = store_hardware_counter(s, locus, "cycles", e->has_cycles, e->cycles,
						     e->hardware_counters_reason);
		if (!err)
			err = store_hardware_counter(s, locus, "instructions", e->has_instructions,
						     e->instructions, e->hardware_counters_reason);
	}
	return err;
}

static void bind_u64_or_null(sqlite3_stmt *st, int idx, int has, uint64_t v)
{
	if (has)
		sqlite3_bind_int64(st, idx, (int64_t)v);
	else
		sqlite3_bind_null(st, idx);
}

static void bind_double_or_null(sqlite3_stmt *st, int idx, int has, double v)
{
	if (has && isfinite(v))
		sqlite3_bind_double(st, idx, v);
	else
		sqlite3_bind_null(st, idx);
}

int store_mpi_call_sites(struct store *s)
{
	sqlite3_stmt *st = s->st[ST_MPI_CALL];
	int64_t address;
	size_t i;
	int err;

	for (i = 0; i < s->b->n_mpi_call_sites; i++) {
		const Nunatak__Wire__MpiCallSite *c = s->b->mpi_call_sites[i];

		err = store_address(s, c->call_site->module, c->call_site->offset, &address);
		if (err)
			return err;
		sqlite3_bind_int64(st, 1, s->locus_ids[c->locus]);
		pivot_bind_text(st, 2, c->function);
		sqlite3_bind_int64(st, 3, address);
		sqlite3_bind_int64(st, 4, (int64_t)c->calls);
		sqlite3_bind_int64(st, 5, (int64_t)c->total_ns);
		sqlite3_bind_int64(st, 6, (int64_t)c->min_ns);
		sqlite3_bind_int64(st, 7, (int64_t)c->max_ns);
		bind_u64_or_null(st, 8, c->has_bytes, c->bytes);
		/* a reason only explains missing bytes */
		pivot_bind_text(st, 9, c->has_bytes ? NULL : c->bytes_reason);
		sqlite3_bind_int(st, 10, c->sends ? 1 : 0);
		pivot_bind_text(st, 11, c->estimate);
		bind_double_or_null(st, 12, c->estimate && c->has_calls_error, c->calls_error);
		bind_double_or_null(st, 13, c->estimate && c->has_total_ns_error, c->total_ns_error);
		err = pivot_step_done(s->p, st, "store an mpi call site");
		if (err)
			return err;
	}
	return 0;
}

int store_mpi_processes_events(struct store *s)
{
	sqlite3_stmt *proc = s->st[ST_MPI_PROCESS], *ev = s->st[ST_MPI_EVENT];
	size_t i;
	int err;

	for (i = 0; i < s->b->n_mpi_processes; i++) {
		const Nunatak__Wire__MpiProcess *m = s->b->mpi_processes[i];

		sqlite3_bind_int64(proc, 1, s->locus_ids[m->locus]);
		bind_u64_or_null(proc, 2, m->has_init_end_ns, m->init_end_ns);
		bind_u64_or_null(proc, 3, m->has_finalize_start_ns, m->finalize_start_ns);
		bind_u64_or_null(proc, 4, m->has_last_seen_ns, m->last_seen_ns);
		bind_u64_or_null(proc, 5, m->has_probe_cost_ns, m->probe_cost_ns);
		bind_u64_or_null(proc, 6, m->has_probed_calls, m->probed_calls);
		pivot_bind_text(proc, 7, m->has_probe_cost_ns ? NULL : m->probe_cost_reason);
		bind_double_or_null(proc, 8, m->has_probe_budget, m->probe_budget);
		pivot_bind_text(proc, 9, m->probing);
		bind_u64_or_null(proc, 10, m->has_probe_cost_in_window_ns,
				 m->probe_cost_in_window_ns);
		err = pivot_step_done(s->p, proc, "store an mpi process");
		if (err)
			return err;
	}
	for (i = 0; i < s->b->n_mpi_events; i++) {
		const Nunatak__Wire__MpiEvent *e = s->b->mpi_events[i];

		sqlite3_bind_int64(ev, 1, s->locus_ids[e->locus]);
		pivot_bind_text(ev, 2, e->function);
		sqlite3_bind_int64(ev, 3, (int64_t)e->start_ns);
		sqlite3_bind_int64(ev, 4, (int64_t)e->duration_ns);
		bind_u64_or_null(ev, 5, e->has_bytes, e->bytes);
		if (e->has_peer)
			sqlite3_bind_int(ev, 6, e->peer);
		else
			sqlite3_bind_null(ev, 6);
		err = pivot_step_done(s->p, ev, "store an mpi event");
		if (err)
			return err;
	}
	return 0;
}
