/* Tests of the Aggregator's job Runs (issue 8) against real ZeroMQ,
 * SQLite, libmunge and libslurm: a prolog job Run STARTed by two nodes
 * (the second joins), the first Epilog acked at once naming the node still
 * pending, the last acked once the Run is finalized; a node whose Epilog
 * never comes is `nodes-missing` at the deadline; STARTs refused (a node
 * not of the job, another owner); STATUS's "job". ATTACH: malformed,
 * munged unreachable (a socket nobody serves), a bad credential and a
 * credential for another job (real munged: NUNATAK_TEST_MUNGE_SOCKET) are
 * refused and nothing is created; an ATTACH to a running job of a real
 * Slurm (NUNATAK_TEST_SLURM_CONF too) is acked and its Run gets CLOSE
 * {"why":"job-ended"} when the job ends. Without munged or Slurm those
 * cases are SKIPPED, saying why. */
#include "tests/unit/test_aggregator_fixture.h"

#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "userspace/aggregator/manifest.h"
#include "userspace/log/clock.h"
#include "userspace/slurm/munge_cred.h"

extern char **environ;

#define JOB_RUN "job-test-77"
#define JOB_ID 77
#define EPILOG_JSON(wait_ms)                                                                       \
	"{\"exit_code\": 0, \"end\": \"2026-01-01T00:00:09Z\", \"symbolizer_budget_ms\": 5000, "   \
	"\"nodes_wait_ms\": " #wait_ms ", \"job_epilog\": true}"

/* (a grace of 2 s: a prolog job Run's job is looked at every second) */
static int setup_service(void **state)
{
	fixture_munge_socket = fixture_slurm_conf = NULL;
	fixture_job_grace_ms = 2000;
	return fixture_setup(state, 0, 0);
}

/* an Aggregator whose munged is at a socket nobody serves */
static int setup_no_munged(void **state)
{
	fixture_job_grace_ms = 0;
	fixture_munge_socket = "/nonexistent/nunatak-test/munge.socket.2";
	fixture_slurm_conf = NULL;
	return fixture_setup(state, 0, 0);
}

/* an Aggregator with the test's munged and Slurm (when given), a job
 * Run left by its nodes finalized 2 s after its job ended */
static int setup_real(void **state)
{
	fixture_munge_socket = getenv("NUNATAK_TEST_MUNGE_SOCKET");
	fixture_slurm_conf = getenv("NUNATAK_TEST_SLURM_CONF");
	fixture_job_grace_ms = 2000;
	return fixture_setup(state, 0, 0);
}

/* the next reply on sock is an Error of code whose message has want */
static void expect_error_code_on(void *sock, int code, const char *want)
{
	wire_envelope *r = recv_on_within(sock, REPLY_TIMEOUT_MS);

	if (r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ACK)
		fail_msg("Ack (%s) instead of Error %d", r->ack->json ? r->ack->json : "", code);
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ERROR);
	if (!r->error->has_code || r->error->code != code)
		fail_msg("Error code %d instead of %d: %s", (int)r->error->code, code,
			 r->error->message);
	if (want && !strstr(r->error->message, want))
		fail_msg("error '%s' does not contain '%s'", r->error->message, want);
	wire_envelope_free(r);
}

/* the START of the prolog job Run by node, owned by uid */
static char *prolog_start_json(const char *runs_dir, const char *node, unsigned uid,
			       const char *nodes)
{
	char *text = start_json_full(runs_dir, node, uid, (unsigned)getegid(), NULL);
	json_t *spec = json_loads(text, 0, NULL);

	free(text);
	assert_non_null(spec);
	json_object_set_new(
	    spec, "job",
	    json_pack("{s:i, s:s, s:s}", "id", JOB_ID, "nodes", nodes, "mode", "prolog"));
	json_object_set_new(spec, "runs_dir_create", json_true());
	text = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	return text;
}

/* START by node on sock, acked: the Run's directory into dir */
static void prolog_start(struct fixture *fx, void *sock, const char *node, char *dir)
{
	char *json = prolog_start_json(fx->runs_dir, node, geteuid(), "na,nb"), *ack = NULL;

	send_control_node(sock, NUNATAK__WIRE__CONTROL__ACTION__START, JOB_RUN, json, node);
	free(json);
	expect_ack_on(sock, JOB_RUN, "", 0, &ack);
	ack_run_dir(ack, JOB_RUN, dir);
	free(ack);
}

