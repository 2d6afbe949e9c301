/* Unit tests for the job Runs of userspace/agent/node_service (node_service_job.c):
 * a real node service (its Agent, BPF loaded, its control socket in a test
 * directory) served by a thread, whose one Aggregator is a ZeroMQ ROUTER
 * the test drives (agent_fixture.h): what the service sends it (ATTACH,
 * START with "job", FINALIZE) is read and answered as an Aggregator would.
 * Requests are asked by real clients over SOCK_SEQPACKET; unprivileged
 * callers are children that dropped to nobody before they connected.
 *  - refusals: malformed attach/detach/job-prolog/job-epilog, hooks of a
 *    user (root only), detach of no attach, epilog of no Run;
 *  - attach: ATTACH's json, the Ack makes a job Target, a second attach of
 *    the job refused, a detach by another user refused, a detach ends the
 *    Run (FINALIZE) and its client is told unasked (ended_by "detach");
 *  - the job's end (CLOSE job-ended), the Aggregator's refusal (EPERM, its
 *    message, nothing left), the client going away (interrupted);
 *  - job-prolog: START of "job-<cluster>-<J>" with the job, not bound to
 *    its connection; a second one answered with the same Run; job-epilog:
 *    FINALIZE job_epilog, the pending nodes answered; a START unanswered:
 *    job-prolog answered within its bound;
 *  - a stop ends both kinds (the attach's client told "service-stop").
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/agent_fixture.h"
#include "tests/unit/node_service_fixture.h"
#include "userspace/agent/node_service.h"
#include "userspace/config/config.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"

#define JOB 4242
#define OWNER 12345 /* a uid that is neither root nor nobody */

struct jfx {
	struct ns_fixture nf; /* first: the node service */
	struct fixture *agg;  /* the Aggregator: a ROUTER on inproc:// */
	char *endpoints[1];
	struct service_config service;
};

static int setup(void **state)
{
	struct jfx *j = calloc(1, sizeof(*j));
	struct node_service_opts o = {.node = FX_NODE, .signal_fd = -1, .quiet = 1};

	if (!j)
		return -1;
	j->agg = fx_new(0);
	fx_bind(j->agg);
	j->endpoints[0] = j->agg->endpoint;
	j->service =
	    (struct service_config){.present = 1, .aggregators = j->endpoints, .n_aggregators = 1};
	o.service = &j->service;
	o.zmq_ctx = j->agg->zctx;
	if (ns_fixture_start(&j->nf, "/tmp/nunatak-test-nsjob-XXXXXX", &o))
		return -1;
	*state = j;
	return 0;
}

static int teardown(void **state)
{
	struct jfx *j = *state;

	ns_fixture_stop(&j->nf);
	fx_unbind(j->agg);
	zmq_ctx_term(j->agg->zctx);
	free(j->agg);
	free(j);
	return 0;
}

/* sends req (taken) */
static void send_req(int fd, json_t *req)
{
	assert_non_null(req);
	assert_int_equal(control_send_msg(fd, req, 1000), 0);
	json_decref(req);
}

/* the next message on fd (the caller's) */
static json_t *await(int fd, int ms)
{
	json_t *msg = NULL;
	char err[512];

	if (control_await(fd, &msg, ms, NULL, err, sizeof(err)))
		fail_msg("no answer: %s", err);
	return msg;
}

static int ask_code(int fd, json_t *req, char *err, size_t len)
{
	send_req(fd, req);
	return ns_fixture_code(await(fd, 5000), err, len);
}

/* The next Control of action from the node service, Batches acked on the
 * way; 1 and *r (fx_release it), 0 none within ms */
static int next_control(struct jfx *j, int action, struct received *r, int ms)
{
	long long end = fx_now_ms() + ms;

	while (fx_now_ms() < end) {
		if (!fx_recv2(j->agg, NULL, NULL, 0, r, (int)(end - fx_now_ms())))
			return 0;
		if (r->env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_CONTROL &&
		    (int)r->env->control->action == action)
			return 1;
		if (r->env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_BATCH)
			fx_ack(j->agg, r, NULL);
		fx_release(r);
	}
	return 0;
}

