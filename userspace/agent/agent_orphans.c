/* agent_orphans — spooled Batches that belong to no Target of this Agent
 * (an earlier incarnation's, or a Target that ended before they were
 * acknowledged): one in flight per connection, removed at its Ack or its
 * refusal for good.
 *
 * Their Aggregator: the one their Target published to when it ended here
 * (remembered: a route key may name another than the run_id's); else, a
 * prolog job Run's ("job-<cluster>-<J>"), the one of its job id "J"; else
 * the run_id's. With several Aggregators, one that does not know the Run
 * (ENOENT) passes it to the next, until each was tried: a job Run of an
 * earlier incarnation routed by another key is found that way. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/spool.h"
#include "userspace/log/log.h"

#define AGENT_ORPHAN_ROUTES_MAX 256

static struct agent_orphan_route *agent_orphan_route(const struct agent *a, const char *run_id,
						     uint64_t inc)
{
	size_t i;

	for (i = 0; i < a->n_orphan_routes; i++)
		if (a->orphan_routes[i].incarnation == inc &&
		    !strcmp(a->orphan_routes[i].run_id, run_id))
			return &a->orphan_routes[i];
	return NULL;
}

/* "job-<cluster>-<J>": the job id J (its route key), else NULL */
static const char *job_run_key(const char *run_id)
{
	const char *dash = strrchr(run_id, '-'), *p;

	if (strncmp(run_id, "job-", 4) || !dash || dash < run_id + 4 || !dash[1])
		return NULL;
	for (p = dash + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return NULL;
	return dash + 1;
}

static size_t agent_orphan_conn(const struct agent *a, const struct spool_entry *se)
{
	const struct agent_orphan_route *r = agent_orphan_route(a, se->run_id, se->incarnation);
	const char *key = job_run_key(se->run_id);

	if (r)
		return r->conn;
	return agent_route(key ? key : se->run_id, a->n_conns);
}

/* routes of Runs with nothing spooled any more are forgotten */
static void agent_orphan_routes_prune(struct agent *a)
{
	size_t i = 0;

	while (i < a->n_orphan_routes) {
		struct agent_orphan_route *r = &a->orphan_routes[i];

		if (a->spool && spool_count(a->spool, r->run_id, r->incarnation)) {
			i++;
			continue;
		}
		*r = a->orphan_routes[--a->n_orphan_routes];
	}
}

static int agent_orphan_route_set(struct agent *a, const char *run_id, uint64_t inc, size_t conn)
{
	struct agent_orphan_route *r = agent_orphan_route(a, run_id, inc);

	if (!r) {
		agent_orphan_routes_prune(a);
		if (a->n_orphan_routes >= AGENT_ORPHAN_ROUTES_MAX)
			return -ENOSPC; /* the default route then */
		r = realloc(a->orphan_routes, (a->n_orphan_routes + 1) * sizeof(*r));
		if (!r)
			return -ENOMEM;
		a->orphan_routes = r;
		r = &a->orphan_routes[a->n_orphan_routes++];
		memset(r, 0, sizeof(*r));
		snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
		r->incarnation = inc;
	}
	r->conn = conn;
	return 0;
}

void agent_orphans_remember(struct agent_target *t)
{
	struct agent *a = t->a;

	if (!a->spool || a->n_conns < 2 || !spool_count(a->spool, t->run_id, a->incarnation))
		return;
	agent_orphan_route_set(a, t->run_id, a->incarnation, t->conn);
}

int agent_orphan_refused(struct agent *a, struct agent_conn *c, const Nunatak__Wire__Error *e)
{
	size_t k = (size_t)(c - a->conns);
	struct agent_orphan_route *r;

	if (a->n_conns < 2 || !e->has_code || e->code != ENOENT)
		return 0;
	r = agent_orphan_route(a, c->orphan_run_id, c->orphan_incarnation);
	if (!r) {
		if (agent_orphan_route_set(a, c->orphan_run_id, c->orphan_incarnation, k))
			return 0;
		r = agent_orphan_route(a, c->orphan_run_id, c->orphan_incarnation);
	}
	if (++r->tried >= a->n_conns)
		return 0; /* no Aggregator knows it: refused for good */
	r->conn = (k + 1) % a->n_conns;
	pr_debug("spooled batches of run %s: '%s' does not know the run, tried on '%s'",
		 c->orphan_run_id, c->endpoint, a->conns[r->conn].endpoint);
	return 1;
}

void agent_send_orphans(struct agent *a, long long now)
{
	const struct spool_entry *se;
	size_t i, k;

	if (!a->spool)
		return;
	for (k = 0; k < a->n_conns; k++) {
		struct agent_conn *c = &a->conns[k];
		void *buf;
		size_t len;

		if (c->orphan_in_flight ? now - c->orphan_sent_ms < AGENT_RESEND_MS
					: now < c->orphan_scan_ms)
			continue;
		c->orphan_scan_ms =
		    now + AGENT_RETRY_MS; /* the scan is linear: not at every call */
		for (i = 0; (se = spool_entry_at(a->spool, i)); i++) {
			if (se->incarnation == a->incarnation && agent_target_find(a, se->run_id))
				continue;
			if (agent_orphan_conn(a, se) == k)
				break;
		}
		if (!se || spool_read(a->spool, se, &buf, &len))
			continue;
		if (!agent_conn_send_buf(c, buf, len)) {
			c->orphan_in_flight = 1;
			snprintf(c->orphan_run_id, sizeof(c->orphan_run_id), "%s", se->run_id);
			c->orphan_incarnation = se->incarnation;
			c->orphan_seq = se->seq;
			c->orphan_sent_ms = now;
		}
		free(buf);
	}
}

void agent_orphans_free(struct agent *a)
{
	free(a->orphan_routes);
	a->orphan_routes = NULL;
	a->n_orphan_routes = 0;
}
