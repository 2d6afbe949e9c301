/* aggregator_request — see aggregator_request.h. */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <zmq.h>

#include <stdlib.h>
#include <string.h>

#include "userspace/control/aggregator_request.h"
#include "userspace/log/clock.h"
#include "userspace/wire/curve.h"
#include "userspace/wire/wire.h"

/* 1 when the answer is there, 0 when the wait ended without it
 * (-ETIMEDOUT in *e), -1 on a socket error (*e). */
static int wait_answer(void *socket, int timeout_ms, int *e, char *err, size_t errlen)
{
	long long deadline = clock_monotonic_ms() + timeout_ms;

	for (;;) {
		zmq_pollitem_t item = { .socket = socket, .events = ZMQ_POLLIN };
		long long left = deadline - clock_monotonic_ms();
		int n;

		if (left <= 0) {
			snprintf(err, errlen, "the aggregator did not answer within %d ms", timeout_ms);
			*e = -ETIMEDOUT;
			return 0;
		}
		n = zmq_poll(&item, 1, left);
		if (n < 0 && zmq_errno() != EINTR) {
			*e = -zmq_errno();
			snprintf(err, errlen, "waiting for the aggregator: %s", zmq_strerror(-*e));
			return -1;
		}
		if (n > 0)
			return 1;
	}
}

int aggregator_request(void *zmq_ctx, const char *endpoint, const struct curve_keypair *kp,
		       const char *server_public, int action, const char *run_id,
		       const char *json, int timeout_ms, char **ack_json, char *err,
		       size_t errlen)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT, *reply = NULL;
	Nunatak__Wire__Control control = NUNATAK__WIRE__CONTROL__INIT;
	void *socket;
	zmq_msg_t msg;
	int linger = 0, e;

	*ack_json = NULL;
	socket = zmq_socket(zmq_ctx, ZMQ_DEALER);
	if (!socket) {
		snprintf(err, errlen, "cannot create a control socket: %s", zmq_strerror(zmq_errno()));
		return -zmq_errno();
	}
	zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof(linger));
	if (kp && (e = curve_client_setup(socket, kp, server_public))) {
		snprintf(err, errlen, "cannot set up CURVE to the aggregator: %s", strerror(-e));
		goto out;
	}
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
	if (wait_answer(socket, timeout_ms, &e, err, errlen) <= 0)
		goto out;
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
		if (reply->ack->json && reply->ack->json[0] && !(*ack_json = strdup(reply->ack->json)))
			e = -ENOMEM;
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
