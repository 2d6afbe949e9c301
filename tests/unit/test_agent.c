/* Tests of the Agent's publishing against real ZeroMQ: a ROUTER in the
 * test plays the Aggregator (it reads each message and answers an Ack, an
 * Error with or without a storage code, or nothing) and the test runs the
 * Agent's loop (agent_dispatch) as the node service does. BPF is loaded
 * when run as root; these tests do not need it (Batches carry counters
 * and Degradations without samples).
 *
 * Covered: a Batch without Ack is resent every 2 s, the very same bytes
 * (incarnation and seq), and the next waits behind it; a storage error
 * keeps it until a later Ack; a refusal is counted in a later Batch; the
 * no-spool byte cap drops the oldest and counts it; every Batch carries
 * its incarnation, a new Agent has a new one, seq starts at 0 per
 * Target; START is sent after a Hello and done() gets the Ack's json, an
 * Error gives done(-code) and no Target; the end sends the last Batch
 * (Batch.last, samples_sent, batches_sent), then FINALIZE, done() at its
 * Ack; OPEN makes a Target (acked), CLOSE ends it with its last Batch;
 * a full disk at the Aggregator is counted in the last Batch; CURVE with
 * the Aggregator's key gets through, with another key nothing does;
 * agent_dispatch never blocks (< 50 ms per call) with an absent
 * Aggregator; agent_route is FNV-1a; the status JSON; hardware counters
 * keep one pair per process. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
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
#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/wire/curve.h"
#include "userspace/wire/wire.h"

#define RUN_A "0123456789abcdef0123456789abcdef"
#define RUN_B "fedcba9876543210fedcba9876543210"

/* No Ack: resent after 2 s, the very same bytes; the next one (built
 * meanwhile) waits behind it until its Ack. */
static void test_no_ack_resent_unchanged(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct received first, again, next;
	long long t0;

	fx_target(a, RUN_A);
	assert_true(fx_recv_batch(fx, a, &first, FX_RECV_MS));
	t0 = fx_now_ms();
	assert_int_equal(first.env->batch->seq, 0);
	assert_true(first.env->batch->has_incarnation);
	assert_int_equal(first.env->batch->incarnation, agent_incarnation(a));
	assert_string_equal(first.env->batch->run_id, RUN_A);
	assert_true(fx_recv_batch(fx, a, &again, FX_RECV_MS));
	assert_true(fx_now_ms() - t0 >= AGENT_RESEND_MS - 100);
	assert_int_equal(again.len, first.len);
	assert_memory_equal(again.data, first.data, first.len);
	/* the Ack of seq 0 lets seq 1 go */
	fx_ack(fx, &again, NULL);
	assert_true(fx_recv_batch(fx, a, &next, 1000));
	assert_int_equal(next.env->batch->seq, 1);
	assert_int_equal(next.env->batch->incarnation, agent_incarnation(a));
	assert_int_equal(batch_counter(next.env->batch, "storage_failed_batches"), -1);
	fx_release(&next);
	fx_release(&first);
	fx_release(&again);
}

/* Disk full at the Aggregator: kept and resent until an Ack. */
static void test_storage_error_kept_then_acked(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct received r, again, next;

	fx_target(a, RUN_A);
	assert_true(fx_recv_batch(fx, a, &r, FX_RECV_MS));
	fx_error(fx, &r, ENOSPC, "no space left on device");
	assert_true(fx_recv_batch(fx, a, &again, FX_RECV_MS));
	assert_int_equal(again.env->batch->seq, r.env->batch->seq);
	assert_memory_equal(again.data, r.data, r.len);
	fx_ack(fx, &again, NULL);
	assert_true(fx_recv_batch(fx, a, &next, 1000));
	assert_int_equal(next.env->batch->seq, 1);
	assert_int_equal(batch_counter(next.env->batch, "storage_failed_batches"), -1);
	fx_release(&r);
	fx_release(&again);
	fx_release(&next);
}

/* A refusal for good: dropped, counted in the next Batch. */
static void test_refused_counted(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct received r, next;

	fx_target(a, RUN_A);
	assert_true(fx_recv_batch(fx, a, &r, FX_RECV_MS));
	fx_error(fx, &r, EINVAL, "malformed");
	assert_true(fx_recv_batch(fx, a, &next, 1000));
	assert_int_equal(next.env->batch->seq, 1);
	assert_int_equal(batch_counter(next.env->batch, "storage_refused_batches"), 1);
	fx_release(&r);
	fx_release(&next);
}

