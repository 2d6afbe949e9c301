/* agent_dispatch — the Agent's event loop step (see agent.h): kernel
 * reports, drains when due, replies, each Target's Batch in flight (its
 * oldest spooled one, else its queue's head), the spool, the end of
 * Targets, timers, and the status. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <zmq.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/mpi_budget.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/spool.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

#define AGENT_DISPATCH_ROUNDS 8

void agent_spool_batch(struct agent_target *t, struct queued_batch *qb)
{
	struct agent *a = t->a;
	int err = spool_put(a->spool, t->run_id, qb->incarnation, qb->seq, qb->buf, qb->len,
			    qb->samples);

	if (!err) {
		t->batches_spooled++;
		t->spooling = 1;
	} else {
		if (!t->spool_dropped_batches)
			pr_warn("run %s: batch %llu not spooled (%s): dropped, counted as "
				"spool-full",
				t->run_id, (unsigned long long)qb->seq,
				err == -ENOSPC ? "the spool is full" : strerror(-err));
		t->spool_dropped_batches++;
		t->spool_dropped_samples += qb->samples;
	}
	free(qb->buf);
}

/* Another Target on t's connection has a Batch of the same seq in flight:
 * an Error naming it would be ambiguous, so t waits. */
static int agent_seq_busy(const struct agent *a, const struct agent_target *t, uint64_t seq)
{
	const struct agent_target *o;

	for (o = a->targets; o; o = o->next)
		if (o != t && o->conn == t->conn && o->state != TARGET_DONE && o->inflight_valid &&
		    o->inflight_sent_ms && o->inflight_seq == seq)
			return 1;
	return 0;
}

/* The Batch t is to send (its oldest spooled one, else its queue's
 * head): 1 and *seq, *se (NULL: the queue's head), or 0 when none. */
static int agent_target_head(struct agent_target *t, uint64_t *seq,
			     const struct spool_entry **se)
{
	struct agent *a = t->a;
	struct queued_batch *qb;

	*se = a->spool ? spool_oldest(a->spool, t->run_id, a->incarnation) : NULL;
	if (*se) {
		*seq = (*se)->seq;
		return 1;
	}
	t->spooling = 0; /* its spooled Batches are all replayed */
	qb = publish_queue_head(t->queue);
	if (!qb)
		return 0;
	*seq = qb->seq;
	return 1;
}

/* Sends t's head (se, or the queue's head): 0, or -errno (-EAGAIN: no
 * Aggregator connected). An unreadable spooled Batch is dropped, counted. */
static int agent_target_send_head(struct agent_target *t, const struct spool_entry *se)
{
	struct agent *a = t->a;
	struct queued_batch *qb;
	void *buf;
	size_t len;
	int err;

	if (!se) {
		qb = publish_queue_head(t->queue);
		return agent_conn_send_buf(&a->conns[t->conn], qb->buf, qb->len);
	}
	err = spool_read(a->spool, se, &buf, &len);
	if (err) { /* unreadable: it never will be */
		pr_warn("run %s: spooled batch %llu unreadable (%s): dropped", t->run_id,
			(unsigned long long)se->seq, strerror(-err));
		publish_queue_count_lost(t->queue, se->samples, -err);
		spool_remove(a->spool, t->run_id, a->incarnation, se->seq);
		t->inflight_valid = 0;
		return 0;
	}
	err = agent_conn_send_buf(&a->conns[t->conn], buf, len);
	free(buf);
	return err;
}

/* No Ack for AGENT_RESEND_MS: what t keeps in memory goes to the spool
 * (the Batch in flight included: sent again from there). */
static void agent_target_spool_all(struct agent_target *t)
{
	struct queued_batch qb;

	while (!publish_queue_take_oldest(t->queue, &qb)) {
		if (qb.last) { /* the last Batch is never dropped: it stays in memory */
			publish_queue_push_packed(t->queue, &qb);
			break;
		}
		agent_spool_batch(t, &qb);
	}
}

/* No Ack for AGENT_RESEND_MS since the first attempt of the Batch in
 * flight, which is in memory: the memory queue goes to the spool. */
static int agent_target_spool_due(struct agent_target *t, long long now)
{
	struct queued_batch *head = publish_queue_head(t->queue);

	return t->a->spool && t->inflight_valid && !t->inflight_from_spool &&
	       t->inflight_first_ms && now - t->inflight_first_ms >= AGENT_RESEND_MS && head &&
	       head->seq == t->inflight_seq && !head->last;
}

