/* agent_send — the Agent's connections to the Aggregators (see agent.h):
 * one DEALER per endpoint, Hello, the Controls of its Targets (one in
 * flight per connection), and what the Aggregators answer or ask
 * (Ack, Error, OPEN, CLOSE).
 *
 * Matching replies: an Ack naming the Target whose Control is in flight
 * (START, FINALIZE) answers that Control (that Target has no Batch in
 * flight then); any other Ack names a Batch by (run_id, incarnation,
 * seq). An Error without seq answers the Control in flight; with a seq it
 * names a Batch by (run_id when the Aggregator gives it, incarnation,
 * seq), which is unique on the connection even without run_id:
 * agent_dispatch.c never has two Batches with the same (incarnation, seq)
 * in flight on one connection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <zmq.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/agent/spool.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/wire/curve.h"
#include "userspace/wire/wire.h"

#define AGENT_HELLO_RETRY_MS 100
#include "userspace/log/version.h"

static int agent_conn_curve(struct agent *a, void *sock, char *err, size_t errlen)
{
	int e;

	if (!a->opts.curve_self)
		return 0;
	e = curve_client_setup(sock, a->opts.curve_self, a->opts.curve_server_public);
	if (e)
		snprintf(err, errlen, "cannot set up CURVE on the aggregator socket: %s; check "
			 "[service].secret_key and aggregator_public_key", strerror(-e));
	return e;
}

static int agent_conn_open(struct agent *a, struct agent_conn *c, const char *endpoint, char *err,
			   size_t errlen)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int linger = 0, immediate = 1, e;
	size_t fdlen = sizeof(c->fd);

	c->fd = -1;
	c->endpoint = strdup(endpoint);
	c->socket = zmq_socket(a->opts.zmq_ctx, ZMQ_DEALER);
	if (!c->endpoint || !c->socket) {
		snprintf(err, errlen, "cannot create a socket for the aggregator '%s': %s",
			 endpoint, c->socket ? "out of memory" : zmq_strerror(zmq_errno()));
		return c->socket ? -ENOMEM : -zmq_errno();
	}
	zmq_setsockopt(c->socket, ZMQ_LINGER, &linger, sizeof(linger));
	/* no peer, no queueing: a send says at once the Aggregator is not there */
	zmq_setsockopt(c->socket, ZMQ_IMMEDIATE, &immediate, sizeof(immediate));
	e = agent_conn_curve(a, c->socket, err, errlen);
	if (e)
		return e;
	if (zmq_connect(c->socket, endpoint)) {
		e = -zmq_errno();
		snprintf(err, errlen, "cannot connect to the aggregator at '%s': %s; check the "
			 "endpoint ([service].aggregators)", endpoint, zmq_strerror(-e));
		return e;
	}
	if (zmq_getsockopt(c->socket, ZMQ_FD, &c->fd, &fdlen))
		return -zmq_errno();
	ev.data.fd = c->fd;
	if (epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, c->fd, &ev))
		return -errno;
	c->next_hello_ms = clock_monotonic_ms();
	return 0;
}

int agent_conns_open(struct agent *a, char *err, size_t errlen)
{
	size_t i;
	int e;

	a->conns = calloc(a->opts.n_endpoints, sizeof(*a->conns));
	if (!a->conns)
		return -ENOMEM;
	a->n_conns = a->opts.n_endpoints;
	for (i = 0; i < a->n_conns; i++)
		a->conns[i].fd = -1;
	for (i = 0; i < a->n_conns; i++) {
		e = agent_conn_open(a, &a->conns[i], a->opts.endpoints[i], err, errlen);
		if (e)
			return e;
	}
	/* borrowed: used while connecting only */
	a->opts.endpoints = NULL;
	a->opts.curve_self = NULL;
	a->opts.curve_server_public = NULL;
	return 0;
}

void agent_conns_close(struct agent *a)
{
	size_t i;

	for (i = 0; i < a->n_conns; i++) {
		if (a->conns[i].socket)
			zmq_close(a->conns[i].socket);
		free(a->conns[i].endpoint);
	}
	free(a->conns);
	a->conns = NULL;
	a->n_conns = 0;
}

int agent_conn_readable(const struct agent_conn *c)
{
	int events = 0;
	size_t len = sizeof(events);

	if (zmq_getsockopt(c->socket, ZMQ_EVENTS, &events, &len))
		return 0;
	return !!(events & ZMQ_POLLIN);
}

static int agent_conn_send_env(struct agent_conn *c, wire_envelope *env)
{
	size_t len;
	void *buf = wire_pack(env, &len);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	if (zmq_send(c->socket, buf, len, ZMQ_DONTWAIT) < 0)
		err = -zmq_errno();
	free(buf);
	return err;
}

