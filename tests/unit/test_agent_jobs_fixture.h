/* test_agent_jobs_fixture — what test_agent_jobs.c and
 * test_agent_control.c share: two real Aggregators served in threads
 * (inproc), or two ROUTERs the test plays (the second a view of
 * agent_fixture.h's struct fixture: its router only), an Agent on both,
 * done() results, route keys that reach a given endpoint, a Control
 * received (those the test sends, and its Errors, are agent_fixture.h's).
 * Header-only, static inline; include after cmocka.h, test_helpers.h and
 * agent_fixture.h.
 */
#ifndef NUNATAK_TESTS_AGENT_JOBS_FIXTURE_H
#define NUNATAK_TESTS_AGENT_JOBS_FIXTURE_H

#include <pthread.h>
#include <sys/stat.h>

#include "userspace/aggregator/aggregator.h"

#define RUN_A "0123456789abcdef0123456789abcdef"
#define RUN_B "fedcba9876543210fedcba9876543210"
#define RUN_C "00000000000000000000000000000001"
#define ATTACH NUNATAK__WIRE__CONTROL__ACTION__ATTACH

struct done_result {
	int called, err;
	char json[2048];
};

static inline void on_done(void *ctx, int err, const char *json)
{
	struct done_result *d = ctx;

	d->called++;
	d->err = err;
	snprintf(d->json, sizeof(d->json), "%s", json ? json : "(null)");
}

static inline void wait_done(struct agent *a, struct done_result *d, int timeout_ms)
{
	long long end = fx_now_ms() + timeout_ms;

	while (!d->called && fx_now_ms() < end)
		fx_pump(a, 20);
	assert_int_equal(d->called, 1);
}

/* a route key (decimal job id) that sends to endpoint k of n */
static inline void key_for(size_t k, size_t n, char *key, size_t len)
{
	unsigned job;

	for (job = 12345; job < 13345; job++) {
		snprintf(key, len, "%u", job);
		if (agent_route(key, n) == k)
			return;
	}
	fail_msg("no route key found for endpoint %zu", k);
}

/* two real Aggregators, served in threads over inproc */

struct two_aggs {
	void *zctx;
	struct aggregator *agg[2];
	pthread_t thread[2];
	char endpoint[2][64];
	char base[PATH_MAX], runs_dir[PATH_MAX + 8];
	struct agent *agent;
};

static inline void *serve(void *arg)
{
	aggregator_serve(arg, 0);
	return NULL;
}

static inline int aggs_setup(void **state)
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

static inline int aggs_teardown(void **state)
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

static inline struct agent *agent_spooling_on(void *zctx, const char *const *eps, size_t n,
					      const char *spool)
{
	struct agent_opts o = {.node = FX_NODE,
			       .zmq_ctx = zctx,
			       .endpoints = eps,
			       .n_endpoints = n,
			       .frequency = 99,
			       .drain_interval_ms = 100,
			       .spool_dir = spool};
	char err[512];
	struct agent *a = agent__new(&o, err, sizeof(err));

	if (!a)
		fail_msg("agent__new: %s", err);
	return a;
}

static inline struct agent *agent_on(void *zctx, const char *const *eps, size_t n)
{
	return agent_spooling_on(zctx, eps, n, NULL);
}

/* fx for the second ROUTER of a two-endpoint Agent */
struct two_routers {
	struct fixture *fx;
	struct fixture fx2; /* a view: its router only */
};

static inline int routers_setup(void **state)
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

static inline int routers_teardown(void **state)
{
	struct two_routers *tr = *state;

	agent__free(tr->fx->agent);
	tr->fx->agent = NULL;
	zmq_close(tr->fx2.router);
	fx_free(tr->fx);
	free(tr);
	return 0;
}

static inline struct agent *routers_agent(struct two_routers *tr)
{
	const char *eps[2] = {tr->fx->endpoint, tr->fx2.endpoint};

	tr->fx->agent = agent_on(tr->fx->zctx, eps, 2);
	return tr->fx->agent;
}

static inline struct fixture *router_of(struct two_routers *tr, const char *key)
{
	return agent_route(key, 2) == 0 ? tr->fx : &tr->fx2;
}

static inline void recv_control(struct fixture *fx, struct agent *a, int action, const char *run_id,
				struct received *r)
{
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, r, FX_RECV_MS));
	assert_int_equal(r->env->control->action, action);
	assert_string_equal(r->env->control->run_id, run_id);
	assert_string_equal(r->env->control->node, FX_NODE);
}

#endif
