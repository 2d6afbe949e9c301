/* agent_target — the Targets of the Agent (see agent.h): creating one
 * (START), its end (drain, last Batch, FINALIZE), and its status. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/agent/sideband.h"
#include "userspace/agent/spool.h"
#include "userspace/launch/library_closure.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/wire/wire.h"

struct agent_target *agent_target_find(const struct agent *a, const char *run_id)
{
	struct agent_target *t;

	for (t = a->targets; t; t = t->next)
		if (t->state != TARGET_DONE && !strcmp(t->run_id, run_id))
			return t;
	return NULL;
}

int agent_target_exists(const struct agent *a, const char *run_id)
{
	return agent_target_find(a, run_id) != NULL;
}

static void agent_open_library(const char *path, void *ctx)
{
	struct agent *a = ctx;

	module_table_open_file(a->modules, path); /* the hook probes an MPI one */
}

/* the modules of the program about to start: its start waits for their
 * tables (more than the list holds: for every table queued) */
#define TARGET_MODULES_WAITED 128
struct target_modules {
	struct agent *a;
	struct module *m[TARGET_MODULES_WAITED];
	size_t n;
	int overflow;
};

/* a library of the program about to start: probed, and its unwind table
 * compiled before it starts, not while its ranks work (libmpich: 0.5 s) */
static void agent_prepare_library(const char *path, void *ctx)
{
	struct target_modules *tm = ctx;
	struct module *m = module_table_open_file(tm->a->modules, path);

	if (!m || !tm->a->unwinder)
		return;
	unwinder_prepare(tm->a->unwinder, m);
	if (tm->n < TARGET_MODULES_WAITED)
		tm->m[tm->n++] = m;
	else
		tm->overflow = 1;
}

/* Probe the MPI libraries the application can load before it starts:
 * probing a library when a rank maps it would miss MPI_Init and the first
 * calls. The libraries of the target program when it can be read (an
 * ELF program: its DT_NEEDED closure, into tm); else, once per Agent,
 * every MPI library installed (those ldconfig knows and those in
 * LD_LIBRARY_PATH). */
static void agent_probe_mpi(struct agent *a, const char *target_exe, struct target_modules *tm)
{
	if (!a->mpi && !a->unwinder)
		return;
	if (target_exe) {
		agent_prepare_library(target_exe, tm);
		if (!library_closure(target_exe, agent_prepare_library, tm))
			return;
	}
	if (!a->mpi || a->mpi_installed_probed)
		return;
	a->mpi_installed_probed = 1;
	library_installed("mpi", agent_open_library, a);
}

/* the tables of tm's modules, bounded: 0 or -ETIMEDOUT */
static int agent_wait_tables(struct agent *a, const struct target_modules *tm, int timeout_ms)
{
	long long deadline = clock_monotonic_ms() + timeout_ms;
	size_t i;
	int err = 0;

	if (tm->overflow)
		return unwinder_wait_idle(a->unwinder, timeout_ms);
	for (i = 0; i < tm->n && !err; i++)
		err = unwinder_wait_module(a->unwinder, tm->m[i], deadline);
	return err;
}

static void agent_target_base(struct agent_target *t)
{
	struct agent *a = t->a;

	if (!a->sampler)
		return;
	sampler_read_counters(a->sampler, &t->base.s);
	if (a->unwinder)
		unwinder_stats(a->unwinder, &t->base.u);
	t->base.mapping_lost = sideband_lost(a->sideband);
	if (a->mpi)
		mpi_probes_read_counters(a->mpi, t->base.mpi);
}

static int valid_token(const char *token)
{
	size_t i;

	for (i = 0; i < AGENT_TOKEN_LEN; i++)
		if (!isxdigit((unsigned char)token[i]) || isupper((unsigned char)token[i]))
			return 0;
	return token[AGENT_TOKEN_LEN] == '\0';
}

int agent_valid_run_id(const char *run_id)
{
	size_t i;

	if (!run_id || !*run_id || strlen(run_id) > SPOOL_RUN_ID_MAX)
		return 0;
	for (i = 0; run_id[i]; i++)
		if (!isalnum((unsigned char)run_id[i]) && !strchr("_.-", run_id[i]))
			return 0;
	return 1;
}

struct agent_target *agent_target_new(struct agent *a, const struct agent_target_opts *o,
				      size_t conn)
{
	struct agent_target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->a = a;
	t->run_id = strdup(o->run_id);
	t->queue = publish_queue__new(a->opts.queue_cap_bytes);
	if (!t->run_id || !t->queue) {
		agent_target_free(t);
		return NULL;
	}
	t->id = a->next_target_id++;
	t->uid = o->uid;
	t->gid = o->gid;
	t->mpi_events = o->mpi_events;
	t->mpi_budget = o->mpi_budget;
	t->job_id = o->job_id;
	t->closed = o->closed;
	t->closed_ctx = o->closed_ctx;
	t->conn = conn;
	if (o->token)
		snprintf(t->token, sizeof(t->token), "%s", o->token);
	agent_target_base(t);
	t->next = a->targets;
	a->targets = t;
	return t;
}

