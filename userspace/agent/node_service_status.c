/* node_service_status — the status request: the Agent's status and each
 * Aggregator's STATUS, with what belongs to other users left out (root
 * sees all).
 *
 * The loop never waits for an Aggregator: one DEALER per Aggregator,
 * made at the first status request and kept, carries at most one STATUS
 * at a time (resent when unanswered for NS_STATUS_RESEND_MS); a status
 * request waits (a record, not the loop) until every Aggregator answered
 * after it was asked, or for NS_STATUS_WAIT_MS, and is then answered with
 * the answers there are ("error" for the others). Requests that come while
 * a STATUS is under way share its answer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/node_service_internal.h"
#include "userspace/control/control.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/wire/curve.h"
#include "userspace/wire/wire.h"

#define NS_STATUS_RESEND_MS 5000

struct ns_status_link {
	void *dealer;	     /* NULL: could not be made (error says why) */
	int inflight;	     /* a STATUS is out */
	long long sent_ms;   /* when it went */
	long long answer_ms; /* when the last answer came; 0 none */
	json_t *answer;	     /* its STATUS json, NULL with error */
	char error[256];
};

struct ns_status_wait {
	struct ns_client *client;
	json_t *agent; /* agent_status() at the request, filtered */
	long long asked_ms, due_ms;
	struct ns_status_wait *next;
};

/* removes from the array arr of objects those whose uid_key is not the
 * peer's (unless root) */
static void keep_own(json_t *arr, const char *uid_key, const struct control_peer *peer)
{
	size_t i = 0;

	while (i < json_array_size(arr)) {
		json_t *uid = json_object_get(json_array_get(arr, i), uid_key);

		if (!json_is_integer(uid) ||
		    !control_may_see(peer, (uid_t)json_integer_value(uid)))
			json_array_remove(arr, i);
		else
			i++;
	}
}

static void link_open(struct node_service *ns, struct ns_status_link *l, const char *endpoint)
{
	int linger = 0, fd, e = 0;
	size_t len = sizeof(fd);

	l->dealer = zmq_socket(ns->zctx, ZMQ_DEALER);
	if (!l->dealer) {
		snprintf(l->error, sizeof(l->error), "cannot create a socket: %s",
			 zmq_strerror(zmq_errno()));
		return;
	}
	zmq_setsockopt(l->dealer, ZMQ_LINGER, &linger, sizeof(linger));
	if (ns->curve)
		e = curve_client_setup(l->dealer, &ns->kp, ns->server_public);
	if (!e && zmq_connect(l->dealer, endpoint))
		e = -zmq_errno();
	if (!e && zmq_getsockopt(l->dealer, ZMQ_FD, &fd, &len))
		e = -zmq_errno();
	if (!e)
		e = ns_watch_wakeup(ns, fd);
	if (e) {
		snprintf(l->error, sizeof(l->error), "cannot reach the aggregator at '%s': %s",
			 endpoint, strerror(-e));
		zmq_close(l->dealer);
		l->dealer = NULL;
	}
}

static int links_open(struct node_service *ns)
{
	size_t i;

	if (ns->links)
		return 0;
	ns->links = calloc(ns->n_endpoints ? ns->n_endpoints : 1, sizeof(*ns->links));
	if (!ns->links)
		return -ENOMEM;
	for (i = 0; i < ns->n_endpoints; i++)
		link_open(ns, &ns->links[i], ns->endpoints[i]);
	return 0;
}

/* a STATUS out on l unless one is (and not long unanswered) */
static void link_ask(struct ns_status_link *l, long long now)
{
	Nunatak__Wire__Control control = NUNATAK__WIRE__CONTROL__INIT;
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	size_t len;
	void *buf;

	if (!l->dealer || (l->inflight && now - l->sent_ms < NS_STATUS_RESEND_MS))
		return;
	control.action = NUNATAK__WIRE__CONTROL__ACTION__STATUS;
	control.run_id = "";
	control.json = "{}";
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &control;
	buf = wire_pack(&env, &len);
	if (!buf)
		return;
	/* never waits: not connected yet is the queue's, a full queue an error */
	if (zmq_send(l->dealer, buf, len, ZMQ_DONTWAIT) == (int)len) {
		l->inflight = 1;
		l->sent_ms = now;
	} else {
		snprintf(l->error, sizeof(l->error), "cannot send STATUS to the aggregator: %s",
			 zmq_strerror(zmq_errno()));
	}
	free(buf);
}

/* one message from l's Aggregator */
static void link_take(struct ns_status_link *l, const void *data, size_t len, long long now)
{
	wire_envelope *env = wire_unpack(data, len, l->error, sizeof(l->error));
	json_t *st = NULL;

	if (!env)
		return;
	if (env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ACK) {
		st = env->ack->json ? json_loads(env->ack->json, 0, NULL) : NULL;
		if (!json_is_object(st))
			snprintf(l->error, sizeof(l->error),
				 "the aggregator's STATUS is not a JSON object");
	} else if (env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR) {
		snprintf(l->error, sizeof(l->error), "%s", env->error->message);
	} else {
		snprintf(l->error, sizeof(l->error), "unexpected answer from the aggregator");
	}
	wire_envelope_free(env);
	json_decref(l->answer);
	l->answer = json_is_object(st) ? st : NULL;
	if (!l->answer)
		json_decref(st);
	l->inflight = 0;
	l->answer_ms = now;
}