/* Without a spool the memory cap drops the oldest, counted. */
static void test_queue_cap_drops_oldest(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 1); /* one byte: only the newest is kept */
	struct received r, next;
	int got = 0;

	fx_target(a, RUN_A);
	assert_true(fx_recv_batch(fx, a, &r, FX_RECV_MS));
	fx_pump(a, 500); /* several Batches built: all but the newest dropped */
	fx_ack(fx, &r, NULL); /* already dropped: nothing */
	while (!got && fx_recv_batch(fx, a, &next, 3000)) {
		got = batch_counter(next.env->batch, "storage_failed_batches") > 0;
		fx_ack(fx, &next, NULL);
		fx_release(&next);
	}
	assert_true(got);
	fx_release(&r);
}

/* A new Agent, a new incarnation; each Target's seq starts at 0. */
static void test_incarnation_new_per_agent(void **state)
{
	struct fixture *fx = *state;
	struct agent_opts o = {0};
	struct received r;

	fx->agent = fx_agent_opts(fx, &o);
	fx->agent2 = fx_agent_opts(fx, &o);
	assert_true(agent_incarnation(fx->agent) != 0);
	assert_true(agent_incarnation(fx->agent2) != 0);
	assert_true(agent_incarnation(fx->agent) != agent_incarnation(fx->agent2));
	fx_target(fx->agent2, RUN_B);
	assert_true(fx_recv2(fx, fx->agent, fx->agent2, NUNATAK__WIRE__ENVELOPE__BODY_BATCH, &r,
			     FX_RECV_MS));
	assert_string_equal(r.env->batch->run_id, RUN_B);
	assert_int_equal(r.env->batch->seq, 0);
	assert_int_equal(r.env->batch->incarnation, agent_incarnation(fx->agent2));
	fx_release(&r);
}

struct done_result {
	int called, err;
	char json[512];
};

static void on_done(void *ctx, int err, const char *json)
{
	struct done_result *d = ctx;

	d->called++;
	d->err = err;
	snprintf(d->json, sizeof(d->json), "%s", json ? json : "");
}

/* START goes after a Hello; its Ack's json reaches done(); Batches only
 * after it. */
static void test_start_acked(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct agent_target_opts o = {.run_id = RUN_A, .start_json = "{\"runs_dir\":\"/x\"}"};
	struct done_result d = {0};
	struct received hello, start, b;

	assert_int_equal(agent_target_start(a, &o, on_done, &d), 0);
	assert_int_equal(agent_target_start(a, &o, on_done, &d), -EEXIST);
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_HELLO, &hello, FX_RECV_MS));
	assert_string_equal(hello.env->hello->node, FX_NODE);
	assert_int_equal(hello.env->hello->incarnation, agent_incarnation(a));
	assert_non_null(hello.env->hello->machine_json);
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, &start, FX_RECV_MS));
	assert_int_equal(start.env->control->action, NUNATAK__WIRE__CONTROL__ACTION__START);
	assert_string_equal(start.env->control->run_id, RUN_A);
	assert_string_equal(start.env->control->json, o.start_json);
	assert_false(fx_recv_batch(fx, a, &b, 300)); /* no Batch before the Run exists */
	assert_int_equal(d.called, 0);
	fx_ack(fx, &start, "{\"run_id\":\"" RUN_A "\",\"run_dir\":\"/x/r\"}");
	fx_pump(a, 50);
	assert_int_equal(d.called, 1);
	assert_int_equal(d.err, 0);
	assert_non_null(strstr(d.json, "/x/r"));
	assert_true(fx_recv_batch(fx, a, &b, FX_RECV_MS));
	assert_int_equal(b.env->batch->seq, 0);
	fx_release(&b);
	fx_release(&hello);
	fx_release(&start);
}

/* A START refused: done(-code, message), the Target is gone. */
static void test_start_refused(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct agent_target_opts o = {.run_id = RUN_A, .start_json = "{}"};
	struct done_result d = {0};
	struct received start;

	assert_int_equal(agent_target_start(a, &o, on_done, &d), 0);
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, &start, FX_RECV_MS));
	fx_error(fx, &start, EACCES, "runs dir refused: not yours");
	fx_pump(a, 50);
	assert_int_equal(d.called, 1);
	assert_int_equal(d.err, -EACCES);
	assert_string_equal(d.json, "runs dir refused: not yours");
	assert_false(agent_target_exists(a, RUN_A));
	fx_release(&start);
}

/* The end: a data Batch, the last Batch with the final counters, then
 * FINALIZE (sent again while unanswered); done() at its Ack with its json. */
