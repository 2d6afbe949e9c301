/* Tests of userspace/aggregator against real ZeroMQ: a ROUTER bound on
 * inproc://, served by aggregator_serve(agg, 1) in a thread, spoken to from
 * a DEALER the way the Agent and the CLI do (one frame = one packed
 * Envelope; every request gets an Ack or an Error Envelope). Covered: START
 * creates the Run, Batches are stored once (idempotent by (node, seq)) and
 * add up, hostile input (garbage frames, a two-frame message, a newer
 * protocol, Batches for another Run or with out-of-range indices, a second
 * START, envelopes the Aggregator does not serve) is refused with an Error
 * and stores nothing while the Aggregator goes on, and FINALIZE ends the
 * serving thread with a finished manifest and derived Measurements. Every
 * receive has a timeout: a broken Aggregator fails the test instead of
 * hanging it. Expected names and addresses come from nm on the test binary
 * itself. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <zmq.h>

#include "tests/unit/test_helpers.h"
#include "userspace/aggregator/aggregator.h"
#include "userspace/elf/elf_file.h"
#include "userspace/pivot/pivot.h"
#include "userspace/wire/wire.h"

#define REPLY_TIMEOUT_MS 10000
/* FINALIZE runs llvm-symbolizer on the test binary */
#define FINALIZE_TIMEOUT_MS 60000
#define RUN_ID "run-t"
#define NODE "node-a"
#define FINALIZE_JSON "{\"exit_code\": 3, \"end\": \"2026-01-01T00:00:00Z\"}"

struct fixture {
	char base[PATH_MAX];	/* temporary directory of this test */
	char run_dir[PATH_MAX]; /* base/run: created by the Aggregator */
	char endpoint[64];
	void *zctx, *dealer;
	struct aggregator *agg;
	pthread_t thread;
	int thread_running;
	int serve_result;
	/* the module sampled: the test binary */
	char exe[PATH_MAX];
	const char *exe_name;
	char identity[128];
	int has_build_id;
	struct nm_symbol main_sym;
	uint64_t main_offset; /* a vaddr inside main */
};

static int endpoint_counter;

static void *serve_thread(void *arg)
{
	struct fixture *fx = arg;

	fx->serve_result = aggregator_serve(fx->agg, 1);
	return NULL;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct elf_file *elf;
	void *router;
	int linger = 0;

	assert_non_null(fx);
	*state = fx;
	assert_int_equal(make_tmpdir(fx->base, sizeof(fx->base), "aggregator"), 0);
	snprintf(fx->run_dir, sizeof(fx->run_dir), "%s/run", fx->base);

	assert_non_null(realpath("/proc/self/exe", fx->exe));
	fx->exe_name = strrchr(fx->exe, '/') + 1;
	elf = elf_file__open(fx->exe);
	assert_non_null(elf);
	snprintf(fx->identity, sizeof(fx->identity), "%s", elf_file__identity(elf));
	fx->has_build_id = elf_file__build_id(elf) != NULL;
	elf_file__free(elf);
	assert_int_equal(nm_lookup(fx->exe, "main", &fx->main_sym), 0);
	fx->main_offset = fx->main_sym.addr + (fx->main_sym.size > 4 ? 4 : 0);

	fx->zctx = zmq_ctx_new();
	assert_non_null(fx->zctx);
	snprintf(fx->endpoint, sizeof(fx->endpoint), "inproc://test-agg-%d", endpoint_counter++);
	router = zmq_socket(fx->zctx, ZMQ_ROUTER);
	assert_non_null(router);
	zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_bind(router, fx->endpoint), 0);
	fx->agg = aggregator__new(router);
	assert_non_null(fx->agg);
	assert_int_equal(pthread_create(&fx->thread, NULL, serve_thread, fx), 0);
	fx->thread_running = 1;

	fx->dealer = zmq_socket(fx->zctx, ZMQ_DEALER);
	assert_non_null(fx->dealer);
	zmq_setsockopt(fx->dealer, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_connect(fx->dealer, fx->endpoint), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx->thread_running) {
		/* aggregator_serve blocks in a receive: ETERM ends it */
		zmq_ctx_shutdown(fx->zctx);
		pthread_join(fx->thread, NULL);
		fx->thread_running = 0;
	}
	aggregator__free(fx->agg); /* closes the ROUTER */
	if (fx->dealer)
		zmq_close(fx->dealer);
	if (fx->zctx)
		zmq_ctx_term(fx->zctx);
	remove_tree(fx->base);
	free(fx);
	return 0;
}

/* 0 when the serving thread ended within timeout_ms (joined) */
static int wait_serving_thread(struct fixture *fx, int timeout_ms)
{
	struct timespec deadline;
	int err;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	err = pthread_timedjoin_np(fx->thread, NULL, &deadline);
	if (!err)
		fx->thread_running = 0;
	return err;
}

