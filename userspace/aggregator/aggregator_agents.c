/* aggregator_agents — the Agents that said Hello (node, version,
 * incarnation, last contact, active Targets, machine), the Runs OPENed to
 * them, and STATUS. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/aggregator/aggregator_internal.h"
#include "userspace/aggregator/aggregator_job.h"
#include "userspace/log/version.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

struct agg_agent *agg_agent_find(struct aggregator *agg, const char *node)
{
	struct agg_agent *a;

	for (a = agg->agents; a && node; a = a->next)
		if (!strcmp(a->node, node))
			return a;
	return NULL;
}

static struct agg_binding *binding_of_key(struct aggregator *agg, const char *key)
{
	struct agg_binding *b;

	for (b = agg->bindings; b; b = b->next)
		if (!strcmp(b->key, key))
			return b;
	return NULL;
}

static struct agg_binding *binding_of_node(struct aggregator *agg, const char *node)
{
	struct agg_binding *b;

	for (b = agg->bindings; b; b = b->next)
		if (!strcmp(b->node, node))
			return b;
	return NULL;
}

int agg_node_bind(struct aggregator *agg, const char *key, const char *node)
{
	struct agg_binding *k = binding_of_key(agg, key), *n = binding_of_node(agg, node), *b;

	if (k || n)
		return k && k == n ? 0 : -EEXIST;
	b = calloc(1, sizeof(*b));
	if (!b || !(b->node = strdup(node))) {
		free(b);
		return -ENOMEM;
	}
	snprintf(b->key, sizeof(b->key), "%s", key);
	b->next = agg->bindings;
	agg->bindings = b;
	return 0;
}

int agg_node_claim(struct aggregator *agg, const struct agg_peer *from, const char *node,
		   const char *what, char *why, size_t whylen)
{
	struct agg_binding *k;
	int err;

	if (!from->key[0])
		return 0; /* in-process: one Agent, nothing to tell apart */
	node = node ? node : "";
	if (!node[0]) {
		snprintf(why, whylen, "%s refused: it names no node (an Agent names its own)",
			 what);
		return -EPERM;
	}
	k = binding_of_key(agg, from->key);
	if (k && !strcmp(k->node, node))
		return 0;
	if (k) {
		snprintf(why, whylen,
			 "%s as node '%.64s' refused: this Agent's key (%.12s...) is node '%.64s'; "
			 "an Agent key speaks for one node (restart the Aggregator after renaming "
			 "a node)",
			 what, node, from->key, k->node);
		return -EPERM;
	}
	err = agg_node_bind(agg, from->key, node);
	if (err == -EEXIST) {
		snprintf(why, whylen,
			 "%s as node '%.64s' refused: that node belongs to another Agent key; give "
			 "each node its own name and key",
			 what, node);
		return -EPERM;
	}
	if (err) {
		snprintf(why, whylen, "%s as node '%.64s': out of memory", what, node);
		return err;
	}
	pr_info("aggregator: node '%s' is Agent key %.12s...", node, from->key);
	return 0;
}

void agg_agents_free(struct aggregator *agg)
{
	while (agg->bindings) {
		struct agg_binding *b = agg->bindings;

		agg->bindings = b->next;
		free(b->node);
		free(b);
	}
	while (agg->agents) {
		struct agg_agent *a = agg->agents;

		agg->agents = a->next;
		free(a->node);
		free(a->version);
		free(a->machine_json);
		free(a);
	}
}

