/* pivot_store — one Batch into the pivot, whole or not at all, once: its
 * checks, its transaction, and its samples (modules, Loci, Stacks and
 * their addresses, sample counts), Degradations and counters; what it says
 * of each Locus (process exits, MPI) is stored by pivot_store_locus.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

/* Every index inside b points into b, every required string is present:
 * checked before anything is written. */
static int batch_check(const Nunatak__Wire__Batch *b)
{
	size_t i, j;

	if (!b->node || !b->run_id)
		return -EINVAL;
	for (i = 0; i < b->n_modules; i++) {
		const Nunatak__Wire__Module *m = b->modules[i];

		if (!m || !m->identity || !m->path || !m->display_name)
			return -EINVAL;
		for (j = 0; j < m->n_symbols; j++)
			if (!m->symbols[j] || !m->symbols[j]->name)
				return -EINVAL;
	}
	for (i = 0; i < b->n_loci; i++)
		if (!b->loci[i] || !b->loci[i]->node)
			return -EINVAL;
	for (i = 0; i < b->n_stacks; i++) {
		const Nunatak__Wire__Stack *s = b->stacks[i];

		if (!s)
			return -EINVAL;
		for (j = 0; j < s->n_frames; j++)
			if (!s->frames[j] || s->frames[j]->module >= b->n_modules)
				return -EINVAL;
	}
	for (i = 0; i < b->n_samples; i++) {
		const Nunatak__Wire__SampleCount *sc = b->samples[i];

		if (!sc || !sc->counter || sc->locus >= b->n_loci || sc->stack >= b->n_stacks)
			return -EINVAL;
	}
	for (i = 0; i < b->n_degradations; i++) {
		const Nunatak__Wire__Degradation *d = b->degradations[i];

		if (!d || !d->name || !d->message || !d->remedy)
			return -EINVAL;
	}
	for (i = 0; i < b->n_counters; i++)
		if (!b->counters[i] || !b->counters[i]->name)
			return -EINVAL;
	for (i = 0; i < b->n_exits; i++)
		if (!b->exits[i] || b->exits[i]->locus >= b->n_loci)
			return -EINVAL;
	for (i = 0; i < b->n_mpi_call_sites; i++) {
		const Nunatak__Wire__MpiCallSite *c = b->mpi_call_sites[i];

		if (!c || !c->function || c->locus >= b->n_loci || !c->call_site ||
		    c->call_site->module >= b->n_modules)
			return -EINVAL;
	}
	for (i = 0; i < b->n_mpi_processes; i++)
		if (!b->mpi_processes[i] || b->mpi_processes[i]->locus >= b->n_loci)
			return -EINVAL;
	for (i = 0; i < b->n_mpi_events; i++)
		if (!b->mpi_events[i] || !b->mpi_events[i]->function ||
		    b->mpi_events[i]->locus >= b->n_loci)
			return -EINVAL;
	return store_components_check(b);
}

