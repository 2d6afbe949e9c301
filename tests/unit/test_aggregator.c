/* Tests of userspace/aggregator against real ZeroMQ: a ROUTER bound on
 * inproc://, served by aggregator_serve(agg, 1) in a thread, spoken to from
 * a DEALER the way the Agent and the CLI do (one frame = one packed
 * Envelope; every request gets an Ack or an Error Envelope). Covered: START
 * creates the Run in the runs directory it names, Batches are stored once
 * (idempotent by (node, incarnation, seq)) and add up, hostile input
 * (garbage frames, a two-frame message, a newer protocol, Batches for
 * another Run or with out-of-range indices, a START for a Run already
 * open, envelopes the Aggregator does not serve) is refused with an Error
 * and stores nothing while the Aggregator goes on, and FINALIZE ends the
 * serving thread with a finished manifest and derived Measurements.
 * Expected names and addresses come from nm on the test binary itself.
 * The service side (many Runs, resume, owners, nodes): test_aggregator_service.c. */
#include "tests/unit/test_aggregator_fixture.h"

/* --- the tests ------------------------------------------------------------ */

static void test_start_creates_run(void **state)
{
	struct fixture *fx = *state;
	json_t *m;

	assert_true(dir_is_empty(fx->runs_dir));
	start_run(fx);
	assert_no_more_reply(fx);
	/* <runs_dir>/<name>-YYYYMMDD-HHMMSS, made by the Aggregator */
	assert_true(strncmp(fx->run_dir, fx->runs_dir, strlen(fx->runs_dir)) == 0);
	assert_true(strncmp(fx->run_dir + strlen(fx->runs_dir), "/t-", 3) == 0);
	assert_true(file_exists(path_in(fx->run_dir, "manifest.json")));
	assert_true(file_exists(path_in(fx->run_dir, "pivot.sqlite")));

	/* the first manifest, from START's facts, exit code still null */
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
	assert_true(dir_is_empty(fx->runs_dir));
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
	json = start_json(fx->runs_dir);
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
	assert_true(dir_is_empty(fx->runs_dir));

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

static void test_start_again(void **state)
{
	struct fixture *fx = *state;
	char other_dir[PATH_MAX], again[PATH_MAX], *json;

	start_run(fx);
	send_good_batch(fx, 0);

	/* another Run while this one is open: both are open */
	json = start_json(fx->runs_dir);
	start_run_on(fx->dealer, "run-other", json, other_dir);
	assert_string_not_equal(other_dir, fx->run_dir);
	/* the same Run again by its owner (its Ack was lost): the same Run */
	start_run_on(fx->dealer, RUN_ID, json, again);
	free(json);
	assert_string_equal(again, fx->run_dir);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 1);
	/* by another owner: refused, EEXIST */
	json = start_json_full(fx->runs_dir, NODE, 4242, 4242, NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, RUN_ID, "already", NULL);

	/* the open Run still collects */
	send_good_batch(fx, 1);
	assert_int_equal(run_sql_int(fx, "SELECT sample_count FROM samples"),
			 2 * SAMPLES_PER_BATCH);
	assert_true(serving_thread_alive(fx));
}

static void test_malformed_start_refused(void **state)
{
	struct fixture *fx = *state;
	char bad[2 * PATH_MAX], *json;
	int fd;

	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, "{not json");
	expect_error(fx, "malformed", NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, NULL);
	expect_error(fx, "malformed", NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID,
		     "{\"run\": {}, \"owner\": {\"uid\": 0, \"gid\": 0}}"); /* no runs_dir */
	expect_error(fx, "malformed", NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID,
		     "{\"run\": {}, \"runs_dir\": \"runs\", \"owner\": {\"uid\": 0, \"gid\": 0}}");
	expect_error(fx, "absolute", NULL); /* relative */
	snprintf(bad, sizeof(bad), "{\"run\": [], \"runs_dir\": \"%s\", \"owner\": {\"uid\": 0,"
		 " \"gid\": 0}}", fx->runs_dir);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, bad);
	expect_error(fx, "malformed", NULL);
	snprintf(bad, sizeof(bad), "{\"run\": {}, \"runs_dir\": \"%s\", \"owner\": {\"uid\": -1,"
		 " \"gid\": 0}}", fx->runs_dir);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, bad);
	expect_error(fx, "malformed", NULL);
	json = start_json_full(fx->runs_dir, NODE, geteuid(), getegid(), "not-a-token");
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, "token", NULL);
	json = start_json(fx->runs_dir);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, "../escape", json);
	free(json);
	expect_error(fx, "run id", NULL);
	assert_true(dir_is_empty(fx->runs_dir));

	/* a runs directory that cannot be made: under a regular file */
	fd = open(path_in(fx->base, "file"), O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(bad, sizeof(bad), "%s/file/runs", fx->base);
	json = start_json(bad);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, bad, NULL);

	/* none of these left a Run open: a good START is served */
	start_run(fx);
	send_good_batch(fx, 0);
	assert_true(serving_thread_alive(fx));
}

/* the runs directory START names: a symbolic link, or one another user
 * could write, is refused and nothing is made in it; the Run directory is
 * 0700 and locked while written */
static void test_start_checks_runs_dir(void **state)
{
	struct fixture *fx = *state;
	char link[PATH_MAX], real[PATH_MAX], *json;
	struct stat st;
	int fd;

	snprintf(real, sizeof(real), "%s/elsewhere", fx->base);
	snprintf(link, sizeof(link), "%s/link", fx->base);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(symlink(real, link), 0);
	json = start_json(link);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, "symbolic link", NULL);
	assert_true(dir_is_empty(real));

	assert_int_equal(chmod(real, 0777), 0);
	json = start_json(real);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error(fx, "writable", NULL);
	assert_true(dir_is_empty(real));

	start_run(fx);
	assert_int_equal(stat(fx->run_dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, geteuid());
	fd = open(fx->run_dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1); /* held while the Run is written */
	assert_int_equal(errno, EWOULDBLOCK);
	close(fd);
}

/* Ack, Error and Hello are an Agent's (answers to OPEN, its presence):
 * noted, never answered; an envelope without a body is refused */
static void test_unexpected_envelopes(void **state)
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

	error.message = "a peer's error";
	env = (wire_envelope)NUNATAK__WIRE__ENVELOPE__INIT;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	send_envelope(fx, &env);

	hello.agent_version = "0.0";
	hello.node = NODE;
	env = (wire_envelope)NUNATAK__WIRE__ENVELOPE__INIT;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	send_envelope(fx, &env);
	assert_no_more_reply(fx);

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
	{
		/* at the Ack the Run is closed: its lock is free at once */
		int fd = open(fx->run_dir, O_RDONLY | O_DIRECTORY);

		assert_true(fd >= 0);
		assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
		close(fd);
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
	/* the Run's facts, as START gave them, and its owner */
	assert_string_equal(json_string_value(json_array_get(json_object_get(run, "command"), 0)),
			    "app");
	assert_int_equal(json_integer_value(json_object_get(run, "owner_uid")), geteuid());
	assert_true(json_is_object(json_object_get(json_object_get(m, "provenance"),
						   "effective_configuration")));
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
	    cmocka_unit_test_setup_teardown(test_start_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_start_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_start_checks_runs_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unexpected_envelopes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_finalize_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_finalize_writes_run, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
