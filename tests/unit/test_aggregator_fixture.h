/* test_aggregator_fixture — what the Aggregator's tests share: an
 * Aggregator on a ROUTER bound on inproc:// (or tcp:// when asked), served
 * in a thread, spoken to from DEALERs the way Agents do (one frame = one
 * packed Envelope); the START of issue 7 (runs_dir, owner, run facts); one
 * Batch of one module (the test binary), one Locus, one stack at main.
 * Every receive has a timeout: a broken Aggregator fails the test instead
 * of hanging it. */
#ifndef NUNATAK_TEST_AGGREGATOR_FIXTURE_H
#define NUNATAK_TEST_AGGREGATOR_FIXTURE_H

/* each test file uses some of these */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <dirent.h>
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
	char base[PATH_MAX];	  /* temporary directory of this test */
	char runs_dir[PATH_MAX];  /* base/runs: where START asks Runs to be made */
	char run_dir[PATH_MAX];	  /* RUN_ID's, as START's Ack named it */
	char state_dir[PATH_MAX]; /* base/state (fixture_setup_state()) */
	char endpoint[64];
	int once; /* aggregator_serve(agg, once) */
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
/* the Aggregator's munge_socket and slurm_conf (NULL: the defaults), set
 * before fixture_setup() by the job tests */
static const char *fixture_munge_socket, *fixture_slurm_conf;
static int fixture_job_grace_ms; /* 0: the Aggregator's 60 s */

static void *serve_thread(void *arg)
{
	struct fixture *fx = arg;

	fx->serve_result = aggregator_serve(fx->agg, fx->once);
	return NULL;
}

static void fixture_start_aggregator(struct fixture *fx)
{
	struct aggregator_opts o = {.state_dir = fx->state_dir[0] ? fx->state_dir : NULL,
				    .endpoint_shown = fx->endpoint,
				    .munge_socket = fixture_munge_socket,
				    .slurm_conf = fixture_slurm_conf,
				    .job_ended_grace_ms = fixture_job_grace_ms};
	int linger = 0;

	o.router = zmq_socket(fx->zctx, ZMQ_ROUTER);
	assert_non_null(o.router);
	zmq_setsockopt(o.router, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_bind(o.router, fx->endpoint), 0);
	fx->agg = aggregator__new_opts(&o);
	assert_non_null(fx->agg);
	assert_int_equal(pthread_create(&fx->thread, NULL, serve_thread, fx), 0);
	fx->thread_running = 1;
}

static void *fixture_dealer(struct fixture *fx)
{
	int linger = 0;
	void *d = zmq_socket(fx->zctx, ZMQ_DEALER);

	assert_non_null(d);
	zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_connect(d, fx->endpoint), 0);
	return d;
}

/* the serving thread stopped (aggregator_stop) and joined, the Aggregator
 * freed: what a restart starts from */
static void fixture_stop_aggregator(struct fixture *fx)
{
	if (fx->thread_running) {
		aggregator_stop(fx->agg);
		pthread_join(fx->thread, NULL);
		fx->thread_running = 0;
	}
	aggregator__free(fx->agg);
	fx->agg = NULL;
}

static int fixture_setup(void **state, int once, int with_state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct elf_file *elf;

	assert_non_null(fx);
	*state = fx;
	fx->once = once;
	assert_int_equal(make_tmpdir(fx->base, sizeof(fx->base), "aggregator"), 0);
	snprintf(fx->runs_dir, sizeof(fx->runs_dir), "%s/runs", fx->base);
	if (with_state)
		snprintf(fx->state_dir, sizeof(fx->state_dir), "%s/state", fx->base);

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
	snprintf(fx->endpoint, sizeof(fx->endpoint), "inproc://test-agg-%d-%d", (int)getpid(),
		 endpoint_counter++);
	fixture_start_aggregator(fx);
	fx->dealer = fixture_dealer(fx);
	return 0;
}

static int setup(void **state)
{
	return fixture_setup(state, 1, 0);
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

static void send_envelope_on(void *sock, wire_envelope *env)
{
	assert_int_equal(wire_send(sock, env), 0);
}

static void send_envelope(struct fixture *fx, wire_envelope *env)
{
	send_envelope_on(fx->dealer, env);
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
static wire_envelope *recv_on_within(void *sock, int timeout_ms)
{
	zmq_pollitem_t item = {.socket = sock, .events = ZMQ_POLLIN};
	char why[256] = "";
	wire_envelope *env;
	size_t more_size;
	zmq_msg_t msg;
	int more = 0;

	if (zmq_poll(&item, 1, timeout_ms) <= 0)
		fail_msg("the aggregator did not answer within %d ms", timeout_ms);
	zmq_msg_init(&msg);
	assert_true(zmq_msg_recv(&msg, sock, 0) >= 0);
	more_size = sizeof(more);
	zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &more_size);
	assert_int_equal(more, 0);
	env = wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), why, sizeof(why));
	zmq_msg_close(&msg);
	if (!env)
		fail_msg("the reply is not an envelope: %s", why);
	assert_int_equal(env->protocol_major, WIRE_PROTOCOL_MAJOR);
	return env;
}

