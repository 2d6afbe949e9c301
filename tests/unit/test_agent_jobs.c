/* The Agent's wire side of Slurm job Runs (design8 section 2): a route
 * key sends a Target's START, Batches, last Batch and FINALIZE to the
 * Aggregator it names (two real Aggregators, in threads, over inproc);
 * one-shot Controls (agent_control_request) answered by an Ack, an Error
 * of their run_id, or timed out, several at once; a CLOSE handed to the
 * Target's closed() instead of ending it; an OPEN naming a job makes a job
 * Target (status "job_id"). ROUTERs in the test play the Aggregator where
 * the exact replies matter. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/agent_fixture.h"
#include "userspace/aggregator/aggregator.h"

#define RUN_A "0123456789abcdef0123456789abcdef"
#define RUN_B "fedcba9876543210fedcba9876543210"
#define RUN_C "00000000000000000000000000000001"
#define ATTACH NUNATAK__WIRE__CONTROL__ACTION__ATTACH

struct done_result {
	int called, err;
	char json[2048];
};

static void on_done(void *ctx, int err, const char *json)
{
	struct done_result *d = ctx;

	d->called++;
	d->err = err;
	snprintf(d->json, sizeof(d->json), "%s", json ? json : "(null)");
}

static void wait_done(struct agent *a, struct done_result *d, int timeout_ms)
{
	long long end = fx_now_ms() + timeout_ms;

	while (!d->called && fx_now_ms() < end)
		fx_pump(a, 20);
	assert_int_equal(d->called, 1);
}

/* a route key (decimal job id) that sends to endpoint k of n */
static void key_for(size_t k, size_t n, char *key, size_t len)
{
	unsigned job;

	for (job = 12345; job < 13345; job++) {
		snprintf(key, len, "%u", job);
		if (agent_route(key, n) == k)
			return;
	}
	fail_msg("no route key found for endpoint %zu", k);
}

/* ---- two real Aggregators ---- */

struct two_aggs {
	void *zctx;
	struct aggregator *agg[2];
	pthread_t thread[2];
	char endpoint[2][64];
	char base[PATH_MAX], runs_dir[PATH_MAX + 8];
	struct agent *agent;
};

static void *serve(void *arg)
{
	aggregator_serve(arg, 0);
	return NULL;
}

static int aggs_setup(void **state)
{
	struct two_aggs *ta = calloc(1, sizeof(*ta));
	static int counter;
	int linger = 0, k;

	assert_non_null(ta);
	ta->zctx = zmq_ctx_new();
	assert_int_equal(make_tmpdir(ta->base, sizeof(ta->base), "agent-jobs"), 0);
	snprintf(ta->runs_dir, sizeof(ta->runs_dir), "%s/runs", ta->base);
	assert_int_equal(mkdir(ta->runs_dir, 0700), 0);
	for (k = 0; k < 2; k++) {
		void *router = zmq_socket(ta->zctx, ZMQ_ROUTER);

		snprintf(ta->endpoint[k], sizeof(ta->endpoint[k]), "inproc://agent-jobs-%d-%d",
			 counter++, k);
		zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof(linger));
		assert_int_equal(zmq_bind(router, ta->endpoint[k]), 0);
		ta->agg[k] = aggregator__new(router);
		assert_non_null(ta->agg[k]);
		assert_int_equal(pthread_create(&ta->thread[k], NULL, serve, ta->agg[k]), 0);
	}
	*state = ta;
	return 0;
}

static int aggs_teardown(void **state)
{
	struct two_aggs *ta = *state;
	int k;

	agent__free(ta->agent);
	for (k = 0; k < 2; k++) {
		aggregator_stop(ta->agg[k]);
		pthread_join(ta->thread[k], NULL);
		aggregator__free(ta->agg[k]);
	}
	zmq_ctx_term(ta->zctx);
	remove_tree(ta->base);
	free(ta);
	return 0;
}

static struct agent *agent_spooling_on(void *zctx, const char *const *eps, size_t n,
				       const char *spool)
{
	struct agent_opts o = {.node = FX_NODE, .zmq_ctx = zctx, .endpoints = eps,
			       .n_endpoints = n, .frequency = 99, .drain_interval_ms = 100,
			       .spool_dir = spool};
	char err[512];
	struct agent *a = agent__new(&o, err, sizeof(err));

	if (!a)
		fail_msg("agent__new: %s", err);
	return a;
}