int agent_conn_hello(struct agent *a, struct agent_conn *c)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Hello hello = NUNATAK__WIRE__HELLO__INIT;
	json_t *status = agent_status(a);
	char *status_json = status ? json_dumps(status, JSON_COMPACT) : NULL;
	int err;

	json_decref(status);
	hello.agent_version = NUNATAK_VERSION;
	hello.node = a->node;
	hello.machine_json = a->machine_json;
	hello.has_incarnation = 1;
	hello.incarnation = a->incarnation;
	hello.status_json = status_json;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	err = agent_conn_send_env(c, &env);
	free(status_json);
	c->connected = !err;
	return err;
}

int agent_conn_control(struct agent *a, struct agent_conn *c, int action, const char *run_id,
		       const char *json)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Control ctl = NUNATAK__WIRE__CONTROL__INIT;

	ctl.action = action;
	ctl.run_id = (char *)run_id;
	ctl.json = (char *)json;
	ctl.node = a->node;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &ctl;
	return agent_conn_send_env(c, &env);
}

/* The next Control of c's Targets, one in flight: START after a Hello
 * (the Aggregator knows the node's machine before the Run exists). */
static void agent_conn_controls(struct agent *a, struct agent_conn *c, long long now)
{
	struct agent_target *t = c->control_owner;

	/* FINALIZE again: to interrupt it, or because no answer came (an
	 * Aggregator restarted meanwhile; one under way just goes on). START
	 * is never resent: a second one of the same Run is refused (EEXIST). */
	if (t && t->state == TARGET_FINALIZING &&
	    ((t->interrupted && !t->interrupt_sent) ||
	     now - t->control_sent_ms >= AGENT_FINALIZE_RESEND_MS)) {
		if (!agent_conn_control(a, c, t->control_action, t->run_id, t->finalize_json)) {
			t->interrupt_sent = t->interrupted;
			t->control_sent_ms = now;
		}
		return;
	}
	if (t)
		return;
	for (t = a->targets; t; t = t->next) {
		if (&a->conns[t->conn] != c || !t->control_action || t->state == TARGET_DONE)
			continue;
		if (t->control_action == NUNATAK__WIRE__CONTROL__ACTION__START)
			agent_conn_hello(a, c);
		if (agent_conn_control(a, c, t->control_action, t->run_id, t->control_json))
			return; /* not connected: tried again at the next dispatch */
		t->control_sent_ms = now;
		t->interrupt_sent = t->interrupted;
		c->control_owner = t;
		return;
	}
}

void agent_conns_tick(struct agent *a, long long now)
{
	size_t i;

	for (i = 0; i < a->n_conns; i++) {
		struct agent_conn *c = &a->conns[i];

		/* refused: not connected yet; tried again soon, so that the
		 * Aggregator hears of the node right when the connection is up */
		if (now >= c->next_hello_ms)
			c->next_hello_ms =
			    now + (agent_conn_hello(a, c) ? AGENT_HELLO_RETRY_MS : AGENT_HELLO_MS);
		agent_conn_controls(a, c, now);
	}
}

static void agent_on_control_answer(struct agent_target *t, int err, const char *json)
{
	struct agent_conn *c = &t->a->conns[t->conn];

	c->control_owner = NULL;
	t->control_action = 0;
	if (t->state == TARGET_STARTING && !err) {
		t->state = TARGET_ACTIVE;
		free(t->control_json);
		t->control_json = NULL;
		if (t->done) {
			agent_done_fn done = t->done;

			t->done = NULL;
			done(t->done_ctx, 0, json);
		}
		return;
	}
	agent_target_finish(t, err, json);
}

static struct agent_target *agent_conn_target(struct agent *a, struct agent_conn *c,
					      const char *run_id)
{
	struct agent_target *t = agent_target_find(a, run_id);

	return t && &a->conns[t->conn] == c ? t : NULL;
}

static void agent_on_ack(struct agent *a, struct agent_conn *c, const Nunatak__Wire__Ack *ack)
{
	uint64_t inc = ack->has_incarnation ? ack->incarnation : a->incarnation, samples = 0;
	struct agent_target *t = c->control_owner;

	if (t && !strcmp(t->run_id, ack->run_id)) {
		agent_on_control_answer(t, 0, ack->json);
		return;
	}
	if (agent_requests_on_ack(a, c, ack))
		return;
	if (c->orphan_in_flight && !strcmp(c->orphan_run_id, ack->run_id) &&
	    c->orphan_incarnation == inc && c->orphan_seq == ack->seq) {
		spool_remove(a->spool, ack->run_id, inc, ack->seq);
		c->orphan_in_flight = 0;
		return;
	}
	t = agent_conn_target(a, c, ack->run_id);
	if (!t || inc != a->incarnation)
		return; /* an Ack of a resent Batch already acked: nothing to do */
	if (publish_queue_ack(t->queue, inc, ack->seq, &samples) ||
	    (a->spool && !spool_remove(a->spool, t->run_id, inc, ack->seq))) {
		t->batches_acked++;
		if (t->inflight_valid && t->inflight_seq == ack->seq)
			t->inflight_valid = 0;
	}
}

