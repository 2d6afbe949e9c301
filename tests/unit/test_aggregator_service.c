/* Tests of the service Aggregator (issue 7) against real ZeroMQ and
 * SQLite: many Runs at once, interleaved; exactly once by (node,
 * incarnation, seq); Degradations of two nodes both kept; the finalize of
 * one Run beside the Batches of another; OPEN to the Agents of a Run with a
 * token, CLOSE at FINALIZE and `node-lost` for a node that never sent its
 * last Batch; STATUS; an oversized message; a Run resumed by a new
 * Aggregator from its state directory; Runs written as their owner (root
 * only: a throwaway uid owns the runs directory). */
#include "tests/unit/test_aggregator_fixture.h"

#include <sys/types.h>

#include "userspace/aggregator/manifest.h"
#include "userspace/log/clock.h"

#define OWNER_UID 4242
#define TOKEN "0123456789abcdef0123456789abcdef"

static int setup_service(void **state)
{
	return fixture_setup(state, 0, 0);
}

static int setup_resume(void **state)
{
	return fixture_setup(state, 0, 1);
}

static void assert_nothing_on(void *sock, int ms)
{
	zmq_pollitem_t item = {.socket = sock, .events = ZMQ_POLLIN};

	assert_int_equal(zmq_poll(&item, 1, ms), 0);
}

/* two Runs of two nodes open at once, their Batches interleaved: each
 * lands in its own Run */
static void test_runs_interleaved(void **state)
{
	struct fixture *fx = *state;
	char dir_a[PATH_MAX], dir_b[PATH_MAX], *json;
	void *b = fixture_dealer(fx);
	int i;

	json = start_json_full(fx->runs_dir, "na", geteuid(), getegid(), NULL);
	start_run_on(fx->dealer, "run-a", json, dir_a);
	free(json);
	json = start_json_full(fx->runs_dir, "nb", geteuid(), getegid(), NULL);
	start_run_on(b, "run-b", json, dir_b);
	free(json);
	assert_string_not_equal(dir_a, dir_b);
	for (i = 0; i < 6; i++) {
		send_good_batch_on(fx, fx->dealer, "run-a", "na", 11, (uint64_t)i);
		if (i % 2)
			send_good_batch_on(fx, b, "run-b", "nb", 22, (uint64_t)i);
	}
	assert_int_equal(dir_sql_int(dir_a, "SELECT count(*) FROM batches"), 6);
	assert_int_equal(dir_sql_int(dir_a, "SELECT count(*) FROM batches WHERE node = 'na'"), 6);
	assert_int_equal(dir_sql_int(dir_b, "SELECT count(*) FROM batches"), 3);
	assert_int_equal(dir_sql_int(dir_b, "SELECT count(*) FROM batches WHERE node = 'nb'"), 3);
	assert_int_equal(dir_sql_int(dir_a, "SELECT sum(sample_count) FROM samples"),
			 6 * SAMPLES_PER_BATCH);
	assert_int_equal(dir_sql_int(dir_b, "SELECT sum(sample_count) FROM samples"),
			 3 * SAMPLES_PER_BATCH);
	zmq_close(b);
}

/* (node, incarnation, seq) once: a resend counts as a duplicate, the same
 * seq of a new incarnation (the Agent restarted) is stored */
static void test_incarnation_dedup(void **state)
{
	struct fixture *fx = *state;
	json_t *st;

	start_run(fx);
	send_good_batch_on(fx, fx->dealer, RUN_ID, NODE, 5, 0);
	send_good_batch_on(fx, fx->dealer, RUN_ID, NODE, 5, 0);
	send_good_batch_on(fx, fx->dealer, RUN_ID, NODE, 6, 0);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 2);
	assert_int_equal(run_sql_int(fx, "SELECT sum(sample_count) FROM samples"),
			 2 * SAMPLES_PER_BATCH);
	st = status_on(fx->dealer);
	assert_int_equal(counter_of(st, "received"), 3);
	assert_int_equal(counter_of(st, "stored"), 2);
	assert_int_equal(counter_of(st, "duplicates"), 1);
	assert_int_equal(counter_of(st, "refused"), 0);
	json_decref(st);
}