/* Batches acked up to run_id's last: 1 when one of run_id's carried the
 * Degradation frequency-fixed */
static int fixed_seen;

static int fixed_in_batches(struct jfx *j, const char *run_id)
{
	long long end = fx_now_ms() + 10000;
	struct received r;

	fixed_seen = 0;
	while (fx_now_ms() < end && fx_recv2(j->agg, NULL, NULL, 0, &r, 200)) {
		if (r.env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_BATCH) {
			fixed_seen |= !strcmp(r.env->batch->run_id, run_id) &&
				      batch_has_degradation(r.env->batch, "frequency-fixed");
			fx_ack(j->agg, &r, NULL);
			if (r.env->batch->has_last && r.env->batch->last &&
			    !strcmp(r.env->batch->run_id, run_id)) {
				fx_release(&r);
				break;
			}
		}
		fx_release(&r);
	}
	return fixed_seen;
}

static json_t *control_json(const struct received *r)
{
	json_t *doc = json_loads(r->env->control->json ?: "", 0, NULL);

	assert_non_null(doc);
	return doc;
}

static json_t *attach_req(unsigned long job)
{
	return json_pack("{s:s, s:I, s:s, s:n, s:n}", "request", "attach", "job_id",
			 (json_int_t)job, "credential", "MUNGE:not-checked-here", "frequency",
			 "name");
}

