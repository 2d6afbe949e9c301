/* control — the CLI's side of Control messages to an Aggregator: send one
 * Control over a DEALER socket and wait for its Ack or Error.
 */
#ifndef NUNATAK_CLI_CONTROL_H
#define NUNATAK_CLI_CONTROL_H

#include <stddef.h>

/* action: NUNATAK__WIRE__CONTROL__ACTION__START or __FINALIZE.
 * 0, -ETIMEDOUT, -EPROTO (Error reply; err holds its message), -errno. */
int control_send(void *zmq_ctx, const char *endpoint, int action, const char *run_id,
		 const char *json, int timeout_ms, char *err, size_t errlen);

#endif
