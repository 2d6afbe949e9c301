/* One-shot Controls of the Agent (agent_control_request, design8
 * section 2): sent to the Aggregator of their route key after a Hello,
 * answered by an Ack or an Error of their run_id (several outstanding, in
 * any order; an Error without run_id reaches the oldest one), or timed
 * out, also when no Aggregator is connected; bounded in number. Against
 * real Aggregators (in threads: an action they do not serve, ATTACHes
 * they refuse) and ROUTERs the test plays. */
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
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"

#include "tests/unit/agent_fixture.h"
#include "tests/unit/test_agent_jobs_fixture.h"

/* A Control the Aggregator does not serve (ATTACH before it knew of
 * jobs, or refused): done() with its Error; an unknown action is refused
 * without run_id and still reaches the one request outstanding. */
static void test_control_request_real_aggregator_error(void **state)
{
	struct two_aggs *ta = *state;
	const char *eps[1] = {ta->endpoint[0]};
	struct done_result d = {0};

	ta->agent = agent_on(ta->zctx, eps, 1);
	assert_int_equal(
	    agent_control_request(ta->agent, 99, RUN_B, "12345", "{}", 3000, on_done, &d), 0);
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
		 "\"symbolizer\":\"\",\"mpi_events\":false}",
		 run);
	assert_int_equal(
	    agent_control_request(ta->agent, ATTACH, RUN_A, "5", json, 15000, on_done, &cred), 0);
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
	assert_int_equal(
	    agent_control_request(a, ATTACH, RUN_A, key, "{\"job_id\":1}", 5000, on_done, &d1), 0);
	assert_int_equal(
	    agent_control_request(a, ATTACH, RUN_B, key, "{\"job_id\":2}", 5000, on_done, &d2), 0);
	assert_int_equal(agent_control_request(a, ATTACH, RUN_A, key, "{}", 5000, on_done, &d2),
			 -EEXIST);
	assert_int_equal(agent_control_request(a, ATTACH, "bad id!", key, "{}", 5000, on_done, &d2),
			 -EINVAL);
	recv_control(fx, a, ATTACH, RUN_A, &c1);
	assert_string_equal(c1.env->control->json, "{\"job_id\":1}");
	recv_control(fx, a, ATTACH, RUN_B, &c2);
	assert_string_equal(c2.env->control->json, "{\"job_id\":2}");
	assert_false(fx_recv2(fo, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, &x, 200));
	/* a Target cannot take a run_id with a request outstanding */
	assert_int_equal(
	    agent_target_start(a, &(struct agent_target_opts){.run_id = RUN_A}, NULL, NULL),
	    -EEXIST);
	fx_error_run(fx, &c2, RUN_B, EPERM, "job 2 belongs to user 'alice'");
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
		assert_int_equal(
		    agent_control_request(a, ATTACH, id, NULL, "{}", 200, on_done, &many[i]), 0);
	}
	assert_int_equal(agent_control_request(a, ATTACH, "one-more", NULL, "{}", 200, on_done, &d),
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

int main(void)
{
	const struct CMUnitTest tests[] = {
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
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
