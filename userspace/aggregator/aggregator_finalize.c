/* aggregator_finalize — FINALIZE of one Run beside the serving loop: CLOSE
 * to the Run's other nodes, a bounded wait for their last Batch (a node
 * that sends none is `node-lost`), then finalize_run() in a thread of its
 * own, as the owner, while the loop goes on serving the other Runs; the
 * loop answers FINALIZE once the thread is done. A Run of a job profiled
 * by its Prolog (no nunatak command ends it to write the page) also gets
 * its report.html there, once finalized; a failure to write it is only
 * logged (`nunatak report RUN` makes it later). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "report/report_html.h"
#include "report/run_model.h"
#include "userspace/aggregator/aggregator_internal.h"
#include "userspace/aggregator/aggregator_job.h"
#include "userspace/aggregator/as_owner.h"
#include "userspace/aggregator/finalize.h"
#include "userspace/aggregator/run_manifest.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

int agg_json_int_in(const json_t *j, const char *key, int min, int max, int dflt)
{
	json_t *v = json_object_get(j, key);

	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return dflt;
	return (int)json_integer_value(v);
}

/* a node that has the Run (OPENed, or sent Batches of it), not its
 * origin, whose last Batch is not in */
static int is_waited_for(const struct agg_run *r, const struct agg_node *n)
{
	return (n->opened || n->sent_batch) && strcmp(n->name, r->origin) && !n->sent_last;
}

int agg_finalize_request(struct aggregator *agg, const struct agg_peer *from,
			 const Nunatak__Wire__Control *c)
{
	struct agg_run *r = agg_run_find(agg, c->run_id);
	char why[512];
	json_t *fin;

	if (!r) {
		snprintf(why, sizeof(why), "FINALIZE names unknown run '%s'", c->run_id);
		return agg_reply_error(agg, from, ENOENT, c->run_id, why);
	}
	if (strcmp(from->key, r->origin_key) && !(r->job && r->job->mode == AGG_JOB_PROLOG)) {
		snprintf(why, sizeof(why),
			 "FINALIZE of run '%s' refused: it comes from another Agent than the one "
			 "that started it",
			 c->run_id);
		return agg_reply_error(agg, from, EPERM, c->run_id, why);
	}
	fin = json_loads(c->json ? c->json : "{}", 0, NULL);
	if (!json_is_object(fin)) {
		json_decref(fin);
		snprintf(why, sizeof(why), "malformed FINALIZE for run '%s'", c->run_id);
		return agg_reply_error(agg, from, EINVAL, c->run_id, why);
	}
	if (r->job && r->job->mode == AGG_JOB_PROLOG)
		return agg_job_epilog(agg, from, r, c, fin); /* one node's end */
	if (r->state == RUN_COLLECTING && json_is_true(json_object_get(fin, "discard"))) {
		/* the application never ran: no Run to keep (one left in place
		 * holds more than nunatak's files: its directory is said) */
		json_t *ack = json_pack("{s:s}", "run_dir", r->run_dir);
		char *text;
		int err;

		json_decref(fin);
		if (agg_run_discard(agg, r))
			json_object_set_new(ack, "run_dir", json_string(""));
		json_object_set_new(
		    ack, "discarded",
		    json_boolean(!json_string_length(json_object_get(ack, "run_dir"))));
		text = json_dumps(ack, JSON_COMPACT);
		json_decref(ack);
		err = agg_reply_ack(agg, from, c->run_id, "", 0, 0, 0, text);
		free(text);
		return err;
	}
	if (r->state != RUN_COLLECTING) {
		/* asked again: an interruption is obeyed (now, or when the
		 * finalize starts), the finalize goes on; one answer for both,
		 * to the latest to ask */
		r->requester = *from;
		if (json_is_true(json_object_get(fin, "interrupted"))) {
			if (r->cancel_fd >= 0)
				agg_eventfd_signal(r->cancel_fd);
			else if (r->finalize)
				json_object_set_new(r->finalize, "interrupted", json_true());
		}
		json_decref(fin);
		return 0;
	}
	if (c->node && c->node[0] && strcmp(c->node, r->origin)) {
		free(r->origin);
		r->origin = strdup(c->node);
		if (!r->origin)
			r->origin = strdup("");
	}
	agg_finalize_begin(agg, r, from, fin);
	return 0;
}

