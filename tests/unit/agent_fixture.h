/* agent_fixture — what the Agent's unit tests share: a ZeroMQ ROUTER the
 * test drives as the Aggregator (inproc, or tcp on 127.0.0.1 bound only
 * when the test says: an absent Aggregator), the Agent's event loop run
 * from the test (agent_dispatch while waiting for a message), and the
 * answers a test gives (Ack, Error, a Control's Ack). Header-only, static
 * inline (each test is one translation unit); include after cmocka.h and
 * test_helpers.h.
 */
#ifndef NUNATAK_TESTS_AGENT_FIXTURE_H
#define NUNATAK_TESTS_AGENT_FIXTURE_H

#include <limits.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "userspace/agent/agent.h"
#include "userspace/wire/wire.h"

#define FX_NODE "node-t"
#define FX_RECV_MS 5000
#define FX_PORT_BASE 17200 /* the agent helper's test ports: 17200-17299 */

struct fixture {
	void *zctx, *router;
	char endpoint[64];
	int bound;
	struct agent *agent, *agent2;
	char spool[PATH_MAX]; /* "" none */
};

/* one message as the ROUTER received it */
struct received {
	zmq_msg_t identity;
	void *data;
	size_t len;
	wire_envelope *env;
};

static inline long long fx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void fx_bind(struct fixture *fx)
{
	int linger = 0;

	fx->router = zmq_socket(fx->zctx, ZMQ_ROUTER);
	assert_non_null(fx->router);
	zmq_setsockopt(fx->router, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_bind(fx->router, fx->endpoint), 0);
	fx->bound = 1;
}

static inline void fx_unbind(struct fixture *fx)
{
	if (fx->router)
		zmq_close(fx->router);
	fx->router = NULL;
	fx->bound = 0;
}

/* tcp: the endpoint is a free port of 127.0.0.1, not bound yet */
static inline struct fixture *fx_new(int tcp)
{
	static int counter;
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	fx->zctx = zmq_ctx_new();
	if (tcp)
		snprintf(fx->endpoint, sizeof(fx->endpoint), "tcp://127.0.0.1:%d",
			 FX_PORT_BASE + (getpid() + counter++) % 100);
	else
		snprintf(fx->endpoint, sizeof(fx->endpoint), "inproc://agent-test-%d", counter++);
	return fx;
}

static inline void fx_free(struct fixture *fx)
{
	agent__free(fx->agent);
	agent__free(fx->agent2);
	fx_unbind(fx);
	zmq_ctx_term(fx->zctx);
	if (fx->spool[0])
		remove_tree(fx->spool);
	free(fx);
}

static inline int fx_setup_inproc(void **state)
{
	struct fixture *fx = fx_new(0);

	fx_bind(fx);
	*state = fx;
	return 0;
}

static inline int fx_setup_tcp(void **state)
{
	*state = fx_new(1);
	return 0;
}

static inline int fx_teardown(void **state)
{
	fx_free(*state);
	return 0;
}

static inline void fx_spool_dir(struct fixture *fx)
{
	mkdir("/tmp/agent", 0700); /* test_spool's too: either may run first */
	snprintf(fx->spool, sizeof(fx->spool), "/tmp/agent/spool-%d-XXXXXX", (int)getpid());
	assert_non_null(mkdtemp(fx->spool));
}

static inline struct agent *fx_agent_opts(struct fixture *fx, struct agent_opts *o)
{
	const char *eps[1] = {fx->endpoint};
	char err[512];
	struct agent *a;

	o->node = FX_NODE;
	o->zmq_ctx = fx->zctx;
	o->endpoints = eps;
	o->n_endpoints = 1;
	if (!o->frequency)
		o->frequency = 99;
	if (!o->drain_interval_ms)
		o->drain_interval_ms = 100;
	if (!o->spool_dir && fx->spool[0])
		o->spool_dir = fx->spool;
	a = agent__new(o, err, sizeof(err));
	if (!a)
		fail_msg("agent__new: %s", err);
	return a;
}

static inline struct agent *fx_agent(struct fixture *fx, size_t cap_bytes)
{
	struct agent_opts o = {.queue_cap_bytes = cap_bytes};

	fx->agent = fx_agent_opts(fx, &o);
	return fx->agent;
}

static inline void fx_target(struct agent *a, const char *run_id)
{
	struct agent_target_opts o = {.run_id = run_id};

	assert_int_equal(agent_target_start(a, &o, NULL, NULL), 0);
}

/* Runs the Agent's loop for ms, as a node service would. */
static inline void fx_pump(struct agent *a, int ms)
{
	long long end = fx_now_ms() + ms;

	for (;;) {
		long long left = end - fx_now_ms();
		struct pollfd p = {.fd = agent_fd(a), .events = POLLIN};
		int t = agent_timeout_ms(a);

		if (left <= 0)
			return;
		if (t < 0 || t > left)
			t = (int)left;
		poll(&p, 1, t > 20 ? 20 : t);
		assert_int_equal(agent_dispatch(a), 0);
	}
}