static wire_envelope *recv_reply_within(struct fixture *fx, int timeout_ms)
{
	return recv_on_within(fx->dealer, timeout_ms);
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

/* the Ack on sock; its json (a copy to free) in *json when json is given */
static void expect_ack_on(void *sock, const char *run_id, const char *node, uint64_t seq,
			  char **json)
{
	wire_envelope *r = recv_on_within(sock, REPLY_TIMEOUT_MS);

	if (r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR)
		fail_msg("Error instead of Ack: %s", r->error->message);
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ACK);
	assert_string_equal(r->ack->run_id, run_id);
	assert_string_equal(r->ack->node, node);
	assert_int_equal(r->ack->seq, seq);
	if (json)
		*json = strdup(r->ack->json ? r->ack->json : "");
	wire_envelope_free(r);
}

static void expect_ack(struct fixture *fx, const char *run_id, const char *node, uint64_t seq)
{
	expect_ack_on(fx->dealer, run_id, node, seq, NULL);
}

/* An Error on sock whose message contains each of the NULL-terminated
 * strings given. */
static void expect_error_on(void *sock, ...)
{
	wire_envelope *r = recv_on_within(sock, REPLY_TIMEOUT_MS);
	const char *want;
	va_list ap;

	if (r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ACK)
		fail_msg("Ack (run '%s', seq %llu) instead of Error", r->ack->run_id,
			 (unsigned long long)r->ack->seq);
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ERROR);
	va_start(ap, sock);
	while ((want = va_arg(ap, const char *)))
		if (!strstr(r->error->message, want))
			fail_msg("error '%s' does not contain '%s'", r->error->message, want);
	va_end(ap);
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

/* a Control on sock naming node as its sender (NULL: none) */
static void send_control_node(void *sock, Nunatak__Wire__Control__Action action,
			      const char *run_id, const char *json, const char *node)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Control c = NUNATAK__WIRE__CONTROL__INIT;

	c.action = action;
	c.run_id = (char *)run_id;
	c.json = (char *)json;
	c.node = (char *)node;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &c;
	send_envelope_on(sock, &env);
}

static void send_control_on(void *sock, Nunatak__Wire__Control__Action action, const char *run_id,
			    const char *json)
{
	send_control_node(sock, action, run_id, json, NULL);
}

static void send_control(struct fixture *fx, Nunatak__Wire__Control__Action action,
			 const char *run_id, const char *json)
{
	send_control_on(fx->dealer, action, run_id, json);
}

/* the START json of issue 7 for a Run of node, owned by uid/gid, made in
 * runs_dir; token NULL: none */
static char *start_json_full(const char *runs_dir, const char *node, unsigned uid, unsigned gid,
			     const char *token)
{
	json_t *spec;
	char *text;

	spec = json_pack("{s:{s:s, s:s, s:[s], s:s, s:n, s:{}}, s:s, s:{s:i, s:i}, s:s, s:i,"
			 " s:b}",
			 "run", "name", "t", "created", "2026-01-01T00:00:00Z", "command", "app",
			 "node", node, "job_id", "effective_configuration", "runs_dir", runs_dir,
			 "owner", "uid", uid, "gid", gid, "symbolizer", symbolizer_tool(),
			 "frequency", 997, "mpi_events", 0);
	assert_non_null(spec);
	if (token)
		json_object_set_new(spec, "token", json_string(token));
	text = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	assert_non_null(text);
	return text;
}

static char *start_json(const char *runs_dir)
{
	return start_json_full(runs_dir, NODE, (unsigned)geteuid(), (unsigned)getegid(), NULL);
}

/* START's Ack json {"run_id","run_dir"}: run_dir into dir (PATH_MAX) */
static void ack_run_dir(const char *json, const char *run_id, char *dir)
{
	json_t *j = json_loads(json, 0, NULL);

	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "run_id")), run_id);
	assert_non_null(json_string_value(json_object_get(j, "run_dir")));
	snprintf(dir, PATH_MAX, "%s", json_string_value(json_object_get(j, "run_dir")));
	json_decref(j);
}

/* START of run_id on sock (json given), acked: its directory into dir */
static void start_run_on(void *sock, const char *run_id, const char *json, char *dir)
{
	char *ack = NULL;

	send_control_on(sock, NUNATAK__WIRE__CONTROL__ACTION__START, run_id, json);
	expect_ack_on(sock, run_id, "", 0, &ack);
	ack_run_dir(ack, run_id, dir);
	free(ack);
}

