/* agent_control — one-shot Controls of the Agent (agent_control_request,
 * see agent.h): sent once to the Aggregator of their route key (after a
 * Hello, so that it knows the node), answered by an Ack or an Error for
 * their run_id, or timed out. Several may be outstanding, one per run_id;
 * they never hold a connection's Control slot (START/FINALIZE). done()
 * runs inside agent_dispatch(), the request unlinked first: it may start
 * a Target or another request. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

static struct agent_request *agent_request_find(const struct agent *a, const char *run_id)
{
	struct agent_request *r;

	for (r = a->requests; r; r = r->next)
		if (!strcmp(r->run_id, run_id))
			return r;
	return NULL;
}

int agent_request_exists(const struct agent *a, const char *run_id)
{
	return agent_request_find(a, run_id) != NULL;
}

static void agent_request_free(struct agent_request *r)
{
	free(r->run_id);
	free(r->json);
	free(r);
}

/* 0, or -EAGAIN (not connected: tried again) */
static int agent_request_send(struct agent *a, struct agent_request *r, long long now)
{
	struct agent_conn *c = &a->conns[r->conn];
	int err;

	agent_conn_hello(a, c);
	err = agent_conn_control(a, c, r->action, r->run_id, r->json);
	if (err) {
		r->retry_ms = now + AGENT_RETRY_MS;
		return err;
	}
	r->sent_ms = now;
	return 0;
}

int agent_control_request(struct agent *a, int action, const char *run_id, const char *route_key,
			  const char *json, int timeout_ms, agent_done_fn done, void *ctx)
{
	const char *key = route_key ? route_key : run_id;
	long long now = clock_monotonic_ms();
	struct agent_request *r;

	if (action <= 0 || !agent_valid_run_id(run_id) || !key || !*key)
		return -EINVAL;
	if (agent_request_find(a, run_id) || agent_target_find(a, run_id))
		return -EEXIST;
	if (a->n_requests >= AGENT_CONTROL_REQUESTS_MAX)
		return -EBUSY;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->run_id = strdup(run_id);
	r->json = json ? strdup(json) : NULL;
	if (!r->run_id || (json && !r->json)) {
		agent_request_free(r);
		return -ENOMEM;
	}
	r->action = action;
	r->conn = agent_route(key, a->n_conns);
	r->done = done;
	r->ctx = ctx;
	r->deadline_ms = now + (timeout_ms > 0 ? timeout_ms : AGENT_START_TIMEOUT_MS);
	r->next = a->requests;
	a->requests = r;
	a->n_requests++;
	agent_request_send(a, r, now); /* not connected: at the next dispatch */
	return 0;
}

/* unlinks r, calls its done(), frees it */
static void agent_request_finish(struct agent *a, struct agent_request *r, int err,
				 const char *json)
{
	struct agent_request **pp;

	for (pp = &a->requests; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (!*pp)
		return;
	*pp = r->next;
	a->n_requests--;
	if (r->done)
		r->done(r->ctx, err, json ? json : (err ? strerror(-err) : NULL));
	agent_request_free(r);
}

void agent_requests_tick(struct agent *a, long long now)
{
	struct agent_request *r = a->requests, *next;

	for (; r; r = next) {
		next = r->next;
		if (now >= r->deadline_ms) {
			pr_debug("aggregator '%s' did not answer the control of run %s in time",
				 a->conns[r->conn].endpoint, r->run_id);
			agent_request_finish(a, r, -ETIMEDOUT,
					     r->sent_ms ? "the aggregator did not answer in time"
							: "no aggregator connected: the request "
							  "could not be sent in time");
		} else if (!r->sent_ms && now >= r->retry_ms) {
			agent_request_send(a, r, now);
		}
	}
}

static struct agent_request *agent_request_on(const struct agent *a, const struct agent_conn *c,
					      const char *run_id)
{
	struct agent_request *r = run_id ? agent_request_find(a, run_id) : NULL;

	return r && r->sent_ms && &a->conns[r->conn] == c ? r : NULL;
}

int agent_requests_on_ack(struct agent *a, const struct agent_conn *c,
			  const Nunatak__Wire__Ack *ack)
{
	struct agent_request *r = agent_request_on(a, c, ack->run_id);

	if (!r)
		return 0;
	agent_request_finish(a, r, 0, ack->json);
	return 1;
}

/* the oldest request sent on c (the list is newest first) */
static struct agent_request *agent_request_oldest(const struct agent *a, const struct agent_conn *c)
{
	struct agent_request *r, *found = NULL;

	for (r = a->requests; r; r = r->next)
		if (r->sent_ms && &a->conns[r->conn] == c)
			found = r;
	return found;
}

int agent_requests_on_error(struct agent *a, const struct agent_conn *c,
			    const Nunatak__Wire__Error *e, int any_run)
{
	struct agent_request *r =
	    any_run ? agent_request_oldest(a, c) : agent_request_on(a, c, e->run_id);

	if (!r)
		return 0;
	agent_request_finish(a, r, -(e->has_code && e->code > 0 ? e->code : EPROTO),
			     e->message && *e->message ? e->message : "refused by the aggregator");
	return 1;
}

long long agent_requests_timer(const struct agent *a)
{
	const struct agent_request *r;
	long long next = -1, t;

	for (r = a->requests; r; r = r->next) {
		t = r->sent_ms ? r->deadline_ms : (r->retry_ms ? r->retry_ms : 1);
		if (t > r->deadline_ms)
			t = r->deadline_ms;
		if (next < 0 || t < next)
			next = t;
	}
	return next;
}

void agent_requests_free(struct agent *a)
{
	struct agent_request *r;

	while ((r = a->requests)) {
		a->requests = r->next;
		agent_request_free(r);
	}
	a->n_requests = 0;
}