static const char *const store_sql[ST_COUNT] = {
    [ST_BATCH] = "INSERT OR IGNORE INTO batches(node, incarnation, seq, received, last)"
		 " VALUES(?, ?, ?, ?, ?)",
    [ST_MODULE] = "INSERT INTO modules(identity, path, display_name, has_build_id)"
		  " VALUES(?, ?, ?, ?) ON CONFLICT(identity) DO UPDATE SET"
		  " identity = excluded.identity RETURNING id",
    [ST_MODULE_UNATTRIBUTE] = "UPDATE modules SET attribution = NULL, attribution_reason = NULL"
			      " WHERE id = ? AND attribution IS NOT NULL",
    [ST_MODULE_SYMBOL] = "INSERT OR IGNORE INTO module_symbols(module, start, size, name)"
			 " VALUES(?, ?, ?, ?)",
    [ST_LOCUS] = "INSERT INTO loci(node, tgid, tid, comm, exe, rank, world_size)"
		 " VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(node, tgid, tid) DO UPDATE SET"
		 " comm = coalesce(excluded.comm, comm), exe = coalesce(excluded.exe, exe),"
		 " rank = coalesce(excluded.rank, rank),"
		 " world_size = coalesce(excluded.world_size, world_size) RETURNING id",
    [ST_STACK] = "INSERT OR IGNORE INTO stacks(digest, depth, truncated) VALUES(?, ?, ?)",
    [ST_STACK_FRAME] = "INSERT INTO stack_frames(stack, position, address) VALUES(?, ?, ?)",
    [ST_STACK_SELECT] = "SELECT id FROM stacks WHERE digest = ?",
    [ST_ADDRESS_INSERT] = "INSERT OR IGNORE INTO addresses(module, offset) VALUES(?, ?)",
    [ST_ADDRESS_SELECT] = "SELECT id FROM addresses WHERE module = ? AND offset = ?",
    [ST_SAMPLE] = "INSERT INTO samples(locus, stack, counter, in_kernel, sample_count, value)"
		  " VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(locus, stack, counter, in_kernel)"
		  " DO UPDATE SET sample_count = sample_count + excluded.sample_count,"
		  " value = value + excluded.value",
    [ST_DEGRADATION] = "INSERT OR IGNORE INTO degradations(node, name, message, remedy)"
		       " VALUES(?, ?, ?, ?)",
    [ST_COUNTER] = "INSERT INTO counters(node, name, value) VALUES(?, ?, ?)"
		   " ON CONFLICT(node, name) DO UPDATE SET"
		   " value = max(value, excluded.value)",
    [ST_EXIT_DELETE] = "DELETE FROM measurements WHERE hotspot IS NULL AND locus = ?"
		       " AND counter = ?",
    [ST_EXIT_INSERT] = "INSERT INTO measurements(hotspot, locus, counter, value, unit,"
		       " quality) VALUES(NULL, ?, ?, ?, ?, 'measured')",
    [ST_EXIT_UNAVAILABLE] = "INSERT INTO measurements(hotspot, locus, counter, value, unit,"
			    " quality, reason) VALUES(NULL, ?, ?, NULL, ?, 'unavailable', ?)",
    /* running totals: a repeated or older report (fewer calls) never wins;
     * an estimate may shrink as it is refined: the latest stays */
    [ST_MPI_CALL] = "INSERT INTO mpi_calls(locus, function, call_site, calls, total_ns,"
		    " min_ns, max_ns, bytes, bytes_reason, sends, estimate, calls_error,"
		    " total_ns_error) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		    " ON CONFLICT(locus, function, call_site) DO UPDATE SET"
		    " calls = excluded.calls, total_ns = excluded.total_ns,"
		    " min_ns = excluded.min_ns, max_ns = excluded.max_ns,"
		    " bytes = excluded.bytes, bytes_reason = excluded.bytes_reason,"
		    " sends = excluded.sends, estimate = excluded.estimate,"
		    " calls_error = excluded.calls_error, total_ns_error = excluded.total_ns_error"
		    " WHERE excluded.calls > calls OR excluded.estimate IS NOT NULL",
    /* a present field fills a NULL one, never the reverse; init and
     * finalize happen once (the first report stays), the process is last
     * seen at the latest report */
    [ST_MPI_PROCESS] = "INSERT INTO mpi_processes(locus, init_end_ns, finalize_start_ns,"
		       " last_seen_ns, probe_cost_ns, probed_calls, probe_cost_reason,"
		       " probe_budget, probing, probe_cost_in_window_ns)"
		       " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		       " ON CONFLICT(locus) DO UPDATE SET"
		       " probe_cost_ns = coalesce(excluded.probe_cost_ns, probe_cost_ns),"
		       " probe_cost_in_window_ns = coalesce(excluded.probe_cost_in_window_ns,"
		       " probe_cost_in_window_ns),"
		       " probed_calls = max(coalesce(probed_calls, 0),"
		       " coalesce(excluded.probed_calls, 0)),"
		       " probe_cost_reason = CASE WHEN coalesce(excluded.probe_cost_ns,"
		       " probe_cost_ns) IS NULL THEN coalesce(excluded.probe_cost_reason,"
		       " probe_cost_reason) END,"
		       " probe_budget = coalesce(excluded.probe_budget, probe_budget),"
		       " probing = coalesce(excluded.probing, probing),"
		       " init_end_ns = coalesce(init_end_ns, excluded.init_end_ns),"
		       " finalize_start_ns = coalesce(finalize_start_ns,"
		       " excluded.finalize_start_ns),"
		       " last_seen_ns = CASE WHEN last_seen_ns IS NULL THEN excluded.last_seen_ns"
		       " WHEN excluded.last_seen_ns IS NULL THEN last_seen_ns"
		       " ELSE max(last_seen_ns, excluded.last_seen_ns) END",
    [ST_MPI_EVENT] = "INSERT INTO events(locus, name, start_ns, duration_ns, bytes, peer)"
		     " VALUES(?, ?, ?, ?, ?, ?)",
};

static void store_release(struct store *s)
{
	int i;

	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(s->st[i]);
	free(s->module_ids);
	free(s->locus_ids);
	free(s->stack_ids);
	free(s->new_address);
	store_address_cache_release(s);
}