/* 1 while the serving thread has not returned */
static int serving_thread_alive(struct fixture *fx)
{
	return pthread_tryjoin_np(fx->thread, NULL) == EBUSY;
}

/* --- sending and receiving ------------------------------------------------ */

static void send_envelope(struct fixture *fx, wire_envelope *env)
{
	assert_int_equal(wire_send(fx->dealer, env), 0);
}

static void send_raw(struct fixture *fx, const void *data, size_t len)
{
	assert_int_equal(zmq_send(fx->dealer, data, len, 0), (int)len);
}

/* packs env as is (its protocol version untouched) and sends it */
static void send_packed_as_is(struct fixture *fx, const wire_envelope *env)
{
	size_t len = nunatak__wire__envelope__get_packed_size(env);
	uint8_t *buf = malloc(len ? len : 1);

	assert_non_null(buf);
	assert_int_equal(nunatak__wire__envelope__pack(env, buf), len);
	send_raw(fx, buf, len);
	free(buf);
}

/* The one reply, within timeout_ms, as one frame; free with
 * wire_envelope_free(). */
static wire_envelope *recv_reply_within(struct fixture *fx, int timeout_ms)
{
	zmq_pollitem_t item = {.socket = fx->dealer, .events = ZMQ_POLLIN};
	char why[256] = "";
	wire_envelope *env;
	size_t more_size;
	zmq_msg_t msg;
	int more = 0;

	if (zmq_poll(&item, 1, timeout_ms) <= 0)
		fail_msg("the aggregator did not answer within %d ms", timeout_ms);
	zmq_msg_init(&msg);
	assert_true(zmq_msg_recv(&msg, fx->dealer, 0) >= 0);
	more_size = sizeof(more);
	zmq_getsockopt(fx->dealer, ZMQ_RCVMORE, &more, &more_size);
	assert_int_equal(more, 0);
	env = wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), why, sizeof(why));
	zmq_msg_close(&msg);
	if (!env)
		fail_msg("the reply is not an envelope: %s", why);
	assert_int_equal(env->protocol_major, WIRE_PROTOCOL_MAJOR);
	return env;
}

static wire_envelope *recv_reply(struct fixture *fx)
{
	return recv_reply_within(fx, REPLY_TIMEOUT_MS);
}

/* nothing more is waiting on the DEALER (one request, one reply) */
static void assert_no_more_reply(struct fixture *fx)
{
	zmq_pollitem_t item = {.socket = fx->dealer, .events = ZMQ_POLLIN};

	assert_int_equal(zmq_poll(&item, 1, 50), 0);
}

static void expect_ack(struct fixture *fx, const char *run_id, const char *node, uint64_t seq)
{
	wire_envelope *r = recv_reply(fx);

	if (r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR)
		fail_msg("Error instead of Ack: %s", r->error->message);
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ACK);
	assert_string_equal(r->ack->run_id, run_id);
	assert_string_equal(r->ack->node, node);
	assert_int_equal(r->ack->seq, seq);
	wire_envelope_free(r);
}

/* An Error reply whose message contains each of the NULL-terminated
 * strings given. */
static void expect_error(struct fixture *fx, ...)
{
	wire_envelope *r = recv_reply(fx);
	const char *want;
	va_list ap;

	if (r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ACK)
		fail_msg("Ack (run '%s', seq %llu) instead of Error", r->ack->run_id,
			 (unsigned long long)r->ack->seq);
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ERROR);
	assert_non_null(r->error->message);
	assert_true(r->error->message[0] != '\0');
	va_start(ap, fx);
	while ((want = va_arg(ap, const char *)))
		if (!strstr(r->error->message, want))
			fail_msg("error '%s' does not contain '%s'", r->error->message, want);
	va_end(ap);
	wire_envelope_free(r);
}

static void send_control(struct fixture *fx, Nunatak__Wire__Control__Action action,
			 const char *run_id, const char *json)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Control c = NUNATAK__WIRE__CONTROL__INIT;

	c.action = action;
	c.run_id = (char *)run_id;
	c.json = (char *)json;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &c;
	send_envelope(fx, &env);
}

/* the START json of the brief, for run_dir: made 0700 first when missing,
 * as `nunatak run` does, and named by its st_dev/st_ino (0/0 when it
 * cannot be made: the Aggregator refuses it) */