static struct agent *agent_on(void *zctx, const char *const *eps, size_t n)
{
	return agent_spooling_on(zctx, eps, n, NULL);
}

static char *start_json(const struct two_aggs *ta)
{
	json_t *j = json_pack("{s:{s:s, s:s, s:[s], s:s, s:i, s:{}}, s:s, s:{s:i, s:i}, s:s, "
			      "s:i, s:b}",
			      "run", "name", "job", "created", "2026-01-01T00:00:00", "command", "app",
			      "node", FX_NODE, "job_id", 12345, "effective_configuration", "runs_dir",
			      ta->runs_dir, "owner", "uid", (int)geteuid(), "gid", (int)getegid(),
			      "symbolizer", "", "frequency", 99, "mpi_events", 0);
	char *s = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	return s;
}

/* The Aggregator k's STATUS (a one-shot Control routed by key): its Runs */
static json_t *agg_runs(struct two_aggs *ta, const char *key, const char *status_id)
{
	struct done_result d = {0};
	json_t *j, *runs;

	assert_int_equal(agent_control_request(ta->agent, NUNATAK__WIRE__CONTROL__ACTION__STATUS,
					       status_id, key, "{}", 3000, on_done, &d),
			 0);
	assert_int_equal(d.called, 0); /* never inside the call */
	wait_done(ta->agent, &d, 5000);
	assert_int_equal(d.err, 0);
	j = json_loads(d.json, 0, NULL);
	assert_non_null(j);
	runs = json_incref(json_object_get(j, "runs"));
	json_decref(j);
	assert_true(json_is_array(runs));
	return runs;
}

static json_t *run_in(json_t *runs, const char *run_id)
{
	size_t i;
	json_t *r;

	json_array_foreach(runs, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "run_id")), run_id))
			return r;
	return NULL;
}

/* A Target with route key K: START, its Batches and FINALIZE reach
 * endpoints[agent_route(K, 2)], not the Aggregator of its run_id. */
static void test_route_key_two_aggregators(void **state)
{
	struct two_aggs *ta = *state;
	const char *eps[2] = {ta->endpoint[0], ta->endpoint[1]};
	size_t other = agent_route(RUN_A, 2), k = 1 - other;
	char key[16], other_key[16], *json;
	struct agent_target_opts o = {.run_id = RUN_A, .route_key = key, .job_id = 0};
	struct done_result d = {0};
	json_t *runs, *r, *st;

	key_for(k, 2, key, sizeof(key));
	key_for(other, 2, other_key, sizeof(other_key));
	ta->agent = agent_on(ta->zctx, eps, 2);
	json = start_json(ta);
	o.start_json = json;
	assert_int_equal(agent_target_start(ta->agent, &o, on_done, &d), 0);
	wait_done(ta->agent, &d, 5000);
	free(json);
	if (d.err)
		fail_msg("START refused: %s", d.json);
	st = agent_status(ta->agent);
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(st, "targets"), 0), "endpoint")),
			    ta->endpoint[k]);
	json_decref(st);
	fx_pump(ta->agent, 400); /* a few Batches */
	runs = agg_runs(ta, key, "status-1");
	r = run_in(runs, RUN_A);
	assert_non_null(r);
	assert_true(json_integer_value(json_object_get(r, "batches")) >= 1);
	json_decref(runs);
	runs = agg_runs(ta, other_key, "status-2");
	assert_null(run_in(runs, RUN_A)); /* the other one never heard of it */
	json_decref(runs);
	memset(&d, 0, sizeof(d));
	assert_int_equal(agent_target_end(ta->agent, RUN_A,
					  "{\"exit_code\":0,\"end\":\"2026-01-01T00:00:01\","
					  "\"symbolizer_budget_ms\":1000,\"nodes_wait_ms\":0}",
					  on_done, &d),
			 0);
	wait_done(ta->agent, &d, 20000);
	if (d.err)
		fail_msg("FINALIZE failed: %s", d.json);
	assert_non_null(strstr(d.json, "run_dir"));
}

/* A Control the Aggregator does not serve (ATTACH before it knew of
 * jobs, or refused): done() with its Error; an unknown action is refused
 * without run_id and still reaches the one request outstanding. */