static void test_end_last_batch_then_finalize(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct done_result d = {0};
	struct received r, fin;
	int saw_last = 0;
	long long batches = -1;

	fx_target(a, RUN_A);
	assert_int_equal(agent_target_end(a, RUN_A, "{\"exit_code\":0}", on_done, &d), 0);
	assert_int_equal(agent_target_end(a, RUN_A, NULL, NULL, NULL), -EALREADY);
	while (!saw_last && fx_recv_batch(fx, a, &r, FX_RECV_MS)) {
		saw_last = r.env->batch->has_last && r.env->batch->last;
		if (saw_last) {
			batches = batch_counter(r.env->batch, "batches_sent");
			assert_true(batch_counter(r.env->batch, "samples_sent") >= 0);
			assert_int_equal(r.env->batch->n_samples, 0);
		}
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	assert_true(saw_last);
	assert_true(batches >= 2); /* the data Batch and the last one itself */
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, &fin, FX_RECV_MS));
	assert_int_equal(fin.env->control->action, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE);
	assert_string_equal(fin.env->control->json, "{\"exit_code\":0}");
	assert_int_equal(d.called, 0);
	/* not answered (an Aggregator that restarted): sent again */
	fx_release(&fin);
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, &fin,
			     AGENT_RESEND_MS * 4));
	assert_int_equal(fin.env->control->action, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE);
	fx_ack(fx, &fin, "{\"run_dir\":\"/x/r\"}");
	fx_pump(a, 50);
	assert_int_equal(d.called, 1);
	assert_int_equal(d.err, 0);
	assert_string_equal(d.json, "{\"run_dir\":\"/x/r\"}");
	assert_false(agent_target_exists(a, RUN_A));
	fx_release(&fin);
}

/* Interrupting the finalize: FINALIZE again with "interrupted": true. */
static void test_interrupt_resends_finalize(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct done_result d = {0};
	struct received r, fin, again;

	fx_target(a, RUN_A);
	assert_int_equal(agent_target_end(a, RUN_A, "{\"exit_code\":1}", on_done, &d), 0);
	while (fx_recv2(fx, a, NULL, 0, &r, FX_RECV_MS) &&
	       r.env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_BATCH) {
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	fin = r;
	assert_int_equal(fin.env->control->action, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE);
	assert_int_equal(agent_target_interrupt(a, RUN_A), 0);
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL, &again, 1000));
	assert_int_equal(again.env->control->action, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE);
	assert_non_null(strstr(again.env->control->json, "\"interrupted\":true"));
	fx_ack(fx, &again, "{}");
	fx_pump(a, 50);
	assert_int_equal(d.called, 1);
	assert_int_equal(d.err, 0);
	fx_release(&fin);
	fx_release(&again);
}


/* OPEN from the Aggregator: acked, a Target publishing to it (no START);
 * CLOSE: its last Batch. */
static void test_open_close(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct received hello, ack, r;
	int last = 0;

	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_HELLO, &hello, FX_RECV_MS));
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_B,
		   "{\"token\":\"00112233445566778899aabbccddeeff\",\"owner\":{\"uid\":1000,"
		   "\"gid\":1000},\"frequency\":997,\"mpi_events\":false}");
	assert_true(fx_recv2(fx, a, NULL, NUNATAK__WIRE__ENVELOPE__BODY_ACK, &ack, FX_RECV_MS));
	assert_string_equal(ack.env->ack->run_id, RUN_B);
	assert_string_equal(ack.env->ack->node, FX_NODE);
	assert_true(agent_target_exists(a, RUN_B));
	assert_true(fx_recv_batch(fx, a, &r, FX_RECV_MS));
	assert_string_equal(r.env->batch->run_id, RUN_B);
	fx_ack(fx, &r, NULL);
	fx_release(&r);
	fx_control(fx, &hello, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_B, NULL);
	while (!last && fx_recv_batch(fx, a, &r, FX_RECV_MS)) {
		last = r.env->batch->has_last && r.env->batch->last;
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	assert_true(last);
	fx_pump(a, 50);
	assert_false(agent_target_exists(a, RUN_B));
	fx_release(&hello);
	fx_release(&ack);
}

/* The disk of the Aggregator is full: what it never stored is counted in
 * the last Batch (which it stores from its reserve), then FINALIZE. */
