/* node_service_status — the status request: the Agent's status and each
 * Aggregator's STATUS, with what belongs to other users left out (root
 * sees all).
 *
 * Limitation: each Aggregator is asked in turn, and the loop waits for it
 * (at most STATUS_TIMEOUT_MS each): the node's own Aggregator answers in
 * microseconds, a remote one that does not answer costs that bound once
 * per status request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/node_service_internal.h"
#include "userspace/control/aggregator_request.h"
#include "userspace/control/control.h"
#include "userspace/wire/wire.h"

#define STATUS_TIMEOUT_MS 1000

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

static json_t *aggregator_status(struct node_service *ns, const char *endpoint,
				 const struct control_peer *peer)
{
	char err[512], *ack = NULL;
	json_t *st;
	int e;

	e = aggregator_request(ns->zctx, endpoint, ns->curve ? &ns->kp : NULL,
			       ns->curve ? ns->server_public : NULL,
			       NUNATAK__WIRE__CONTROL__ACTION__STATUS, "", "{}",
			       STATUS_TIMEOUT_MS, &ack, err, sizeof(err));
	st = !e && ack ? json_loads(ack, 0, NULL) : NULL;
	free(ack);
	if (!json_is_object(st)) {
		json_decref(st);
		return json_pack("{s:s, s:s}", "endpoint", endpoint, "error",
				 e ? err : "the aggregator's STATUS is not a JSON object");
	}
	if (!json_object_get(st, "endpoint"))
		json_object_set_new(st, "endpoint", json_string(endpoint));
	keep_own(json_object_get(st, "runs"), "owner_uid", peer);
	return st;
}

int ns_status(struct node_service *ns, struct ns_client *c, json_t *req)
{
	json_t *agent = agent_status(ns->agent), *aggs = json_array();
	size_t i;

	(void)req;
	if (!agent || !aggs) {
		json_decref(agent);
		json_decref(aggs);
		ns_reply(ns, c, CONTROL_STATUS, NULL);
		return -ENOMEM;
	}
	keep_own(json_object_get(agent, "targets"), "uid", &c->peer);
	for (i = 0; i < ns->n_endpoints; i++)
		json_array_append_new(aggs, aggregator_status(ns, ns->endpoints[i], &c->peer));
	ns_reply(ns, c, CONTROL_STATUS,
		 control_ok_reply(json_pack("{s:o, s:o}", "agent", agent, "aggregators", aggs)));
	return 0;
}