/* a node's last Batch of the job Run, acked */
static void last_batch(struct fixture *fx, void *sock, const char *node)
{
	struct test_batch t;
	wire_envelope env;

	tb_init(&t, fx, JOB_RUN, 0);
	t.b.node = t.locus.node = (char *)node;
	t.b.has_incarnation = 1;
	t.b.incarnation = 7;
	t.b.has_last = t.b.last = 1;
	tb_envelope(&t, &env);
	send_envelope_on(sock, &env);
	expect_ack_on(sock, JOB_RUN, node, 0, NULL);
}

/* the Epilog of the last node, acked once the Run is finalized */
static void last_epilog(void *sock, const char *node)
{
	wire_envelope *r;

	send_control_node(sock, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, JOB_RUN,
			  EPILOG_JSON(20000), node);
	r = recv_on_within(sock, FINALIZE_TIMEOUT_MS);
	if (r->body_case != NUNATAK__WIRE__ENVELOPE__BODY_ACK)
		fail_msg("the last Epilog was not acked: %s",
			 r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR ? r->error->message
									     : "?");
	assert_null(strstr(r->ack->json, "pending_nodes"));
	wire_envelope_free(r);
}

/* the Run of JOB_RUN in STATUS, NULL: none (a new reference) */
static json_t *status_run(void *sock)
{
	json_t *st = status_on(sock), *r, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(st, "runs"), i,
			   r) if (!strcmp(json_string_value(json_object_get(r, "run_id")), JOB_RUN))
	    found = json_incref(r);
	json_decref(st);
	return found;
}

/* the degradation name of the manifest of dir, NULL: none (borrowed from m) */
static json_t *degradation_of(json_t *m, const char *name)
{
	json_t *d;
	size_t i;

	json_array_foreach(
	    json_object_get(m, "degradations"), i,
	    d) if (!strcmp(json_string_value(json_object_get(d, "name")), name)) return d;
	return NULL;
}

static void test_prolog_two_nodes(void **state)
{
	struct fixture *fx = *state;
	void *nb = fixture_dealer(fx);
	char dir_a[PATH_MAX], dir_b[PATH_MAX], *ack = NULL;
	json_t *run, *job, *j, *m;

	hello_on(fx->dealer, "na", 1, NULL);
	hello_on(nb, "nb", 2, NULL);
	prolog_start(fx, fx->dealer, "na", dir_a);
	prolog_start(fx, nb, "nb", dir_b); /* joins: the same Run */
	assert_string_equal(dir_a, dir_b);
	assert_int_equal(strncmp(dir_a, fx->runs_dir, strlen(fx->runs_dir)), 0);

	run = status_run(fx->dealer);
	assert_non_null(run);
	job = json_object_get(run, "job");
	assert_int_equal(json_integer_value(json_object_get(job, "id")), JOB_ID);
	assert_string_equal(json_string_value(json_object_get(job, "mode")), "prolog");
	assert_int_equal(json_integer_value(json_object_get(job, "uid")), geteuid());
	assert_int_equal(json_array_size(json_object_get(job, "nodes")), 2);
	assert_non_null(json_string_value(json_object_get(job, "since")));
	json_decref(run);

	/* the owner's name, from Slurm or (no Slurm here) the password database,
	 * looked up in the worker within the watch's period */
	{
		struct passwd *pw = getpwuid(geteuid());
		long long t0 = clock_monotonic_ms();
		const char *user = "";

		assert_non_null(pw);
		while (strcmp(user, pw->pw_name) && clock_monotonic_ms() - t0 < 5000) {
			usleep(100 * 1000);
			run = status_run(fx->dealer);
			user =
			    json_string_value(json_object_get(json_object_get(run, "job"), "user"));
			user = user && !strcmp(user, pw->pw_name) ? pw->pw_name : "";
			json_decref(run);
		}
		assert_string_equal(user, pw->pw_name);
	}
	/* both nodes' Batches are taken */
	last_batch(fx, fx->dealer, "na");
	last_batch(fx, nb, "nb");
	assert_int_equal(dir_sql_int(dir_a, "SELECT count(*) FROM batches"), 2);

	/* the first Epilog: acked at once, nb pending */
	send_control_node(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, JOB_RUN,
			  EPILOG_JSON(20000), "na");
	expect_ack_on(fx->dealer, JOB_RUN, "", 0, &ack);
	j = json_loads(ack, 0, NULL);
	free(ack);
	assert_string_equal(json_string_value(json_object_get(j, "run_dir")), dir_a);
	assert_int_equal(json_array_size(json_object_get(j, "pending_nodes")), 1);
	assert_string_equal(
	    json_string_value(json_array_get(json_object_get(j, "pending_nodes"), 0)), "nb");
	json_decref(j);
	m = load_manifest_of(dir_a);
	assert_int_equal(manifest_finalized(m), 0);
	json_decref(m);

	/* the last: acked once finalized, complete, no nodes-missing */
	last_epilog(nb, "nb");
	m = load_manifest_of(dir_a);
	assert_int_equal(manifest_finalized(m), 1);
	assert_null(degradation_of(m, "nodes-missing"));
	assert_null(degradation_of(m, "node-lost"));
	/* the frequency START said the Agents sample at */
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(m, "run"), "frequency")), 997);
	json_decref(m);
	run = status_run(fx->dealer);
	assert_null(run);
	zmq_close(nb);
}

