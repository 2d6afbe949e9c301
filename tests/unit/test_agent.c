/* Tests of the Agent's publishing, process following and hardware counter
 * bookkeeping, against real components: a ZeroMQ ROUTER in the test plays
 * the Aggregator (it reads each Batch and answers an Ack, an Error with or
 * without a storage code, or nothing), the Agent is agent__new() with real
 * BPF when run as root, and the counters are real perf events.
 *
 * Covered: a publish with no Ack returns within its bound and the Batch is
 * sent again byte for byte (same seq) at the next one; a storage error
 * keeps the Batch until a later Ack; the byte cap drops the oldest Batch
 * and counts its samples; a refused Batch is counted as refused; the
 * counts and the Agent's Degradations travel in later Batches; the end
 * (agent_finish) sends a last Batch with the final counts, bounded even
 * with no Aggregator; agent_live_processes() follows a followed process,
 * its double-forked grandchild and their exits; a process that execs
 * again keeps one counter pair. What needs root or perf events it cannot
 * open is SKIPPED with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <zmq.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/agent.h"
#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/wire/wire.h"

#define RUN_ID "run-agent-t"
#define NODE "node-t"
#define ACK_WAIT_MS 300
#define RECV_TIMEOUT_MS 5000

struct fixture {
	void *zctx, *router;
	char endpoint[64];
	struct agent *agent;
};

/* one Batch as the ROUTER received it */
struct received {
	zmq_msg_t identity;
	void *data;
	size_t len;
	wire_envelope *env;
};

static int endpoint_counter;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	int linger = 0;

	if (!fx)
		return -1;
	fx->zctx = zmq_ctx_new();
	fx->router = zmq_socket(fx->zctx, ZMQ_ROUTER);
	zmq_setsockopt(fx->router, ZMQ_LINGER, &linger, sizeof(linger));
	snprintf(fx->endpoint, sizeof(fx->endpoint), "inproc://agent-test-%d", endpoint_counter++);
	if (zmq_bind(fx->router, fx->endpoint))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	agent__free(fx->agent);
	zmq_close(fx->router);
	zmq_ctx_term(fx->zctx);
	free(fx);
	return 0;
}

static struct agent *new_agent(struct fixture *fx, size_t cap_bytes)
{
	struct agent_opts o = {
	    .run_id = RUN_ID,
	    .node = NODE,
	    .endpoint = fx->endpoint,
	    .zmq_ctx = fx->zctx,
	    .frequency = 99,
	    .ack_timeout_ms = ACK_WAIT_MS,
	    .queue_cap_bytes = cap_bytes,
	};

	fx->agent = agent__new(&o);
	assert_non_null(fx->agent);
	return fx->agent;
}

/* 1 and *r filled when a Batch arrived within timeout_ms, else 0 */
static int recv_batch(struct fixture *fx, struct received *r, int timeout_ms)
{
	zmq_pollitem_t item = {.socket = fx->router, .events = ZMQ_POLLIN};
	char why[256];
	zmq_msg_t payload;

	if (zmq_poll(&item, 1, timeout_ms) <= 0)
		return 0;
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
	assert_int_equal(r->env->body_case, NUNATAK__WIRE__ENVELOPE__BODY_BATCH);
	assert_string_equal(r->env->batch->run_id, RUN_ID);
	return 1;
}

static void received_release(struct received *r)
{
	zmq_msg_close(&r->identity);
	free(r->data);
	wire_envelope_free(r->env);
}

static void answer(struct fixture *fx, struct received *r, wire_envelope *env)
{
	size_t len;
	void *buf = wire_pack(env, &len);

	assert_non_null(buf);
	assert_true(zmq_send(fx->router, zmq_msg_data(&r->identity), zmq_msg_size(&r->identity),
			     ZMQ_SNDMORE) >= 0);
	assert_true(zmq_send(fx->router, buf, len, 0) >= 0);
	free(buf);
}