/* Runs stmt (reset after) and returns the first column of its one row in
 * *id. */
static int step_id(struct store *s, sqlite3_stmt *stmt, int64_t *id, const char *what)
{
	int rc = sqlite3_step(stmt);

	if (rc != SQLITE_ROW) {
		sqlite3_reset(stmt);
		return pivot_sql_error(s->p, what);
	}
	*id = sqlite3_column_int64(stmt, 0);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		;
	sqlite3_reset(stmt);
	return rc == SQLITE_DONE ? 0 : pivot_sql_error(s->p, what);
}

/* 1 when (node, seq) is already there */
static int store_batch_row(struct store *s)
{
	sqlite3_stmt *st = s->st[ST_BATCH];
	char received[32];
	struct tm tm;
	time_t now = time(NULL);
	int err;

	gmtime_r(&now, &tm);
	strftime(received, sizeof(received), "%Y-%m-%dT%H:%M:%SZ", &tm);
	pivot_bind_text(st, 1, s->b->node);
	/* a Batch of an Agent older than protocol 1.2 has incarnation 0 */
	sqlite3_bind_int64(st, 2, s->b->has_incarnation ? (int64_t)s->b->incarnation : 0);
	sqlite3_bind_int64(st, 3, (int64_t)s->b->seq);
	sqlite3_bind_text(st, 4, received, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 5, s->b->has_last && s->b->last);
	err = pivot_step_done(s->p, st, "record the batch");
	if (err)
		return err;
	return sqlite3_changes(s->p->db) == 0;
}

static int store_modules(struct store *s)
{
	sqlite3_stmt *st = s->st[ST_MODULE];
	size_t i;
	int err;

	for (i = 0; i < s->b->n_modules; i++) {
		const Nunatak__Wire__Module *m = s->b->modules[i];

		pivot_bind_text(st, 1, m->identity);
		pivot_bind_text(st, 2, m->path);
		pivot_bind_text(st, 3, m->display_name);
		sqlite3_bind_int(st, 4, m->has_build_id ? 1 : 0);
		err = step_id(s, st, &s->module_ids[i], "store a module");
		if (err)
			return err;
	}
	return 0;
}

/* A pseudo module's symbols, the first stored at each start kept; a new
 * one may name addresses attributed before: the module is attributed
 * again. */
static int store_module_symbols(struct store *s)
{
	sqlite3_stmt *st = s->st[ST_MODULE_SYMBOL];
	size_t i, j;
	int err;

	for (i = 0; i < s->b->n_modules; i++) {
		const Nunatak__Wire__Module *m = s->b->modules[i];

		for (j = 0; j < m->n_symbols; j++) {
			sqlite3_bind_int64(st, 1, s->module_ids[i]);
			sqlite3_bind_int64(st, 2, (int64_t)m->symbols[j]->offset);
			sqlite3_bind_int64(st, 3, (int64_t)m->symbols[j]->size);
			pivot_bind_text(st, 4, m->symbols[j]->name);
			err = pivot_step_done(s->p, st, "store a module symbol");
			if (err)
				return err;
			if (sqlite3_changes(s->p->db))
				s->new_address[i] = 1;
		}
	}
	return 0;
}

static int store_loci(struct store *s)
{
	sqlite3_stmt *st = s->st[ST_LOCUS];
	size_t i;
	int err;

	for (i = 0; i < s->b->n_loci; i++) {
		const Nunatak__Wire__Locus *l = s->b->loci[i];

		pivot_bind_text(st, 1, l->node);
		sqlite3_bind_int64(st, 2, l->tgid);
		sqlite3_bind_int64(st, 3, l->tid);
		pivot_bind_text(st, 4, l->comm);
		pivot_bind_text(st, 5, l->exe);
		if (l->has_rank)
			sqlite3_bind_int(st, 6, l->rank);
		else
			sqlite3_bind_null(st, 6);
		if (l->has_world_size)
			sqlite3_bind_int(st, 7, l->world_size);
		else
			sqlite3_bind_null(st, 7);
		err = step_id(s, st, &s->locus_ids[i], "store a locus");
		if (err)
			return err;
	}
	return 0;
}

/* The stack's identity is its exact content in pivot terms:
 * "module:offset,..." (offset in hex), then "|t" when truncated. */