static void test_prolog_deadline_nodes_missing(void **state)
{
	struct fixture *fx = *state;
	char dir[PATH_MAX], *ack = NULL;
	long long t0;
	json_t *m, *d, *run;

	hello_on(fx->dealer, "na", 1, NULL);
	prolog_start(fx, fx->dealer, "na", dir);
	last_batch(fx, fx->dealer, "na");
	send_control_node(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, JOB_RUN,
			  EPILOG_JSON(300), "na");
	expect_ack_on(fx->dealer, JOB_RUN, "", 0, &ack);
	assert_non_null(strstr(ack, "\"nb\""));
	free(ack);
	/* finalized at the deadline, with nobody to answer */
	t0 = clock_monotonic_ms();
	while ((run = status_run(fx->dealer))) {
		json_decref(run);
		if (clock_monotonic_ms() - t0 > FINALIZE_TIMEOUT_MS)
			fail_msg("the Run was not finalized at its deadline");
		usleep(50 * 1000);
	}
	assert_true(clock_monotonic_ms() - t0 >= 200);
	assert_no_more_reply(fx);
	m = load_manifest_of(dir);
	assert_int_equal(manifest_finalized(m), 1);
	d = degradation_of(m, "nodes-missing");
	assert_non_null(d);
	assert_non_null(strstr(json_string_value(json_object_get(d, "message")), "nb"));
	assert_null(strstr(json_string_value(json_object_get(d, "message")), "na,"));
	json_decref(m);
}

static void test_prolog_start_refused(void **state)
{
	struct fixture *fx = *state;
	void *nc = fixture_dealer(fx);
	char dir[PATH_MAX], *json;

	/* a first START from a node that is not the job's: no Run */
	json = prolog_start_json(fx->runs_dir, "nc", geteuid(), "na,nb");
	send_control_node(nc, NUNATAK__WIRE__CONTROL__ACTION__START, JOB_RUN, json, "nc");
	free(json);
	expect_error_code_on(nc, EPERM, "not one of the job's");
	assert_true(dir_is_empty(fx->runs_dir));
	/* a malformed hostlist */
	json = prolog_start_json(fx->runs_dir, "na", geteuid(), "");
	send_control_node(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__START, JOB_RUN, json, "na");
	free(json);
	expect_error_code_on(fx->dealer, EINVAL, "hostlist");
	assert_true(dir_is_empty(fx->runs_dir));

	prolog_start(fx, fx->dealer, "na", dir);
	/* joining from a node not of the job, or for another owner */
	json = prolog_start_json(fx->runs_dir, "nc", geteuid(), "na,nb");
	send_control_node(nc, NUNATAK__WIRE__CONTROL__ACTION__START, JOB_RUN, json, "nc");
	free(json);
	expect_error_code_on(nc, EPERM, "not a node of job 77");
	json = prolog_start_json(fx->runs_dir, "nb", geteuid() + 1, "na,nb");
	send_control_node(nc, NUNATAK__WIRE__CONTROL__ACTION__START, JOB_RUN, json, "nb");
	free(json);
	expect_error_code_on(nc, EEXIST, "another job or owner");
	/* an Epilog from a node not of the job */
	send_control_node(nc, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, JOB_RUN, EPILOG_JSON(0),
			  "nc");
	expect_error_code_on(nc, EPERM, "not a node of job 77");
	zmq_close(nc);
}