static char *start_json(const char *run_dir)
{
	struct stat st = { 0 };
	json_t *spec;
	char *text;

	if (mkdir(run_dir, 0700) && errno != EEXIST)
		memset(&st, 0, sizeof(st));
	else if (stat(run_dir, &st))
		memset(&st, 0, sizeof(st));
	spec = json_pack(
	    "{s:s, s:I, s:I, s:s, s:{s:{s:s, s:i, s:s}, s:{s:s, s:n}, s:[{s:i, s:n, s:n}], s:[],"
	    " s:[]}}",
	    "run_dir", run_dir, "run_dir_dev", (json_int_t)st.st_dev, "run_dir_ino",
	    (json_int_t)st.st_ino, "symbolizer", symbolizer_tool(), "manifest", "format", "name",
	    "nunatak-run", "schema", 1, "generated_by", "test", "run", "name", "t", "exit_code",
	    "passes", "index", 0, "exit_code", "end", "nodes", "degradations");

	assert_non_null(spec);
	text = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	assert_non_null(text);
	return text;
}

static void start_run(struct fixture *fx)
{
	char *json = start_json(fx->run_dir);

	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_ack(fx, RUN_ID, "", 0);
}

/* --- Batches ------------------------------------------------------------- */

/* one module (the test binary), one Locus, one one-frame stack at main,
 * one SampleCount; indices can be spoiled after tb_init() */
struct test_batch {
	Nunatak__Wire__Batch b;
	Nunatak__Wire__Module module, *module_ptr;
	Nunatak__Wire__Locus locus, *locus_ptr;
	Nunatak__Wire__Address frame, *frame_ptr;
	Nunatak__Wire__Stack stack, *stack_ptr;
	Nunatak__Wire__SampleCount sample, *sample_ptr;
};

#define SAMPLES_PER_BATCH 3
#define VALUE_PER_BATCH 3000000

static void tb_init(struct test_batch *t, const struct fixture *fx, const char *run_id,
		    uint64_t seq)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module m = NUNATAK__WIRE__MODULE__INIT;
	Nunatak__Wire__Locus l = NUNATAK__WIRE__LOCUS__INIT;
	Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;
	Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;
	Nunatak__Wire__SampleCount sc = NUNATAK__WIRE__SAMPLE_COUNT__INIT;

	memset(t, 0, sizeof(*t));
	m.identity = (char *)fx->identity;
	m.path = (char *)fx->exe;
	m.display_name = (char *)fx->exe_name;
	m.has_build_id = fx->has_build_id;
	l.node = NODE;
	l.tgid = 4242;
	l.tid = 4242;
	l.comm = "app";
	a.module = 0;
	a.offset = fx->main_offset;
	s.truncated = 0;
	sc.locus = 0;
	sc.stack = 0;
	sc.counter = "cpu-clock";
	sc.sample_count = SAMPLES_PER_BATCH;
	sc.value = VALUE_PER_BATCH;
	sc.in_kernel = 0;

	t->module = m;
	t->locus = l;
	t->frame = a;
	t->stack = s;
	t->sample = sc;
	t->module_ptr = &t->module;
	t->locus_ptr = &t->locus;
	t->frame_ptr = &t->frame;
	t->stack_ptr = &t->stack;
	t->sample_ptr = &t->sample;
	t->stack.frames = &t->frame_ptr;
	t->stack.n_frames = 1;
	t->b = b;
	t->b.run_id = (char *)run_id;
	t->b.node = NODE;
	t->b.seq = seq;
	t->b.modules = &t->module_ptr;
	t->b.n_modules = 1;
	t->b.loci = &t->locus_ptr;
	t->b.n_loci = 1;
	t->b.stacks = &t->stack_ptr;
	t->b.n_stacks = 1;
	t->b.samples = &t->sample_ptr;
	t->b.n_samples = 1;
}

static void tb_envelope(struct test_batch *t, wire_envelope *env)
{
	wire_envelope e = NUNATAK__WIRE__ENVELOPE__INIT;

	*env = e;
	env->body_case = NUNATAK__WIRE__ENVELOPE__BODY_BATCH;
	env->batch = &t->b;
}

static void send_batch(struct fixture *fx, struct test_batch *t)
{
	wire_envelope env;

	tb_envelope(t, &env);
	send_envelope(fx, &env);
}

static void send_good_batch(struct fixture *fx, uint64_t seq)
{
	struct test_batch t;

	tb_init(&t, fx, RUN_ID, seq);
	send_batch(fx, &t);
	expect_ack(fx, RUN_ID, NODE, seq);
}

/* --- reading the Run ------------------------------------------------------ */

static struct pivot *open_run_pivot(struct fixture *fx)
{
	struct pivot *p = pivot__open(path_in(fx->run_dir, "pivot.sqlite"), 1);

	if (!p)
		fail_msg("cannot open the pivot of '%s': %s", fx->run_dir, strerror(errno));
	return p;
}

