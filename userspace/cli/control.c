/* control — see control.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "userspace/cli/control.h"
#include "userspace/log/clock.h"
#include "userspace/wire/wire.h"

/* 1 when the answer is there, 0 when the wait ended without it (err set:
 * -ETIMEDOUT or -EINTR in *e), -1 on a socket error (*e). */
static int wait_answer(void *socket, int timeout_ms, struct control_wait *w, int *e, char *err,
		       size_t errlen)
{
	long long deadline = clock_monotonic_ms() + timeout_ms;

	for (;;) {
		zmq_pollitem_t items[2] = { { .socket = socket, .events = ZMQ_POLLIN },
					    { .fd = w ? w->fd : -1, .events = ZMQ_POLLIN } };
		long long until = w && w->deadline_ms && w->deadline_ms < deadline ? w->deadline_ms
										  : deadline;
		long long left = until - clock_monotonic_ms();
		int n;

		if (left <= 0) {
			snprintf(err, errlen, "the aggregator did not answer within %lld ms",
				 timeout_ms - (deadline - until));
			*e = -ETIMEDOUT;
			return 0;
		}
		n = zmq_poll(items, w && w->fd >= 0 ? 2 : 1, left);
		if (n < 0 && zmq_errno() != EINTR) {
			*e = -zmq_errno();
			snprintf(err, errlen, "waiting for the aggregator: %s", zmq_strerror(-*e));
			return -1;
		}
		if (n > 0 && (items[0].revents & ZMQ_POLLIN))
			return 1;
		if (n > 0 && (items[1].revents & ZMQ_POLLIN) && w->on_fd(w)) {
			snprintf(err, errlen, "stopped waiting for the aggregator");
			*e = -EINTR;
			return 0;
		}
	}
}

int control_send(void *zmq_ctx, const char *endpoint, int action, const char *run_id,
		 const char *json, int timeout_ms, struct control_wait *w, char *err,
		 size_t errlen)
{
	return control_send_answer(zmq_ctx, endpoint, action, run_id, json, timeout_ms, w, NULL,
				   err, errlen);
}

int control_send_answer(void *zmq_ctx, const char *endpoint, int action, const char *run_id,
			const char *json, int timeout_ms, struct control_wait *w, char **answer,
			char *err, size_t errlen)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT, *reply = NULL;
	Nunatak__Wire__Control control = NUNATAK__WIRE__CONTROL__INIT;
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
	if (wait_answer(socket, timeout_ms, w, &e, err, errlen) <= 0)
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
		if (answer && !(*answer = strdup(reply->ack->json ? reply->ack->json : "{}"))) {
			e = -ENOMEM;
			snprintf(err, errlen, "out of memory");
		}
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