/* one Degradation name on two nodes: both kept, each with its node */
static void test_degradations_of_two_nodes(void **state)
{
	struct fixture *fx = *state;
	Nunatak__Wire__Degradation d = NUNATAK__WIRE__DEGRADATION__INIT, *dp = &d;
	const char *nodes[] = {"na", "nb"};
	json_t *m, *degs, *x;
	struct test_batch t;
	wire_envelope env;
	char *json;
	size_t i;
	int seen = 0;

	json = start_json_full(fx->runs_dir, "na", geteuid(), getegid(), NULL);
	start_run_on(fx->dealer, RUN_ID, json, fx->run_dir);
	free(json);
	for (i = 0; i < 2; i++) {
		tb_init(&t, fx, RUN_ID, 0);
		t.b.node = t.locus.node = (char *)nodes[i];
		d.name = "no-cycles";
		d.message = i ? "nb has no cycles" : "na has no cycles";
		d.remedy = "bare metal";
		t.b.degradations = &dp;
		t.b.n_degradations = 1;
		t.b.has_last = t.b.last = 1;
		tb_envelope(&t, &env);
		send_envelope(fx, &env);
		expect_ack(fx, RUN_ID, nodes[i], 0);
	}
	finalize_on(fx->dealer, RUN_ID, "{\"exit_code\": 0, \"end\": \"E\", \"nodes_wait_ms\": 0}");
	m = load_manifest(fx);
	degs = json_object_get(m, "degradations");
	json_array_foreach(degs, i, x)
	{
		if (strcmp(json_string_value(json_object_get(x, "name")), "no-cycles"))
			continue;
		seen |= !strcmp(json_string_value(json_object_get(x, "node")), "na") ? 1 : 2;
		assert_non_null(strstr(json_string_value(json_object_get(x, "message")),
				       json_string_value(json_object_get(x, "node"))));
	}
	assert_int_equal(seen, 3);
	assert_int_equal(json_array_size(json_object_get(m, "nodes")), 2);
	json_decref(m);
}

/* a trusted stand-in for llvm-symbolizer that takes its time: the
 * finalize of its Run lasts about that long */