static int replace_text(char **field, const char *value)
{
	char *copy;

	if (!value || (*field && !strcmp(*field, value)))
		return 0;
	copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

/* "targets" of the Agent's status_json: how many it has */
static long active_targets(const char *status_json)
{
	json_t *s = status_json ? json_loads(status_json, 0, NULL) : NULL;
	json_t *targets = json_object_get(s, "targets");
	long n = json_is_array(targets) ? (long)json_array_size(targets) : 0;

	json_decref(s);
	return n;
}

/* OPEN {"token"|"job_id","owner","frequency","mpi_events"} of r to Agent
 * a, when r goes to a's node and has not been OPENed there */
static void open_to(struct aggregator *agg, struct agg_run *r, struct agg_agent *a)
{
	struct agg_node *n;
	char *text;
	int err;

	if (r->state != RUN_COLLECTING || !agg_job_opens_to(r, a->node))
		return;
	n = agg_run_node(r, a->node);
	if (!n || n->opened)
		return;
	text = agg_job_open_json(r);
	err = text ? agg_send_control(agg, &a->peer, NUNATAK__WIRE__CONTROL__ACTION__OPEN,
				      r->run_id, text, a->node)
		   : -ENOMEM;
	free(text);
	if (err)
		pr_warn("run '%s': cannot open it on node '%s': %s", r->run_id, a->node,
			strerror(-err));
	else
		n->opened = 1;
}

void agg_open_to_agents(struct aggregator *agg, struct agg_run *r)
{
	struct agg_agent *a;

	for (a = agg->agents; a; a = a->next)
		open_to(agg, r, a);
}

/* node's Agent restarted: the Runs OPENed to it are OPENed again */
static void forget_opens(struct aggregator *agg, const char *node)
{
	struct agg_run *r;
	size_t i;

	for (r = agg->runs; r; r = r->next)
		for (i = 0; i < r->n_nodes; i++)
			if (!strcmp(r->nodes[i].name, node) && !r->nodes[i].sent_last)
				r->nodes[i].opened = 0;
}

void agg_hello(struct aggregator *agg, const struct agg_peer *from, const Nunatak__Wire__Hello *h)
{
	struct agg_agent *a = agg_agent_find(agg, h->node);
	struct agg_run *r;
	char why[512];

	if (!h->node || !h->node[0])
		return;
	if (agg_node_claim(agg, from, h->node, "Hello", why, sizeof(why))) {
		/* a node is its Agent key: another key does not take over its
		 * OPENs, CLOSEs and machine */
		agg->refused++;
		agg_reply_error(agg, from, EPERM, NULL, why);
		return;
	}
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a || !(a->node = strdup(h->node))) {
			free(a);
			pr_warn("aggregator: out of memory for Agent '%s'", h->node);
			return;
		}
		a->next = agg->agents;
		agg->agents = a;
		pr_info("aggregator: Agent '%s' (version %s) connected", h->node,
			h->agent_version ? h->agent_version : "?");
	}
	a->peer = *from;
	if (h->has_incarnation && a->incarnation && h->incarnation != a->incarnation)
		forget_opens(agg, a->node); /* restarted: what it was OPENed is gone */
	a->incarnation = h->has_incarnation ? h->incarnation : 0;
	a->last_contact_ms = clock_monotonic_ms();
	a->last_contact = time(NULL);
	a->active_targets = active_targets(h->status_json);
	if (replace_text(&a->version, h->agent_version) ||
	    replace_text(&a->machine_json, h->machine_json))
		pr_warn("aggregator: out of memory for Agent '%s'", h->node);
	for (r = agg->runs; r; r = r->next)
		open_to(agg, r, a);
}

/* a u64 as the Agent's status says it: 16 hex digits (no JSON number
 * holds every u64) */
static const char *incarnation_text(uint64_t incarnation, char hex[17])
{
	snprintf(hex, 17, "%016llx", (unsigned long long)incarnation);
	return hex;
}

static json_t *agents_json(struct aggregator *agg)
{
	long long now = clock_monotonic_ms();
	char hex[17];
	json_t *agents = json_array();
	struct agg_agent *a;

	for (a = agg->agents; a && agents; a = a->next)
		json_array_append_new(
		    agents, json_pack("{s:s, s:s, s:s, s:f, s:I}", "node", a->node, "version",
				      a->version ? a->version : "", "incarnation",
				      incarnation_text(a->incarnation, hex), "last_contact_s",
				      (now - a->last_contact_ms) / 1e3, "active_targets",
				      (json_int_t)a->active_targets));
	return agents;
}

static json_t *runs_json(struct aggregator *agg)
{
	static const char *const states[] = {"collecting", "closing", "finalizing"};
	json_t *runs = json_array(), *nodes;
	struct agg_run *r;
	size_t i;

	for (r = agg->runs; r && runs; r = r->next) {
		nodes = json_array();
		for (i = 0; nodes && i < r->n_nodes; i++)
			json_array_append_new(nodes, json_string(r->nodes[i].name));
		json_array_append_new(
		    runs, json_pack("{s:s, s:s, s:I, s:o, s:I, s:I, s:s, s:o}", "run_id", r->run_id,
				    "run_dir", r->run_dir ? r->run_dir : "", "owner_uid",
				    (json_int_t)r->uid, "nodes", nodes ? nodes : json_array(),
				    "batches", (json_int_t)r->batches, "samples",
				    (json_int_t)r->samples, "state", states[r->state], "job",
				    agg_job_status_json(r)));
	}
	return runs;
}

int agg_status(struct aggregator *agg, const struct agg_peer *from, const Nunatak__Wire__Control *c)
{
	uint64_t refused = agg->refused_fn ? agg->refused_fn(agg->refused_ctx) : 0;
	json_t *j;
	char *text;
	int err;

	j = json_pack("{s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I}}", "version",
		      NUNATAK_VERSION, "endpoint", agg->endpoint_shown, "agents", agents_json(agg),
		      "runs", runs_json(agg), "counters", "received", (json_int_t)agg->received,
		      "stored", (json_int_t)agg->stored, "duplicates", (json_int_t)agg->duplicates,
		      "refused", (json_int_t)agg->refused, "agents_refused", (json_int_t)refused);
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return agg_reply_error(agg, from, ENOMEM, NULL, "STATUS: out of memory");
	err = agg_reply_ack(agg, from, c->run_id, "", 0, 0, 0, text);
	free(text);
	return err;
}
