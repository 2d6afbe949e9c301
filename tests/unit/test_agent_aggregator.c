/* The Agent against a real Aggregator (userspace/aggregator, served in a
 * thread on inproc:// as the node service embeds it): START creates the
 * Run (Ack.json names its directory), Batches of two Targets are stored
 * in their own Runs, the end sends the last Batch and FINALIZE, done()
 * at its Ack; the Run's pivot holds this Agent's incarnation. With BPF
 * (root) the Targets follow a process each and their samples land in
 * their own Run. */
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/agent_fixture.h"
#include "userspace/aggregator/aggregator.h"

#define RUN_A "0123456789abcdef0123456789abcdef"
#define RUN_B "fedcba9876543210fedcba9876543210"

struct agg_fixture {
	struct fixture *fx;
	struct aggregator *agg;
	pthread_t thread;
	char base[PATH_MAX], runs_dir[PATH_MAX + 8];
};

static void *serve(void *arg)
{
	aggregator_serve(arg, 0);
	return NULL;
}

static int agg_setup(void **state)
{
	struct agg_fixture *af = calloc(1, sizeof(*af));
	int linger = 0;
	void *router;

	assert_non_null(af);
	af->fx = fx_new(0);
	assert_int_equal(make_tmpdir(af->base, sizeof(af->base), "agent-agg"), 0);
	snprintf(af->runs_dir, sizeof(af->runs_dir), "%s/runs", af->base);
	assert_int_equal(mkdir(af->runs_dir, 0700), 0);
	router = zmq_socket(af->fx->zctx, ZMQ_ROUTER);
	zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(zmq_bind(router, af->fx->endpoint), 0);
	af->agg = aggregator__new(router);
	assert_non_null(af->agg);
	assert_int_equal(pthread_create(&af->thread, NULL, serve, af->agg), 0);
	*state = af;
	return 0;
}

static int agg_teardown(void **state)
{
	struct agg_fixture *af = *state;

	agent__free(af->fx->agent);
	af->fx->agent = NULL;
	aggregator_stop(af->agg);
	pthread_join(af->thread, NULL);
	aggregator__free(af->agg);
	fx_free(af->fx);
	remove_tree(af->base);
	free(af);
	return 0;
}

struct done_result {
	int called, err;
	char json[1024];
};

static void on_done(void *ctx, int err, const char *json)
{
	struct done_result *d = ctx;

	d->called++;
	d->err = err;
	snprintf(d->json, sizeof(d->json), "%s", json ? json : "");
}

static char *start_json(struct agg_fixture *af, const char *name)
{
	json_t *j = json_pack("{s:{s:s, s:s, s:[s], s:s, s:n, s:{}}, s:s, s:{s:i, s:i}, s:s, "
			      "s:i, s:b}",
			      "run", "name", name, "created", "2026-01-01T00:00:00", "command", "app",
			      "node", FX_NODE, "job_id", "effective_configuration", "runs_dir",
			      af->runs_dir, "owner", "uid", (int)geteuid(), "gid", (int)getegid(),
			      "symbolizer", "", "frequency", 99, "mpi_events", 0);
	char *s = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	return s;
}

/* pumps until d->called (timeout_ms) */
static void wait_done(struct agent *a, struct done_result *d, int timeout_ms)
{
	long long end = fx_now_ms() + timeout_ms;

	while (!d->called && fx_now_ms() < end)
		fx_pump(a, 20);
	assert_int_equal(d->called, 1);
}

static void run_dir_of(const char *ack_json, char *dir, size_t n)
{
	json_t *j = json_loads(ack_json, 0, NULL);

	assert_non_null(j);
	snprintf(dir, n, "%s", json_string_value(json_object_get(j, "run_dir")));
	json_decref(j);
	assert_true(dir[0] == '/');
}

static long long sql_value(const char *run_dir, const char *query)
{
	char path[PATH_MAX + 32];
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/pivot.sqlite", run_dir);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, query, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	} else {
		print_error("%s: %s\n", query, sqlite3_errmsg(db));
	}
	sqlite3_close(db);
	return v;
}

static void start_run(struct agg_fixture *af, const char *run_id, const char *name, char *dir,
		      size_t n)
{
	char *json = start_json(af, name);
	struct agent_target_opts o = {.run_id = run_id, .start_json = json};
	struct done_result d = {0};

	assert_int_equal(agent_target_start(af->fx->agent, &o, on_done, &d), 0);
	wait_done(af->fx->agent, &d, 5000);
	free(json);
	if (d.err)
		fail_msg("START refused: %s", d.json);
	run_dir_of(d.json, dir, n);
}