void agent_target_free(struct agent_target *t)
{
	if (!t)
		return;
	agent_components_end(t);
	publish_queue__free(t->queue);
	degradation_list_free(&t->degradations);
	free(t->exits);
	free(t->drained);
	free(t->mpi_events_buf);
	free(t->control_json);
	free(t->finalize_json);
	free(t->run_id);
	free(t);
}

/* the job's processes no longer join (idempotent) */
static void agent_target_job_detach(struct agent_target *t)
{
	if (!t->job_attached)
		return;
	t->job_attached = 0;
	agent_job_detach(t->a, t);
}

void agent_target_finish(struct agent_target *t, int err, const char *json)
{
	agent_done_fn done = t->done;
	struct agent_conn *c = &t->a->conns[t->conn];

	if (t->state == TARGET_DONE)
		return;
	t->state = TARGET_DONE;
	t->done = NULL;
	t->control_action = 0;
	if (c->control_owner == t)
		c->control_owner = NULL;
	agent_target_job_detach(t);
	agent_sampler_remove_target(t->a, t);
	if (t->mpi_events && t->a->mpi)
		mpi_probes_set_events(t->a->mpi, t->id, 0);
	agent_update_active(t->a);
	if (publish_queue_length(t->queue))
		agent_target_report_loss(t);
	if (done)
		done(t->done_ctx, err, json ? json : (err ? strerror(-err) : NULL));
}