static void test_refusals(void **state)
{
	struct jfx *j = *state;
	char err[512];
	int fd = ns_fixture_connect(&j->nf);

	assert_int_equal(ask_code(fd, json_pack("{s:s}", "request", "attach"), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "job_id"));
	assert_int_equal(ask_code(fd, attach_req(0), err, sizeof(err)), -EINVAL);
	assert_int_equal(ask_code(fd, attach_req(1ULL << 32), err, sizeof(err)), -EINVAL);
	assert_int_equal(ask_code(fd, json_pack("{s:s, s:s}", "request", "attach", "job_id", "7"),
				  err, sizeof(err)), -EINVAL);
	assert_int_equal(ask_code(fd, json_pack("{s:s, s:i}", "request", "attach", "job_id", 7),
				  err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "credential"));
	{
		json_t *req = attach_req(7);

		json_object_set_new(req, "frequency", json_integer(0));
		assert_int_equal(ask_code(fd, req, err, sizeof(err)), -EINVAL);
		req = attach_req(7);
		json_object_set_new(req, "symbolizer", json_string("relative/llvm-symbolizer"));
		assert_int_equal(ask_code(fd, req, err, sizeof(err)), -EINVAL);
	}
	assert_int_equal(ask_code(fd, json_pack("{s:s, s:i}", "request", "detach", "job_id", 7),
				  err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no attach of job 7 on this node"));
	/* root's hooks: malformed, and an epilog of no Run */
	assert_int_equal(ask_code(fd, json_pack("{s:s, s:i, s:i, s:i, s:s, s:s}", "request",
						"job-prolog", "job_id", 7, "uid", 1, "gid", 1,
						"work_dir", "relative", "nodes", "n1"),
				  err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "work_dir"));
	send_req(fd, json_pack("{s:s, s:i, s:s, s:n}", "request", "job-epilog", "job_id", 7,
			       "cluster", "c", "exit_code"));
	{
		json_t *reply = await(fd, 5000);

		assert_int_equal(control_reply_status(reply, err, sizeof(err)), 0);
		assert_true(json_is_true(json_object_get(reply, "none")));
		json_decref(reply);
	}
	close(fd);
}

static json_t *prolog_req_of(const char *work_dir, int job)
{
	return json_pack("{s:s, s:i, s:i, s:i, s:s, s:s, s:s, s:i}", "request", "job-prolog",
			 "job_id", job, "uid", OWNER, "gid", OWNER, "work_dir", work_dir, "nodes",
			 FX_NODE ",n2", "cluster", "clus ter", "frequency", 199);
}

static json_t *prolog_req(const char *work_dir)
{
	return prolog_req_of(work_dir, JOB);
}

/* the Slurm hooks are root's: a user's are refused, nothing sent */
static void test_hooks_root_only(void **state)
{
	struct jfx *j = *state;
	struct received r;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	assert_int_equal(ns_fixture_as_nobody(&j->nf, prolog_req("/tmp")), EPERM);
	assert_int_equal(
	    ns_fixture_as_nobody(&j->nf, json_pack("{s:s, s:i, s:s, s:n}", "request", "job-epilog",
						   "job_id", JOB, "cluster", "c", "exit_code")),
	    EPERM);
	assert_false(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__START, &r, 500));
}

/* attach asked and acked as the Aggregator would: the client's fd; the
 * ATTACH's run_id in run_id */
static int attached(struct jfx *j, char *run_id, uid_t owner)
{
	struct received r;
	json_t *doc, *reply;
	char ack[512], err[512];
	int fd = ns_fixture_connect(&j->nf);

	send_req(fd, attach_req(JOB));
	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__ATTACH, &r, 5000));
	doc = control_json(&r);
	assert_int_equal(json_integer_value(json_object_get(doc, "job_id")), JOB);
	assert_int_equal(json_integer_value(json_object_get(doc, "peer_uid")), geteuid());
	assert_string_equal(json_string_value(json_object_get(doc, "credential")),
			    "MUNGE:not-checked-here");
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(doc,
			    "run"), "command"), 1)), "attach");
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "run"),
							      "node")), FX_NODE);
	json_decref(doc);
	snprintf(run_id, 65, "%s", r.env->control->run_id);
	assert_int_equal(strlen(run_id), 32);
	snprintf(ack, sizeof(ack),
		 "{\"run_id\":\"%s\",\"run_dir\":\"%s/runs/r1\",\"owner\":{\"uid\":"
		 "%u,\"gid\":%u,\"user\":\"alice\"},\"job\":{\"id\":%d,\"name\":\"sim\",\"nodes\":"
		 "[\"%s\"],\"work_dir\":\"%s\"},\"frequency\":99}",
		 run_id, j->nf.dir, (unsigned)owner, (unsigned)owner, JOB, FX_NODE, j->nf.dir);
	fx_ack(j->agg, &r, ack);
	fx_release(&r);
	reply = await(fd, 5000);
	if (control_reply_status(reply, err, sizeof(err)))
		fail_msg("attach refused: %s", err);
	assert_string_equal(json_string_value(json_object_get(reply, "reply")), "attach");
	assert_string_equal(json_string_value(json_object_get(reply, "run_id")), run_id);
	assert_string_equal(json_string_value(json_object_get(json_object_get(reply, "owner"),
							      "user")), "alice");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(reply, "job"), "id")),
			 JOB);
	json_decref(reply);
	return fd;
}

/* the agent's Target of run_id: its job_id, -1 none */
static long long target_job(int fd, const char *run_id)
{
	json_t *st, *t;
	long long job = -1;
	size_t i;

	send_req(fd, json_pack("{s:s}", "request", "status"));
	st = await(fd, 5000);
	json_array_foreach(json_object_get(json_object_get(st, "agent"), "targets"), i, t)
		if (!strcmp(json_string_value(json_object_get(t, "run_id")) ?: "", run_id))
			job = json_integer_value(json_object_get(t, "job_id"));
	json_decref(st);
	return job;
}

/* FINALIZE of run_id answered with ack_json: its json (the caller's) */
static json_t *finalized(struct jfx *j, const char *run_id, const char *ack_json)
{
	struct received r;
	json_t *doc;

	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, &r, 10000));
	assert_string_equal(r.env->control->run_id, run_id);
	doc = control_json(&r);
	fx_ack(j->agg, &r, ack_json);
	fx_release(&r);
	return doc;
}