/* 1 and *r filled when a message of body_case (0: any but Hello) came
 * within timeout_ms while a (and b, may be NULL) ran; Hellos are skipped. */
static inline int fx_recv2(struct fixture *fx, struct agent *a, struct agent *b, int body_case,
			   struct received *r, int timeout_ms)
{
	long long end = fx_now_ms() + timeout_ms;
	char why[256];

	while (fx_now_ms() < end) {
		zmq_pollitem_t item = {.socket = fx->router, .events = ZMQ_POLLIN};
		zmq_msg_t payload;

		if (a)
			fx_pump(a, 5);
		if (b)
			fx_pump(b, 5);
		if (zmq_poll(&item, 1, 5) <= 0)
			continue;
		zmq_msg_init(&r->identity);
		zmq_msg_init(&payload);
		assert_true(zmq_msg_recv(&r->identity, fx->router, 0) >= 0);
		assert_true(zmq_msg_recv(&payload, fx->router, 0) >= 0);
		r->len = zmq_msg_size(&payload);
		r->data = malloc(r->len);
		assert_non_null(r->data);
		memcpy(r->data, zmq_msg_data(&payload), r->len);
		zmq_msg_close(&payload);
		r->env = wire_unpack(r->data, r->len, why, sizeof(why));
		if (!r->env)
			fail_msg("the agent sent a bad envelope: %s", why);
		if ((int)r->env->body_case == body_case ||
		    (!body_case && r->env->body_case != NUNATAK__WIRE__ENVELOPE__BODY_HELLO))
			return 1;
		zmq_msg_close(&r->identity);
		free(r->data);
		wire_envelope_free(r->env);
	}
	return 0;
}

static inline int fx_recv_batch(struct fixture *fx, struct agent *a, struct received *r,
				int timeout_ms)
{
	return fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_BATCH, r, timeout_ms);
}

static inline void fx_release(struct received *r)
{
	zmq_msg_close(&r->identity);
	free(r->data);
	wire_envelope_free(r->env);
}

static inline void fx_answer(struct fixture *fx, struct received *r, wire_envelope *env)
{
	size_t len;
	void *buf = wire_pack(env, &len);

	assert_non_null(buf);
	assert_true(zmq_send(fx->router, zmq_msg_data(&r->identity), zmq_msg_size(&r->identity),
			     ZMQ_SNDMORE) >= 0);
	assert_true(zmq_send(fx->router, buf, len, 0) >= 0);
	free(buf);
}

/* the Ack of a Batch, or of a Control (json given) */
static inline void fx_ack(struct fixture *fx, struct received *r, const char *json)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Ack ack = NUNATAK__WIRE__ACK__INIT;

	if (r->env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_BATCH) {
		ack.run_id = r->env->batch->run_id;
		ack.seq = r->env->batch->seq;
		ack.has_incarnation = 1;
		ack.incarnation = r->env->batch->incarnation;
	} else {
		ack.run_id = r->env->control->run_id;
	}
	ack.node = FX_NODE;
	ack.json = (char *)json;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ACK;
	env.ack = &ack;
	fx_answer(fx, r, &env);
}

/* an Error about a Batch (its seq), or a Control (no seq), naming run_id
 * (NULL: none); code 0: none */
static inline void fx_error_run(struct fixture *fx, struct received *r, const char *run_id,
				int code, const char *message)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	error.message = (char *)message;
	if (run_id)
		error.run_id = (char *)run_id;
	if (r->env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_BATCH) {
		error.has_seq = error.has_incarnation = 1;
		error.seq = r->env->batch->seq;
		error.incarnation = r->env->batch->incarnation;
	}
	error.has_code = code != 0;
	error.code = code;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	fx_answer(fx, r, &env);
}

/* the same naming no run_id */
static inline void fx_error(struct fixture *fx, struct received *r, int code, const char *message)
{
	fx_error_run(fx, r, NULL, code, message);
}

/* a Control (action, run_id, json: NULL none) from the Aggregator to the
 * Agent that sent r */
static inline void fx_control(struct fixture *fx, struct received *r, int action,
			      const char *run_id, const char *json)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Control ctl = NUNATAK__WIRE__CONTROL__INIT;

	ctl.action = action;
	ctl.run_id = (char *)run_id;
	ctl.json = (char *)json;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &ctl;
	fx_answer(fx, r, &env);
}

/* the value of counter name in batch b, or -1 when absent */
static inline long long batch_counter(const Nunatak__Wire__Batch *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->n_counters; i++)
		if (!strcmp(b->counters[i]->name, name))
			return (long long)b->counters[i]->value;
	return -1;
}

static inline int batch_has_degradation(const Nunatak__Wire__Batch *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->n_degradations; i++)
		if (!strcmp(b->degradations[i]->name, name))
			return 1;
	return 0;
}

#endif