static void slow_symbolizer(struct fixture *fx, char *path)
{
	FILE *f;

	snprintf(path, PATH_MAX, "%s/slow-symbolizer", fx->base);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nsleep 2\nexec cat >/dev/null\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

/* the finalize of Run A runs beside the loop: Run B's Batches are acked
 * while A's symbolizer still runs, and A's FINALIZE is acked after */
static void test_finalize_beside_batches(void **state)
{
	struct fixture *fx = *state;
	char sym[PATH_MAX], dir_b[PATH_MAX], *json;
	void *b = fixture_dealer(fx);
	long long t0;
	json_t *spec;
	int i;

	slow_symbolizer(fx, sym);
	json = start_json(fx->runs_dir);
	spec = json_loads(json, 0, NULL);
	free(json);
	json_object_set_new(spec, "symbolizer", json_string(sym));
	json = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	start_run_on(fx->dealer, "run-a", json, fx->run_dir);
	free(json);
	json = start_json_full(fx->runs_dir, "nb", geteuid(), getegid(), NULL);
	start_run_on(b, "run-b", json, dir_b);
	free(json);
	send_good_batch_on(fx, fx->dealer, "run-a", NODE, 1, 0);

	send_control_on(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, "run-a",
			"{\"exit_code\": 0, \"end\": \"E\", \"symbolizer_budget_ms\": 20000}");
	t0 = clock_monotonic_ms();
	for (i = 0; i < 5; i++)
		send_good_batch_on(fx, b, "run-b", "nb", 2, (uint64_t)i);
	/* five Acks in well under the symbolizer's two seconds, and A not yet */
	assert_true(clock_monotonic_ms() - t0 < 1500);
	assert_nothing_on(fx->dealer, 10);
	expect_ack_on(fx->dealer, "run-a", "", 0, NULL);
	assert_true(clock_monotonic_ms() - t0 >= 1500);
	assert_int_equal(dir_sql_int(dir_b, "SELECT count(*) FROM batches"), 5);
	{
		json_t *m = load_manifest(fx);

		assert_int_equal(manifest_finalized(m), 1);
		json_decref(m);
	}
	zmq_close(b);
}

/* a Run with a token is OPENed on every other Agent, those connected at
 * START and those that say Hello later; FINALIZE sends them CLOSE and
 * waits for their last Batch; one that never sends it is `node-lost` */
static void test_open_close_node_lost(void **state)
{
	struct fixture *fx = *state;
	void *nb = fixture_dealer(fx), *nc = fixture_dealer(fx);
	json_t *open, *m, *degs, *x, *st;
	struct test_batch t;
	wire_envelope env;
	char *json;
	size_t i;
	int lost = 0;

	hello_on(fx->dealer, NODE, 1, "{\"targets\": [{}]}");
	hello_on(nc, "nc", 3, NULL);
	usleep(100 * 1000); /* the Hellos served before START */
	json = start_json_full(fx->runs_dir, NODE, geteuid(), getegid(), TOKEN);
	start_run_on(fx->dealer, RUN_ID, json, fx->run_dir);
	free(json);
	json = expect_control_on(nc, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_ID);
	open = json_loads(json, 0, NULL);
	free(json);
	assert_string_equal(json_string_value(json_object_get(open, "token")), TOKEN);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(open, "owner"), "uid")),
			 geteuid());
	assert_int_equal(json_integer_value(json_object_get(open, "frequency")), 997);
	json_decref(open);
	assert_nothing_on(fx->dealer, 50); /* not to its origin */
	hello_on(nb, "nb", 2, NULL);
	free(expect_control_on(nb, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_ID));
	hello_on(nb, "nb", 2, NULL);
	assert_nothing_on(nb, 50);    /* once */
	hello_on(nb, "nb", 20, NULL); /* nb's Agent restarted: OPENed again */
	free(expect_control_on(nb, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_ID));
	hello_on(nb, "nb", 2, NULL);
	free(expect_control_on(nb, NUNATAK__WIRE__CONTROL__ACTION__OPEN, RUN_ID));
	send_good_batch_on(fx, nb, RUN_ID, "nb", 2, 0);

	st = status_on(fx->dealer);
	assert_int_equal(json_array_size(json_object_get(st, "agents")), 3);
	x = json_array_get(json_object_get(st, "runs"), 0);
	assert_string_equal(json_string_value(json_object_get(x, "run_id")), RUN_ID);
	assert_int_equal(json_integer_value(json_object_get(x, "batches")), 1);
	assert_int_equal(json_integer_value(json_object_get(x, "samples")), SAMPLES_PER_BATCH);
	json_array_foreach(json_object_get(st, "agents"), i,
			   x) if (!strcmp(json_string_value(json_object_get(x, "node")), NODE))
	    assert_int_equal(json_integer_value(json_object_get(x, "active_targets")), 1);
	json_decref(st);

	send_control_on(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, RUN_ID,
			"{\"exit_code\": 0, \"end\": \"E\", \"nodes_wait_ms\": 1500}");
	free(expect_control_on(nb, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_ID));
	free(expect_control_on(nc, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, RUN_ID));
	tb_init(&t, fx, RUN_ID, 1);
	t.b.node = t.locus.node = "nb";
	t.b.has_incarnation = 1;
	t.b.incarnation = 2;
	t.b.has_last = t.b.last = 1;
	tb_envelope(&t, &env);
	send_envelope_on(nb, &env);
	expect_ack_on(nb, RUN_ID, "nb", 1, NULL);
	assert_nothing_on(fx->dealer, 300); /* nc still waited for */
	expect_ack_on(fx->dealer, RUN_ID, "", 0, NULL);

	m = load_manifest(fx);
	degs = json_object_get(m, "degradations");
	json_array_foreach(degs, i, x)
	{
		if (strcmp(json_string_value(json_object_get(x, "name")), "node-lost"))
			continue;
		lost++;
		assert_string_equal(json_string_value(json_object_get(x, "node")), "nc");
		assert_non_null(
		    strstr(json_string_value(json_object_get(x, "message")), "last contact"));
	}
	assert_int_equal(lost, 1);
	assert_true(json_is_object(json_object_get(json_object_get(m, "machines"), "nb")));
	assert_true(json_is_object(json_object_get(m, "machine"))); /* the origin's */
	json_decref(m);
	zmq_close(nb);
	zmq_close(nc);
}