static void agent_target_send(struct agent_target *t, long long now)
{
	const struct spool_entry *se;
	uint64_t seq;
	int err;

	if (t->state != TARGET_ACTIVE && t->state != TARGET_ENDING)
		return;
	if (agent_target_spool_due(t, now))
		agent_target_spool_all(t); /* the one in flight is resent from there */
	if (now < t->retry_ms)
		return;
	if (!agent_target_head(t, &seq, &se)) {
		t->inflight_valid = 0;
		return;
	}
	t->inflight_from_spool = se != NULL;
	if (!t->inflight_valid || t->inflight_seq != seq) {
		t->inflight_valid = 1;
		t->inflight_seq = seq;
		t->inflight_sent_ms = t->inflight_first_ms = 0;
	}
	if (t->inflight_sent_ms && now - t->inflight_sent_ms < AGENT_RESEND_MS)
		return;
	if (agent_seq_busy(t->a, t, seq)) {
		t->retry_ms = now + AGENT_RETRY_MS;
		return;
	}
	err = agent_target_send_head(t, se);
	if (!t->inflight_first_ms)
		t->inflight_first_ms = now;
	if (err) {
		t->retry_ms = now + AGENT_RETRY_MS;
		return;
	}
	t->inflight_sent_ms = now;
}

static int agent_target_queue_empty(const struct agent_target *t)
{
	return !publish_queue_length(t->queue) &&
	       !(t->a->spool && spool_count(t->a->spool, t->run_id, t->a->incarnation));
}

/* The end's bound for the Batches not acknowledged yet passed. An
 * Aggregator that answers but does not store them (disk full): they are
 * lost, counted in the last Batch, which it may store from its reserve.
 * An Aggregator that does not answer at all: they are kept in the spool
 * (replayed when it is back, the Run not finalized meanwhile), without a
 * spool lost and counted. */
static void agent_target_give_up_unacked(struct agent_target *t, long long now)
{
	struct agent *a = t->a;
	const struct agent_conn *c = &a->conns[t->conn];
	const struct spool_entry *se;
	int answering = agent_conn_answering(c, now);

	if (a->spool && !answering) {
		agent_target_spool_all(t);
		return;
	}
	publish_queue_abandon(t->queue);
	while (a->spool && (se = spool_oldest(a->spool, t->run_id, a->incarnation))) {
		publish_queue_count_lost(t->queue, se->samples, 0);
		spool_remove(a->spool, t->run_id, a->incarnation, se->seq);
	}
	t->spooling = 0;
	t->inflight_valid = 0;
}

/* ENDING: the queue acked (or its bound passed) → the last Batch; that
 * acked → FINALIZE, or the end. Every state's bound: done(-ETIMEDOUT). */
static void agent_target_progress(struct agent_target *t, long long now)
{
	if (t->state == TARGET_DONE)
		return;
	if ((t->state == TARGET_STARTING || t->state == TARGET_ENDING ||
	     t->state == TARGET_FINALIZING) &&
	    now >= t->deadline_ms) {
		agent_target_finish(t, -ETIMEDOUT,
				    t->state == TARGET_STARTING
					? "the aggregator did not answer START in time"
					: "the aggregator did not acknowledge the end in time");
		return;
	}
	if (t->state != TARGET_ENDING)
		return;
	if (!t->last_queued && (agent_target_queue_empty(t) || now >= t->flush_deadline_ms)) {
		if (!agent_target_queue_empty(t))
			agent_target_give_up_unacked(t, now);
		if (agent_target_queue_batch(t, 1))
			return;
		t->last_queued = 1;
	}
	if (!t->last_queued || !agent_target_queue_empty(t))
		return;
	if (!t->finalize_json) {
		agent_target_finish(t, 0, NULL);
		return;
	}
	t->state = TARGET_FINALIZING;
	free(t->control_json);
	t->control_json = strdup(t->finalize_json);
	t->control_action = NUNATAK__WIRE__CONTROL__ACTION__FINALIZE;
	t->control_sent_ms = 0;
}

static int agent_drain_due(struct agent *a, long long now)
{
	struct agent_target *t;
	int err;

	if (now < a->next_drain_ms)
		return 0;
	a->next_drain_ms += a->opts.drain_interval_ms;
	if (a->next_drain_ms <= now)
		a->next_drain_ms = now + a->opts.drain_interval_ms;
	err = agent_drain_all(a);
	if (err && err != -ENOMEM)
		pr_warn("drain failed: %s", strerror(-err));
	for (t = a->targets; t; t = t->next)
		if (t->state == TARGET_ACTIVE) {
			int e = agent_target_queue_batch(t, 0);

			if (e == -ENOMEM)
				return e;
		}
	return 0;
}

int agent_send_all(struct agent *a)
{
	long long now = clock_monotonic_ms();
	struct agent_target *t;

	agent_conns_tick(a, now);
	agent_requests_tick(a, now);
	for (t = a->targets; t; t = t->next) {
		agent_target_progress(t, now);
		agent_target_send(t, now);
	}
	agent_send_orphans(a, now);
	return 0;
}

static int agent_any_readable(const struct agent *a)
{
	size_t i;

	for (i = 0; i < a->n_conns; i++)
		if (agent_conn_readable(&a->conns[i]))
			return 1;
	return 0;
}