/* an Error naming a spooled Batch of t (NULL: an orphan); 1 when refused
 * for good (removed, counted) */
static int agent_on_spooled_error(struct agent *a, struct agent_target *t,
				  const char *run_id, const Nunatak__Wire__Error *e)
{
	uint64_t inc = e->has_incarnation ? e->incarnation : a->incarnation;
	int code = e->has_code ? e->code : 0;
	const struct spool_entry *se = spool_oldest(a->spool, run_id, inc);

	if (wire_storage_error_transient(code) || !se || se->seq != e->seq)
		return 0; /* kept: resent in 2 s */
	pr_warn("aggregator refused spooled batch %llu of run %s for good: %s",
		(unsigned long long)e->seq, run_id, e->message ? e->message : "");
	if (t)
		publish_queue_count_refused(t->queue, se->samples, e->message);
	spool_remove(a->spool, run_id, inc, e->seq);
	return 1;
}

/* An Error without seq: the request or Target Control of its run_id;
 * without one, the Control in flight, else the oldest request sent. */
static void agent_on_control_error(struct agent *a, struct agent_conn *c,
				   const Nunatak__Wire__Error *e)
{
	struct agent_target *t = c->control_owner;
	int named = e->run_id && *e->run_id;

	if (t && (!named || !strcmp(e->run_id, t->run_id))) {
		agent_on_control_answer(t, -(e->has_code && e->code > 0 ? e->code : EPROTO),
					e->message ? e->message : "refused");
		return;
	}
	if (agent_requests_on_error(a, c, e, !named))
		return;
	pr_warn("aggregator '%s': %s", c->endpoint, e->message ? e->message : "");
}

static void agent_on_error(struct agent *a, struct agent_conn *c, const Nunatak__Wire__Error *e)
{
	uint64_t inc = e->has_incarnation ? e->incarnation : a->incarnation;
	struct agent_target *t;
	int r;

	if (!e->has_seq) {
		agent_on_control_error(a, c, e);
		return;
	}
	if (c->orphan_in_flight && c->orphan_incarnation == inc && c->orphan_seq == e->seq &&
	    (!e->run_id || !strcmp(e->run_id, c->orphan_run_id))) {
		if (agent_orphan_refused(a, c, e) ||
		    agent_on_spooled_error(a, NULL, c->orphan_run_id, e) ||
		    !wire_storage_error_transient(e->has_code ? e->code : 0))
			c->orphan_in_flight = 0;
		return;
	}
	if (inc != a->incarnation)
		return;
	for (t = a->targets; t; t = t->next) {
		if (&a->conns[t->conn] != c || t->state == TARGET_DONE || !t->inflight_valid ||
		    t->inflight_seq != e->seq || (e->run_id && strcmp(e->run_id, t->run_id)))
			continue;
		/* an Aggregator that cannot store (disk full) is not waited
		 * for longer than a silent one */
		if (t->state == TARGET_ENDING && wire_storage_error_transient(e->has_code ? e->code : 0) &&
		    t->flush_deadline_ms > t->end_ms + AGENT_END_FLUSH_MS)
			t->flush_deadline_ms = t->end_ms + AGENT_END_FLUSH_MS;
		r = publish_queue_error(t->queue, e);
		if (r == 0 && a->spool)
			r = agent_on_spooled_error(a, t, t->run_id, e);
		if (r == 1)
			t->inflight_valid = 0; /* gone: the next one may go */
		return;
	}
}

/* OPEN's json: {"token": T | "job_id": J, "owner": {"uid","gid"},
 * "mpi_events"}; 0 or -EINVAL (a job id that is not one) */
static int agent_open_opts(json_t *j, struct agent_target_opts *o)
{
	json_t *owner = json_object_get(j, "owner");
	json_t *job = json_object_get(j, "job_id");

	o->token = json_string_value(json_object_get(j, "token"));
	o->uid = (uid_t)json_integer_value(json_object_get(owner, "uid"));
	o->gid = (gid_t)json_integer_value(json_object_get(owner, "gid"));
	o->mpi_events = json_is_true(json_object_get(j, "mpi_events"));
	if (!job || json_is_null(job))
		return 0;
	if (!json_is_integer(job) || json_integer_value(job) <= 0 ||
	    json_integer_value(job) > UINT32_MAX)
		return -EINVAL;
	o->job_id = (uint32_t)json_integer_value(job);
	return 0;
}