static void test_control_request_real_aggregator_error(void **state)
{
	struct two_aggs *ta = *state;
	const char *eps[1] = {ta->endpoint[0]};
	struct done_result d = {0};

	ta->agent = agent_on(ta->zctx, eps, 1);
	assert_int_equal(agent_control_request(ta->agent, 99, RUN_B, "12345", "{}", 3000, on_done,
					       &d),
			 0);
	wait_done(ta->agent, &d, 5000);
	print_message("refused: %d %s\n", d.err, d.json);
	assert_int_equal(d.err, -EINVAL);
	assert_non_null(strstr(d.json, "99"));
}

/* Two ATTACHes outstanding on a real Aggregator: a malformed one refused
 * at once, one whose credential is no munge credential refused by its
 * worker; each done() gets the Error of its own run_id. */
static void test_attach_refused_real_aggregator(void **state)
{
	struct two_aggs *ta = *state;
	const char *eps[1] = {ta->endpoint[0]};
	struct done_result bad = {0}, cred = {0};
	const char *run = "{\"name\":\"job-5\",\"created\":\"2026-01-01T00:00:00\","
			  "\"command\":[\"nunatak\",\"attach\",\"5\"],\"node\":\"" FX_NODE "\","
			  "\"job_id\":5,\"effective_configuration\":{}}";
	char json[1024];
	long long end;

	ta->agent = agent_on(ta->zctx, eps, 1);
	snprintf(json, sizeof(json),
		 "{\"job_id\":5,\"credential\":\"MUNGE:not-a-credential:\",\"run\":%s,"
		 "\"symbolizer\":\"\",\"mpi_events\":false}", run);
	assert_int_equal(agent_control_request(ta->agent, ATTACH, RUN_A, "5", json, 15000,
					       on_done, &cred),
			 0);
	assert_int_equal(agent_control_request(ta->agent, ATTACH, RUN_B, "5",
					       "{\"job_id\":5,\"run\":{}}", 15000, on_done, &bad),
			 0);
	for (end = fx_now_ms() + 16000; fx_now_ms() < end && (!bad.called || !cred.called);)
		fx_pump(ta->agent, 20);
	print_message("malformed: %d %s\nbad credential: %d %s\n", bad.err, bad.json, cred.err,
		      cred.json);
	assert_int_equal(bad.called, 1);
	assert_int_equal(bad.err, -EINVAL);
	assert_non_null(strstr(bad.json, "malformed ATTACH"));
	assert_int_equal(cred.called, 1);
	assert_true(cred.err < 0 && cred.err != -ETIMEDOUT && cred.err != -EINVAL);
}

/* ---- ROUTERs played by the test ---- */

/* fx for the second ROUTER of a two-endpoint Agent */
struct two_routers {
	struct fixture *fx;
	struct fixture fx2; /* a view: its router only */
};

static int routers_setup(void **state)
{
	struct two_routers *tr = calloc(1, sizeof(*tr));
	int linger = 0;

	assert_non_null(tr);
	tr->fx = fx_new(0);
	fx_bind(tr->fx);
	tr->fx2 = *tr->fx;
	snprintf(tr->fx2.endpoint, sizeof(tr->fx2.endpoint), "%s-2", tr->fx->endpoint);
	tr->fx2.router = zmq_socket(tr->fx->zctx, ZMQ_ROUTER);
	zmq_setsockopt(tr->fx2.router, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_bind(tr->fx2.router, tr->fx2.endpoint), 0);
	*state = tr;
	return 0;
}

static int routers_teardown(void **state)
{
	struct two_routers *tr = *state;

	agent__free(tr->fx->agent);
	tr->fx->agent = NULL;
	zmq_close(tr->fx2.router);
	fx_free(tr->fx);
	free(tr);
	return 0;
}

static struct agent *routers_agent(struct two_routers *tr)
{
	const char *eps[2] = {tr->fx->endpoint, tr->fx2.endpoint};

	tr->fx->agent = agent_on(tr->fx->zctx, eps, 2);
	return tr->fx->agent;
}

static struct fixture *router_of(struct two_routers *tr, const char *key)
{
	return agent_route(key, 2) == 0 ? tr->fx : &tr->fx2;
}

/* an Error about a Control, naming run_id (NULL: none) */
static void error_to(struct fixture *fx, struct received *r, const char *run_id, int code,
		     const char *message)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	error.message = (char *)message;
	error.has_code = 1;
	error.code = code;
	error.run_id = (char *)run_id;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	fx_answer(fx, r, &env);
}