static int setup_resume(void **state)
{
	fixture_job_grace_ms = 0;
	fixture_munge_socket = fixture_slurm_conf = NULL;
	return fixture_setup(state, 0, 1);
}

/* a prolog job Run resumed by a new Aggregator keeps its job and the
 * Epilogs that came: the other node joins it and ends it */
static void test_prolog_resumed(void **state)
{
	struct fixture *fx = *state;
	char dir[PATH_MAX], dir_b[PATH_MAX], *ack = NULL;
	json_t *run, *m;
	void *nb;

	prolog_start(fx, fx->dealer, "na", dir);
	last_batch(fx, fx->dealer, "na");
	send_control_node(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, JOB_RUN,
			  EPILOG_JSON(20000), "na");
	expect_ack_on(fx->dealer, JOB_RUN, "", 0, &ack);
	assert_non_null(strstr(ack, "\"nb\""));
	free(ack);
	zmq_close(fx->dealer);
	fixture_stop_aggregator(fx);

	snprintf(fx->endpoint + strlen(fx->endpoint), 8, "-again");
	fixture_start_aggregator(fx);
	fx->dealer = fixture_dealer(fx);
	run = status_run(fx->dealer);
	assert_non_null(run);
	assert_string_equal(json_string_value(json_object_get(json_object_get(run, "job"), "mode")),
			    "prolog");
	json_decref(run);
	nb = fixture_dealer(fx);
	prolog_start(fx, nb, "nb", dir_b);
	assert_string_equal(dir, dir_b);
	last_batch(fx, nb, "nb");
	last_epilog(nb, "nb");
	m = load_manifest_of(dir);
	assert_int_equal(manifest_finalized(m), 1);
	assert_null(degradation_of(m, "nodes-missing"));
	json_decref(m);
	zmq_close(nb);
}

/* --- ATTACH --------------------------------------------------------------- */

static char *attach_json(uint32_t job_id, const char *credential)
{
	json_t *spec =
	    json_pack("{s:I, s:s, s:n, s:n, s:{s:s, s:s, s:[s,s,s], s:s, s:I, s:{}}, "
		      "s:s, s:b}",
		      "job_id", (json_int_t)job_id, "credential", credential, "name", "frequency",
		      "run", "name", "job", "created", "2026-01-01T00:00:00Z", "command", "nunatak",
		      "attach", "J", "node", NODE, "job_id", (json_int_t)job_id,
		      "effective_configuration", "symbolizer", symbolizer_tool(), "mpi_events", 0);
	char *text;

	assert_non_null(spec);
	text = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	return text;
}

/* ATTACH as the node service sends it, with "peer_uid" when peer >= 0 */
static void attach_as(void *sock, const char *run_id, uint32_t job_id, const char *credential,
		      long long peer)
{
	char *json = attach_json(job_id, credential);

	if (peer >= 0) {
		json_t *spec = json_loads(json, 0, NULL);

		free(json);
		json_object_set_new(spec, "peer_uid", json_integer(peer));
		json = json_dumps(spec, JSON_COMPACT);
		json_decref(spec);
	}
	send_control_node(sock, NUNATAK__WIRE__CONTROL__ACTION__ATTACH, run_id, json, NODE);
	free(json);
}

static void attach(void *sock, const char *run_id, uint32_t job_id, const char *credential)
{
	char *json = attach_json(job_id, credential);

	send_control_node(sock, NUNATAK__WIRE__CONTROL__ACTION__ATTACH, run_id, json, NODE);
	free(json);
}

/* nothing was made: no Run in STATUS, no Run directory */
static void assert_no_run(struct fixture *fx)
{
	json_t *st = status_on(fx->dealer);

	assert_int_equal(json_array_size(json_object_get(st, "runs")), 0);
	json_decref(st);
	assert_true(dir_is_empty(fx->runs_dir));
}