static void answer_ack(struct fixture *fx, struct received *r)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Ack ack = NUNATAK__WIRE__ACK__INIT;

	ack.run_id = RUN_ID;
	ack.node = NODE;
	ack.seq = r->env->batch->seq;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ACK;
	env.ack = &ack;
	answer(fx, r, &env);
}

/* code 0: an Error without code (an older Aggregator) */
static void answer_error(struct fixture *fx, struct received *r, int code, const char *message)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	error.message = (char *)message;
	error.has_seq = 1;
	error.seq = r->env->batch->seq;
	error.has_code = code != 0;
	error.code = code;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	answer(fx, r, &env);
}

/* the value of counter name in batch b, or -1 when absent */
static long long batch_counter(const Nunatak__Wire__Batch *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->n_counters; i++)
		if (!strcmp(b->counters[i]->name, name))
			return (long long)b->counters[i]->value;
	return -1;
}

static int batch_has_degradation(const Nunatak__Wire__Batch *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->n_degradations; i++)
		if (!strcmp(b->degradations[i]->name, name))
			return 1;
	return 0;
}

/* No Ack: the publish returns within its bound, the Batch stays queued
 * and is sent again at the next publish, the very same bytes; the next
 * one waits behind it until its Ack. */
static void test_no_ack_bounded_and_resent_unchanged(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = new_agent(fx, 0);
	struct received first, again, next;
	long long t0;

	t0 = now_ms();
	assert_int_equal(agent_publish(a), 0);
	assert_true(now_ms() - t0 < ACK_WAIT_MS + 1000);
	assert_int_equal(agent_unacknowledged(a), 1);
	assert_true(recv_batch(fx, &first, RECV_TIMEOUT_MS));
	assert_int_equal(first.env->batch->seq, 0);

	t0 = now_ms();
	assert_int_equal(agent_publish(a), 0); /* builds seq 1, sends seq 0 first */
	assert_true(now_ms() - t0 < ACK_WAIT_MS + 1000);
	assert_int_equal(agent_unacknowledged(a), 2);
	assert_true(recv_batch(fx, &again, RECV_TIMEOUT_MS));
	assert_int_equal(again.env->batch->seq, 0);
	assert_int_equal(again.len, first.len);
	assert_memory_equal(again.data, first.data, first.len);
	assert_false(recv_batch(fx, &next, 50)); /* seq 1 waits behind seq 0 */

	/* the Ack of seq 0 lets seq 1 go at the next publish */
	answer_ack(fx, &again);
	assert_int_equal(agent_publish(a), 0);
	assert_int_equal(agent_unacknowledged(a), 2); /* seq 1 and 2 */
	assert_true(recv_batch(fx, &next, RECV_TIMEOUT_MS));
	assert_int_equal(next.env->batch->seq, 1);
	assert_int_equal(agent_loss(a)->failed_batches, 0);
	received_release(&next);
	received_release(&first);
	received_release(&again);
}

/* A storage error keeps the Batch (nothing counted lost), a later Ack
 * removes it. */
static void test_storage_error_kept_then_acked(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = new_agent(fx, 0);
	struct received r;

	assert_int_equal(agent_publish(a), 0);
	assert_true(recv_batch(fx, &r, RECV_TIMEOUT_MS));
	answer_error(fx, &r, ENOSPC, "batch 0 not stored: no space left on device");
	received_release(&r);
	assert_int_equal(agent_publish(a), 0); /* reads the Error, sends seq 0 again */
	assert_int_equal(agent_unacknowledged(a), 2);
	assert_int_equal(agent_loss(a)->failed_batches, 0);
	assert_int_equal(agent_loss(a)->refused_batches, 0);
	assert_int_equal(agent_loss(a)->code, ENOSPC);
	assert_non_null(strstr(agent_loss(a)->reason, "no space left"));
	assert_true(recv_batch(fx, &r, RECV_TIMEOUT_MS));
	assert_int_equal(r.env->batch->seq, 0);
	answer_ack(fx, &r);
	received_release(&r);
	assert_int_equal(agent_publish(a), 0); /* seq 0 acked: seq 1 goes */
	assert_int_equal(agent_unacknowledged(a), 2);
	assert_true(recv_batch(fx, &r, RECV_TIMEOUT_MS));
	assert_int_equal(r.env->batch->seq, 1);
	received_release(&r);
}