static void recv_control(struct fixture *fx, struct agent *a, int action, const char *run_id,
			 struct received *r)
{
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, r, FX_RECV_MS));
	assert_int_equal(r->env->control->action, action);
	assert_string_equal(r->env->control->run_id, run_id);
	assert_string_equal(r->env->control->node, FX_NODE);
}

/* Two ATTACHes outstanding on the route key's Aggregator (after a Hello),
 * none on the other: answered in the other order, each done() gets its
 * own Ack / Error. */
static void test_control_request_ack_and_error(void **state)
{
	struct two_routers *tr = *state;
	struct agent *a = routers_agent(tr);
	char key[16], other_key[16];
	struct fixture *fx, *fo;
	struct done_result d1 = {0}, d2 = {0};
	struct received hello, c1, c2, x;

	key_for(1, 2, key, sizeof(key));
	key_for(0, 2, other_key, sizeof(other_key));
	fx = router_of(tr, key);
	fo = router_of(tr, other_key);
	/* the connections are up: a Hello seen on each */
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_HELLO, &hello, FX_RECV_MS));
	fx_release(&hello);
	assert_int_equal(agent_control_request(a, ATTACH, RUN_A, key, "{\"job_id\":1}", 5000,
					       on_done, &d1),
			 0);
	assert_int_equal(agent_control_request(a, ATTACH, RUN_B, key, "{\"job_id\":2}", 5000,
					       on_done, &d2),
			 0);
	assert_int_equal(agent_control_request(a, ATTACH, RUN_A, key, "{}", 5000, on_done, &d2),
			 -EEXIST);
	assert_int_equal(agent_control_request(a, ATTACH, "bad id!", key, "{}", 5000, on_done,
					       &d2),
			 -EINVAL);
	recv_control(fx, a, ATTACH, RUN_A, &c1);
	assert_string_equal(c1.env->control->json, "{\"job_id\":1}");
	recv_control(fx, a, ATTACH, RUN_B, &c2);
	assert_string_equal(c2.env->control->json, "{\"job_id\":2}");
	assert_false(fx_recv2(fo, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, &x, 200));
	/* a Target cannot take a run_id with a request outstanding */
	assert_int_equal(agent_target_start(a, &(struct agent_target_opts){.run_id = RUN_A},
					    NULL, NULL),
			 -EEXIST);
	error_to(fx, &c2, RUN_B, EPERM, "job 2 belongs to user 'alice'");
	fx_pump(a, 50);
	assert_int_equal(d2.called, 1);
	assert_int_equal(d2.err, -EPERM);
	assert_string_equal(d2.json, "job 2 belongs to user 'alice'");
	assert_int_equal(d1.called, 0);
	fx_ack(fx, &c1, "{\"run_id\":\"" RUN_A "\",\"run_dir\":\"/w/.nunatak/r\"}");
	fx_pump(a, 50);
	assert_int_equal(d1.called, 1);
	assert_int_equal(d1.err, 0);
	assert_non_null(strstr(d1.json, "/w/.nunatak/r"));
	/* answered again (a duplicate): nothing more */
	fx_ack(fx, &c1, "{}");
	fx_pump(a, 50);
	assert_int_equal(d1.called, 1);
	assert_false(agent_target_exists(a, RUN_A));
	fx_release(&c1);
	fx_release(&c2);
}

/* No answer: done(-ETIMEDOUT) at timeout_ms; no Aggregator at all (an
 * unbound tcp endpoint): done(-ETIMEDOUT) too, saying it was never sent.
 * The request bound: AGENT_CONTROL_REQUESTS_MAX. */