/* more than 64 MiB in one message: refused with an Error, counted, and
 * the Aggregator goes on */
static void test_oversized_refused(void **state)
{
	struct fixture *fx = *state;
	size_t len = AGGREGATOR_MAX_MESSAGE_BYTES + 1;
	char *big = calloc(1, len);
	json_t *st;

	assert_non_null(big);
	start_run(fx);
	assert_int_equal(zmq_send(fx->dealer, big, len, 0), (int)len);
	free(big);
	expect_error(fx, "oversized", NULL);
	send_good_batch(fx, 0);
	st = status_on(fx->dealer);
	assert_int_equal(counter_of(st, "refused"), 1);
	json_decref(st);
}

/* an Aggregator freed and a new one made on the same state directory:
 * the open Run is resumed, its Batches and FINALIZE land in it, and its
 * state file is gone once finalized */
static void test_resume(void **state)
{
	struct fixture *fx = *state;
	char file[PATH_MAX + 64], saved[4096];
	size_t saved_len;
	struct stat st;

	start_run(fx);
	send_good_batch_on(fx, fx->dealer, RUN_ID, NODE, 9, 0);
	snprintf(file, sizeof(file), "%s/open/" RUN_ID ".json", fx->state_dir);
	assert_int_equal(lstat(file, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	zmq_close(fx->dealer);
	fixture_stop_aggregator(fx);

	/* inproc:// names are freed asynchronously: the next one elsewhere */
	snprintf(fx->endpoint + strlen(fx->endpoint), 8, "-again");
	fixture_start_aggregator(fx);
	fx->dealer = fixture_dealer(fx);
	send_good_batch_on(fx, fx->dealer, RUN_ID, NODE, 9, 0); /* a resend: once */
	send_good_batch_on(fx, fx->dealer, RUN_ID, NODE, 9, 1);
	assert_int_equal(run_sql_int(fx, "SELECT count(*) FROM batches"), 2);
	{
		/* what the state file said, to put back after the finalize */
		FILE *f = fopen(file, "r");

		assert_non_null(f);
		saved_len = fread(saved, 1, sizeof(saved), f);
		fclose(f);
	}
	finalize_on(fx->dealer, RUN_ID, FINALIZE_JSON);
	assert_int_equal(run_sql_int(fx, "SELECT sum(sample_count) FROM measurements"),
			 have_command(symbolizer_tool()) ? 2 * SAMPLES_PER_BATCH
							 : run_sql_int(fx, "SELECT coalesce(sum("
									   "sample_count), 0) FROM "
									   "measurements"));
	assert_int_equal(lstat(file, &st), -1);
	assert_int_equal(errno, ENOENT);

	/* a crash between the finalize and the state file's removal: the
	 * next start sees the Run finalized and forgets it */
	{
		FILE *f = fopen(file, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(saved, 1, saved_len, f), saved_len);
		fclose(f);
		assert_int_equal(chmod(file, 0600), 0);
	}
	zmq_close(fx->dealer);
	fixture_stop_aggregator(fx);
	snprintf(fx->endpoint + strlen(fx->endpoint), 8, "-3");
	fixture_start_aggregator(fx);
	fx->dealer = fixture_dealer(fx);
	assert_int_equal(lstat(file, &st), -1);
	assert_int_equal(errno, ENOENT);
	{
		struct test_batch t;

		tb_init(&t, fx, RUN_ID, 2);
		send_batch(fx, &t);
		expect_error(fx, "unknown run", NULL); /* not reopened */
	}
}

/* as root: Runs of uid OWNER_UID are made and written as that uid, in a
 * runs directory under its home (owned by it, as a user's $HOME is); a
 * symbolic link planted where the Run directory would go is not followed;
 * a missing runs directory is made as the owner; a runs directory the
 * owner cannot write is refused */
static void test_owner_writes(void **state)
{
	struct fixture *fx = *state;
	static const char *const files[] = {"manifest.json", "pivot.sqlite"};
	char home[PATH_MAX], target[PATH_MAX], planted[2 * PATH_MAX], stamp[32], rootdir[PATH_MAX],
	    fresh[2 * PATH_MAX], fresh_run[PATH_MAX], *json;
	time_t now = time(NULL);
	struct stat st;
	struct tm tm;
	size_t i;
	int s;

	if (geteuid() != 0) {
		skip(); /* SKIPPED: needs root to act as another uid */
		return;
	}
	assert_int_equal(chmod(fx->base, 0755), 0);
	snprintf(home, sizeof(home), "%s/home", fx->base);
	assert_int_equal(mkdir(home, 0700), 0);
	assert_int_equal(chown(home, OWNER_UID, OWNER_UID), 0);
	snprintf(fx->runs_dir, sizeof(fx->runs_dir), "%s/runs", home);
	assert_int_equal(mkdir(fx->runs_dir, 0700), 0);
	assert_int_equal(chown(fx->runs_dir, OWNER_UID, OWNER_UID), 0);
	snprintf(target, sizeof(target), "%s/target", fx->base);
	assert_int_equal(mkdir(target, 0755), 0);
	/* the names the next seconds' Run could take, planted as links */
	for (s = 0; s < 3; s++) {
		time_t when = now + s;

		localtime_r(&when, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(planted, sizeof(planted), "%s/t-%s", fx->runs_dir, stamp);
		assert_int_equal(symlink(target, planted), 0);
		assert_int_equal(lchown(planted, OWNER_UID, OWNER_UID), 0);
	}
	json = start_json_full(fx->runs_dir, NODE, OWNER_UID, OWNER_UID, NULL);
	start_run_on(fx->dealer, RUN_ID, json, fx->run_dir);
	free(json);
	assert_int_equal(lstat(fx->run_dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, OWNER_UID);
	assert_int_equal(st.st_gid, OWNER_UID);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_true(dir_is_empty(target));
	send_good_batch(fx, 0);
	finalize_on(fx->dealer, RUN_ID, FINALIZE_JSON);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		assert_int_equal(lstat(path_in(fx->run_dir, files[i]), &st), 0);
		assert_int_equal(st.st_uid, OWNER_UID);
		assert_int_equal(st.st_mode & 07777, 0600);
	}
	assert_true(dir_is_empty(target));

	/* a runs directory not made yet, under the owner's home: made as it */
	snprintf(fresh, sizeof(fresh), "%s/new/runs", home);
	json = start_json_full(fresh, NODE, OWNER_UID, OWNER_UID, NULL);
	start_run_on(fx->dealer, "run-fresh", json, fresh_run);
	free(json);
	assert_int_equal(lstat(fresh, &st), 0);
	assert_int_equal(st.st_uid, OWNER_UID);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(lstat(fresh_run, &st), 0);
	assert_int_equal(st.st_uid, OWNER_UID);

	/* the owner's own "symbolizer" is never run by the service */
	{
		char tool[PATH_MAX + 16], marker[PATH_MAX + 16], dir[PATH_MAX];
		json_t *spec, *m, *x;
		FILE *f;
		size_t k;
		int said = 0;

		snprintf(tool, sizeof(tool), "%s/sym.sh", home);
		snprintf(marker, sizeof(marker), "%s/ran", home);
		f = fopen(tool, "w");
		assert_non_null(f);
		fprintf(f, "#!/bin/sh\ntouch '%s'\nexec cat >/dev/null\n", marker);
		fclose(f);
		assert_int_equal(chmod(tool, 0755), 0);
		assert_int_equal(chown(tool, OWNER_UID, OWNER_UID), 0);
		json = start_json_full(fx->runs_dir, NODE, OWNER_UID, OWNER_UID, NULL);
		spec = json_loads(json, 0, NULL);
		free(json);
		json_object_set_new(spec, "symbolizer", json_string(tool));
		json = json_dumps(spec, JSON_COMPACT);
		json_decref(spec);
		start_run_on(fx->dealer, "run-tool", json, dir);
		free(json);
		send_good_batch_on(fx, fx->dealer, "run-tool", NODE, 1, 0);
		finalize_on(fx->dealer, "run-tool", FINALIZE_JSON);
		assert_int_equal(access(marker, F_OK), -1);
		m = load_manifest_of(dir);
		json_array_foreach(json_object_get(m, "degradations"), k, x)
			said |= !strcmp(json_string_value(json_object_get(x, "name")),
					"symbolizer-untrusted");
		assert_true(said);
		json_decref(m);
	}

	/* a runs directory of root's: the owner cannot make a Run in it */
	snprintf(rootdir, sizeof(rootdir), "%s/roots", fx->base);
	assert_int_equal(mkdir(rootdir, 0755), 0);
	json = start_json_full(rootdir, NODE, OWNER_UID, OWNER_UID, NULL);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__START, "run-root", json);
	free(json);
	expect_error(fx, rootdir, NULL);
	assert_true(dir_is_empty(rootdir));
}

/* a Run two nodes sampled: a module whose file is gone here is named with
 * the node it was sampled on */
static void test_missing_module_names_node(void **state)
{
	struct fixture *fx = *state;
	struct test_batch t;
	wire_envelope env;
	json_t *m, *x;
	size_t i;
	int found = 0;

	start_run(fx);
	send_good_batch(fx, 0);
	tb_init(&t, fx, RUN_ID, 0);
	t.b.node = t.locus.node = "nb";
	t.module.identity = "nobuildid:/nonexistent/libgone.so:1:1";
	t.module.path = "/nonexistent/libgone.so";
	t.module.display_name = "libgone.so";
	t.module.has_build_id = 0;
	tb_envelope(&t, &env);
	send_envelope(fx, &env);
	expect_ack(fx, RUN_ID, "nb", 0);
	finalize_on(fx->dealer, RUN_ID, "{\"exit_code\": 0, \"end\": \"E\", \"nodes_wait_ms\": 0}");
	m = load_manifest(fx);
	json_array_foreach(
	    json_object_get(m, "degradations"), i,
	    x) if (!strcmp(json_string_value(json_object_get(x, "name")), "module-missing"))
	{
		found = 1;
		assert_non_null(strstr(json_string_value(json_object_get(x, "message")),
				       "/nonexistent/libgone.so (sampled on nb)"));
	}
	assert_true(found);
	json_decref(m);
}

/* FINALIZE {"discard": true}: a Run whose application never ran is
 * removed, and its state file with it */
static void test_discard(void **state)
{
	struct fixture *fx = *state;
	char file[PATH_MAX + 64], *ack = NULL;

	start_run(fx);
	snprintf(file, sizeof(file), "%s/open/" RUN_ID ".json", fx->state_dir);
	assert_int_equal(access(file, F_OK), 0);
	send_control(fx, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, RUN_ID,
		     "{\"discard\": true, \"exit_code\": null}");
	expect_ack_on(fx->dealer, RUN_ID, "", 0, &ack);
	assert_non_null(strstr(ack, "\"discarded\":true"));
	free(ack);
	assert_int_equal(access(fx->run_dir, F_OK), -1);
	assert_int_equal(access(file, F_OK), -1);
	/* the Run is no more: its Batches are refused */
	{
		struct test_batch t;

		tb_init(&t, fx, RUN_ID, 0);
		send_batch(fx, &t);
		expect_error(fx, "unknown run", NULL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_runs_interleaved, setup_service, teardown),
	    cmocka_unit_test_setup_teardown(test_incarnation_dedup, setup_service, teardown),
	    cmocka_unit_test_setup_teardown(test_degradations_of_two_nodes, setup_service,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_finalize_beside_batches, setup_service, teardown),
	    cmocka_unit_test_setup_teardown(test_open_close_node_lost, setup_service, teardown),
	    cmocka_unit_test_setup_teardown(test_oversized_refused, setup_service, teardown),
	    cmocka_unit_test_setup_teardown(test_resume, setup_resume, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_writes, setup_service, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_module_names_node, setup_service,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_discard, setup_resume, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