/* the one integer an SQL query gives, on a fresh read-only connection */
__attribute__((format(printf, 2, 3))) static int64_t run_sql_int(struct fixture *fx,
								 const char *fmt, ...)
{
	struct pivot *p = open_run_pivot(fx);
	sqlite3_stmt *stmt;
	char sql[1024];
	va_list ap;
	int64_t v;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	pivot__free(p);
	return v;
}

/* what a refused Batch must leave untouched */
struct run_counts {
	int64_t batches, modules, loci, stacks, stack_frames, addresses, samples, sample_count;
};

static void read_counts(struct fixture *fx, struct run_counts *c)
{
	c->batches = run_sql_int(fx, "SELECT count(*) FROM batches");
	c->modules = run_sql_int(fx, "SELECT count(*) FROM modules");
	c->loci = run_sql_int(fx, "SELECT count(*) FROM loci");
	c->stacks = run_sql_int(fx, "SELECT count(*) FROM stacks");
	c->stack_frames = run_sql_int(fx, "SELECT count(*) FROM stack_frames");
	c->addresses = run_sql_int(fx, "SELECT count(*) FROM addresses");
	c->samples = run_sql_int(fx, "SELECT count(*) FROM samples");
	c->sample_count = run_sql_int(fx, "SELECT coalesce(sum(sample_count), 0) FROM samples");
}

static void assert_counts_equal(const struct run_counts *a, const struct run_counts *b)
{
	assert_int_equal(a->batches, b->batches);
	assert_int_equal(a->modules, b->modules);
	assert_int_equal(a->loci, b->loci);
	assert_int_equal(a->stacks, b->stacks);
	assert_int_equal(a->stack_frames, b->stack_frames);
	assert_int_equal(a->addresses, b->addresses);
	assert_int_equal(a->samples, b->samples);
	assert_int_equal(a->sample_count, b->sample_count);
}

static int file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static json_t *load_manifest(struct fixture *fx)
{
	json_error_t jerr;
	json_t *m = json_load_file(path_in(fx->run_dir, "manifest.json"), 0, &jerr);

	if (!m)
		fail_msg("manifest.json: line %d: %s", jerr.line, jerr.text);
	return m;
}

/* --- the tests ------------------------------------------------------------ */

static void test_start_creates_run(void **state)
{
	struct fixture *fx = *state;
	json_t *m;

	assert_false(file_exists(fx->run_dir));
	start_run(fx);
	assert_no_more_reply(fx);
	assert_true(file_exists(path_in(fx->run_dir, "manifest.json")));
	assert_true(file_exists(path_in(fx->run_dir, "pivot.sqlite")));

	/* the first manifest is the one given, exit code still null */
	m = load_manifest(fx);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(m, "format"), "name")),
	    "nunatak-run");
	assert_string_equal(json_string_value(json_object_get(json_object_get(m, "run"), "name")),
			    "t");
	assert_true(json_is_null(json_object_get(json_object_get(m, "run"), "exit_code")));
	json_decref(m);

	/* an empty pivot of this schema */
	assert_int_equal(run_sql_int(fx, "PRAGMA user_version"), PIVOT_SCHEMA_VERSION);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 0);
	assert_true(serving_thread_alive(fx));
}

static void test_batch_stored_once(void **state)
{
	struct fixture *fx = *state;
	struct run_counts once, twice;

	start_run(fx);
	send_good_batch(fx, 0);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 1);
	assert_int_equal(run_sql_int(fx, "SELECT seq FROM batches WHERE node = '" NODE "'"), 0);
	assert_int_equal(run_sql_int(fx, "SELECT sample_count FROM samples"), SAMPLES_PER_BATCH);
	assert_int_equal(run_sql_int(fx, "SELECT value FROM samples"), VALUE_PER_BATCH);
	assert_int_equal(
	    run_sql_int(fx, "SELECT count(*) FROM modules WHERE identity = '%s'", fx->identity), 1);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM addresses WHERE offset = %llu",
				     (unsigned long long)fx->main_offset),
			 1);
	read_counts(fx, &once);

	/* an Agent retry: Acked again, counted once */
	send_good_batch(fx, 0);
	assert_no_more_reply(fx);
	read_counts(fx, &twice);
	assert_counts_equal(&once, &twice);
	assert_int_equal(twice.batches, 1);
	assert_int_equal(twice.sample_count, SAMPLES_PER_BATCH);

	/* the next Batch adds up on the same sample row */
	send_good_batch(fx, 1);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 2);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM samples"), 1);
	assert_int_equal(run_sql_int(fx, "SELECT sample_count FROM samples"),
			 2 * SAMPLES_PER_BATCH);
	assert_int_equal(run_sql_int(fx, "SELECT value FROM samples"), 2 * VALUE_PER_BATCH);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM modules"), 1);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM loci"), 1);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM stacks"), 1);
	assert_true(serving_thread_alive(fx));
}

