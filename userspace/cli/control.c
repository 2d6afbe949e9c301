/* control — see control.h. */
#include <errno.h>
#include <stdio.h>
#include <zmq.h>

#include "userspace/cli/control.h"
#include "userspace/wire/wire.h"

int control_send(void *zmq_ctx, const char *endpoint, int action, const char *run_id,
		 const char *json, int timeout_ms, char *err, size_t errlen)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT, *reply = NULL;
	Nunatak__Wire__Control control = NUNATAK__WIRE__CONTROL__INIT;
	zmq_pollitem_t item = { .events = ZMQ_POLLIN };
	void *socket;
	zmq_msg_t msg;
	int linger = 0, e;

	socket = zmq_socket(zmq_ctx, ZMQ_DEALER);
	if (!socket) {
		snprintf(err, errlen, "cannot create a control socket: %s", zmq_strerror(zmq_errno()));
		return -zmq_errno();
	}
	zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(socket, endpoint)) {
		e = -zmq_errno();
		snprintf(err, errlen, "cannot reach the aggregator at '%s': %s", endpoint,
			 zmq_strerror(-e));
		goto out;
	}
	control.action = action;
	control.run_id = (char *)run_id;
	control.json = (char *)json;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &control;
	e = wire_send(socket, &env);
	if (e) {
		snprintf(err, errlen, "cannot send to the aggregator: %s", zmq_strerror(-e));
		goto out;
	}
	item.socket = socket;
	if (zmq_poll(&item, 1, timeout_ms) <= 0) {
		snprintf(err, errlen, "the aggregator did not answer within %d ms", timeout_ms);
		e = -ETIMEDOUT;
		goto out;
	}
	zmq_msg_init(&msg);
	if (zmq_msg_recv(&msg, socket, 0) < 0) {
		e = -zmq_errno();
		zmq_msg_close(&msg);
		snprintf(err, errlen, "no answer from the aggregator: %s", zmq_strerror(-e));
		goto out;
	}
	reply = wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), err, errlen);
	zmq_msg_close(&msg);
	if (!reply) {
		e = -errno;
		goto out;
	}
	if (reply->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ACK) {
		e = 0;
	} else if (reply->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR) {
		snprintf(err, errlen, "%s", reply->error->message);
		e = -EPROTO;
	} else {
		snprintf(err, errlen, "unexpected answer from the aggregator");
		e = -EPROTO;
	}
out:
	wire_envelope_free(reply);
	zmq_close(socket);
	return e;
}