/* A refused Batch (malformed, unknown Run) is dropped and counted as
 * refused; the count goes out in the next Batch built. */
static void test_refused_counted(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = new_agent(fx, 0);
	struct received r;

	assert_int_equal(agent_publish(a), 0);
	assert_true(recv_batch(fx, &r, RECV_TIMEOUT_MS));
	answer_error(fx, &r, EINVAL, "malformed batch refused");
	received_release(&r);
	assert_int_equal(agent_publish(a), 0); /* seq 1 built, then the refusal read */
	assert_int_equal(agent_loss(a)->refused_batches, 1);
	assert_int_equal(agent_loss(a)->failed_batches, 0);
	assert_int_equal(agent_unacknowledged(a), 1);
	assert_true(recv_batch(fx, &r, RECV_TIMEOUT_MS));
	assert_int_equal(r.env->batch->seq, 1);
	assert_int_equal(batch_counter(r.env->batch, "storage_refused_batches"), -1);
	answer_ack(fx, &r);
	received_release(&r);
	assert_int_equal(agent_publish(a), 0); /* seq 2 carries the count */
	assert_true(recv_batch(fx, &r, RECV_TIMEOUT_MS));
	assert_int_equal(r.env->batch->seq, 2);
	assert_int_equal(batch_counter(r.env->batch, "storage_refused_batches"), 1);
	assert_int_equal(batch_counter(r.env->batch, "storage_failed_batches"), 0);
	received_release(&r);
}

/* With no Aggregator at all, the end is bounded; the Agent's
 * Degradations and the loss counts are in the Batches it sent, the last
 * one (Batch.last) holding no samples and every loss. */
static void test_finish_bounded_without_aggregator(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = new_agent(fx, 1); /* cap 1 byte: only the newest is kept */
	struct received r;
	int got_last = 0;
	long long t0;

	assert_int_equal(agent_add_degradation(a, "test-degradation", "a test said so",
					       "nothing to do"),
			 0);
	assert_int_equal(agent_publish(a), 0); /* seq 0: sent, never answered */
	assert_int_equal(agent_publish(a), 0); /* seq 1 pushes seq 0 out */
	assert_int_equal(agent_loss(a)->failed_batches, 1);
	assert_int_equal(agent_unacknowledged(a), 1);
	t0 = now_ms();
	assert_int_equal(agent_finish(a, 1000), -ETIMEDOUT);
	assert_true(now_ms() - t0 < 1000 + 1000);
	assert_int_equal(agent_unacknowledged(a), 0);
	assert_int_equal(agent_loss(a)->failed_batches, 4); /* seq 0, 1, 2, last 3 */
	assert_int_equal(agent_finish(a, 1000), 0);	   /* done once */
	while (recv_batch(fx, &r, 100)) {
		assert_true(batch_has_degradation(r.env->batch, "test-degradation"));
		if (r.env->batch->has_last && r.env->batch->last) {
			got_last = 1;
			assert_int_equal(r.env->batch->seq, 3);
			assert_int_equal(r.env->batch->n_samples, 0);
			assert_int_equal(batch_counter(r.env->batch, "storage_failed_batches"), 3);
			assert_int_equal(batch_counter(r.env->batch, "storage_failed_errno"),
					 ETIMEDOUT);
		}
		received_release(&r);
	}
	assert_true(got_last);
}

/* An Aggregator that cannot store data (disk full) but stores the last
 * small Batch: agent_finish says samples were lost, and the last Batch
 * holds the count and the errno for the storage-failed Degradation. */
struct responder {
	struct fixture *fx;
	pthread_t thread;
	volatile int stop;
	long long failed_batches, failed_errno;
	int last_acked;
};