/* Frames that are no Envelope of ours, before and after START: each gets
 * an Error and the Aggregator goes on serving. */
static void send_garbage_and_expect_errors(struct fixture *fx)
{
	uint8_t buf[512];
	uint32_t x = 0x2545f491;
	size_t i, round;

	/* pseudo-random bytes (fixed seed: the same frames every run) */
	for (round = 0; round < 16; round++) {
		size_t len = 1 + (round * 37) % sizeof(buf);

		for (i = 0; i < len; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			buf[i] = (uint8_t)x;
		}
		send_raw(fx, buf, len);
		expect_error(fx, "malformed", NULL);
	}
	/* an empty frame */
	send_raw(fx, "", 0);
	expect_error(fx, "malformed", NULL);
	/* all ones: a field tag with an endless varint */
	memset(buf, 0xff, sizeof(buf));
	send_raw(fx, buf, sizeof(buf));
	expect_error(fx, "malformed", NULL);
}

static void test_garbage_frames_refused(void **state)
{
	struct fixture *fx = *state;
	struct test_batch t;
	wire_envelope env;
	struct run_counts before, after;
	size_t len;
	uint8_t *buf;

	send_garbage_and_expect_errors(fx);
	assert_false(file_exists(fx->run_dir));
	start_run(fx);
	send_good_batch(fx, 0);
	read_counts(fx, &before);
	send_garbage_and_expect_errors(fx);

	/* a real Batch cut in half: a truncated frame is no Batch */
	tb_init(&t, fx, RUN_ID, 7);
	tb_envelope(&t, &env);
	env.protocol_major = WIRE_PROTOCOL_MAJOR;
	env.protocol_minor = WIRE_PROTOCOL_MINOR;
	len = nunatak__wire__envelope__get_packed_size(&env);
	buf = malloc(len);
	assert_non_null(buf);
	nunatak__wire__envelope__pack(&env, buf);
	send_raw(fx, buf, len / 2);
	free(buf);
	expect_error(fx, "malformed", NULL);

	read_counts(fx, &after);
	assert_counts_equal(&before, &after);
	assert_no_more_reply(fx);
	/* still serving */
	send_good_batch(fx, 1);
	assert_true(serving_thread_alive(fx));
}

static void test_newer_protocol_refused(void **state)
{
	struct fixture *fx = *state;
	char newer[32], ours[32];
	struct run_counts before, after;
	struct test_batch t;
	wire_envelope env;
	char *json;
	Nunatak__Wire__Control c = NUNATAK__WIRE__CONTROL__INIT;

	snprintf(newer, sizeof(newer), "%u.%u", WIRE_PROTOCOL_MAJOR + 1, 7u);
	snprintf(ours, sizeof(ours), "%u.%u", WIRE_PROTOCOL_MAJOR, WIRE_PROTOCOL_MINOR);

	/* a START of a newer major creates nothing */
	json = start_json(fx->run_dir);
	c.action = NUNATAK__WIRE__CONTROL__ACTION__START;
	c.run_id = RUN_ID;
	c.json = json;
	env = (wire_envelope)NUNATAK__WIRE__ENVELOPE__INIT;
	env.protocol_major = WIRE_PROTOCOL_MAJOR + 1;
	env.protocol_minor = 7;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &c;
	send_packed_as_is(fx, &env);
	free(json);
	expect_error(fx, newer, ours, NULL);
	assert_false(file_exists(path_in(fx->run_dir, "manifest.json")));

	start_run(fx);
	send_good_batch(fx, 0);
	read_counts(fx, &before);

	/* a perfectly good Batch, but from a newer major: nothing stored */
	tb_init(&t, fx, RUN_ID, 1);
	tb_envelope(&t, &env);
	env.protocol_major = WIRE_PROTOCOL_MAJOR + 1;
	env.protocol_minor = 7;
	send_packed_as_is(fx, &env);
	expect_error(fx, newer, ours, NULL);
	read_counts(fx, &after);
	assert_counts_equal(&before, &after);

	/* the same Batch in our version is then stored (seq 1 was not taken) */
	send_batch(fx, &t);
	expect_ack(fx, RUN_ID, NODE, 1);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 2);
	assert_true(serving_thread_alive(fx));
}

/* A peer breaking the framing (two frames where one Envelope is one
 * frame): one Error, and the next well-formed request is served to its
 * sender. */
static void test_two_frame_message(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(zmq_send(fx->dealer, "\x01\x02", 2, ZMQ_SNDMORE), 2);
	assert_int_equal(zmq_send(fx->dealer, "\x03\x04", 2, 0), 2);
	expect_error(fx, "malformed", NULL);
	assert_no_more_reply(fx);
	start_run(fx);
	send_good_batch(fx, 0);
	assert_no_more_reply(fx);
	assert_true(serving_thread_alive(fx));
}

