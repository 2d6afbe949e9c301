/* Tests of what an authenticated Agent may do (red F1, F7): over tcp://
 * with CURVE and a ZAP allow-list of two Agent keys (a and b), real ZeroMQ
 * and SQLite. A node name belongs to the first key that names it (Hello,
 * Batch, Control): another key's Batch, Hello or Control under that name is
 * refused, counted and never stored; a Run's Batches come from its origin
 * node or the nodes it was OPENed to; FINALIZE and a repeated START from
 * its origin key; a Run owned by root is refused from a remote Agent
 * unless the Aggregator allows it. */
#include "tests/unit/test_aggregator_fixture.h"

#include <sys/types.h>

#include "userspace/wire/curve.h"

#define OWNER_UID 4242
#define TOKEN "0123456789abcdef0123456789abcdef"

static int setup_service(void **state)
{
	return fixture_setup(state, 0, 0);
}

/* the Aggregator of fx rebound on tcp:// with CURVE, serving two Agents
 * a and b (DEALERs with allowed keys) */
struct curve_pair {
	struct curve_keypair server, ka, kb;
	struct curve_zap *zap;
	void *a, *b;
};

/* the pair a test has up: closed by teardown_curve when the test failed
 * midway (open sockets would hold zmq_ctx_term forever) */
static struct curve_pair *live;

static void *curve_dealer(struct fixture *fx, const struct curve_keypair *k,
			  const struct curve_keypair *server)
{
	void *d = zmq_socket(fx->zctx, ZMQ_DEALER);
	int linger = 0;

	assert_non_null(d);
	zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(curve_client_setup(d, k, server->public_z85), 0);
	assert_int_equal(zmq_connect(d, fx->endpoint), 0);
	return d;
}

static void load_key(struct fixture *fx, const char *dir, const char *name,
		     struct curve_keypair *k)
{
	char path[2 * PATH_MAX], err[512];

	snprintf(path, sizeof(path), "%s/%s/%s.key", fx->base, dir, name);
	if (curve_load_keypair(path, k, err, sizeof(err)))
		fail_msg("%s", err);
}