static void *respond(void *arg)
{
	struct responder *rs = arg;
	struct received r;

	while (!rs->stop) {
		if (!recv_batch(rs->fx, &r, 20))
			continue;
		if (r.env->batch->has_last && r.env->batch->last) {
			rs->failed_batches = batch_counter(r.env->batch, "storage_failed_batches");
			rs->failed_errno = batch_counter(r.env->batch, "storage_failed_errno");
			rs->last_acked = 1;
			answer_ack(rs->fx, &r);
		} else {
			answer_error(rs->fx, &r, ENOSPC, "not stored: no space left on device");
		}
		received_release(&r);
	}
	return NULL;
}

static void test_finish_disk_full_counted_in_last_batch(void **state)
{
	struct fixture *fx = *state;
	struct agent *a = new_agent(fx, 0);
	struct responder rs = {.fx = fx};
	long long t0;

	assert_int_equal(pthread_create(&rs.thread, NULL, respond, &rs), 0);
	assert_int_equal(agent_publish(a), 0);
	assert_int_equal(agent_unacknowledged(a), 1); /* kept */
	t0 = now_ms();
	assert_int_equal(agent_finish(a, 1500), -ENOSPC);
	assert_true(now_ms() - t0 < 1500 + 1000);
	rs.stop = 1;
	pthread_join(rs.thread, NULL);
	assert_true(rs.last_acked);
	assert_int_equal(rs.failed_batches, 2); /* seq 0 and the data Batch of the end */
	assert_int_equal(rs.failed_errno, ENOSPC);
	assert_int_equal(agent_loss(a)->failed_batches, 2);
}

/* A Batch envelope with sample counts adding up to samples. */
static wire_envelope *sample_batch(uint64_t seq, uint64_t samples, Nunatak__Wire__Batch *b,
				   Nunatak__Wire__SampleCount *sc, Nunatak__Wire__SampleCount **psc,
				   wire_envelope *env)
{
	*env = (wire_envelope)NUNATAK__WIRE__ENVELOPE__INIT;
	*b = (Nunatak__Wire__Batch)NUNATAK__WIRE__BATCH__INIT;
	*sc = (Nunatak__Wire__SampleCount)NUNATAK__WIRE__SAMPLE_COUNT__INIT;
	b->run_id = RUN_ID;
	b->node = NODE;
	b->seq = seq;
	sc->counter = "cpu-clock";
	sc->sample_count = samples;
	psc[0] = sc;
	b->n_samples = 1;
	b->samples = psc;
	env->body_case = NUNATAK__WIRE__ENVELOPE__BODY_BATCH;
	env->batch = b;
	return env;
}

/* Over the byte cap the oldest Batches go, their samples counted; the
 * newest is always kept. */
static void test_queue_cap_drops_oldest(void **state)
{
	struct fixture *fx = *state;
	void *dealer = zmq_socket(fx->zctx, ZMQ_DEALER);
	struct publish_queue *q;
	Nunatak__Wire__SampleCount sc, *psc[1];
	Nunatak__Wire__Batch b;
	wire_envelope env;
	size_t one;
	int linger = 0;

	zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_connect(dealer, fx->endpoint), 0);
	q = publish_queue__new(dealer, 1000);
	assert_non_null(q);
	assert_int_equal(publish_queue_push(q, sample_batch(0, 7, &b, &sc, psc, &env)), 0);
	one = publish_queue_bytes(q);
	assert_true(one > 0 && one < 1000);
	while (publish_queue_bytes(q) + one <= 1000)
		assert_int_equal(
		    publish_queue_push(q, sample_batch(publish_queue_length(q), 7, &b, &sc, psc,
						       &env)),
		    0);
	assert_int_equal(publish_queue_loss(q)->failed_batches, 0);
	assert_int_equal(publish_queue_push(q, sample_batch(100, 5, &b, &sc, psc, &env)), 0);
	assert_int_equal(publish_queue_loss(q)->failed_batches, 1);
	assert_int_equal(publish_queue_loss(q)->failed_samples, 7); /* seq 0's */
	assert_true(publish_queue_bytes(q) <= 1000);
	/* one Batch larger than the cap alone stays */
	publish_queue__free(q);
	q = publish_queue__new(dealer, 1);
	assert_int_equal(publish_queue_push(q, sample_batch(0, 3, &b, &sc, psc, &env)), 0);
	assert_int_equal(publish_queue_length(q), 1);
	assert_int_equal(publish_queue_push(q, sample_batch(1, 4, &b, &sc, psc, &env)), 0);
	assert_int_equal(publish_queue_length(q), 1);
	assert_int_equal(publish_queue_loss(q)->failed_samples, 3);
	/* the end: what is left is counted, then the queue is empty */
	publish_queue_abandon(q);
	assert_int_equal(publish_queue_length(q), 0);
	assert_int_equal(publish_queue_loss(q)->failed_samples, 7);
	assert_int_equal(publish_queue_loss(q)->failed_batches, 2);
	assert_int_equal(publish_queue_loss(q)->code, ETIMEDOUT);
	/* no Aggregator answering: a flush is bounded */
	assert_int_equal(publish_queue_push(q, sample_batch(2, 1, &b, &sc, psc, &env)), 0);
	{
		long long t0 = now_ms();

		assert_int_equal(publish_queue_flush(q, 200), -ETIMEDOUT);
		assert_true(now_ms() - t0 < 1200);
	}
	publish_queue__free(q);
	zmq_close(dealer);
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