static void test_end_disk_full_counted_in_last_batch(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	struct done_result d = {0};
	struct received r;
	long long failed = -1;

	fx_target(a, RUN_A);
	assert_true(fx_recv_batch(fx, a, &r, FX_RECV_MS));
	fx_error(fx, &r, ENOSPC, "no space left on device");
	fx_release(&r);
	assert_int_equal(agent_target_end(a, RUN_A, "{}", on_done, &d), 0);
	while (fx_recv2(fx, a, NULL, 0, &r, 2 * AGENT_END_EXTRA_MS) &&
	       r.env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_BATCH) {
		if (r.env->batch->has_last && r.env->batch->last) {
			failed = batch_counter(r.env->batch, "storage_failed_batches");
			assert_int_equal(batch_counter(r.env->batch, "storage_failed_errno"), ENOSPC);
			fx_ack(fx, &r, NULL);
		} else {
			fx_error(fx, &r, ENOSPC, "no space left on device");
		}
		fx_release(&r);
	}
	assert_int_equal(r.env->body_case, NUNATAK__WIRE__ENVELOPE__BODY_CONTROL);
	assert_int_equal(r.env->control->action, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE);
	print_message("%lld Batches counted as not stored\n", failed);
	assert_true(failed >= 2); /* the first and the end's data Batch */
	fx_ack(fx, &r, "{}");
	fx_pump(a, 50);
	assert_int_equal(d.called, 1);
	fx_release(&r);
}


/* CURVE: with the Aggregator's public key the Agent's Batches get
 * through; with another key the handshake fails and nothing arrives. */
static void test_curve(void **state)
{
	struct fixture *fx = *state;
	struct curve_keypair server, client, other;
	struct agent_opts o = {0};
	struct received r;
	int as_server = 1;

	assert_int_equal(zmq_curve_keypair(server.public_z85, server.secret_z85), 0);
	assert_int_equal(zmq_curve_keypair(client.public_z85, client.secret_z85), 0);
	assert_int_equal(zmq_curve_keypair(other.public_z85, other.secret_z85), 0);
	fx->router = zmq_socket(fx->zctx, ZMQ_ROUTER);
	assert_int_equal(zmq_setsockopt(fx->router, ZMQ_CURVE_SERVER, &as_server, sizeof(int)), 0);
	assert_int_equal(zmq_setsockopt(fx->router, ZMQ_CURVE_SECRETKEY, server.secret_z85, 40), 0);
	assert_int_equal(zmq_bind(fx->router, fx->endpoint), 0);
	o.curve_self = &client;
	o.curve_server_public = other.public_z85; /* not the server's */
	fx->agent = fx_agent_opts(fx, &o);
	fx_target(fx->agent, RUN_A);
	assert_false(fx_recv_batch(fx, fx->agent, &r, 1500));
	agent__free(fx->agent);
	o.curve_server_public = server.public_z85;
	fx->agent = fx_agent_opts(fx, &o);
	fx_target(fx->agent, RUN_A);
	assert_true(fx_recv_batch(fx, fx->agent, &r, FX_RECV_MS));
	assert_string_equal(r.env->batch->run_id, RUN_A);
	fx_release(&r);
}

/* An absent Aggregator: every agent_dispatch returns at once (< 50 ms),
 * and agent_timeout_ms stays a bounded wait. */
static void test_dispatch_never_blocks(void **state)
{
	struct fixture *fx = *state;
	struct agent_opts o = {0};
	struct agent *a;
	long long end, worst = 0;
	int calls = 0;

	fx_spool_dir(fx);
	fx->agent = a = fx_agent_opts(fx, &o);
	fx_target(a, RUN_A);
	assert_int_equal(agent_target_end(a, RUN_B, NULL, NULL, NULL), -ENOENT);
	end = fx_now_ms() + 3000;
	while (fx_now_ms() < end) {
		struct pollfd p = {.fd = agent_fd(a), .events = POLLIN};
		long long t0;
		int t = agent_timeout_ms(a);

		assert_true(t >= 0 && t <= 60000);
		poll(&p, 1, t > 50 ? 50 : t);
		t0 = fx_now_ms();
		assert_int_equal(agent_dispatch(a), 0);
		if (fx_now_ms() - t0 > worst)
			worst = fx_now_ms() - t0;
		calls++;
	}
	print_message("%d dispatches, the longest %lld ms\n", calls, worst);
	assert_true(worst < 50);
	assert_true(calls > 10);
}

static void test_route_fnv1a(void **state)
{
	(void)state;
	/* FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c */
	assert_int_equal(agent_route("a", 7), 0xaf63dc4c8601ec8cull % 7);
	assert_int_equal(agent_route("a", 1), 0);
	assert_int_equal(agent_route("a", 0), 0);
}