static void test_attach_detach(void **state)
{
	struct jfx *j = *state;
	char run_id[65], err[512], ack[512];
	json_t *msg, *fin;
	int fd, other;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	fd = attached(j, run_id, OWNER);
	other = ns_fixture_connect(&j->nf);
	assert_int_equal(target_job(other, run_id), JOB);
	/* the job is being profiled through this node: a second attach refused */
	assert_int_equal(ask_code(other, attach_req(JOB), err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "nunatak detach 4242"));
	/* nobody neither attached nor owns it */
	assert_int_equal(ns_fixture_as_nobody(
			     &j->nf, json_pack("{s:s, s:i}", "request", "detach", "job_id", JOB)),
			 EPERM);
	send_req(other, json_pack("{s:s, s:i}", "request", "detach", "job_id", JOB));
	snprintf(ack, sizeof(ack), "{\"run_dir\":\"%s/runs/r1\"}", j->nf.dir);
	fin = finalized(j, run_id, ack);
	assert_true(json_is_null(json_object_get(fin, "exit_code")));
	assert_false(json_is_true(json_object_get(fin, "interrupted")));
	json_decref(fin);
	/* the detach answered once finalized, the attach's client told unasked */
	msg = await(other, 10000);
	assert_string_equal(json_string_value(json_object_get(msg, "reply")), "detach");
	assert_int_equal(control_reply_status(msg, err, sizeof(err)), 0);
	assert_non_null(strstr(json_string_value(json_object_get(msg, "run_dir")), "/runs/r1"));
	json_decref(msg);
	msg = await(fd, 10000);
	assert_string_equal(json_string_value(json_object_get(msg, "reply")), "run-end");
	assert_int_equal(control_reply_status(msg, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(msg, "ended_by")), "detach");
	json_decref(msg);
	assert_int_equal(target_job(other, run_id), -1);
	/* the client's own run-end now: no such Run any more */
	assert_int_equal(ask_code(fd, json_pack("{s:s, s:s, s:n, s:i}", "request", "run-end",
						"run_id", run_id, "exit_code", "linger_ms", 0),
				  err, sizeof(err)), -ENOENT);
	close(fd);
	close(other);
}

/* who may detach: not another user; the job's owner (root here) may */
static void test_detach_rights(void **state)
{
	struct jfx *j = *state;
	char run_id[65];
	pid_t child;
	int fd;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	fd = attached(j, run_id, 0); /* root's job, attached by root: nobody may not */
	assert_int_equal(ns_fixture_as_nobody(
			     &j->nf, json_pack("{s:s, s:i}", "request", "detach", "job_id", JOB)),
			 EPERM);
	/* the owner (root) may: answered once FINALIZE is acked */
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		json_t *reply = NULL;
		char err[512];
		int c;

		if (control_connect(j->nf.sock, &c, err, sizeof(err)) ||
		    control_request(c, json_pack("{s:s, s:i}", "request", "detach", "job_id", JOB),
				    &reply, 20000, NULL, err, sizeof(err)))
			_exit(100);
		_exit(-control_reply_status(reply, err, sizeof(err)));
	}
	json_decref(finalized(j, run_id, "{}"));
	assert_int_equal(ns_fixture_exit_status(child), 0);
	close(fd);
}

/* the Aggregator CLOSEs the Target (the job ended): FINALIZE, the client told */
static void test_job_ended(void **state)
{
	struct jfx *j = *state;
	struct received hello;
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Control ctl = NUNATAK__WIRE__CONTROL__INIT;
	char run_id[65], err[512];
	json_t *msg;
	int fd = attached(j, run_id, OWNER);

	assert_true(fx_recv2(j->agg, NULL, NULL, NUNATAK__WIRE__ENVELOPE__BODY_HELLO, &hello,
			     FX_RECV_MS));
	ctl.action = NUNATAK__WIRE__CONTROL__ACTION__CLOSE;
	ctl.run_id = run_id;
	ctl.json = "{\"why\":\"job-ended\"}";
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &ctl;
	fx_answer(j->agg, &hello, &env);
	fx_release(&hello);
	json_decref(finalized(j, run_id, "{}"));
	msg = await(fd, 10000);
	assert_string_equal(json_string_value(json_object_get(msg, "reply")), "run-end");
	assert_int_equal(control_reply_status(msg, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(msg, "ended_by")), "job-ended");
	json_decref(msg);
	close(fd);
}