static char *stack_digest(struct store *s, const Nunatak__Wire__Stack *stack)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (i = 0; i < stack->n_frames; i++)
		fprintf(f, "%s%" PRId64 ":%" PRIx64, i ? "," : "",
			s->module_ids[stack->frames[i]->module], stack->frames[i]->offset);
	if (stack->truncated)
		fputs("|t", f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int store_address(struct store *s, uint32_t module, uint64_t offset, int64_t *id)
{
	sqlite3_stmt *ins = s->st[ST_ADDRESS_INSERT], *sel = s->st[ST_ADDRESS_SELECT];
	int err;

	sqlite3_bind_int64(ins, 1, s->module_ids[module]);
	sqlite3_bind_int64(ins, 2, (int64_t)offset);
	err = pivot_step_done(s->p, ins, "store an address");
	if (err)
		return err;
	if (sqlite3_changes(s->p->db)) {
		*id = sqlite3_last_insert_rowid(s->p->db);
		s->new_address[module] = 1;
		return 0;
	}
	sqlite3_bind_int64(sel, 1, s->module_ids[module]);
	sqlite3_bind_int64(sel, 2, (int64_t)offset);
	return step_id(s, sel, id, "find an address");
}

static int store_stack(struct store *s, size_t idx)
{
	const Nunatak__Wire__Stack *stack = s->b->stacks[idx];
	sqlite3_stmt *st = s->st[ST_STACK], *sf = s->st[ST_STACK_FRAME];
	char *digest;
	int64_t address;
	size_t i;
	int err;

	digest = stack_digest(s, stack);
	if (!digest)
		return -ENOMEM;
	sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)stack->n_frames);
	sqlite3_bind_int(st, 3, stack->truncated ? 1 : 0);
	err = pivot_step_done(s->p, st, "store a stack");
	if (err)
		goto cleanup;
	if (!sqlite3_changes(s->p->db)) {
		/* known stack: its addresses are stored already */
		sqlite3_stmt *sel = s->st[ST_STACK_SELECT];

		sqlite3_bind_text(sel, 1, digest, -1, SQLITE_STATIC);
		err = step_id(s, sel, &s->stack_ids[idx], "find a stack");
		sqlite3_clear_bindings(sel);
		goto cleanup;
	}
	s->stack_ids[idx] = sqlite3_last_insert_rowid(s->p->db);
	for (i = 0; i < stack->n_frames; i++) {
		err = store_address_cached(s, stack->frames[i]->module, stack->frames[i]->offset,
					   &address);
		if (err)
			goto cleanup;
		sqlite3_bind_int64(sf, 1, s->stack_ids[idx]);
		sqlite3_bind_int64(sf, 2, (int64_t)i);
		sqlite3_bind_int64(sf, 3, address);
		err = pivot_step_done(s->p, sf, "store a stack frame");
		if (err)
			goto cleanup;
	}
cleanup:
	sqlite3_clear_bindings(st);
	free(digest);
	return err;
}

static int store_stacks(struct store *s)
{
	size_t i;
	int err;

	for (i = 0; i < s->b->n_stacks; i++) {
		err = store_stack(s, i);
		if (err)
			return err;
	}
	return 0;
}

/* An attribution made before new addresses arrived (stack frames or MPI
 * call sites) is incomplete: the module is attributed again. */
static int store_unattribute(struct store *s)
{
	size_t i;
	int err;

	for (i = 0; i < s->b->n_modules; i++) {
		if (!s->new_address[i])
			continue;
		sqlite3_bind_int64(s->st[ST_MODULE_UNATTRIBUTE], 1, s->module_ids[i]);
		err = pivot_step_done(s->p, s->st[ST_MODULE_UNATTRIBUTE],
				      "reset a module attribution");
		if (err)
			return err;
	}
	return 0;
}

static int store_samples(struct store *s)
{
	sqlite3_stmt *st = s->st[ST_SAMPLE];
	size_t i;
	int err;

	for (i = 0; i < s->b->n_samples; i++) {
		const Nunatak__Wire__SampleCount *sc = s->b->samples[i];

		sqlite3_bind_int64(st, 1, s->locus_ids[sc->locus]);
		sqlite3_bind_int64(st, 2, s->stack_ids[sc->stack]);
		pivot_bind_text(st, 3, sc->counter);
		sqlite3_bind_int(st, 4, sc->in_kernel ? 1 : 0);
		sqlite3_bind_int64(st, 5, (int64_t)sc->sample_count);
		sqlite3_bind_int64(st, 6, (int64_t)sc->value);
		err = pivot_step_done(s->p, st, "store a sample count");
		if (err)
			return err;
	}
	return 0;
}