static void test_status_json(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = fx_agent(fx, 0);
	json_t *st, *targets;

	fx_target(a, RUN_A);
	fx_target(a, RUN_B);
	st = agent_status(a);
	assert_non_null(st);
	assert_string_equal(json_string_value(json_object_get(st, "node")), FX_NODE);
	assert_non_null(json_string_value(json_object_get(st, "incarnation")));
	targets = json_object_get(st, "targets");
	assert_int_equal(json_array_size(targets), 2);
	assert_non_null(json_object_get(json_array_get(targets, 0), "batches_sent"));
	assert_non_null(json_object_get(json_array_get(targets, 0), "spooled"));
	json_decref(st);
}

static void test_storage_message_words(void **state)
{
	char m[256];

	(void)state;
	wire_storage_failed_message(m, sizeof(m), 1234, 5, ENOSPC);
	assert_string_equal(m, "1234 samples in 5 Batches were not stored: no space left on device");
	wire_storage_failed_message(m, sizeof(m), 1, 1, ETIMEDOUT);
	assert_non_null(strstr(m, "did not acknowledge"));
	assert_true(wire_storage_error_transient(ENOSPC));
	assert_true(wire_storage_error_transient(EIO));
	assert_false(wire_storage_error_transient(EINVAL));
	assert_false(wire_storage_error_transient(ENOENT));
}

/* fds open in this process */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A second exec of the same process keeps its one counter pair (the bug:
 * a new pair at every exec, the old one leaked). Software events stand in
 * for cycles and instructions where there is no PMU. */
static void test_hardware_counters_one_pair_per_process(void **state)
{
	struct hardware_counters *hc;
	uint64_t c1, c2;
	const char *reason;
	int gate[2], fds;
	pid_t child;
	char go;

	(void)state;
	hc = hardware_counters__new();
	assert_non_null(hc);
	if (hardware_counters_unavailable(hc)) {
		/* the real pair: unavailable, said, never a counter of 0 */
		assert_int_equal(hardware_counters_start(hc, getpid()), -EOPNOTSUPP);
		assert_int_equal(hardware_counters_finish(hc, getpid(), &c1, &c2, &reason), -ENOENT);
		assert_non_null(strstr(reason, "PMU"));
		hardware_counters__free(hc);
		hc = hardware_counters__new_events(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
						   PERF_COUNT_SW_CONTEXT_SWITCHES);
		assert_non_null(hc);
	}
	SKIP_UNLESS(!hardware_counters_unavailable(hc),
		    "perf_event_open refused even software events (perf_event_paranoid)");
	assert_int_equal(pipe(gate), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(2);
		execl("/bin/sh", "sh", "-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done",
		      (char *)NULL);
		_exit(3);
	}
	close(gate[0]);
	fds = open_fds();
	assert_int_equal(hardware_counters_start(hc, child), 0);
	assert_int_equal(hardware_counters_processes(hc), 1);
	assert_int_equal(open_fds(), fds + 2);
	/* the exec: started again for the same pid */
	assert_int_equal(hardware_counters_start(hc, child), 0);
	assert_int_equal(hardware_counters_processes(hc), 1);
	assert_int_equal(open_fds(), fds + 2);
	assert_int_equal(write(gate[1], "g", 1), 1);
	close(gate[1]);
	fds--;
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(hardware_counters_finish(hc, child, &c1, &c2, &reason), 0);
	assert_true(c1 > 0); /* task-clock ns of the shell loop */
	assert_int_equal(hardware_counters_processes(hc), 0);
	assert_int_equal(open_fds(), fds);
	assert_int_equal(hardware_counters_finish(hc, child, &c1, &c2, &reason), -ENOENT);
	hardware_counters__free(hc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_no_ack_resent_unchanged, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_storage_error_kept_then_acked, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_refused_counted, fx_setup_inproc, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_queue_cap_drops_oldest, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_incarnation_new_per_agent, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_start_acked, fx_setup_inproc, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_start_refused, fx_setup_inproc, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_end_last_batch_then_finalize, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_interrupt_resends_finalize, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_open_close, fx_setup_inproc, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_end_disk_full_counted_in_last_batch,
					    fx_setup_inproc, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_curve, fx_setup_tcp, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_dispatch_never_blocks, fx_setup_tcp, fx_teardown),
	    cmocka_unit_test(test_route_fnv1a),
	    cmocka_unit_test_setup_teardown(test_status_json, fx_setup_inproc, fx_teardown),
	    cmocka_unit_test(test_storage_message_words),
	    cmocka_unit_test(test_hardware_counters_one_pair_per_process),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