static void test_attach_malformed_or_munged_unreachable(void **state)
{
	struct fixture *fx = *state;

	hello_on(fx->dealer, NODE, 1, NULL);
	send_control_node(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__ATTACH, "att-1",
			  "{\"job_id\": 0, \"credential\": \"x\"}", NODE);
	expect_error_code_on(fx->dealer, EINVAL, "malformed ATTACH");
	attach(fx->dealer, "att-1", 12, "MUNGE:AwQDAAA");
	expect_error_code_on(fx->dealer, EHOSTUNREACH, "munged");
	assert_no_run(fx);
}

static const char *munge_socket_or_skip(void)
{
	const char *sock = getenv("NUNATAK_TEST_MUNGE_SOCKET");

	if (!sock || !sock[0]) {
		print_message(
		    "SKIPPED: no munged for the tests (set NUNATAK_TEST_MUNGE_SOCKET, see "
		    "tests/lib/munged.sh; integration/slurm_units runs these cases against "
		    "a real cluster)\n");
		return NULL;
	}
	return sock;
}

static void test_attach_bad_credential(void **state)
{
	struct fixture *fx = *state;
	const char *sock = munge_socket_or_skip();
	char err[512], *cred = NULL;

	if (!sock) {
		skip();
		return;
	}
	hello_on(fx->dealer, NODE, 1, NULL);
	attach(fx->dealer, "att-1", 12, "MUNGE:AwQDAAAbogus:");
	expect_error_code_on(fx->dealer, EACCES, "credential");
	/* a good credential, for another job */
	if (munge_cred_make(sock, "nunatak attach job=13", 60, &cred, err, sizeof(err)))
		fail_msg("munge_cred_make: %s", err);
	attach(fx->dealer, "att-2", 12, cred);
	free(cred);
	expect_error_code_on(fx->dealer, EACCES, "not one for this job");
	/* replayed: the same credential twice, for the right job */
	if (munge_cred_make(sock, "nunatak attach job=12", 60, &cred, err, sizeof(err)))
		fail_msg("munge_cred_make: %s", err);
	attach(fx->dealer, "att-3", 12, cred);
	wire_envelope_free(recv_on_within(fx->dealer, REPLY_TIMEOUT_MS)); /* whatever Slurm says */
	attach(fx->dealer, "att-4", 12, cred);
	free(cred);
	expect_error_code_on(fx->dealer, EACCES, "credential");
	assert_no_run(fx);
}

/* argv run (PATH searched, env given), its stdout (up to len - 1 bytes)
 * into out; its exit status, -1 when it could not run */