void agg_finalize_begin(struct aggregator *agg, struct agg_run *r, const struct agg_peer *from,
			json_t *fin)
{
	struct agg_agent *a;
	size_t i;

	if (from)
		r->requester = *from;
	else
		r->requester.len = 0;
	r->finalize = fin;
	r->state = RUN_CLOSING;
	r->nodes_deadline_ms =
	    clock_monotonic_ms() + agg_json_int_in(fin, "nodes_wait_ms", 0, AGG_NODES_WAIT_MAX_MS,
						   AGG_NODES_WAIT_DEFAULT_MS);
	for (i = 0; i < r->n_nodes; i++) {
		if (!is_waited_for(r, &r->nodes[i]))
			continue;
		a = agg_agent_find(agg, r->nodes[i].name);
		if (a && agg_send_control(agg, &a->peer, NUNATAK__WIRE__CONTROL__ACTION__CLOSE,
					  r->run_id, NULL, a->node))
			pr_warn("run '%s': cannot send CLOSE to node '%s'", r->run_id, a->node);
	}
}

/* `node-lost` for node n of r (as the owner, on the serving thread) */
static void node_lost(struct agg_run *r, const struct agg_node *n)
{
	struct agg_agent *a = agg_agent_find(r->agg, n->name);
	time_t last = n->last_batch;
	char message[768], when[64] = "never";
	struct tm tm;

	if (a && a->last_contact > last)
		last = a->last_contact;
	if (last && localtime_r(&last, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", &tm);
	snprintf(message, sizeof(message),
		 "node %s sent no last Batch by the end of the Run (%s; last contact: %s): what "
		 "it measured after its last stored Batch is missing",
		 n->name, n->sent_batch ? "it sent Batches before" : "it sent no Batch at all",
		 when);
	pivot_add_node_degradation(r->pivot, n->name, "node-lost", message,
				   "check nunatakd on that node (is it running? its log says why); "
				   "run the application again for a complete Run");
	pr_warn("run '%s': %s", r->run_id, message);
}

/* the machines of the Run's nodes, as their Hello said (origin: "machine") */
static void manifest_machines(struct agg_run *r)
{
	struct agg_agent *a;
	json_t *machine;
	size_t i;

	for (i = 0; i < r->n_nodes; i++) {
		a = agg_agent_find(r->agg, r->nodes[i].name);
		if (!a || !a->machine_json)
			continue;
		machine = json_loads(a->machine_json, 0, NULL);
		run_manifest_set_machine(r->manifest, r->nodes[i].name,
					 !strcmp(r->nodes[i].name, r->origin), machine);
		json_decref(machine);
	}
}

/* report.html of a finalized Prolog job Run, as its owner */
static void job_report(struct agg_run *r)
{
	struct report_html_stats st = {0};
	struct run_model m;
	int err;

	err = run_model_build(&m, r->pivot, r->manifest, RUN_MODEL_COMPONENTS);
	if (!err) {
		m.run_dir = r->run_dir;
		err = report_html_write(r->dir_fd, REPORT_HTML_NAME, &m, 0, &st);
		run_model_release(&m);
	}
	if (err)
		pr_warn("run '%s': cannot write %s/%s: %s; 'nunatak report %s' makes it",
			r->run_id, r->run_dir, REPORT_HTML_NAME, strerror(-err), r->run_dir);
	else
		pr_info("run '%s': %s/%s written (%zu bytes)", r->run_id, r->run_dir,
			REPORT_HTML_NAME, (size_t)st.bytes);
}

static void *finalize_thread(void *arg)
{
	struct agg_run *r = arg;
	struct symbolizer_budget budget, *previous;
	struct tool_user tu = {r->uid, r->gid};
	const struct tool_user *prev_tu;
	struct as_owner o;
	int err;

	symbolizer_budget_init(
	    &budget, SYMBOLIZER_REQUEST_MS,
	    agg_json_int_in(r->finalize, "symbolizer_budget_ms", 1, INT_MAX, SYMBOLIZER_TOTAL_MS),
	    r->cancel_fd);
	err = as_owner_enter(&o, r->uid, r->gid);
	if (!err) {
		prev_tu = tool_user_bind(&tu);
		previous = symbolizer_budget_bind(&budget);
		err = finalize_run(r->pivot, r->dir_fd, r->manifest, r->symbolizer);
		if (!err && r->job && r->job->mode == AGG_JOB_PROLOG)
			job_report(r);
		symbolizer_budget_bind(previous);
		tool_user_bind(prev_tu);
		as_owner_leave(&o);
	}
	if (err)
		snprintf(r->fin_why, sizeof(r->fin_why), "finalizing run '%s' failed: %s",
			 r->run_id, strerror(-err));
	r->fin_err = err;
	atomic_store(&r->done, 1);
	agg_eventfd_signal(r->agg->done_fd);
	return NULL;
}

/* the wait for r's nodes is over: its finalize starts */
static void finalize_start(struct aggregator *agg, struct agg_run *r)
{
	struct as_owner o;
	size_t i;
	int err;

	if (!as_owner_enter(&o, r->uid, r->gid)) {
		for (i = 0; i < r->n_nodes; i++)
			if (is_waited_for(r, &r->nodes[i]))
				node_lost(r, &r->nodes[i]);
		agg_job_degrade(r);
		as_owner_leave(&o);
	}
	manifest_machines(r);
	run_manifest_set_end(r->manifest, r->finalize);
	r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->cancel_fd >= 0 &&
	    (agg->interrupt_next || json_is_true(json_object_get(r->finalize, "interrupted"))))
		agg_eventfd_signal(r->cancel_fd);
	agg->interrupt_next = 0;
	r->state = RUN_FINALIZING;
	atomic_store(&r->done, 0);
	err = r->cancel_fd < 0 ? errno : pthread_create(&r->thread, NULL, finalize_thread, r);
	if (err) {
		snprintf(r->fin_why, sizeof(r->fin_why),
			 "cannot finalize run '%s': no thread for it: %s; free memory and ask "
			 "again",
			 r->run_id, strerror(err));
		r->fin_err = -err;
		atomic_store(&r->done, 1);
		return;
	}
	r->thread_started = 1;
}

/* the finalize of r is done: FINALIZE answered; r closed when it worked,
 * left open otherwise (FINALIZE may be asked again) */
static void finalize_answer(struct aggregator *agg, struct agg_run *r)
{
	struct agg_peer requester;
	char *text, *run_id;
	json_t *j;

	if (r->thread_started)
		pthread_join(r->thread, NULL);
	r->thread_started = 0;
	close(r->cancel_fd);
	r->cancel_fd = -1;
	if (r->fin_err) {
		if (r->requester.len)
			agg_reply_error(agg, &r->requester, -r->fin_err, r->run_id, r->fin_why);
		else
			pr_warn("%s; the Run stays open", r->fin_why);
		if (r->job && !r->requester.len)
			r->job->auto_failed = 1; /* not again at each tick */
		r->state = RUN_COLLECTING;
		json_decref(r->finalize);
		r->finalize = NULL;
		return;
	}
	j = json_pack("{s:s}", "run_dir", r->run_dir);
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	requester = r->requester;
	run_id = strdup(r->run_id);
	pr_info("run '%s' finalized in '%s'", r->run_id, r->run_dir);
	agg_state_remove(agg, r->run_id);
	/* closed (pivot, lock) before the answer: whoever reads the Run on
	 * it finds it whole and no longer written */
	agg_run_close(r);
	if (requester.len)
		agg_reply_ack(agg, &requester, run_id ? run_id : "", "", 0, 0, 0, text);
	free(run_id);
	free(text);
	agg->finalized++;
}

int agg_finalize_tick(struct aggregator *agg)
{
	long long now = clock_monotonic_ms();
	struct agg_run *r, *next;
	int timeout = -1;
	size_t i;

	for (r = agg->runs; r; r = next) {
		next = r->next;
		if (r->state == RUN_FINALIZING && atomic_load(&r->done)) {
			finalize_answer(agg, r);
			continue;
		}
		if (r->state != RUN_CLOSING)
			continue;
		for (i = 0; i < r->n_nodes && !is_waited_for(r, &r->nodes[i]); i++)
			;
		if (i == r->n_nodes || now >= r->nodes_deadline_ms) {
			finalize_start(agg, r);
			if (atomic_load(&r->done)) /* it could not start */
				next = r;
			continue;
		}
		if (timeout < 0 || r->nodes_deadline_ms - now < timeout)
			timeout = (int)(r->nodes_deadline_ms - now);
	}
	return timeout;
}

void agg_finalize_interrupt_all(struct aggregator *agg)
{
	struct agg_run *r;
	int finalizing = 0, closing = 0;

	for (r = agg->runs; r; r = r->next) {
		if (r->state == RUN_FINALIZING && r->cancel_fd >= 0) {
			agg_eventfd_signal(r->cancel_fd);
			finalizing = 1;
		}
		closing |= r->state == RUN_CLOSING;
	}
	/* none under way: the next one is interrupted */
	if (!finalizing || closing)
		agg->interrupt_next = 1;
}

void agg_finalize_join_all(struct aggregator *agg)
{
	struct agg_run *r;

	for (r = agg->runs; r; r = r->next) {
		if (!r->thread_started)
			continue;
		if (r->cancel_fd >= 0)
			agg_eventfd_signal(r->cancel_fd);
		pthread_join(r->thread, NULL);
		r->thread_started = 0;
		/* finalized but not answered: nothing left to resume */
		if (!r->fin_err)
			agg_state_remove(agg, r->run_id);
	}
}