/* A longer message may not pass its tail off as another peer's message:
 * frame 2 names a real peer's routing id, frame 3 is a valid Envelope. */
static void test_extra_frames_not_routed(void **state)
{
	struct fixture *fx = *state;
	struct test_batch t;
	zmq_pollitem_t item;
	void *victim;
	int linger = 0;

	victim = zmq_socket(fx->zctx, ZMQ_DEALER);
	assert_non_null(victim);
	zmq_setsockopt(victim, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_setsockopt(victim, ZMQ_ROUTING_ID, "VICTIM", 6), 0);
	assert_int_equal(zmq_connect(victim, fx->endpoint), 0);
	start_run(fx);

	assert_int_equal(zmq_send(fx->dealer, "j", 1, ZMQ_SNDMORE), 1);
	assert_int_equal(zmq_send(fx->dealer, "VICTIM", 6, ZMQ_SNDMORE), 6);
	tb_init(&t, fx, RUN_ID, 0);
	send_batch(fx, &t); /* the last frame of the three */
	expect_error(fx, "one frame expected", NULL);
	assert_no_more_reply(fx);
	item = (zmq_pollitem_t){ .socket = victim, .events = ZMQ_POLLIN };
	assert_int_equal(zmq_poll(&item, 1, 300), 0); /* nothing reached the other peer */
	zmq_close(victim);
	assert_true(serving_thread_alive(fx));
}

static void test_batches_refused(void **state)
{
	struct fixture *fx = *state;
	struct run_counts before, after;
	struct test_batch t;

	/* before any START: no Run to store into */
	tb_init(&t, fx, RUN_ID, 0);
	send_batch(fx, &t);
	expect_error(fx, RUN_ID, NULL);

	start_run(fx);
	send_good_batch(fx, 0);
	read_counts(fx, &before);

	/* another Run's Batch */
	tb_init(&t, fx, "run-other", 1);
	send_batch(fx, &t);
	expect_error(fx, "run-other", NULL);
	/* a prefix of ours is another Run too */
	tb_init(&t, fx, "run-", 1);
	send_batch(fx, &t);
	expect_error(fx, "run-", NULL);

	/* out-of-range indices, each on a fresh seq */
	tb_init(&t, fx, RUN_ID, 1);
	t.sample.locus = 1;
	send_batch(fx, &t);
	expect_error(fx, "not stored", NULL);

	tb_init(&t, fx, RUN_ID, 2);
	t.sample.stack = 1;
	send_batch(fx, &t);
	expect_error(fx, "not stored", NULL);

	tb_init(&t, fx, RUN_ID, 3);
	t.frame.module = 1;
	send_batch(fx, &t);
	expect_error(fx, "not stored", NULL);

	tb_init(&t, fx, RUN_ID, 4);
	t.sample.locus = UINT32_MAX;
	t.sample.stack = UINT32_MAX;
	send_batch(fx, &t);
	expect_error(fx, "not stored", NULL);

	/* samples but no Locus and no stack at all */
	tb_init(&t, fx, RUN_ID, 5);
	t.b.n_loci = 0;
	t.b.n_stacks = 0;
	send_batch(fx, &t);
	expect_error(fx, "not stored", NULL);

	read_counts(fx, &after);
	assert_counts_equal(&before, &after);
	assert_int_equal(after.batches, 1);
	assert_no_more_reply(fx);

	/* a refused Batch did not take its seq: the good one is stored */
	send_good_batch(fx, 3);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 2);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches WHERE seq = 3"), 1);
	assert_int_equal(run_sql_int(fx, "SELECT sample_count FROM samples"),
			 2 * SAMPLES_PER_BATCH);
	assert_true(serving_thread_alive(fx));
}

static void test_second_start_refused(void **state)
{
	struct fixture *fx = *state;
	char other_dir[PATH_MAX], *json;

	start_run(fx);
	send_good_batch(fx, 0);

	/* another Run while this one is open */
	snprintf(other_dir, sizeof(other_dir), "%s/other", fx->base);
	json = start_json(other_dir);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, "run-other", json);
	free(json);
	expect_error(fx, RUN_ID, NULL);
	assert_false(file_exists(path_in(other_dir, "manifest.json")));

	/* the same Run again: refused too, the Run is kept as it is */
	json = start_json(fx->run_dir);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, RUN_ID, NULL);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 1);

	/* the open Run still collects */
	send_good_batch(fx, 1);
	assert_int_equal(run_sql_int(fx, "SELECT sample_count FROM samples"),
			 2 * SAMPLES_PER_BATCH);
	assert_true(serving_thread_alive(fx));
}