static int run_capture(char *const argv[], char *const envp[], char *out, size_t len)
{
	posix_spawn_file_actions_t fa;
	int pipefd[2], status = -1;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	out[0] = '\0';
	assert_int_equal(pipe(pipefd), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp))
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	while (pid > 0 && got + 1 < len && (n = read(pipefd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(pipefd[0]);
	if (pid > 0 && waitpid(pid, &status, 0) == pid)
		return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return -1;
}

/* sbatch (SLURM_CONF=conf) of `sleep secs` in dir, as user (NULL: as
 * this process): its job id, 0 failed */
static uint32_t sbatch_sleep(const char *conf, const char *dir, int secs, const char *user)
{
	char wrap[64], chdir_opt[PATH_MAX + 16], out[256], env_conf[PATH_MAX + 16];
	char *argv[] = {"runuser", "-u", (char *)user, "--",	 "sbatch", "--parsable",
			chdir_opt, "-o", "/dev/null",  "--wrap", wrap,	   NULL};
	char *envp[] = {env_conf, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};

	snprintf(wrap, sizeof(wrap), "sleep %d", secs);
	snprintf(chdir_opt, sizeof(chdir_opt), "--chdir=%s", dir);
	snprintf(env_conf, sizeof(env_conf), "SLURM_CONF=%s", conf);
	if (run_capture(user ? argv : argv + 4, envp, out, sizeof(out)))
		return 0;
	return (uint32_t)strtoul(out, NULL, 10);
}

/* a credential for payload made by user's munge (the munge command as
 * that user), or NULL */
static char *user_credential(const char *sock, const char *user, const char *payload)
{
	char out[4096];
	char *argv[] = {"runuser",    "-u", (char *)user,    "--", "munge", "-S",
			(char *)sock, "-s", (char *)payload, NULL};
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	size_t len;

	if (run_capture(argv, envp, out, sizeof(out)))
		return NULL;
	len = strcspn(out, "\n");
	out[len] = '\0';
	return len ? strdup(out) : NULL;
}

/* ATTACH to job with a credential of user (NULL: ours), asked again while
 * the job is pending: the final reply (wire_envelope_free) */
static wire_envelope *attach_when_running(struct fixture *fx, const char *sock, uint32_t job,
					  const char *user)
{
	char payload[64], err[512], run_id[32], *cred = NULL;
	wire_envelope *r = NULL;
	int i;

	snprintf(payload, sizeof(payload), "nunatak attach job=%u", job);
	for (i = 0; i < 40; i++) {
		if (user)
			cred = user_credential(sock, user, payload);
		else if (munge_cred_make(sock, payload, 60, &cred, err, sizeof(err)))
			fail_msg("munge_cred_make: %s", err);
		if (!cred)
			fail_msg("no credential of user %s", user);
		snprintf(run_id, sizeof(run_id), "att-%u-%d", job, i);
		attach(fx->dealer, run_id, job, cred);
		free(cred);
		r = recv_on_within(fx->dealer, REPLY_TIMEOUT_MS);
		if (r->body_case != NUNATAK__WIRE__ENVELOPE__BODY_ERROR || r->error->code != EAGAIN)
			return r;
		wire_envelope_free(r); /* pending */
		usleep(250 * 1000);
	}
	fail_msg("job %u did not run within 10 s", job);
	return NULL;
}

static const char *slurm_conf_or_skip(const char *munge_sock)
{
	const char *conf = getenv("NUNATAK_TEST_SLURM_CONF");

	if (munge_sock && (!conf || !conf[0]))
		print_message("SKIPPED: no Slurm for the tests (set NUNATAK_TEST_SLURM_CONF, see "
			      "tests/lib/slurm.sh; integration/slurm_units runs these cases)\n");
	return munge_sock && conf && conf[0] ? conf : NULL;
}

static void test_attach_job_watch_close(void **state)
{
	struct fixture *fx = *state;
	const char *sock = munge_socket_or_skip(), *conf = slurm_conf_or_skip(sock);
	wire_envelope *r;
	char *close_json;
	long long t0;
	uint32_t job;
	json_t *j;

	if (!conf) {
		skip();
		return;
	}
	job = sbatch_sleep(conf, fx->base, 4, NULL);
	if (!job)
		fail_msg("sbatch failed (SLURM_CONF=%s)", conf);
	hello_on(fx->dealer, NODE, 1, NULL);
	r = attach_when_running(fx, sock, job, NULL);
	if (r->body_case != NUNATAK__WIRE__ENVELOPE__BODY_ACK)
		fail_msg("ATTACH refused: %s", r->error->message);
	j = json_loads(r->ack->json, 0, NULL);
	wire_envelope_free(r);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "job"), "id")), job);
	assert_non_null(strstr(json_string_value(json_object_get(j, "run_dir")), "/.nunatak/"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "owner"), "uid")),
			 getuid());
	/* the job ends: CLOSE job-ended to the origin within the watch */
	t0 = clock_monotonic_ms();
	close_json = expect_control_on(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__CLOSE,
				       json_string_value(json_object_get(j, "run_id")));
	assert_non_null(strstr(close_json, "job-ended"));
	assert_true(clock_monotonic_ms() - t0 < 10000);
	free(close_json);
	finalize_on(fx->dealer, json_string_value(json_object_get(j, "run_id")), FINALIZE_JSON);
	json_decref(j);
}

/* the job of nunatak-u1: nunatak-u2 is refused (nothing made), u1 gets a
 * Run of their own in <work_dir>/.nunatak, 0700 */