/* OPEN: a Run whose processes may start here (a token's, or a Slurm
 * job's: a job Target); its Batches go back to the Aggregator that
 * opened it. Answered by an Ack. */
static void agent_on_open(struct agent *a, struct agent_conn *c, const Nunatak__Wire__Control *ctl)
{
	struct agent_target_opts o = {.run_id = ctl->run_id};
	json_t *j = ctl->json ? json_loads(ctl->json, 0, NULL) : NULL;
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Ack ack = NUNATAK__WIRE__ACK__INIT;
	struct agent_target *t;
	int err = agent_open_opts(j, &o);
	const char *why = err ? "its \"job_id\" is no Slurm job id (an integer 1 to 4294967295)"
			      : NULL;

	t = agent_target_find(a, ctl->run_id); /* OPEN again (a resent one): the same */
	if (!t && !err) {
		err = agent_target_start(a, &o, NULL, NULL);
		t = agent_target_find(a, ctl->run_id);
		if (t) {
			t->opened = 1;
			t->conn = (size_t)(c - a->conns); /* its Aggregator: the one that opened it */
		}
	}
	if (!err && t) {
		ack.run_id = ctl->run_id;
		ack.node = a->node;
		env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ACK;
		env.ack = &ack;
		agent_conn_send_env(c, &env);
	} else {
		pr_warn("OPEN of run %s from '%s' refused: %s", ctl->run_id, c->endpoint,
			why ? why : strerror(-err));
	}
	json_decref(j);
}

/* CLOSE: the Target's end; handed to its closed() when it has one (once:
 * the Aggregator may say it again). */
static void agent_on_close(struct agent *a, struct agent_conn *c,
			   const Nunatak__Wire__Control *ctl)
{
	struct agent_target *t = agent_conn_target(a, c, ctl->run_id);

	if (!t)
		return;
	if (!t->closed) {
		agent_target_end(a, t->run_id, NULL, NULL, NULL);
		return;
	}
	if (t->close_handed || t->state != TARGET_ACTIVE)
		return;
	t->close_handed = 1;
	t->closed(t->closed_ctx, t->run_id, ctl->json && *ctl->json ? ctl->json : "{}");
}

static void agent_on_message(struct agent *a, struct agent_conn *c, const wire_envelope *env)
{
	switch (env->body_case) {
	case NUNATAK__WIRE__ENVELOPE__BODY_ACK:
		agent_on_ack(a, c, env->ack);
		break;
	case NUNATAK__WIRE__ENVELOPE__BODY_ERROR:
		agent_on_error(a, c, env->error);
		break;
	case NUNATAK__WIRE__ENVELOPE__BODY_CONTROL:
		if (env->control->action == NUNATAK__WIRE__CONTROL__ACTION__OPEN)
			agent_on_open(a, c, env->control);
		else if (env->control->action == NUNATAK__WIRE__CONTROL__ACTION__CLOSE)
			agent_on_close(a, c, env->control);
		break;
	default:
		pr_debug("aggregator '%s' sent an unexpected message", c->endpoint);
	}
}

/* Reads until the socket has nothing (ZMQ_FD is edge-triggered). */
static int agent_conn_read(struct agent *a, struct agent_conn *c)
{
	char why[256];
	int n = 0;

	for (;;) {
		wire_envelope *env;
		zmq_msg_t msg;

		zmq_msg_init(&msg);
		if (zmq_msg_recv(&msg, c->socket, ZMQ_DONTWAIT) < 0) {
			int e = zmq_errno();

			zmq_msg_close(&msg);
			if (e == EAGAIN || e == EINTR)
				return n;
			return -e;
		}
		n++;
		c->last_contact_ms = clock_monotonic_ms();
		env = wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), why, sizeof(why));
		zmq_msg_close(&msg);
		if (!env) {
			pr_warn("aggregator '%s' sent a message refused: %s", c->endpoint, why);
			continue;
		}
		agent_on_message(a, c, env);
		wire_envelope_free(env);
	}
}

int agent_read_all(struct agent *a)
{
	size_t i;
	int n = 0, r;

	for (i = 0; i < a->n_conns; i++) {
		r = agent_conn_read(a, &a->conns[i]);
		if (r < 0)
			return r;
		n += r;
	}
	return n;
}

int agent_conn_send_buf(struct agent_conn *c, const void *buf, size_t len)
{
	return zmq_send(c->socket, buf, len, ZMQ_DONTWAIT) < 0 ? -zmq_errno() : 0;
}
