/* Tests of aggregator_stop() and aggregator_interrupt(): the Aggregator's
 * serving thread can always be ended from another thread — idle, after a
 * START that failed (what used to leave `nunatak run` in pthread_join
 * forever) — and interrupting a finalize does not stop the serving. Real
 * ZeroMQ over inproc://.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <cmocka.h>

#include "userspace/aggregator/aggregator.h"
#include "userspace/wire/wire.h"

struct fixture {
	char endpoint[64];
	void *zctx;
	struct aggregator *agg;
	pthread_t thread;
	int running, serve_result;
};

static int counter;

static void *serve_thread(void *arg)
{
	struct fixture *fx = arg;

	fx->serve_result = aggregator_serve(fx->agg, 1);
	return NULL;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	void *router;
	int linger = 0;

	assert_non_null(fx);
	fx->zctx = zmq_ctx_new();
	assert_non_null(fx->zctx);
	snprintf(fx->endpoint, sizeof(fx->endpoint), "inproc://test-stop-%d", counter++);
	router = zmq_socket(fx->zctx, ZMQ_ROUTER);
	assert_non_null(router);
	zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_bind(router, fx->endpoint), 0);
	fx->agg = aggregator__new(router);
	assert_non_null(fx->agg);
	assert_int_equal(pthread_create(&fx->thread, NULL, serve_thread, fx), 0);
	fx->running = 1;
	*state = fx;
	return 0;
}

/* 0 when the serving thread ended within timeout_ms */
static int join_within(struct fixture *fx, int timeout_ms)
{
	struct timespec deadline;
	int err;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	err = pthread_timedjoin_np(fx->thread, NULL, &deadline);
	if (!err)
		fx->running = 0;
	return err;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx->running) {
		zmq_ctx_shutdown(fx->zctx);
		pthread_join(fx->thread, NULL);
	}
	aggregator__free(fx->agg);
	zmq_ctx_term(fx->zctx);
	free(fx);
	return 0;
}

static void test_stop_idle(void **state)
{
	struct fixture *fx = *state;

	usleep(50000);
	assert_int_equal(join_within(fx, 50), ETIMEDOUT); /* it serves, waiting */
	aggregator_stop(fx->agg);
	assert_int_equal(join_within(fx, 1000), 0);
	assert_int_equal(fx->serve_result, -ECANCELED);
}

/* one Control over a DEALER; the reply's body case, or -1 when none came
 * within timeout_ms */
static int control(struct fixture *fx, int action, const char *json, int timeout_ms)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT, *reply;
	Nunatak__Wire__Control c = NUNATAK__WIRE__CONTROL__INIT;
	zmq_pollitem_t item = {.events = ZMQ_POLLIN};
	char why[256];
	zmq_msg_t msg;
	int linger = 0, body = -1;
	void *dealer = zmq_socket(fx->zctx, ZMQ_DEALER);

	assert_non_null(dealer);
	zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_connect(dealer, fx->endpoint), 0);
	c.action = action;
	c.run_id = "run-x";
	c.json = (char *)json;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &c;
	assert_int_equal(wire_send(dealer, &env), 0);
	item.socket = dealer;
	if (zmq_poll(&item, 1, timeout_ms) == 1) {
		zmq_msg_init(&msg);
		assert_true(zmq_msg_recv(&msg, dealer, 0) >= 0);
		reply = wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), why, sizeof(why));
		zmq_msg_close(&msg);
		assert_non_null(reply);
		body = reply->body_case;
		wire_envelope_free(reply);
	}
	zmq_close(dealer);
	return body;
}

/* START refused (the Run cannot be made), then stop: the thread ends */
static void test_stop_after_failed_start(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(control(fx, NUNATAK__WIRE__CONTROL__ACTION__START,
				 "{\"run_dir\": \"/nonexistent/run-x\"}", 2000),
			 NUNATAK__WIRE__ENVELOPE__BODY_ERROR);
	assert_int_equal(join_within(fx, 50), ETIMEDOUT);
	aggregator_stop(fx->agg);
	assert_int_equal(join_within(fx, 1000), 0);
	assert_int_equal(fx->serve_result, -ECANCELED);
}

/* interrupting is not stopping: the thread goes on serving */
static void test_interrupt_keeps_serving(void **state)
{
	struct fixture *fx = *state;

	aggregator_interrupt(fx->agg);
	assert_int_equal(control(fx, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, "{}", 2000),
			 NUNATAK__WIRE__ENVELOPE__BODY_ERROR);
	assert_int_equal(join_within(fx, 50), ETIMEDOUT);
	aggregator_stop(fx->agg);
	assert_int_equal(join_within(fx, 1000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_stop_idle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stop_after_failed_start, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_interrupt_keeps_serving, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