void agent_targets_reap(struct agent *a)
{
	struct agent_target **pp = &a->targets, *t;

	while ((t = *pp)) {
		if (t->state != TARGET_DONE) {
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		agent_orphans_remember(t);
		agent_target_free(t);
	}
}

/* a Target that could not start: it never existed */
static void agent_target_discard(struct agent_target *t)
{
	struct agent *a = t->a;

	agent_target_job_detach(t);
	agent_sampler_remove_target(a, t);
	a->targets = t->next; /* the newest: the head */
	agent_target_free(t);
	agent_update_active(a);
}

/* what makes processes join t besides agent_target_follow: its token,
 * its job (the running processes of the job are adopted now) */
static int agent_target_membership(struct agent_target *t)
{
	struct agent *a = t->a;
	int n;

	if (!a->sampler)
		return 0;
	if (t->token[0]) {
		n = sampler_add_token(a->sampler, t->token, t->id, agent_target_uid(t));
		if (n)
			return n;
	}
	if (!t->job_id)
		return 0;
	n = agent_job_attach(a, t); /* says why when it fails */
	if (n < 0)
		return n;
	t->job_attached = 1;
	pr_debug("run %s: %d running processes of job %u adopted", t->run_id, n,
		 (unsigned)t->job_id);
	return 0;
}

int agent_target_start(struct agent *a, const struct agent_target_opts *o, agent_done_fn done,
		       void *ctx)
{
	const char *key = o->route_key ? o->route_key : o->run_id;
	struct target_modules tm = { .a = a };
	struct agent_target *t;
	int err;

	if (!agent_valid_run_id(o->run_id) || (o->token && !valid_token(o->token)) || !*key)
		return -EINVAL;
	if (agent_target_find(a, o->run_id) || agent_request_exists(a, o->run_id))
		return -EEXIST;
	t = agent_target_new(a, o, agent_route(key, a->n_conns));
	if (!t)
		return -ENOMEM;
	t->done = done;
	t->done_ctx = ctx;
	err = agent_target_membership(t);
	if (err) {
		agent_target_discard(t);
		return err;
	}
	if (t->mpi_events && a->mpi && mpi_probes_set_events(a->mpi, t->id, 1))
		degradation_list_add(&t->degradations, "mpi-events-unavailable",
				     "MPI Events cannot be recorded for this Run (the Agent's "
				     "per-Run Event table is full)",
				     "fewer Runs with --mpi-events at once");
	agent_probe_mpi(a, o->target_exe, &tm);
	if (agent_components_start(a, t, o)) {
		agent_target_discard(t);
		return -ENOMEM;
	}
	/* the program's tables before it starts (it waits for this answer):
	 * compiled while it runs, a large one (libmpich: 0.5 s of CPU) took a
	 * core from its ranks; bounded, a Degradation-free wait */
	if (a->unwinder && o->target_exe && agent_wait_tables(a, &tm, AGENT_TABLES_WAIT_MS))
		pr_info("run %s: unwind tables still compiling after %d ms: the first samples' "
			"call paths may end early", o->run_id, AGENT_TABLES_WAIT_MS);
	agent_update_active(a);
	if (!o->start_json) {
		t->state = TARGET_ACTIVE;
		t->done = NULL;
		if (done)
			done(ctx, 0, NULL);
		return 0;
	}
	t->control_json = strdup(o->start_json);
	if (!t->control_json) {
		agent_target_discard(t);
		return -ENOMEM;
	}
	t->state = TARGET_STARTING;
	t->control_action = NUNATAK__WIRE__CONTROL__ACTION__START;
	t->deadline_ms = clock_monotonic_ms() + AGENT_START_TIMEOUT_MS;
	return 0;
}

int agent_target_add_degradation(struct agent *a, const char *run_id, const char *name,
				 const char *message, const char *remedy)
{
	struct agent_target *t = agent_target_find(a, run_id);

	return t ? degradation_list_add(&t->degradations, name, message, remedy) : -ENOENT;
}

/* the bound of the end: the FINALIZE's budgets + AGENT_END_EXTRA_MS */
static long long agent_end_budget_ms(const char *finalize_json)
{
	json_t *j = finalize_json ? json_loads(finalize_json, 0, NULL) : NULL;
	long long ms = AGENT_END_EXTRA_MS + AGENT_END_FLUSH_LIVE_MS;

	if (j) {
		json_t *b = json_object_get(j, "symbolizer_budget_ms");
		json_t *w = json_object_get(j, "nodes_wait_ms");

		ms += json_is_integer(b) && json_integer_value(b) > 0 ? json_integer_value(b) : 0;
		ms += json_is_integer(w) && json_integer_value(w) > 0 ? json_integer_value(w) : 0;
	}
	json_decref(j);
	return ms;
}

int agent_target_end(struct agent *a, const char *run_id, const char *finalize_json,
		     agent_done_fn done, void *ctx)
{
	struct agent_target *t = agent_target_find(a, run_id);
	long long now = clock_monotonic_ms();
	int err;

	if (!t)
		return -ENOENT;
	if (t->state != TARGET_ACTIVE)
		return t->state == TARGET_STARTING ? -EBUSY : -EALREADY;
	if (finalize_json && !(t->finalize_json = strdup(finalize_json)))
		return -ENOMEM;
	t->done = done;
	t->done_ctx = ctx;
	t->state = TARGET_ENDING;
	t->deadline_ms = now + agent_end_budget_ms(finalize_json);
	t->end_ms = now;
	t->flush_deadline_ms = now + (agent_conn_answering(&a->conns[t->conn], now)
					      ? AGENT_END_FLUSH_LIVE_MS
					      : AGENT_END_FLUSH_MS);
	/* no process joins any more; what the kernel holds for it now is its
	 * last data */
	agent_target_job_detach(t);
	err = agent_drain_all(a);
	if (err)
		pr_warn("run %s: the last drain failed: %s", t->run_id, strerror(-err));
	err = agent_target_queue_batch(t, 0);
	if (err)
		pr_warn("run %s: the last data Batch was not built: %s", t->run_id, strerror(-err));
	return 0;
}

/* json with "interrupted": true */
static char *json_interrupted(const char *json)
{
	json_t *j = json_loads(json ? json : "{}", 0, NULL);
	char *s = NULL;

	if (!j || !json_is_object(j))
		j = (json_decref(j), json_object());
	if (j && !json_object_set_new(j, "interrupted", json_true()))
		s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

int agent_target_interrupt(struct agent *a, const char *run_id)
{
	struct agent_target *t = agent_target_find(a, run_id);
	char *json;

	if (!t)
		return -ENOENT;
	if (t->interrupted)
		return 0;
	t->interrupted = 1;
	json = json_interrupted(t->finalize_json);
	if (json) {
		free(t->finalize_json);
		t->finalize_json = json;
	}
	if (t->state == TARGET_FINALIZING || t->state == TARGET_ENDING) {
		long long grace = clock_monotonic_ms() + AGENT_INTERRUPT_GRACE_MS;

		if (t->state == TARGET_ENDING) /* the last Batch first, then FINALIZE */
			grace += AGENT_END_FLUSH_MS;
		t->interrupt_sent = 0; /* agent_send.c sends FINALIZE again */
		if (t->deadline_ms > grace)
			t->deadline_ms = grace;
	}
	return 0;
}

static const char *const state_names[] = {"starting", "active", "ending", "finalizing",
					  "done"};

json_t *agent_target_status(const struct agent_target *t)
{
	struct agent *a = t->a;
	int live = agent_target_live_processes(a, t->run_id);
	const struct publish_loss *l = publish_queue_loss(t->queue);
	size_t spooled = a->spool ? spool_count(a->spool, t->run_id, a->incarnation) : 0;

	return json_pack("{s:s, s:I, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:o}",
			 "run_id", t->run_id, "uid", (json_int_t)t->uid, "processes",
			 live < 0 ? 0 : live, "batches_sent", (json_int_t)t->batches_sent, "acked",
			 (json_int_t)t->batches_acked, "queued",
			 (json_int_t)publish_queue_length(t->queue), "spooled", (json_int_t)spooled,
			 "dropped",
			 (json_int_t)(t->spool_dropped_batches + l->failed_batches +
				      l->refused_batches),
			 "samples_sent", (json_int_t)t->samples_sent, "target_id", (json_int_t)t->id,
			 "state", state_names[t->state], "endpoint", a->conns[t->conn].endpoint,
			 "job_id", t->job_id ? json_integer(t->job_id) : json_null());
}