int agent_dispatch(struct agent *a)
{
	int err, round, n;

	err = agent_process_events(a);
	if (err == -ENOMEM)
		return err;
	if (a->mpi)
		mpi_probes_tick(a->mpi);
	err = agent_drain_due(a, clock_monotonic_ms());
	for (round = 0; !err && round < AGENT_DISPATCH_ROUNDS; round++) {
		n = agent_read_all(a);
		if (n < 0) {
			err = n == -ETERM ? n : 0;
			break;
		}
		agent_send_all(a);
		/* ZMQ_FD is edge-triggered: ask the sockets again after sending */
		if (!n && !agent_any_readable(a))
			break;
	}
	agent_targets_reap(a);
	return err;
}

static void timer_min(long long *next, long long t)
{
	if (t > 0 && (*next < 0 || t < *next))
		*next = t;
}

static long long agent_target_timer(struct agent_target *t)
{
	long long next = -1;

	if (t->state == TARGET_DONE)
		return 1;
	if (t->state != TARGET_ACTIVE)
		timer_min(&next, t->deadline_ms);
	if (t->state == TARGET_ENDING && !t->last_queued)
		timer_min(&next, t->flush_deadline_ms);
	if (t->inflight_valid && !t->inflight_sent_ms) /* the socket refused it */
		timer_min(&next, t->retry_ms ? t->retry_ms : 1);
	/* queued (the end's last Batches) with nothing in flight: send it now
	 * (or when the socket may be tried again), not at the next drain */
	if ((t->state == TARGET_ACTIVE || t->state == TARGET_ENDING) && !t->inflight_valid &&
	    publish_queue_length(t->queue))
		timer_min(&next, t->retry_ms ? t->retry_ms : 1);
	if (t->inflight_valid && t->inflight_sent_ms)
		timer_min(&next, t->inflight_sent_ms + AGENT_RESEND_MS);
	if (agent_target_spool_due(t, t->inflight_first_ms + AGENT_RESEND_MS))
		timer_min(&next, t->inflight_first_ms + AGENT_RESEND_MS);
	if (t->control_action && !t->control_sent_ms)
		timer_min(&next, clock_monotonic_ms() + AGENT_RETRY_MS);
	if (t->state == TARGET_FINALIZING && t->control_sent_ms)
		timer_min(&next, t->control_sent_ms + AGENT_FINALIZE_RESEND_MS);
	return next;
}

int agent_timeout_ms(const struct agent *a)
{
	long long now = clock_monotonic_ms(), next = -1;
	struct agent_target *t;
	size_t i;

	if (agent_any_readable(a))
		return 0;
	for (i = 0; i < a->n_conns; i++) {
		timer_min(&next, a->conns[i].next_hello_ms);
		if (a->conns[i].orphan_in_flight)
			timer_min(&next, a->conns[i].orphan_sent_ms + AGENT_RESEND_MS);
	}
	if (a->spool && spool_files(a->spool))
		timer_min(&next, now + AGENT_RESEND_MS);
	if (a->targets)
		timer_min(&next, a->next_drain_ms);
	for (t = a->targets; t; t = t->next)
		timer_min(&next, agent_target_timer(t));
	timer_min(&next, agent_requests_timer(a));
	if (a->mpi)
		timer_min(&next, mpi_probes_next_ms(a->mpi));
	if (next < 0)
		return -1;
	return next <= now ? 0 : (int)(next - now > 60000 ? 60000 : next - now);
}

static json_t *agent_degradations_json(const struct degradation_list *l)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr && i < l->n; i++)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "name", l->items[i].name,
						     "message", l->items[i].message, "remedy",
						     l->items[i].remedy));
	return arr;
}

static json_t *agent_endpoints_json(const struct agent *a, long long now)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr && i < a->n_conns; i++) {
		const struct agent_conn *c = &a->conns[i];

		json_array_append_new(
		    arr, json_pack("{s:s, s:b, s:o}", "endpoint", c->endpoint, "connected",
				   c->connected, "last_contact_ms",
				   c->last_contact_ms ? json_integer(now - c->last_contact_ms)
						      : json_null()));
	}
	return arr;
}

json_t *agent_status(const struct agent *a)
{
	const struct agent_target *t;
	json_t *targets = json_array(), *st;
	char inc[24];

	for (t = a->targets; targets && t; t = t->next)
		if (t->state != TARGET_DONE)
			json_array_append_new(targets, agent_target_status(t));
	/* as a string: a u64 does not fit a JSON number everywhere */
	snprintf(inc, sizeof(inc), "%016llx", (unsigned long long)a->incarnation);
	st = json_pack("{s:s, s:s, s:b, s:b, s:i, s:o, s:o, s:o}", "node", a->node, "incarnation",
		       inc, "sampling", agent_sampling(a), "sampling_active",
		       a->sampler && sampler_active(a->sampler), "cpus", agent_cpus(a), "endpoints",
		       agent_endpoints_json(a, clock_monotonic_ms()), "degradations",
		       agent_degradations_json(&a->degradations), "targets",
		       targets ? targets : json_array());
	if (st && a->spool)
		json_object_set_new(st, "spool",
				    json_pack("{s:s, s:I, s:I}", "dir", spool_dir(a->spool), "bytes",
					      (json_int_t)spool_bytes(a->spool), "files",
					      (json_int_t)spool_files(a->spool)));
	return st;
}
