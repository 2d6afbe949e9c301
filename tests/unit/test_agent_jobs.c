/* The Agent's wire side of Slurm job Runs (design8 section 2): a route
 * key sends a Target's START, Batches, last Batch and FINALIZE to the
 * Aggregator it names (two real Aggregators, in threads, over inproc); a
 * CLOSE handed to the Target's closed() instead of ending it; an OPEN
 * naming a job makes a job Target (status "job_id") publishing to the
 * Aggregator that opened it; with BPF a job Target adopts its job's
 * running processes; spooled Batches of a job Run with no Target reach
 * the Aggregator that knows the Run. ROUTERs in the test play the
 * Aggregator where the exact replies matter. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"

#include "tests/unit/agent_fixture.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_agent_jobs_fixture.h"

static char *start_json(const struct two_aggs *ta)
{
	json_t *j = json_pack("{s:{s:s, s:s, s:[s], s:s, s:i, s:{}}, s:s, s:{s:i, s:i}, s:s, "
			      "s:i, s:b}",
			      "run", "name", "job", "created", "2026-01-01T00:00:00", "command",
			      "app", "node", FX_NODE, "job_id", 12345, "effective_configuration",
			      "runs_dir", ta->runs_dir, "owner", "uid", (int)geteuid(), "gid",
			      (int)getegid(), "symbolizer", "", "frequency", 99, "mpi_events", 0);
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

	json_array_foreach(runs, i, r) if (!strcmp(json_string_value(json_object_get(r, "run_id")),
						   run_id)) return r;
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
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_A,
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
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_A, NULL);
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
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_B, NULL);
	ack_batches(fx, a, 300);
	assert_int_equal(cl.called, 1);
	assert_string_equal(cl.json, "{}");
	fx_release(&hello);
}

static json_t *target_status(struct agent *a, const char *run_id)
{
	json_t *st = agent_status(a), *t, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(st, "targets"), i,
			   t) if (!strcmp(json_string_value(json_object_get(t, "run_id")), run_id))
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
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_A,
		   "{\"job_id\":\"12\",\"owner\":{\"uid\":1000,\"gid\":1000}}");
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_B,
		   "{\"job_id\":0,\"owner\":{\"uid\":1000,\"gid\":1000}}");
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_C,
		   "{\"job_id\":3999999998,\"owner\":{\"uid\":1000,\"gid\":1001},"
		   "\"frequency\":99,\"mpi_events\":false}");
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_ACK, &ack, FX_RECV_MS));
	assert_string_equal(ack.env->ack->run_id, RUN_C); /* the first two: no Ack */
	assert_false(agent_target_exists(a, RUN_A));
	assert_false(agent_target_exists(a, RUN_B));
	t = target_status(a, RUN_C);
	assert_non_null(t);
	assert_int_equal(json_integer_value(json_object_get(t, "job_id")), 3999999998LL);
	assert_int_equal(json_integer_value(json_object_get(t, "uid")), 1000);
	assert_string_equal(json_string_value(json_object_get(t, "endpoint")), fx->endpoint);
	json_decref(t);
	assert_true(fx_recv_batch(fx, a, &r, FX_RECV_MS));
	assert_string_equal(r.env->batch->run_id, RUN_C);
	fx_ack(fx, &r, NULL);
	fx_release(&r);
	/* nothing of it on the run_id's Aggregator */
	assert_false(
	    fx_recv2(router_of(tr, RUN_C), a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_BATCH, &x, 300));
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_C,
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
	struct agent_target_opts o = {.run_id = RUN_A, .job_id = 3999999997u, .route_key = ""};
	json_t *t;

	assert_int_equal(agent_target_start(a, &o, NULL, NULL), -EINVAL);
	o.route_key = "3999999997";
	assert_int_equal(agent_target_start(a, &o, NULL, NULL), 0);
	t = target_status(a, RUN_A);
	assert_int_equal(json_integer_value(json_object_get(t, "job_id")), 3999999997LL);
	json_decref(t);
	assert_int_equal(agent_target_end(a, RUN_A, NULL, NULL, NULL), 0);
	assert_true(ack_batches(fx, a, FX_RECV_MS));
	fx_pump(a, 50);
	assert_false(agent_target_exists(a, RUN_A));
}

/* An Agent whose Target (route key: endpoint k) spooled its Batches (no
 * Ack) and that ended; returns its incarnation. */
static uint64_t spool_unacked(struct two_routers *tr, const char *run_id, const char *key, size_t k)
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
	assert_true(
	    recv_orphan(k == 0 ? tr->fx : &tr->fx2, tr->fx->agent, run_id, inc, &r, FX_RECV_MS));
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
	struct agent_target_opts o = {
	    .run_id = RUN_A, .job_id = FAKE_JOB, .route_key = "3999999999"};
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