/* Polls the Agent's kernel reports until agent_live_processes() is want
 * (5 s at most). */
static int wait_live(struct agent *a, int want)
{
	long long end = now_ms() + 5000;
	int n;

	do {
		agent_process_events(a);
		n = agent_live_processes(a);
		if (n == want)
			return n;
		usleep(10000);
	} while (now_ms() < end);
	return n;
}

static int count_comm(pid_t pid, const char *comm, void *ctx)
{
	(void)pid;
	if (!strcmp(comm, "sleep"))
		(*(int *)ctx)++;
	return 0;
}

/* A followed process, the grandchild it double-forks (which outlives it)
 * and their exits, as the kernel reports them. */
static void test_live_processes_follow_fork_and_exit(void **state)
{
	struct fixture *fx = *state;
	struct agent *a;
	int gate[2], sleeping = 0;
	siginfo_t si;
	pid_t child;
	char go;

	SKIP_UNLESS(geteuid() == 0, "following processes needs root (BPF)");
	a = new_agent(fx, 0);
	SKIP_UNLESS(agent_sampling(a), "BPF sampling unavailable here");
	assert_int_equal(agent_live_processes(a), 0);
	assert_int_equal(pipe(gate), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(2);
		/* double fork: the grandchild sleeps 1 s after its parent is gone */
		if (fork() == 0) {
			execl("/bin/sleep", "sleep", "1", (char *)NULL);
			_exit(3);
		}
		usleep(200000);
		_exit(0);
	}
	close(gate[0]);
	assert_int_equal(agent_follow(a, child), 0);
	assert_int_equal(agent_live_processes(a), 1);
	assert_int_equal(write(gate[1], "g", 1), 1);
	close(gate[1]);
	assert_int_equal(wait_live(a, 2), 2); /* child and grandchild */
	/* the child exited but is not reaped (a zombie the kernel still
	 * knows): only its exit report can take it off */
	assert_int_equal(waitid(P_PID, child, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(wait_live(a, 1), 1); /* the grandchild outlives it */
	assert_int_equal(waitpid(child, NULL, 0), child);
	agent_for_each_live_process(a, count_comm, &sleeping);
	assert_int_equal(sleeping, 1);
	assert_int_equal(wait_live(a, 0), 0); /* reaped by init, seen exit */
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
	    cmocka_unit_test_setup_teardown(test_no_ack_bounded_and_resent_unchanged, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_storage_error_kept_then_acked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused_counted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_finish_bounded_without_aggregator, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_finish_disk_full_counted_in_last_batch, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_queue_cap_drops_oldest, setup, teardown),
	    cmocka_unit_test(test_storage_message_words),
	    cmocka_unit_test_setup_teardown(test_live_processes_follow_fork_and_exit, setup,
					    teardown),
	    cmocka_unit_test(test_hardware_counters_one_pair_per_process),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