static void test_control_request_timeout(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct done_result d = {0}, many[AGENT_CONTROL_REQUESTS_MAX];
	struct received c;
	char id[40];
	long long t0 = fx_now_ms(), dt;
	int i;

	assert_int_equal(agent_control_request(a, ATTACH, RUN_A, NULL, "{}", 300, on_done, &d), 0);
	recv_control(fx, a, ATTACH, RUN_A, &c);
	wait_done(a, &d, 3000);
	dt = fx_now_ms() - t0;
	print_message("timed out after %lld ms: %s\n", dt, d.json);
	assert_int_equal(d.err, -ETIMEDOUT);
	assert_true(dt >= 290 && dt < 1500);
	/* the Ack too late: ignored */
	fx_ack(fx, &c, "{}");
	fx_pump(a, 50);
	assert_int_equal(d.called, 1);
	fx_release(&c);
	memset(many, 0, sizeof(many));
	for (i = 0; i < AGENT_CONTROL_REQUESTS_MAX; i++) {
		snprintf(id, sizeof(id), "req-%d", i);
		assert_int_equal(agent_control_request(a, ATTACH, id, NULL, "{}", 200, on_done,
						       &many[i]),
				 0);
	}
	assert_int_equal(agent_control_request(a, ATTACH, "one-more", NULL, "{}", 200, on_done,
					       &d),
			 -EBUSY);
	fx_pump(a, 600);
	for (i = 0; i < AGENT_CONTROL_REQUESTS_MAX; i++) {
		assert_int_equal(many[i].called, 1);
		assert_int_equal(many[i].err, -ETIMEDOUT);
	}
}

#define PORT_BASE 47200 /* the agent helper's ports of issue 8: 47200-47299 */

static void test_control_request_no_aggregator(void **state)
{
	struct fixture *fx = *state; /* tcp, never bound */
	struct agent *a;

	snprintf(fx->endpoint, sizeof(fx->endpoint), "tcp://127.0.0.1:%d",
		 PORT_BASE + getpid() % 100);
	a = fx_agent(fx, 0);
	struct done_result d = {0};

	assert_int_equal(agent_control_request(a, ATTACH, RUN_A, "7", "{}", 400, on_done, &d), 0);
	wait_done(a, &d, 3000);
	assert_int_equal(d.err, -ETIMEDOUT);
	assert_non_null(strstr(d.json, "could not be sent"));
}

struct closed_result {
	int called;
	char run_id[72], json[256];
};

static void on_closed(void *ctx, const char *run_id, const char *json)
{
	struct closed_result *c = ctx;

	c->called++;
	snprintf(c->run_id, sizeof(c->run_id), "%s", run_id);
	snprintf(c->json, sizeof(c->json), "%s", json);
}

static void send_control(struct fixture *fx, struct received *to, int action,
			 const char *run_id, const char *json)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Control ctl = NUNATAK__WIRE__CONTROL__INIT;

	ctl.action = action;
	ctl.run_id = (char *)run_id;
	ctl.json = (char *)json;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &ctl;
	fx_answer(fx, to, &env);
}

/* acks every Batch for ms; 1 when the last one came */
static int ack_batches(struct fixture *fx, struct agent *a, int ms)
{
	long long end = fx_now_ms() + ms;
	struct received r;
	int last = 0;

	while (!last && fx_now_ms() < end && fx_recv_batch(fx, a, &r, 100)) {
		last = r.env->batch->has_last && r.env->batch->last;
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	return last;
}

/* A Target with closed(): a CLOSE is handed to it (once, with its json),
 * the Target goes on until agent_target_end; without json: "{}". */
static void test_close_handed_to_closed(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct closed_result cl = {0};
	struct agent_target_opts o = {.run_id = RUN_A, .closed = on_closed, .closed_ctx = &cl};
	struct done_result d = {0};
	struct received hello;
	json_t *st;

	assert_int_equal(agent_target_start(a, &o, NULL, NULL), 0);
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_HELLO, &hello, FX_RECV_MS));
	send_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_A,
		     "{\"why\":\"job-ended\"}");
	assert_false(ack_batches(fx, a, 500)); /* Batches go on, no last one */
	assert_int_equal(cl.called, 1);
	assert_string_equal(cl.run_id, RUN_A);
	assert_string_equal(cl.json, "{\"why\":\"job-ended\"}");
	assert_true(agent_target_exists(a, RUN_A));
	st = agent_status(a);
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(st, "targets"), 0), "state")),
			    "active");
	assert_true(json_is_null(
	    json_object_get(json_array_get(json_object_get(st, "targets"), 0), "job_id")));
	json_decref(st);
	send_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_A, NULL);
	fx_pump(a, 100);
	assert_int_equal(cl.called, 1); /* said once */
	/* the caller ends it: the last Batch, done() at its Ack */
	assert_int_equal(agent_target_end(a, RUN_A, NULL, on_done, &d), 0);
	assert_true(ack_batches(fx, a, FX_RECV_MS));
	wait_done(a, &d, 2000);
	assert_int_equal(d.err, 0);
	assert_false(agent_target_exists(a, RUN_A));
	fx_release(&hello);

	/* json absent: "{}" */
	memset(&cl, 0, sizeof(cl));
	o.run_id = RUN_B;
	assert_int_equal(agent_target_start(a, &o, NULL, NULL), 0);
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_HELLO, &hello, FX_RECV_MS));
	send_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_B, NULL);
	ack_batches(fx, a, 300);
	assert_int_equal(cl.called, 1);
	assert_string_equal(cl.json, "{}");
	fx_release(&hello);
}

