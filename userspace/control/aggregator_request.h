/* aggregator_request — one Control message to an Aggregator (STATUS, for
 * `nunatak status` and the node service's status request) over a DEALER
 * socket of its own, and a bounded wait for its Ack or Error.
 *
 * A short-lived exchange, not the Agent's publishing path (agent.h): the
 * socket is made for the request and closed after it.
 */
#ifndef NUNATAK_CONTROL_AGGREGATOR_REQUEST_H
#define NUNATAK_CONTROL_AGGREGATOR_REQUEST_H

#include <stddef.h>

struct curve_keypair;

/* action: NUNATAK__WIRE__CONTROL__ACTION__*. kp and server_public (the
 * Aggregator's key, Z85): CURVE on the socket; both NULL: none. Waits at
 * most timeout_ms.
 * 0 and *ack_json (the Ack's json, malloc'd, NULL when it had none; the
 * caller frees), -ETIMEDOUT, -EPROTO (an Error reply; err holds its
 * message), -errno. err always says what failed. */
int aggregator_request(void *zmq_ctx, const char *endpoint, const struct curve_keypair *kp,
		       const char *server_public, int action, const char *run_id,
		       const char *json, int timeout_ms, char **ack_json, char *err,
		       size_t errlen);

#endif