static void start_run(struct fixture *fx)
{
	char *json = start_json(fx->runs_dir);

	start_run_on(fx->dealer, RUN_ID, json, fx->run_dir);
	free(json);
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

/* a good Batch of run_id from node (incarnation, seq) on sock, acked */
static void send_good_batch_on(struct fixture *fx, void *sock, const char *run_id, const char *node,
			       uint64_t incarnation, uint64_t seq)
{
	struct test_batch t;
	wire_envelope env;

	tb_init(&t, fx, run_id, seq);
	t.b.node = (char *)node;
	t.locus.node = (char *)node;
	t.b.has_incarnation = incarnation != 0;
	t.b.incarnation = incarnation;
	tb_envelope(&t, &env);
	send_envelope_on(sock, &env);
	expect_ack_on(sock, run_id, node, seq, NULL);
}

static void send_good_batch(struct fixture *fx, uint64_t seq)
{
	send_good_batch_on(fx, fx->dealer, RUN_ID, NODE, 0, seq);
}

/* --- reading the Run ------------------------------------------------------ */

static struct pivot *open_pivot_of(const char *run_dir)
{
	struct pivot *p = pivot__open(path_in(run_dir, "pivot.sqlite"), 1);

	if (!p)
		fail_msg("cannot open the pivot of '%s': %s", run_dir, strerror(errno));
	return p;
}

static struct pivot *open_run_pivot(struct fixture *fx)
{
	return open_pivot_of(fx->run_dir);
}

/* the one integer an SQL query gives on the pivot of run_dir, on a fresh
 * read-only connection */
__attribute__((format(printf, 2, 3))) static int64_t dir_sql_int(const char *run_dir,
								 const char *fmt, ...)
{
	struct pivot *p = open_pivot_of(run_dir);
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

/* dir_sql_int() on RUN_ID's pivot */
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

static json_t *load_manifest_of(const char *run_dir)
{
	json_error_t jerr;
	json_t *m = json_load_file(path_in(run_dir, "manifest.json"), 0, &jerr);

	if (!m)
		fail_msg("manifest.json: line %d: %s", jerr.line, jerr.text);
	return m;
}

static json_t *load_manifest(struct fixture *fx)
{
	return load_manifest_of(fx->run_dir);
}

/* 1 when dir holds nothing but . and .. (or does not exist) */
static int dir_is_empty(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int empty = 1;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	if (d)
		closedir(d);
	return empty;
}

/* --- what the service tests share --------------------------------------- */

static void hello_on(void *sock, const char *node, uint64_t incarnation, const char *status)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Hello h = NUNATAK__WIRE__HELLO__INIT;

	h.agent_version = "test";
	h.node = (char *)node;
	h.has_incarnation = 1;
	h.incarnation = incarnation;
	h.machine_json = "{\"cpus\": 2}";
	h.status_json = (char *)status;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	send_envelope_on(sock, &env);
}

/* FINALIZE of run_id on sock with json, answered within the finalize bound */
static void finalize_on(void *sock, const char *run_id, const char *json)
{
	wire_envelope *r;

	send_control_on(sock, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, run_id, json);
	r = recv_on_within(sock, FINALIZE_TIMEOUT_MS);
	if (r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR)
		fail_msg("FINALIZE refused: %s", r->error->message);
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ACK);
	assert_string_equal(r->ack->run_id, run_id);
	assert_non_null(strstr(r->ack->json, "run_dir"));
	wire_envelope_free(r);
}

/* STATUS's Ack.json, parsed */
static json_t *status_on(void *sock)
{
	char *text = NULL;
	json_t *j;

	send_control_on(sock, NUNATAK__WIRE__CONTROL__ACTION__STATUS, "", NULL);
	expect_ack_on(sock, "", "", 0, &text);
	j = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(j);
	return j;
}

static json_int_t counter_of(json_t *status, const char *name)
{
	return json_integer_value(json_object_get(json_object_get(status, "counters"), name));
}

/* the next message on sock is a Control action of run_id: its json (a
 * copy to free, "" without) */
static char *expect_control_on(void *sock, int action, const char *run_id)
{
	wire_envelope *r = recv_on_within(sock, REPLY_TIMEOUT_MS);
	char *json;

	if (r->body_case != NUNATAK__WIRE__ENVELOPE__BODY_CONTROL)
		fail_msg("body %d instead of a Control", (int)r->body_case);
	assert_int_equal(r->control->action, action);
	assert_string_equal(r->control->run_id, run_id);
	json = strdup(r->control->json ? r->control->json : "");
	wire_envelope_free(r);
	return json;
}

#endif