static void end_run(struct agg_fixture *af, const char *run_id)
{
	struct done_result d = {0};

	assert_int_equal(agent_target_end(af->fx->agent, run_id,
					  "{\"exit_code\":0,\"end\":\"2026-01-01T00:00:01\","
					  "\"symbolizer_budget_ms\":1000,\"interrupted\":false,"
					  "\"nodes_wait_ms\":0}",
					  on_done, &d),
			 0);
	wait_done(af->fx->agent, &d, 20000);
	if (d.err)
		fail_msg("FINALIZE failed: %s", d.json);
	assert_false(agent_target_exists(af->fx->agent, run_id));
}

/* Two Runs through one Agent and one Aggregator: each created, fed and
 * finalized; each pivot holds its own Batches, of this incarnation. */
static void test_two_runs_real_aggregator(void **state)
{
	struct agg_fixture *af = *state;
	char dir_a[PATH_MAX], dir_b[PATH_MAX], q[256];
	long long n;

	fx_agent(af->fx, 0);
	start_run(af, RUN_A, "a", dir_a, sizeof(dir_a));
	start_run(af, RUN_B, "b", dir_b, sizeof(dir_b));
	assert_string_not_equal(dir_a, dir_b);
	fx_pump(af->fx->agent, 500);
	end_run(af, RUN_A);
	end_run(af, RUN_B);
	snprintf(q, sizeof(q), "select count(*) from batches where incarnation = %lld",
		 (long long)agent_incarnation(af->fx->agent));
	n = sql_value(dir_a, q);
	print_message("run a: %lld Batches of this incarnation\n", n);
	assert_true(n >= 2);
	assert_true(sql_value(dir_b, q) >= 2);
	assert_int_equal(access(path_in(dir_a, "manifest.json"), R_OK), 0);
}


/* a child that waits for the gate, then burns CPU for ms and exits 0 */
static pid_t gated_spinner(int *gate_w, int ms)
{
	int gate[2];
	pid_t pid;
	char go;

	assert_int_equal(pipe(gate), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long long end;
		volatile unsigned long x = 0;

		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(2);
		end = fx_now_ms() + ms;
		while (fx_now_ms() < end)
			x++;
		_exit(0);
	}
	close(gate[0]);
	*gate_w = gate[1];
	return pid;
}

/* With BPF: each Run holds the samples of its own process only. */
static void test_two_runs_own_samples(void **state)
{
	struct agg_fixture *af = *state;
	char dir_a[PATH_MAX], dir_b[PATH_MAX], q[256];
	pid_t pa, pb;
	int ga, gb;
	long long own_a, own_b;

	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	fx_agent(af->fx, 0);
	SKIP_UNLESS(agent_sampling(af->fx->agent), "BPF sampling unavailable here");
	start_run(af, RUN_A, "a", dir_a, sizeof(dir_a));
	start_run(af, RUN_B, "b", dir_b, sizeof(dir_b));
	pa = gated_spinner(&ga, 500);
	pb = gated_spinner(&gb, 500);
	assert_int_equal(agent_target_follow(af->fx->agent, RUN_A, pa), 0);
	assert_int_equal(agent_target_follow(af->fx->agent, RUN_B, pb), 0);
	assert_int_equal(write(ga, "g", 1), 1);
	assert_int_equal(write(gb, "g", 1), 1);
	close(ga);
	close(gb);
	while (agent_target_live_processes(af->fx->agent, RUN_A) > 0 ||
	       agent_target_live_processes(af->fx->agent, RUN_B) > 0)
		fx_pump(af->fx->agent, 20);
	assert_int_equal(waitpid(pa, NULL, 0), pa);
	assert_int_equal(waitpid(pb, NULL, 0), pb);
	end_run(af, RUN_A);
	end_run(af, RUN_B);
	snprintf(q, sizeof(q),
		 "select coalesce(sum(sample_count), 0) from samples join loci on loci.id = "
		 "samples.locus where tgid = %d", (int)pa);
	own_a = sql_value(dir_a, q);
	assert_int_equal(sql_value(dir_b, q), 0);
	snprintf(q, sizeof(q),
		 "select coalesce(sum(sample_count), 0) from samples join loci on loci.id = "
		 "samples.locus where tgid = %d", (int)pb);
	own_b = sql_value(dir_b, q);
	assert_int_equal(sql_value(dir_a, q), 0);
	print_message("run a: %lld samples, run b: %lld samples\n", own_a, own_b);
	assert_true(own_a > 0);
	assert_true(own_b > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_two_runs_real_aggregator, agg_setup, agg_teardown),
	    cmocka_unit_test_setup_teardown(test_two_runs_own_samples, agg_setup, agg_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