/* the Aggregator refuses (not the caller's job): its message, nothing left */
static void test_attach_refused(void **state)
{
	struct jfx *j = *state;
	struct received r;
	char err[512];
	int fd = ns_fixture_connect(&j->nf);

	send_req(fd, attach_req(JOB));
	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__ATTACH, &r, 5000));
	fx_error(j->agg, &r, EPERM, "job 4242 belongs to user 'alice' (uid 1001), not to you");
	fx_release(&r);
	assert_int_equal(ns_fixture_code(await(fd, 5000), err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "belongs to user 'alice'"));
	/* nothing left: the same attach goes to the Aggregator again */
	send_req(fd, attach_req(JOB));
	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__ATTACH, &r, 5000));
	fx_error(j->agg, &r, ENOENT, "no job 4242 runs");
	fx_release(&r);
	assert_int_equal(ns_fixture_code(await(fd, 5000), err, sizeof(err)), -ENOENT);
	close(fd);
}

/* the attach's connection closes: its Run ends, interrupted */
static void test_attach_client_gone(void **state)
{
	struct jfx *j = *state;
	char run_id[65];
	json_t *fin;
	int fd = attached(j, run_id, OWNER);

	close(fd);
	fin = finalized(j, run_id, "{}");
	assert_true(json_is_true(json_object_get(fin, "interrupted")));
	json_decref(fin);
}

/* the attach's own run-end (its --duration): answered once finalized */
static void test_attach_run_end(void **state)
{
	struct jfx *j = *state;
	char run_id[65], err[512];
	json_t *msg;
	int fd = attached(j, run_id, OWNER);

	send_req(fd, json_pack("{s:s, s:s, s:n, s:i, s:i}", "request", "run-end", "run_id",
			       run_id, "exit_code", "linger_ms", 0, "symbolizer_budget_ms", 1000));
	json_decref(finalized(j, run_id, "{}"));
	msg = await(fd, 10000);
	assert_string_equal(json_string_value(json_object_get(msg, "reply")), "run-end");
	assert_int_equal(control_reply_status(msg, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(msg, "ended_by")), "run-end");
	json_decref(msg);
	close(fd);
}