static json_t *target_status(struct agent *a, const char *run_id)
{
	json_t *st = agent_status(a), *t, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(st, "targets"), i, t)
		if (!strcmp(json_string_value(json_object_get(t, "run_id")), run_id))
			found = json_incref(t);
	json_decref(st);
	return found;
}

/* OPEN with "job_id": an acked job Target publishing to the Aggregator
 * that opened it (not the run_id's: two endpoints), status "job_id"; an
 * OPEN with a job id that is none: refused (no Ack, no Target). CLOSE:
 * its last Batch. */
static void test_open_job_target(void **state)
{
	struct two_routers *tr = *state;
	struct agent *a = routers_agent(tr);
	struct fixture *fx = router_of(tr, RUN_C) == tr->fx ? &tr->fx2 : tr->fx;
	struct received hello, ack, r, x;
	json_t *t;

	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_HELLO, &hello, FX_RECV_MS));
	send_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_A,
		     "{\"job_id\":\"12\",\"owner\":{\"uid\":1000,\"gid\":1000}}");
	send_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_B,
		     "{\"job_id\":0,\"owner\":{\"uid\":1000,\"gid\":1000}}");
	send_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_C,
		     "{\"job_id\":4242,\"owner\":{\"uid\":1000,\"gid\":1001},"
		     "\"frequency\":99,\"mpi_events\":false}");
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_ACK, &ack, FX_RECV_MS));
	assert_string_equal(ack.env->ack->run_id, RUN_C); /* the first two: no Ack */
	assert_false(agent_target_exists(a, RUN_A));
	assert_false(agent_target_exists(a, RUN_B));
	t = target_status(a, RUN_C);
	assert_non_null(t);
	assert_int_equal(json_integer_value(json_object_get(t, "job_id")), 4242);
	assert_int_equal(json_integer_value(json_object_get(t, "uid")), 1000);
	assert_string_equal(json_string_value(json_object_get(t, "endpoint")), fx->endpoint);
	json_decref(t);
	assert_true(fx_recv_batch(fx, a, &r, FX_RECV_MS));
	assert_string_equal(r.env->batch->run_id, RUN_C);
	fx_ack(fx, &r, NULL);
	fx_release(&r);
	/* nothing of it on the run_id's Aggregator */
	assert_false(fx_recv2(router_of(tr, RUN_C), a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_BATCH,
			      &x, 300));
	send_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_C,
		     "{\"why\":\"job-ended\"}");
	assert_true(ack_batches(fx, a, FX_RECV_MS));
	fx_pump(a, 50);
	assert_false(agent_target_exists(a, RUN_C));
	fx_release(&hello);
	fx_release(&ack);
}

/* agent_target_start with a job: status "job_id"; a route key "" is
 * refused. */
static void test_job_target_start(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct agent_target_opts o = {.run_id = RUN_A, .job_id = 77, .route_key = ""};
	json_t *t;

	assert_int_equal(agent_target_start(a, &o, NULL, NULL), -EINVAL);
	o.route_key = "77";
	assert_int_equal(agent_target_start(a, &o, NULL, NULL), 0);
	t = target_status(a, RUN_A);
	assert_int_equal(json_integer_value(json_object_get(t, "job_id")), 77);
	json_decref(t);
	assert_int_equal(agent_target_end(a, RUN_A, NULL, NULL, NULL), 0);
	assert_true(ack_batches(fx, a, FX_RECV_MS));
	fx_pump(a, 50);
	assert_false(agent_target_exists(a, RUN_A));
}

/* An Agent whose Target (route key: endpoint k) spooled its Batches (no
 * Ack) and that ended; returns its incarnation. */