static void test_malformed_start_refused(void **state)
{
	struct fixture *fx = *state;
	char missing_parent[PATH_MAX], *json;

	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, "{not json");
	expect_error(fx, "malformed", NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, NULL);
	expect_error(fx, "malformed", NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID,
		     "{\"manifest\": {}}"); /* no run_dir */
	expect_error(fx, "malformed", NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID,
		     "{\"run_dir\": 5, \"manifest\": {}}");
	expect_error(fx, "malformed", NULL);
	snprintf(missing_parent, sizeof(missing_parent), "{\"run_dir\": \"%s\", \"manifest\": []}",
		 fx->run_dir);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, missing_parent);
	expect_error(fx, "malformed", NULL);
	assert_false(file_exists(fx->run_dir));

	/* a directory that cannot be made */
	snprintf(missing_parent, sizeof(missing_parent), "%s/no/such/dir", fx->base);
	json = start_json(missing_parent);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, missing_parent, NULL);

	/* none of these left a Run open: a good START is served */
	start_run(fx);
	send_good_batch(fx, 0);
	assert_true(serving_thread_alive(fx));
}

/* START names a directory by path and by st_dev/st_ino: one swapped for
 * another, one not private, or one a writer holds locked is refused and
 * nothing is created in it; the Run directory is locked while written */
static void test_start_checks_run_dir(void **state)
{
	struct fixture *fx = *state;
	char moved[PATH_MAX], *json;
	int fd;

	json = start_json(fx->run_dir);
	snprintf(moved, sizeof(moved), "%s.moved", fx->run_dir);
	assert_int_equal(rename(fx->run_dir, moved), 0);
	assert_int_equal(mkdir(fx->run_dir, 0700), 0); /* the same path, another directory */
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, "not the directory created for this Run", NULL);
	assert_false(file_exists(path_in(fx->run_dir, "manifest.json")));
	assert_int_equal(rmdir(fx->run_dir), 0);
	assert_int_equal(symlink(moved, fx->run_dir), 0); /* a link to the right one */
	json = start_json(fx->run_dir);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, "cannot open run directory", NULL);
	assert_false(file_exists(path_in(moved, "manifest.json")));
	assert_int_equal(unlink(fx->run_dir), 0);

	assert_int_equal(mkdir(fx->run_dir, 0700), 0);
	assert_int_equal(chmod(fx->run_dir, 0755), 0);
	json = start_json(fx->run_dir);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	expect_error(fx, "0755", NULL);
	assert_false(file_exists(path_in(fx->run_dir, "pivot.sqlite")));

	assert_int_equal(chmod(fx->run_dir, 0700), 0);
	fd = open(fx->run_dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0); /* another writer */
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	expect_error(fx, "locked", NULL);
	close(fd);

	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_ack(fx, RUN_ID, "", 0);
	fd = open(fx->run_dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1); /* held while the Run is written */
	assert_int_equal(errno, EWOULDBLOCK);
	close(fd);
}

static void test_unexpected_envelopes_refused(void **state)
{
	struct fixture *fx = *state;
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Ack ack = NUNATAK__WIRE__ACK__INIT;
	Nunatak__Wire__Hello hello = NUNATAK__WIRE__HELLO__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	start_run(fx);

	ack.run_id = RUN_ID;
	ack.node = NODE;
	ack.seq = 0;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ACK;
	env.ack = &ack;
	send_envelope(fx, &env);
	expect_error(fx, "unexpected", NULL);

	error.message = "a peer's error";
	env = (wire_envelope)NUNATAK__WIRE__ENVELOPE__INIT;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	send_envelope(fx, &env);
	expect_error(fx, "unexpected", NULL);

	hello.agent_version = "0.0";
	hello.node = NODE;
	env = (wire_envelope)NUNATAK__WIRE__ENVELOPE__INIT;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	send_envelope(fx, &env);
	expect_error(fx, "unexpected", NULL);

	/* a version and no body at all */
	env = (wire_envelope)NUNATAK__WIRE__ENVELOPE__INIT;
	send_envelope(fx, &env);
	expect_error(fx, "unexpected", NULL);

	assert_no_more_reply(fx);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 0);
	send_good_batch(fx, 0);
	assert_true(serving_thread_alive(fx));
}

static void test_finalize_refusals(void **state)
{
	struct fixture *fx = *state;

	/* nothing started */
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, RUN_ID, FINALIZE_JSON);
	expect_error(fx, RUN_ID, NULL);

	start_run(fx);
	send_good_batch(fx, 0);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, "run-other", FINALIZE_JSON);
	expect_error(fx, "run-other", NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, RUN_ID, "{\"exit_code\": ");
	expect_error(fx, "malformed", NULL);

	/* none of these finalized the Run */
	assert_true(serving_thread_alive(fx));
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM measurements"), 0);
	send_good_batch(fx, 1);
	assert_int_equal(run_sql_int(fx, "SELECT sample_count FROM samples"),
			 2 * SAMPLES_PER_BATCH);
}