static void test_prolog_epilog(void **state)
{
	struct jfx *j = *state;
	struct received r;
	char err[512], runs[256];
	json_t *doc, *msg, *job;
	int fd = ns_fixture_connect(&j->nf);

	send_req(fd, prolog_req(j->nf.dir));
	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__START, &r, 5000));
	assert_string_equal(r.env->control->run_id, "job-clus_ter-4242");
	doc = control_json(&r);
	snprintf(runs, sizeof(runs), "%s/.nunatak", j->nf.dir);
	assert_string_equal(json_string_value(json_object_get(doc, "runs_dir")), runs);
	assert_true(json_is_true(json_object_get(doc, "runs_dir_create")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "owner"), "uid")),
			 OWNER);
	job = json_object_get(doc, "job");
	assert_int_equal(json_integer_value(json_object_get(job, "id")), JOB);
	assert_string_equal(json_string_value(json_object_get(job, "nodes")), FX_NODE ",n2");
	assert_string_equal(json_string_value(json_object_get(job, "mode")), "prolog");
	/* 199 asked: the service samples at its own frequency, and says so */
	assert_int_equal(json_integer_value(json_object_get(doc, "frequency")),
			 CONFIG_DEFAULT_SAMPLING_FREQUENCY);
	json_decref(doc);
	fx_ack(j->agg, &r, "{\"run_dir\":\"/w/.nunatak/job-4242\"}");
	fx_release(&r);
	msg = await(fd, 5000);
	assert_int_equal(control_reply_status(msg, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(msg, "run_dir")),
			    "/w/.nunatak/job-4242");
	assert_int_equal(json_integer_value(json_object_get(msg, "frequency")),
			 CONFIG_DEFAULT_SAMPLING_FREQUENCY);
	assert_int_equal(json_integer_value(json_object_get(msg, "frequency_asked")), 199);
	json_decref(msg);
	/* not bound to its connection */
	close(fd);
	fd = ns_fixture_connect(&j->nf);
	assert_int_equal(target_job(fd, "job-clus_ter-4242"), JOB);
	/* a Prolog run again: the same Run */
	send_req(fd, prolog_req(j->nf.dir));
	msg = await(fd, 5000);
	assert_int_equal(control_reply_status(msg, err, sizeof(err)), 0);
	assert_true(json_is_true(json_object_get(msg, "already")));
	json_decref(msg);
	send_req(fd, json_pack("{s:s, s:i, s:s, s:i}", "request", "job-epilog", "job_id", JOB,
			       "cluster", "clus ter", "exit_code", 3));
	/* the Batches carry frequency-fixed (199 asked, 997 sampled) */
	assert_true(fixed_in_batches(j, "job-clus_ter-4242"));
	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, &r, 10000));
	doc = control_json(&r);
	assert_true(json_is_true(json_object_get(doc, "job_epilog")));
	assert_int_equal(json_integer_value(json_object_get(doc, "nodes_wait_ms")), 20000);
	assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 3);
	json_decref(doc);
	fx_ack(j->agg, &r, "{\"run_dir\":\"/w/.nunatak/job-4242\",\"pending_nodes\":[\"n2\"]}");
	fx_release(&r);
	msg = await(fd, 10000);
	assert_string_equal(json_string_value(json_object_get(msg, "reply")), "job-epilog");
	assert_int_equal(control_reply_status(msg, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_array_get(json_object_get(msg,
							     "pending_nodes"), 0)), "n2");
	assert_false(json_is_true(json_object_get(msg, "finalized")));
	json_decref(msg);
	assert_int_equal(target_job(fd, "job-clus_ter-4242"), -1);
	close(fd);
}

/* a START the Aggregator does not answer: job-prolog answered within ~5 s */
static void test_prolog_bounded(void **state)
{
	struct jfx *j = *state;
	struct received r;
	long long t0 = fx_now_ms();
	char err[512];
	int fd = ns_fixture_connect(&j->nf);

	send_req(fd, prolog_req(j->nf.dir));
	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__START, &r, 5000));
	fx_release(&r); /* never answered */
	assert_int_equal(ns_fixture_code(await(fd, 8000), err, sizeof(err)), -ETIMEDOUT);
	assert_true(fx_now_ms() - t0 < 6500);
	assert_non_null(strstr(err, "did not answer"));
	close(fd);
}

/* the service stops: the attach Run ends (its client told, "service-stop"),
 * the prolog Run's FINALIZE is this node's Epilog (another job: a job has
 * one Run per node) */
static void test_stop_ends_job_runs(void **state)
{
	struct jfx *j = *state;
	struct received r;
	char run_id[65], err[512];
	json_t *msg, *doc;
	int fd = attached(j, run_id, OWNER), pf = ns_fixture_connect(&j->nf), finals = 0,
	    epilog = 0;

	send_req(pf, prolog_req_of(j->nf.dir, JOB + 1));
	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__START, &r, 5000));
	fx_ack(j->agg, &r, "{\"run_dir\":\"/w/.nunatak/job-4243\"}");
	fx_release(&r);
	assert_int_equal(ns_fixture_code(await(pf, 5000), err, sizeof(err)), 0);
	node_service_stop(j->nf.ns);
	while (finals < 2 && next_control(j, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, &r, 10000)) {
		doc = control_json(&r);
		assert_true(json_is_true(json_object_get(doc, "interrupted")));
		epilog += json_is_true(json_object_get(doc, "job_epilog")) &&
			  !strcmp(r.env->control->run_id, "job-clus_ter-4243");
		json_decref(doc);
		fx_ack(j->agg, &r, "{}");
		fx_release(&r);
		finals++;
	}
	assert_int_equal(finals, 2);
	assert_int_equal(epilog, 1);
	msg = await(fd, 10000);
	assert_string_equal(json_string_value(json_object_get(msg, "reply")), "run-end");
	assert_string_equal(json_string_value(json_object_get(msg, "ended_by")), "service-stop");
	json_decref(msg);
	pthread_join(j->nf.thread, NULL);
	/* teardown joins again: a new thread that returns at once */
	assert_int_equal(pthread_create(&j->nf.thread, NULL, ns_fixture_serve, &j->nf), 0);
	close(fd);
	close(pf);
}