static uint64_t spool_unacked(struct two_routers *tr, const char *run_id, const char *key,
			      size_t k)
{
	const char *eps[2] = {tr->fx->endpoint, tr->fx2.endpoint};
	struct fixture *fk = k == 0 ? tr->fx : &tr->fx2;
	struct agent_target_opts o = {.run_id = run_id, .route_key = key};
	struct agent *a = agent_spooling_on(tr->fx->zctx, eps, 2, tr->fx->spool);
	uint64_t inc = agent_incarnation(a);
	struct received r;
	json_t *st;
	long long files;

	assert_int_equal(agent_target_start(a, &o, NULL, NULL), 0);
	assert_true(fx_recv_batch(fk, a, &r, FX_RECV_MS)); /* to endpoint k, never acked */
	assert_string_equal(r.env->batch->run_id, run_id);
	fx_release(&r);
	fx_pump(a, AGENT_RESEND_MS + 700);
	st = agent_status(a);
	files = json_integer_value(json_object_get(json_object_get(st, "spool"), "files"));
	json_decref(st);
	print_message("%lld Batches spooled\n", files);
	assert_true(files >= 1);
	agent__free(a); /* its spooled Batches stay for the next incarnation */
	return inc;
}

/* a Batch of run_id of incarnation inc on fx (other messages skipped) */
static int recv_orphan(struct fixture *fx, struct agent *a, const char *run_id, uint64_t inc,
		       struct received *r, int ms)
{
	long long end = fx_now_ms() + ms;

	while (fx_now_ms() < end && fx_recv_batch(fx, a, r, (int)(end - fx_now_ms()))) {
		if (!strcmp(r->env->batch->run_id, run_id) && r->env->batch->incarnation == inc)
			return 1;
		fx_release(r);
	}
	return 0;
}

/* Spooled Batches of an earlier incarnation's Target routed by a key:
 * the run_id's Aggregator does not know the Run (ENOENT), the next one
 * gets them, its Ack removes them from the spool. */
static void test_orphans_next_aggregator(void **state)
{
	struct two_routers *tr = *state;
	size_t home = agent_route(RUN_A, 2), k = 1 - home;
	struct fixture *fh = home == 0 ? tr->fx : &tr->fx2, *fk = k == 0 ? tr->fx : &tr->fx2;
	const char *eps[2] = {tr->fx->endpoint, tr->fx2.endpoint};
	char key[16];
	struct received r;
	uint64_t inc;
	struct agent *a;
	json_t *st;
	long long files = -1, end;

	fx_spool_dir(tr->fx);
	key_for(k, 2, key, sizeof(key));
	inc = spool_unacked(tr, RUN_A, key, k);
	a = tr->fx->agent = agent_spooling_on(tr->fx->zctx, eps, 2, tr->fx->spool);
	assert_true(recv_orphan(fh, a, RUN_A, inc, &r, FX_RECV_MS));
	fx_error(fh, &r, ENOENT, "no such run");
	fx_release(&r);
	assert_true(recv_orphan(fk, a, RUN_A, inc, &r, FX_RECV_MS));
	fx_ack(fk, &r, NULL);
	fx_release(&r);
	for (end = fx_now_ms() + 10000; fx_now_ms() < end && files != 0;) {
		if (recv_orphan(fk, a, RUN_A, inc, &r, 200)) {
			fx_ack(fk, &r, NULL);
			fx_release(&r);
		}
		st = agent_status(a);
		files = json_integer_value(json_object_get(json_object_get(st, "spool"), "files"));
		json_decref(st);
	}
	assert_int_equal(files, 0);
}

/* A prolog job Run's spooled Batches ("job-<cluster>-<J>") go to the
 * Aggregator of J at once. */
static void test_orphans_job_run_key(void **state)
{
	struct two_routers *tr = *state;
	const char *eps[2] = {tr->fx->endpoint, tr->fx2.endpoint};
	char run_id[64], key[16];
	unsigned job;
	size_t k;
	struct received r;
	uint64_t inc;

	for (job = 100;; job++) {
		snprintf(key, sizeof(key), "%u", job);
		snprintf(run_id, sizeof(run_id), "job-clu-%u", job);
		if (agent_route(key, 2) != agent_route(run_id, 2))
			break;
	}
	k = agent_route(key, 2);
	fx_spool_dir(tr->fx);
	inc = spool_unacked(tr, run_id, key, k);
	tr->fx->agent = agent_spooling_on(tr->fx->zctx, eps, 2, tr->fx->spool);
	assert_true(recv_orphan(k == 0 ? tr->fx : &tr->fx2, tr->fx->agent, run_id, inc, &r,
				FX_RECV_MS));
	fx_release(&r);
}