static void test_attach_other_user(void **state)
{
	struct fixture *fx = *state;
	const char *sock = munge_socket_or_skip(), *conf = slurm_conf_or_skip(sock);
	struct passwd *pw1 = getpwnam("nunatak-u1"), u1 = pw1 ? *pw1 : (struct passwd){0};
	struct passwd *pw2 = getpwnam("nunatak-u2"); /* getpwnam's buffer: copied */
	char work[PATH_MAX], want[256], runs[PATH_MAX + 16];
	const char *run_dir;
	struct stat st;
	wire_envelope *r;
	uint32_t job;
	json_t *j;

	uid_t u2_uid = pw2 ? pw2->pw_uid : 0;

	if (!conf || !pw1 || !pw2) {
		if (conf)
			print_message("SKIPPED: no users nunatak-u1 and nunatak-u2 (useradd -m)\n");
		skip();
		return;
	}
	snprintf(work, sizeof(work), "%s/work", fx->base);
	assert_int_equal(chmod(fx->base, 0711), 0);
	assert_int_equal(mkdir(work, 0755), 0);
	assert_int_equal(chown(work, u1.pw_uid, u1.pw_gid), 0);
	job = sbatch_sleep(conf, work, 6, "nunatak-u1");
	if (!job)
		fail_msg("sbatch as nunatak-u1 failed (SLURM_CONF=%s)", conf);
	hello_on(fx->dealer, NODE, 1, NULL);
	r = attach_when_running(fx, sock, job, "nunatak-u2");
	snprintf(want, sizeof(want),
		 "job %u belongs to user 'nunatak-u1' (uid %u), not to you (uid %u): only the "
		 "job's owner or root may attach to it",
		 job, (unsigned)u1.pw_uid, (unsigned)u2_uid);
	if (r->body_case != NUNATAK__WIRE__ENVELOPE__BODY_ERROR || r->error->code != EPERM ||
	    strcmp(r->error->message, want))
		fail_msg("not refused as expected (EPERM, '%s'): code %d, %s", want,
			 r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR ? (int)r->error->code
									     : 0,
			 r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR ? r->error->message
									     : r->ack->json);
	wire_envelope_free(r);
	snprintf(runs, sizeof(runs), "%s/.nunatak", work);
	assert_true(dir_is_empty(runs) && lstat(runs, &st) && errno == ENOENT);

	r = attach_when_running(fx, sock, job, "nunatak-u1");
	if (r->body_case != NUNATAK__WIRE__ENVELOPE__BODY_ACK)
		fail_msg("the owner's ATTACH refused: %s", r->error->message);
	j = json_loads(r->ack->json, 0, NULL);
	wire_envelope_free(r);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "owner"), "uid")),
			 u1.pw_uid);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "owner"), "user")),
			    "nunatak-u1");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(j, "job"), "work_dir")), work);
	run_dir = json_string_value(json_object_get(j, "run_dir"));
	assert_int_equal(strncmp(run_dir, runs, strlen(runs)), 0);
	assert_int_equal(lstat(runs, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && st.st_uid == u1.pw_uid && (st.st_mode & 07777) == 0700);
	assert_int_equal(lstat(run_dir, &st), 0);
	assert_true(st.st_uid == u1.pw_uid && (st.st_mode & 07777) == 0700);
	/* with a Run of the job open: another user still learns nothing of it */
	r = attach_when_running(fx, sock, job, "nunatak-u2");
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ERROR);
	assert_int_equal(r->error->code, EPERM);
	assert_null(strstr(r->error->message, ".nunatak"));
	wire_envelope_free(r);
	/* the owner's credential in a request of another uid (peer_uid) */
	{
		char payload[64], *cred;

		snprintf(payload, sizeof(payload), "nunatak attach job=%u", job);
		cred = user_credential(sock, "nunatak-u1", payload);
		assert_non_null(cred);
		attach_as(fx->dealer, "att-peer", job, cred, u2_uid);
		free(cred);
		expect_error_code_on(fx->dealer, EPERM, "the request came from uid");
	}
	/* a second ATTACH of that job: busy */
	r = attach_when_running(fx, sock, job, "nunatak-u1");
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ERROR);
	assert_int_equal(r->error->code, EBUSY);
	wire_envelope_free(r);
	wire_envelope_free(recv_on_within(fx->dealer, 15000)); /* CLOSE job-ended */
	finalize_on(fx->dealer, json_string_value(json_object_get(j, "run_id")), FINALIZE_JSON);
	json_decref(j);
}

/* the Run's directory once it is finalized with nobody to answer (it left
 * STATUS), within 30 s */
static void wait_run_gone(struct fixture *fx, const char *run_id)
{
	long long t0 = clock_monotonic_ms();
	json_t *st, *r;
	size_t i;
	int found = 1;

	while (found) {
		if (clock_monotonic_ms() - t0 > 30000)
			fail_msg("run '%s' was not finalized within 30 s", run_id);
		usleep(100 * 1000);
		st = status_on(fx->dealer);
		found = 0;
		json_array_foreach(json_object_get(st, "runs"), i, r) found |=
		    !strcmp(json_string_value(json_object_get(r, "run_id")), run_id);
		json_decref(st);
	}
}