/* one Run per job on a node: a job-prolog of a job attached here refused */
static void test_one_run_per_job(void **state)
{
	struct jfx *j = *state;
	char run_id[65], err[512];
	int fd = attached(j, run_id, OWNER), pf = ns_fixture_connect(&j->nf);

	assert_int_equal(ask_code(pf, prolog_req(j->nf.dir), err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "profiling it on this node already"));
	close(pf);
	close(fd);
}

/* red: one user's attaches waiting for the Aggregator are bounded (2): the
 * 3rd is refused at once (EAGAIN); the others answered by the Aggregator */
static void test_attaches_bounded(void **state)
{
	struct jfx *j = *state;
	struct received r;
	pid_t child;
	int n;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	child = ns_fixture_fork_nobody(&j->nf);
	if (!child) {
		json_t *reply = NULL;
		char err[512];
		int a, b;

		if (control_connect(j->nf.sock, &a, err, sizeof(err)) ||
		    control_connect(j->nf.sock, &b, err, sizeof(err)))
			_exit(100);
		for (int i = 1; i <= 4; i++)
			if (control_send_msg(a, attach_req(JOB + i), 1000))
				_exit(101);
		usleep(300 * 1000);
		if (control_request(b, attach_req(JOB), &reply, 5000, NULL, err, sizeof(err)))
			_exit(102);
		_exit(-control_reply_status(reply, err, sizeof(err)));
	}
	assert_int_equal(ns_fixture_exit_status(child), EAGAIN);
	for (n = 0; n < 4 && next_control(j, NUNATAK__WIRE__CONTROL__ACTION__ATTACH, &r, 1500); n++) {
		fx_error(j->agg, &r, ENOENT, "no such job");
		fx_release(&r);
	}
	assert_int_equal(n, 2); /* the 3rd and 4th refused as the 5th */
}

/* red: another user's attach of job J, not answered yet, neither blocks nor
 * is named to the job's owner (root here): theirs goes to the Aggregator */
static void test_pending_attach_of_another(void **state)
{
	struct jfx *j = *state;
	struct received r;
	char run_id[65];
	pid_t child;
	int status, fd;

	SKIP_UNLESS(geteuid() == 0, "needs root to make a caller of another uid");
	child = ns_fixture_fork_nobody(&j->nf);
	if (!child) {
		char err[512];
		int a;

		if (control_connect(j->nf.sock, &a, err, sizeof(err)) ||
		    control_send_msg(a, attach_req(JOB), 1000))
			_exit(100);
		sleep(3); /* its attach stays under way meanwhile */
		_exit(0);
	}
	assert_true(next_control(j, NUNATAK__WIRE__CONTROL__ACTION__ATTACH, &r, 3000));
	fx_release(&r); /* nobody's: never answered */
	fd = attached(j, run_id, 0);
	close(fd);
	assert_int_equal(waitpid(child, &status, 0), child);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks_root_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_detach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detach_rights, setup, teardown),
		cmocka_unit_test_setup_teardown(test_job_ended, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_client_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_run_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_epilog, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_ends_job_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_run_per_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attaches_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_attach_of_another, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