static void curve_serve(struct fixture *fx, struct curve_pair *cp, enum aggregator_root_runs root)
{
	struct aggregator_opts o = {.root_runs = root};
	char keys[PATH_MAX], allowed[PATH_MAX], err[512];
	int linger = 0;

	fixture_stop_aggregator(fx); /* this test binds its own */
	zmq_close(fx->dealer);
	fx->dealer = NULL;
	snprintf(keys, sizeof(keys), "%s/keys", fx->base);
	snprintf(allowed, sizeof(allowed), "%s/allowed", fx->base);
	assert_int_equal(mkdir(keys, 0700), 0);
	assert_int_equal(mkdir(allowed, 0700), 0);
	assert_int_equal(curve_keygen(keys, "server", err, sizeof(err)), 0);
	assert_int_equal(curve_keygen(allowed, "a", err, sizeof(err)), 0);
	assert_int_equal(curve_keygen(allowed, "b", err, sizeof(err)), 0);
	load_key(fx, "keys", "server", &cp->server);
	load_key(fx, "allowed", "a", &cp->ka);
	load_key(fx, "allowed", "b", &cp->kb);
	cp->zap = curve_zap__new(fx->zctx, allowed, err, sizeof(err));
	if (!cp->zap)
		fail_msg("ZAP: %s", err);
	/* a port of its own each time: a closed ROUTER's may linger */
	snprintf(fx->endpoint, sizeof(fx->endpoint), "tcp://127.0.0.1:%d",
		 17700 + (int)((getpid() + endpoint_counter++) % 100));
	o.router = zmq_socket(fx->zctx, ZMQ_ROUTER);
	zmq_setsockopt(o.router, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(curve_server_setup(o.router, &cp->server), 0);
	assert_int_equal(zmq_bind(o.router, fx->endpoint), 0);
	fx->agg = aggregator__new_opts(&o);
	assert_non_null(fx->agg);
	assert_int_equal(pthread_create(&fx->thread, NULL, serve_thread, fx), 0);
	fx->thread_running = 1;
	cp->a = curve_dealer(fx, &cp->ka, &cp->server);
	cp->b = curve_dealer(fx, &cp->kb, &cp->server);
	live = cp;
}

static void curve_end(struct fixture *fx, struct curve_pair *cp)
{
	live = NULL;
	zmq_close(cp->a);
	zmq_close(cp->b);
	fixture_stop_aggregator(fx);
	curve_zap__free(cp->zap);
	curve_keypair_wipe(&cp->server);
}

static int teardown_curve(void **state)
{
	if (live)
		curve_end(*state, live);
	return teardown(state);
}

/* a START json of node for a Run the test's owner may write: 4242 as
 * root (a runs directory of its own), the euid otherwise */
static char *owner_start_json(struct fixture *fx, const char *node, const char *token)
{
	struct stat st;

	if (geteuid() != 0)
		return start_json_full(fx->runs_dir, node, geteuid(), getegid(), token);
	if (stat(fx->runs_dir, &st)) {
		assert_int_equal(chmod(fx->base, 0755), 0);
		assert_int_equal(mkdir(fx->runs_dir, 0700), 0);
		assert_int_equal(chown(fx->runs_dir, OWNER_UID, OWNER_UID), 0);
	}
	return start_json_full(fx->runs_dir, node, OWNER_UID, OWNER_UID, token);
}

/* the next message on sock is an Error of code whose message holds want */
static void expect_refused_on(void *sock, int code, const char *want)
{
	wire_envelope *r = recv_on_within(sock, REPLY_TIMEOUT_MS);

	if (r->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ACK)
		fail_msg("Ack (run '%s', node '%s', seq %llu) instead of Error", r->ack->run_id,
			 r->ack->node, (unsigned long long)r->ack->seq);
	assert_int_equal(r->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ERROR);
	if (!strstr(r->error->message, want))
		fail_msg("error '%s' does not contain '%s'", r->error->message, want);
	assert_int_equal(r->error->code, code);
	wire_envelope_free(r);
}

static void send_batch_on(struct fixture *fx, void *sock, const char *run_id, const char *node,
			  uint64_t seq)
{
	struct test_batch t;
	wire_envelope env;

	tb_init(&t, fx, run_id, seq);
	t.b.node = t.locus.node = (char *)node;
	t.b.has_incarnation = 1;
	t.b.incarnation = 9;
	tb_envelope(&t, &env);
	send_envelope_on(sock, &env);
}

static json_int_t refused_now(void *sock)
{
	json_t *st = status_on(sock);
	json_int_t n = counter_of(st, "refused");

	json_decref(st);
	return n;
}

/* FINALIZE and a repeated START of a Run come from the Agent key that
 * started it, or are refused */
static void test_finalize_bound_to_origin(void **state)
{
	struct fixture *fx = *state;
	struct curve_pair cp;
	char *json;

	curve_serve(fx, &cp, AGG_ROOT_RUNS_LOCAL);
	json = owner_start_json(fx, NODE, NULL);
	start_run_on(cp.a, RUN_ID, json, fx->run_dir);
	/* b restarting a's Run, finalizing it, discarding it: refused */
	send_control_on(cp.b, NUNATAK__WIRE__CONTROL__ACTION__START, RUN_ID, json);
	free(json);
	expect_error_on(cp.b, "already", NULL);
	send_control_on(cp.b, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, RUN_ID,
			"{\"discard\": true}");
	expect_error_on(cp.b, "another Agent", NULL);
	assert_int_equal(access(fx->run_dir, F_OK), 0);
	finalize_on(cp.a, RUN_ID, FINALIZE_JSON);
	curve_end(fx, &cp);
}

/* a node is the key that first named it: b's Batch, Hello, START and
 * STATUS under a's node name are refused (EPERM), counted, and the Batch
 * is not stored; a speaks for no second name either */
static void test_node_bound_to_key(void **state)
{
	struct fixture *fx = *state;
	struct curve_pair cp;
	json_int_t refused;
	json_t *st, *ag;
	char *json;

	curve_serve(fx, &cp, AGG_ROOT_RUNS_LOCAL);
	json = owner_start_json(fx, NODE, NULL);
	start_run_on(cp.a, RUN_ID, json, fx->run_dir);
	hello_on(cp.a, NODE, 7, NULL);
	send_good_batch_on(fx, cp.a, RUN_ID, NODE, 9, 0);
	refused = refused_now(cp.a);

	send_batch_on(fx, cp.b, RUN_ID, NODE, 1);
	expect_refused_on(cp.b, EPERM, "another Agent key");
	hello_on(cp.b, NODE, 8, NULL);
	expect_refused_on(cp.b, EPERM, "another Agent key");
	send_control_node(cp.b, NUNATAK__WIRE__CONTROL__ACTION__START, "run-b", json, NODE);
	expect_refused_on(cp.b, EPERM, "another Agent key");
	send_control_on(cp.b, NUNATAK__WIRE__CONTROL__ACTION__START, "run-b", json); /* run.node */
	expect_refused_on(cp.b, EPERM, "another Agent key");
	send_control_node(cp.b, NUNATAK__WIRE__CONTROL__ACTION__STATUS, "", NULL, NODE);
	expect_refused_on(cp.b, EPERM, "another Agent key");
	/* a is NODE: not "node-z" too */
	send_batch_on(fx, cp.a, RUN_ID, "node-z", 1);
	expect_refused_on(cp.a, EPERM, "this Agent's key");
	free(json);

	st = status_on(cp.a);
	assert_int_equal(counter_of(st, "refused"), refused + 6);
	assert_int_equal(json_array_size(json_object_get(st, "agents")), 1);
	ag = json_array_get(json_object_get(st, "agents"), 0);
	assert_string_equal(json_string_value(json_object_get(ag, "incarnation")),
			    "0000000000000007");
	assert_int_equal(json_array_size(json_object_get(st, "runs")), 1);
	json_decref(st);
	assert_int_equal(dir_sql_int(fx->run_dir, "SELECT count(*) FROM batches"), 1);
	assert_int_equal(dir_sql_int(fx->run_dir, "SELECT count(*) FROM batches WHERE node <> "
						  "'" NODE "'"),
			 0);
	finalize_on(cp.a, RUN_ID, FINALIZE_JSON);
	curve_end(fx, &cp);
}

/* a Run's Batches come from its origin node, or from a node it was
 * OPENed to (a Run with a token): another allowed node's are refused */
static void test_batches_from_run_nodes(void **state)
{
	struct fixture *fx = *state;
	char dir_t[PATH_MAX], *json, *open;
	struct curve_pair cp;
	json_int_t refused;

	curve_serve(fx, &cp, AGG_ROOT_RUNS_LOCAL);
	hello_on(cp.a, NODE, 7, NULL);
	hello_on(cp.b, "nb", 8, NULL);
	json = owner_start_json(fx, NODE, NULL);
	start_run_on(cp.a, RUN_ID, json, fx->run_dir);
	free(json);
	refused = refused_now(cp.b);
	send_batch_on(fx, cp.b, RUN_ID, "nb", 0);
	expect_refused_on(cp.b, EPERM, "not opened to that node");
	assert_int_equal(refused_now(cp.b), refused + 1);
	assert_int_equal(dir_sql_int(fx->run_dir, "SELECT count(*) FROM batches"), 0);

	/* a Run with a token is OPENed to nb: nb's Batches are its */
	json = owner_start_json(fx, NODE, TOKEN);
	start_run_on(cp.a, "run-tok", json, dir_t);
	free(json);
	open = expect_control_on(cp.b, NUNATAK__WIRE__CONTROL__ACTION__OPEN, "run-tok");
	free(open);
	send_good_batch_on(fx, cp.b, "run-tok", "nb", 8, 0);
	send_good_batch_on(fx, cp.a, "run-tok", NODE, 7, 0);
	assert_int_equal(dir_sql_int(dir_t, "SELECT count(*) FROM batches"), 2);
	/* still not the other Run's */
	send_batch_on(fx, cp.b, RUN_ID, "nb", 1);
	expect_refused_on(cp.b, EPERM, "not opened to that node");
	finalize_on(cp.a, RUN_ID, FINALIZE_JSON);
	curve_end(fx, &cp);
}

/* a Run owned by root from a remote (authenticated) Agent: refused by
 * default, nothing made; served when the Aggregator allows root Runs */
static void test_root_runs(void **state)
{
	struct fixture *fx = *state;
	struct curve_pair cp;
	char root_dir[PATH_MAX + 16], dir[PATH_MAX], *json;

	if (geteuid() != 0)
		skip(); /* a Run written as root needs root */
	curve_serve(fx, &cp, AGG_ROOT_RUNS_LOCAL);
	snprintf(root_dir, sizeof(root_dir), "%s/rootruns", fx->base);
	assert_int_equal(mkdir(root_dir, 0700), 0);
	json = start_json_full(root_dir, NODE, 0, 0, NULL);
	send_control_on(cp.a, NUNATAK__WIRE__CONTROL__ACTION__START, "run-root", json);
	expect_refused_on(cp.a, EPERM, "as root");
	assert_true(dir_is_empty(root_dir));
	curve_end(fx, &cp);
	remove_tree(fx->base);
	assert_int_equal(mkdir(fx->base, 0700), 0);
	assert_int_equal(mkdir(root_dir, 0700), 0);

	curve_serve(fx, &cp, AGG_ROOT_RUNS_ALLOWED);
	start_run_on(cp.a, "run-root", json, dir);
	free(json);
	finalize_on(cp.a, "run-root", FINALIZE_JSON);
	curve_end(fx, &cp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_finalize_bound_to_origin, setup_service, teardown_curve),
	    cmocka_unit_test_setup_teardown(test_node_bound_to_key, setup_service, teardown_curve),
	    cmocka_unit_test_setup_teardown(test_batches_from_run_nodes, setup_service, teardown_curve),
	    cmocka_unit_test_setup_teardown(test_root_runs, setup_service, teardown_curve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