/* a prolog job Run whose job ended without any Epilog (nunatakd down on
 * its node): finalized once the job has ended for the grace, nodes-missing */
static void test_prolog_job_ended_without_epilog(void **state)
{
	struct fixture *fx = *state;
	const char *sock = munge_socket_or_skip(), *conf = slurm_conf_or_skip(sock);
	char host[256], dir[PATH_MAX], *json, *ack = NULL, run_id[64];
	uint32_t job;
	json_t *spec, *m, *d;

	if (!conf) {
		skip();
		return;
	}
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	host[strcspn(host, ".")] = '\0';
	job = sbatch_sleep(conf, fx->base, 1, NULL);
	if (!job)
		fail_msg("sbatch failed (SLURM_CONF=%s)", conf);
	snprintf(run_id, sizeof(run_id), "job-test-%u", job);
	json = prolog_start_json(fx->runs_dir, host, geteuid(), host);
	spec = json_loads(json, 0, NULL);
	free(json);
	json_object_set_new(json_object_get(spec, "job"), "id", json_integer(job));
	json = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	send_control_node(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__START, run_id, json, host);
	free(json);
	expect_ack_on(fx->dealer, run_id, "", 0, &ack);
	ack_run_dir(ack, run_id, dir);
	free(ack);
	wait_run_gone(fx, run_id);
	assert_no_more_reply(fx);
	m = load_manifest_of(dir);
	assert_int_equal(manifest_finalized(m), 1);
	d = degradation_of(m, "nodes-missing");
	assert_non_null(d);
	assert_non_null(strstr(json_string_value(json_object_get(d, "message")), host));
	assert_non_null(
	    strstr(json_string_value(json_object_get(d, "message")), "after the job ended"));
	json_decref(m);
}

/* an attach whose origin never ends it after CLOSE job-ended: finalized
 * once the job has ended for the grace, nodes-missing naming the origin */
static void test_attach_abandoned(void **state)
{
	struct fixture *fx = *state;
	const char *sock = munge_socket_or_skip(), *conf = slurm_conf_or_skip(sock);
	char run_id[64], dir[PATH_MAX];
	wire_envelope *r;
	uint32_t job;
	json_t *j, *m, *d;

	if (!conf) {
		skip();
		return;
	}
	job = sbatch_sleep(conf, fx->base, 2, NULL);
	if (!job)
		fail_msg("sbatch failed (SLURM_CONF=%s)", conf);
	hello_on(fx->dealer, NODE, 1, NULL);
	r = attach_when_running(fx, sock, job, NULL);
	if (r->body_case != NUNATAK__WIRE__ENVELOPE__BODY_ACK)
		fail_msg("ATTACH refused: %s", r->error->message);
	j = json_loads(r->ack->json, 0, NULL);
	wire_envelope_free(r);
	snprintf(run_id, sizeof(run_id), "%s", json_string_value(json_object_get(j, "run_id")));
	snprintf(dir, sizeof(dir), "%s", json_string_value(json_object_get(j, "run_dir")));
	json_decref(j);
	free(expect_control_on(fx->dealer, NUNATAK__WIRE__CONTROL__ACTION__CLOSE, run_id));
	wait_run_gone(fx, run_id);
	m = load_manifest_of(dir);
	assert_int_equal(manifest_finalized(m), 1);
	d = degradation_of(m, "nodes-missing");
	assert_non_null(d);
	assert_non_null(strstr(json_string_value(json_object_get(d, "message")), NODE));
	json_decref(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_prolog_two_nodes, setup_service, teardown),
	    cmocka_unit_test_setup_teardown(test_prolog_deadline_nodes_missing, setup_service,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_prolog_start_refused, setup_service, teardown),
	    cmocka_unit_test_setup_teardown(test_prolog_resumed, setup_resume, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_malformed_or_munged_unreachable,
					    setup_no_munged, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_bad_credential, setup_real, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_job_watch_close, setup_real, teardown),
	    cmocka_unit_test_setup_teardown(test_attach_other_user, setup_real, teardown),
	    cmocka_unit_test_setup_teardown(test_prolog_job_ended_without_epilog, setup_real,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_attach_abandoned, setup_real, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