/* every answer there is, without waiting */
static void link_drain(struct ns_status_link *l, long long now)
{
	for (;;) {
		int events = 0;
		size_t len = sizeof(events);
		zmq_msg_t msg;

		/* also re-arms ZMQ_FD (edge-triggered) */
		if (!l->dealer || zmq_getsockopt(l->dealer, ZMQ_EVENTS, &events, &len) ||
		    !(events & ZMQ_POLLIN))
			return;
		zmq_msg_init(&msg);
		if (zmq_msg_recv(&msg, l->dealer, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&msg);
			return;
		}
		link_take(l, zmq_msg_data(&msg), zmq_msg_size(&msg), now);
		zmq_msg_close(&msg);
	}
}

/* what w shows of Aggregator i: its answer since w was asked, or why not */
static json_t *link_shown(struct node_service *ns, size_t i, const struct ns_status_wait *w)
{
	struct ns_status_link *l = &ns->links[i];
	const char *endpoint = ns->endpoints[i];
	json_t *st;

	if (l->answer && l->answer_ms >= w->asked_ms) {
		st = json_deep_copy(l->answer);
		if (st && !json_object_get(st, "endpoint"))
			json_object_set_new(st, "endpoint", json_string(endpoint));
		if (st)
			keep_own(json_object_get(st, "runs"), "owner_uid", &w->client->peer);
		return st;
	}
	if (l->answer_ms >= w->asked_ms && l->error[0])
		return json_pack("{s:s, s:s}", "endpoint", endpoint, "error", l->error);
	return json_pack("{s:s, s:s}", "endpoint", endpoint, "error",
			 l->dealer ? "the aggregator did not answer STATUS within 1000 ms"
				   : l->error);
}

/* 1 when every Aggregator answered since w was asked */
static int wait_complete(const struct node_service *ns, const struct ns_status_wait *w)
{
	for (size_t i = 0; i < ns->n_endpoints; i++)
		if (ns->links[i].dealer && ns->links[i].answer_ms < w->asked_ms)
			return 0;
	return 1;
}

static void wait_reply(struct node_service *ns, struct ns_status_wait *w)
{
	json_t *aggs = json_array();

	for (size_t i = 0; aggs && i < ns->n_endpoints; i++)
		json_array_append_new(aggs, link_shown(ns, i, w));
	ns_reply(ns, w->client, CONTROL_STATUS,
		 aggs ? control_ok_reply(json_pack("{s:O, s:o}", "agent", w->agent, "aggregators",
						   aggs))
		      : NULL);
}

int ns_status_tick(struct node_service *ns)
{
	long long now = clock_monotonic_ms(), next = -1;
	struct ns_status_wait **p = &ns->waits, *w;

	for (size_t i = 0; ns->links && i < ns->n_endpoints; i++)
		link_drain(&ns->links[i], now);
	while ((w = *p)) {
		if (wait_complete(ns, w) || now >= w->due_ms) {
			*p = w->next;
			wait_reply(ns, w);
			json_decref(w->agent);
			free(w);
			continue;
		}
		if (next < 0 || w->due_ms - now < next)
			next = w->due_ms - now;
		p = &w->next;
	}
	return (int)next;
}

int ns_status(struct node_service *ns, struct ns_client *c, json_t *req)
{
	struct ns_status_wait *w = calloc(1, sizeof(*w));
	long long now = clock_monotonic_ms();

	(void)req;
	if (w)
		w->agent = agent_status(ns->agent);
	if (!w || !w->agent || links_open(ns)) {
		if (w)
			json_decref(w->agent);
		free(w);
		ns_reply(ns, c, CONTROL_STATUS, NULL);
		return -ENOMEM;
	}
	keep_own(json_object_get(w->agent, "targets"), "uid", &c->peer);
	w->client = c;
	w->asked_ms = now;
	w->due_ms = now + NS_STATUS_WAIT_MS;
	for (size_t i = 0; i < ns->n_endpoints; i++)
		link_ask(&ns->links[i], now);
	w->next = ns->waits;
	ns->waits = w;
	return 0;
}

void ns_status_forget(struct node_service *ns, struct ns_client *c)
{
	struct ns_status_wait **p = &ns->waits, *w;

	while ((w = *p)) {
		if (w->client == c) {
			*p = w->next;
			json_decref(w->agent);
			free(w);
		} else {
			p = &w->next;
		}
	}
}

void ns_status_free(struct node_service *ns)
{
	while (ns->waits) {
		struct ns_status_wait *w = ns->waits;

		ns->waits = w->next;
		json_decref(w->agent);
		free(w);
	}
	for (size_t i = 0; ns->links && i < ns->n_endpoints; i++) {
		if (ns->links[i].dealer)
			zmq_close(ns->links[i].dealer);
		json_decref(ns->links[i].answer);
	}
	free(ns->links);
	ns->links = NULL;
}