#define FAKE_JOB 3999999999u /* no real job of this machine has it */

/* a shell busy looping, SLURM_JOB_ID=FAKE_JOB in its environment (a job
 * process as proctrack/linuxproc leaves it: no job cgroup) */
static pid_t fake_job_process(void)
{
	char *argv[] = {"sh", "-c", "while :; do :; done", NULL};
	char *envp[] = {"SLURM_JOB_ID=3999999999", "PATH=/usr/bin:/bin", NULL};
	char path[64], env[256];
	pid_t pid = fork();
	long long end = fx_now_ms() + 3000;

	assert_true(pid >= 0);
	if (pid == 0) {
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	/* exec'ed, its environment set up (after its exe link changed) */
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	do {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, env, sizeof(env) - 1) : -1;

		if (fd >= 0)
			close(fd);
		env[n > 0 ? n : 0] = '\0';
		if (!strcmp(env, "SLURM_JOB_ID=3999999999"))
			return pid;
		usleep(10000);
	} while (fx_now_ms() < end);
	fail_msg("the fake job process did not exec");
	return -1;
}

struct live_seen {
	pid_t want;
	int found;
};

static int on_live(pid_t pid, const char *comm, void *ctx)
{
	struct live_seen *ls = ctx;

	(void)comm;
	ls->found |= pid == ls->want;
	return 0;
}

/* samples of tgid in the Batches fx receives for ms (each acked) */
static uint64_t samples_of(struct fixture *fx, struct agent *a, pid_t tgid, int ms)
{
	long long end = fx_now_ms() + ms;
	struct received r;
	uint64_t n = 0;
	size_t i;

	while (fx_now_ms() < end && fx_recv_batch(fx, a, &r, 200)) {
		const Nunatak__Wire__Batch *b = r.env->batch;

		for (i = 0; i < b->n_samples; i++)
			if ((pid_t)b->loci[b->samples[i]->locus]->tgid == tgid)
				n += b->samples[i]->sample_count;
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	return n;
}

/* With BPF: a job Target adopts the job's running process at its start
 * (found by SLURM_JOB_ID: no job cgroup here), its samples reach the
 * Target's Batches; a second Target of the same job: -EEXIST, nothing
 * made. */
static void test_job_target_adopts_running(void **state)
{
	struct fixture *fx = *state;
	struct agent_target_opts o = {.run_id = RUN_A, .job_id = FAKE_JOB,
				      .route_key = "3999999999"};
	struct live_seen ls = {0};
	struct agent *a;
	uint64_t n;
	pid_t pid;

	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	a = fx_agent(fx, 0);
	SKIP_UNLESS(agent_sampling(a), "BPF sampling unavailable here");
	pid = fake_job_process();
	ls.want = pid;
	assert_int_equal(agent_target_start(a, &o, NULL, NULL), 0);
	o.run_id = RUN_B;
	assert_int_equal(agent_target_start(a, &o, NULL, NULL), -EEXIST);
	assert_false(agent_target_exists(a, RUN_B));
	fx_pump(a, 100);
	assert_int_equal(agent_target_for_each_live_process(a, RUN_A, on_live, &ls), 0);
	n = samples_of(fx, a, pid, 1500);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	print_message("job process %d: adopted %d, %llu samples\n", (int)pid, ls.found,
		      (unsigned long long)n);
	assert_true(ls.found);
	assert_true(n > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_route_key_two_aggregators, aggs_setup,
					    aggs_teardown),
	    cmocka_unit_test_setup_teardown(test_control_request_real_aggregator_error, aggs_setup,
					    aggs_teardown),
	    cmocka_unit_test_setup_teardown(test_attach_refused_real_aggregator, aggs_setup,
					    aggs_teardown),
	    cmocka_unit_test_setup_teardown(test_control_request_ack_and_error, routers_setup,
					    routers_teardown),
	    cmocka_unit_test_setup_teardown(test_control_request_timeout, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_control_request_no_aggregator, fx_setup_tcp,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_close_handed_to_closed, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_open_job_target, routers_setup, routers_teardown),
	    cmocka_unit_test_setup_teardown(test_job_target_start, fx_setup_inproc, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_job_target_adopts_running, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_orphans_next_aggregator, routers_setup,
					    routers_teardown),
	    cmocka_unit_test_setup_teardown(test_orphans_job_run_key, routers_setup,
					    routers_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