static int store_degradations_counters(struct store *s)
{
	sqlite3_stmt *deg = s->st[ST_DEGRADATION], *cnt = s->st[ST_COUNTER];
	size_t i;
	int err;

	for (i = 0; i < s->b->n_degradations; i++) {
		const Nunatak__Wire__Degradation *d = s->b->degradations[i];

		pivot_bind_text(deg, 1, s->b->node);
		pivot_bind_text(deg, 2, d->name);
		pivot_bind_text(deg, 3, d->message);
		pivot_bind_text(deg, 4, d->remedy);
		err = pivot_step_done(s->p, deg, "store a degradation");
		if (err)
			return err;
	}
	for (i = 0; i < s->b->n_counters; i++) {
		pivot_bind_text(cnt, 1, s->b->node);
		pivot_bind_text(cnt, 2, s->b->counters[i]->name);
		sqlite3_bind_int64(cnt, 3, (int64_t)s->b->counters[i]->value);
		err = pivot_step_done(s->p, cnt, "store a counter");
		if (err)
			return err;
	}
	return 0;
}

static int store_alloc(struct store *s)
{
	const Nunatak__Wire__Batch *b = s->b;

	/* +1: calloc(0) may return NULL */
	s->module_ids = calloc(b->n_modules + 1, sizeof(*s->module_ids));
	s->new_address = calloc(b->n_modules + 1, 1);
	s->locus_ids = calloc(b->n_loci + 1, sizeof(*s->locus_ids));
	s->stack_ids = calloc(b->n_stacks + 1, sizeof(*s->stack_ids));
	if (!s->module_ids || !s->new_address || !s->locus_ids || !s->stack_ids)
		return -ENOMEM;
	return 0;
}

/* After a failed statement: the errno that says why (the disk is full is
 * not the same news as a corrupt file), the transaction rolled back, so
 * the pivot stays what the previous Batch left. On a full disk the WAL
 * is checkpointed and truncated: it holds every page version written
 * since the last checkpoint, and giving that room back lets the next
 * Batch fit. */
static int store_failed(struct pivot *p, int err)
{
	if (err == -EIO)
		err = pivot_errno(p);
	pivot_rollback(p);
	if (err == -ENOSPC)
		sqlite3_wal_checkpoint_v2(p->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	return err;
}

/* COMMIT, said once by the caller when the disk is full (the Agent sends
 * the Batch again: a warning per try would flood stderr) */
static int store_commit(struct pivot *p)
{
	int rc = sqlite3_exec(p->db, "COMMIT", NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		return 0;
	if ((sqlite3_extended_errcode(p->db) & 0xff) != SQLITE_FULL)
		pr_warn("pivot '%s': cannot commit a batch: %s", p->path, sqlite3_errmsg(p->db));
	return -EIO;
}

int pivot_store_batch(struct pivot *p, const Nunatak__Wire__Batch *batch)
{
	struct store s = {.p = p, .b = batch};
	int err, i, dup;

	if (!p || !batch)
		return -EINVAL;
	err = batch_check(batch);
	if (err) {
		pr_warn("pivot '%s': malformed batch %" PRIu64 " from '%s' refused", p->path,
			batch->seq, batch->node ? batch->node : "?");
		return err;
	}
	if (p->read_only)
		return -EROFS;
	err = store_alloc(&s);
	if (err)
		goto cleanup;
	for (i = 0; i < ST_COUNT; i++) {
		err = pivot_prepare(p, store_sql[i], &s.st[i]);
		if (err)
			goto cleanup;
	}
	err = pivot_begin(p);
	if (err)
		goto cleanup;
	dup = store_batch_row(&s);
	if (dup) {
		err = dup < 0 ? dup : 0;
		pivot_rollback(p);
		if (dup > 0) {
			pr_debug("pivot: batch %" PRIu64 " from '%s' already stored", batch->seq,
				 batch->node);
			err = 1;
		}
		goto cleanup;
	}
	err = store_modules(&s);
	if (!err)
		err = store_module_symbols(&s);
	if (!err)
		err = store_loci(&s);
	if (!err)
		err = store_stacks(&s);
	if (!err)
		err = store_samples(&s);
	if (!err)
		err = store_degradations_counters(&s);
	if (!err)
		err = store_exits(&s);
	if (!err)
		err = store_mpi_call_sites(&s);
	if (!err)
		err = store_mpi_processes_events(&s);
	if (!err)
		err = store_components(&s);
	if (!err)
		err = store_unattribute(&s);
	if (!err)
		err = store_commit(p);
	if (err)
		err = store_failed(p, err);
cleanup:
	store_release(&s);
	return err;
}