static void test_finalize_writes_run(void **state)
{
	struct fixture *fx = *state;
	json_t *m, *run, *pass, *nodes, *degradations;
	struct pivot *p;
	sqlite3_stmt *stmt;
	int rows = 0;

	start_run(fx);
	send_good_batch(fx, 0);
	send_good_batch(fx, 1);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, RUN_ID, FINALIZE_JSON);
	{
		wire_envelope *r = recv_reply_within(fx, FINALIZE_TIMEOUT_MS);

		if (r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR)
			fail_msg("FINALIZE refused: %s", r->error->message);
		assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ACK);
		assert_string_equal(r->ack->run_id, RUN_ID);
		wire_envelope_free(r);
	}
	/* aggregator_serve(agg, 1) returns once the Run is finalized */
	if (wait_serving_thread(fx, REPLY_TIMEOUT_MS))
		fail_msg("aggregator_serve did not return after FINALIZE");
	assert_int_equal(fx->serve_result, 0);

	/* the manifest, rewritten */
	m = load_manifest(fx);
	run = json_object_get(m, "run");
	assert_true(json_is_integer(json_object_get(run, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(run, "exit_code")), 3);
	assert_string_equal(json_string_value(json_object_get(run, "name")), "t");
	assert_int_equal(json_array_size(json_object_get(m, "passes")), 1);
	pass = json_array_get(json_object_get(m, "passes"), 0);
	assert_int_equal(json_integer_value(json_object_get(pass, "index")), 0);
	assert_true(json_is_integer(json_object_get(pass, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(pass, "exit_code")), 3);
	assert_string_equal(json_string_value(json_object_get(pass, "end")),
			    "2026-01-01T00:00:00Z");
	nodes = json_object_get(m, "nodes");
	assert_int_equal(json_array_size(nodes), 1);
	assert_string_equal(json_string_value(json_array_get(nodes, 0)), NODE);
	degradations = json_object_get(m, "degradations");
	assert_true(json_is_array(degradations));
	if (have_command(symbolizer_tool()))
		assert_int_equal(json_array_size(degradations), 0);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(m, "format"), "name")),
	    "nunatak-run");
	json_decref(m);
	assert_false(file_exists(path_in(fx->run_dir, ".manifest.json.tmp")));

	/* the module attributed, the sampled address in main, one derived
	 * Measurement for (main, the Locus, cpu-clock) holding both Batches */
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM modules WHERE attribution = 'done'"),
			 have_command(symbolizer_tool()) ? 1 : 0);
	p = open_run_pivot(fx);
	assert_int_equal(
	    sqlite3_prepare_v2(pivot_sqlite(p),
			       "SELECT h.name, h.function_start, h.resolution_level,"
			       " ms.sample_count, ms.value, ms.unit, ms.quality, l.tgid"
			       " FROM measurements ms JOIN hotspots h ON h.id = ms.hotspot"
			       " JOIN loci l ON l.id = ms.locus"
			       " WHERE ms.counter = 'cpu-clock'",
			       -1, &stmt, NULL),
	    SQLITE_OK);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		rows++;
		assert_string_equal((const char *)sqlite3_column_text(stmt, 0), "main");
		assert_int_equal(sqlite3_column_int64(stmt, 1), fx->main_sym.addr);
		assert_string_not_equal((const char *)sqlite3_column_text(stmt, 2), "unresolved");
		assert_int_equal(sqlite3_column_int64(stmt, 3), 2 * SAMPLES_PER_BATCH);
		assert_near(sqlite3_column_double(stmt, 4), 2.0 * VALUE_PER_BATCH, 1e-6);
		assert_string_equal((const char *)sqlite3_column_text(stmt, 5), "ns");
		assert_string_equal((const char *)sqlite3_column_text(stmt, 6), "measured");
		assert_int_equal(sqlite3_column_int64(stmt, 7), 4242);
	}
	sqlite3_finalize(stmt);
	pivot__free(p);
	assert_int_equal(rows, 1);
	assert_int_equal(run_sql_int(fx,
				     "SELECT count(*) FROM addresses a JOIN hotspots h ON"
				     " h.id = a.hotspot WHERE h.name = 'main' AND a.offset = %llu",
				     (unsigned long long)fx->main_offset),
			 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_start_creates_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_batch_stored_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_garbage_frames_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_newer_protocol_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_two_frame_message, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_extra_frames_not_routed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_batches_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_second_start_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_start_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_start_checks_run_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unexpected_envelopes_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_finalize_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_finalize_writes_run, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
