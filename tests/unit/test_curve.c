/* Unit tests for userspace/wire/curve: key files under the trust rules,
 * keygen, the allow-list, and the ZAP handler with real ZeroMQ sockets over
 * TCP on 127.0.0.1 (ports 17401..17404): the right key talks, an unknown key
 * is refused and counted, a wrong server key never connects. The expected
 * public key of a secret one is the example pair of ZeroMQ's zmq_curve(7). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/wire/curve.h"

/* zmq_curve(7)'s example keys */
#define CLIENT_PUBLIC "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
#define CLIENT_SECRET "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs"
#define SERVER_PUBLIC "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
#define SERVER_SECRET "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"

#define WAIT_MS 3000

struct fixture {
	char dir[PATH_MAX];
	char err[1024];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || make_tmpdir(f->dir, sizeof(f->dir), "curve"))
		return -1;
	/* the trust rules refuse a key under a group-writable directory */
	chmod(f->dir, 0700);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	remove_tree(f->dir);
	free(f);
	return 0;
}

static const char *write_mode(struct fixture *f, const char *name, const char *text, mode_t mode)
{
	const char *path = path_in(f->dir, name);

	unlink(path);
	assert_int_equal(write_file(path, text), 0);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void test_load_keypair_derives_public(void **state)
{
	struct fixture *f = *state;
	struct curve_keypair kp;
	char pub[41];

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	const char *sec = write_mode(f, "c.key", "# a comment\n\n" CLIENT_SECRET "\r\n", 0600);
	assert_int_equal(curve_load_keypair(sec, &kp, f->err, sizeof(f->err)), 0);
	assert_string_equal(kp.secret_z85, CLIENT_SECRET);
	assert_string_equal(kp.public_z85, CLIENT_PUBLIC);
	curve_keypair_wipe(&kp);
	assert_string_equal(kp.secret_z85, "");

	const char *p = write_mode(f, "c.pub", CLIENT_PUBLIC " node01\n", 0644);
	assert_int_equal(curve_load_public(p, pub, f->err, sizeof(f->err)), 0);
	assert_string_equal(pub, CLIENT_PUBLIC);
}

static void test_secret_modes_refused(void **state)
{
	static const mode_t bad[] = {0640, 0604, 0400 | 0040, 0601};
	struct fixture *f = *state;
	struct curve_keypair kp;
	char pub[41];
	size_t i;

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *sec = write_mode(f, "bad.key", CLIENT_SECRET "\n", bad[i]);

		assert_int_equal(curve_load_keypair(sec, &kp, f->err, sizeof(f->err)), -EPERM);
		assert_non_null(strstr(f->err, sec));
		assert_non_null(strstr(f->err, "chmod 600"));
		assert_string_equal(kp.secret_z85, ""); /* nothing kept */
	}
	/* group-writable: the trust rules' own refusal comes first */
	const char *gw = write_mode(f, "gw.key", CLIENT_SECRET "\n", 0660);
	assert_int_equal(curve_load_keypair(gw, &kp, f->err, sizeof(f->err)), -EPERM);
	assert_non_null(strstr(f->err, "chmod go-w"));
	/* a public key may be world-readable, not writable */
	const char *p = write_mode(f, "ok.pub", CLIENT_PUBLIC "\n", 0644);
	assert_int_equal(curve_load_public(p, pub, f->err, sizeof(f->err)), 0);
	p = write_mode(f, "w.pub", CLIENT_PUBLIC "\n", 0664);
	assert_int_equal(curve_load_public(p, pub, f->err, sizeof(f->err)), -EPERM);
	assert_non_null(strstr(f->err, "writable"));
}

static void test_secret_owner_and_link_refused(void **state)
{
	struct fixture *f = *state;
	struct curve_keypair kp;

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	const char *sec = write_mode(f, "other.key", CLIENT_SECRET "\n", 0600);
	if (geteuid() == 0) {
		assert_int_equal(chown(sec, 65534, 65534), 0);
		assert_int_equal(curve_load_keypair(sec, &kp, f->err, sizeof(f->err)), -EPERM);
		assert_non_null(strstr(f->err, "owned by"));
	} else {
		printf("SKIPPED (part): the owner refusal needs root to chown\n");
	}
	const char *real = write_mode(f, "real.key", CLIENT_SECRET "\n", 0600);
	const char *link = path_in(f->dir, "link.key");
	assert_int_equal(symlink(real, link), 0);
	assert_int_equal(curve_load_keypair(link, &kp, f->err, sizeof(f->err)), -ELOOP);
	assert_int_equal(curve_load_keypair(path_in(f->dir, "absent.key"), &kp, f->err,
					    sizeof(f->err)),
			 -ENOENT);
}

static void test_malformed_keys_refused(void **state)
{
	struct fixture *f = *state;
	struct curve_keypair kp;

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	const char *sec = write_mode(f, "short.key", "# c\nabc\n", 0600);
	assert_int_equal(curve_load_keypair(sec, &kp, f->err, sizeof(f->err)), -EINVAL);
	assert_non_null(strstr(f->err, ":2:"));
	sec = write_mode(f, "two.key", CLIENT_SECRET "\n" SERVER_SECRET "\n", 0600);
	assert_int_equal(curve_load_keypair(sec, &kp, f->err, sizeof(f->err)), -EINVAL);
	assert_non_null(strstr(f->err, ":2:"));
	sec = write_mode(f, "empty.key", "# nothing\n", 0600);
	assert_int_equal(curve_load_keypair(sec, &kp, f->err, sizeof(f->err)), -EINVAL);
	/* a space is not Z85 */
	sec = write_mode(f, "space.key", "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{h D\n", 0600);
	assert_int_equal(curve_load_keypair(sec, &kp, f->err, sizeof(f->err)), -EINVAL);
	assert_false(curve_key_valid("Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hI"));
	assert_true(curve_key_valid(CLIENT_PUBLIC));
}

static void test_keygen(void **state)
{
	struct fixture *f = *state;
	struct curve_keypair kp;
	char pub[41];
	struct stat st;

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	umask(0); /* keygen's modes whatever the umask */
	assert_int_equal(curve_keygen(f->dir, "node-01", f->err, sizeof(f->err)), 0);
	umask(022);
	assert_int_equal(lstat(path_in(f->dir, "node-01.key"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(lstat(path_in(f->dir, "node-01.pub"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(curve_load_keypair(path_in(f->dir, "node-01.key"), &kp, f->err,
					    sizeof(f->err)),
			 0);
	assert_int_equal(curve_load_public(path_in(f->dir, "node-01.pub"), pub, f->err,
					   sizeof(f->err)),
			 0);
	assert_string_equal(pub, kp.public_z85);

	/* never overwrites, and leaves nothing half made */
	assert_int_equal(curve_keygen(f->dir, "node-01", f->err, sizeof(f->err)), -EEXIST);
	assert_non_null(strstr(f->err, "exists"));
	assert_int_equal(write_file(path_in(f->dir, "half.pub"), "x"), 0);
	assert_int_equal(curve_keygen(f->dir, "half", f->err, sizeof(f->err)), -EEXIST);
	assert_int_equal(lstat(path_in(f->dir, "half.key"), &st), -1);
	assert_int_equal(curve_keygen(f->dir, "../up", f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(curve_keygen(f->dir, ".hidden", f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(curve_keygen(path_in(f->dir, "absent"), "n", f->err, sizeof(f->err)),
			 -ENOENT);
}

/* ---- the handler, with real sockets ---- */

struct net {
	void *ctx, *server, *client, *monitor;
	struct curve_zap *zap;
	struct curve_keypair server_kp, client_kp;
};

static void make_keypair(struct fixture *f, const char *name, struct curve_keypair *kp)
{
	char sec[PATH_MAX];

	assert_int_equal(curve_keygen(f->dir, name, f->err, sizeof(f->err)), 0);
	snprintf(sec, sizeof(sec), "%s/%s.key", f->dir, name);
	assert_int_equal(curve_load_keypair(sec, kp, f->err, sizeof(f->err)), 0);
}

/* a server ROUTER on @port with the ZAP handler allowing @allowed, and a
 * server-side monitor */
static void net_start(struct fixture *f, struct net *n, const char *allowed, int port)
{
	char ep[64], mon[64];
	int linger = 0;

	n->ctx = zmq_ctx_new();
	assert_non_null(n->ctx);
	n->zap = curve_zap__new(n->ctx, allowed, f->err, sizeof(f->err));
	if (!n->zap)
		fail_msg("curve_zap__new: %s", f->err);
	n->server = zmq_socket(n->ctx, ZMQ_ROUTER);
	zmq_setsockopt(n->server, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(curve_server_setup(n->server, &n->server_kp), 0);
	snprintf(mon, sizeof(mon), "inproc://test-monitor-%d", port);
	assert_int_equal(zmq_socket_monitor(n->server, mon, ZMQ_EVENT_ALL), 0);
	n->monitor = zmq_socket(n->ctx, ZMQ_PAIR);
	assert_int_equal(zmq_connect(n->monitor, mon), 0);
	snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", port);
	assert_int_equal(zmq_bind(n->server, ep), 0);
}

static void net_connect(struct net *n, const struct curve_keypair *kp, const char *server_pub,
			int port)
{
	char ep[64];
	int linger = 0;

	n->client = zmq_socket(n->ctx, ZMQ_DEALER);
	zmq_setsockopt(n->client, ZMQ_LINGER, &linger, sizeof(linger));
	assert_int_equal(curve_client_setup(n->client, kp, server_pub), 0);
	snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", port);
	assert_int_equal(zmq_connect(n->client, ep), 0);
	assert_int_equal(zmq_send(n->client, "hello", 5, 0), 5);
}

static void net_stop(struct net *n)
{
	long long t0 = now_ms();
	int linger = 0;

	zmq_socket_monitor(n->server, NULL, 0);
	zmq_setsockopt(n->monitor, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_close(n->monitor);
	zmq_close(n->client);
	zmq_close(n->server);
	curve_zap__free(n->zap);
	assert_true(now_ms() - t0 < 1000); /* the handler stops at once */
	zmq_ctx_term(n->ctx);
}

/* The server's message within @ms: 1 (frames "hello" checked), 0 none. */
static int server_receives(struct net *n, int ms)
{
	zmq_pollitem_t it = {.socket = n->server, .events = ZMQ_POLLIN};
	char id[256], body[16];
	int len;

	if (zmq_poll(&it, 1, ms) <= 0)
		return 0;
	assert_true(zmq_recv(n->server, id, sizeof(id), 0) > 0);
	len = zmq_recv(n->server, body, sizeof(body), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(body, "hello", 5);
	return 1;
}

/* The first monitor event among @mask within @ms, 0 if none. */
static int monitor_wait(struct net *n, int mask, int ms)
{
	long long end = now_ms() + ms;
	zmq_pollitem_t it = {.socket = n->monitor, .events = ZMQ_POLLIN};
	uint8_t frame[64];
	uint16_t event;
	char addr[256];

	while (now_ms() < end) {
		if (zmq_poll(&it, 1, (long)(end - now_ms())) <= 0)
			continue;
		if (zmq_recv(n->monitor, frame, sizeof(frame), 0) < 6)
			continue;
		zmq_recv(n->monitor, addr, sizeof(addr), 0);
		memcpy(&event, frame, sizeof(event));
		if (event & mask)
			return event;
	}
	return 0;
}

static void test_right_key_talks(void **state)
{
	struct fixture *f = *state;
	struct net n = {0};
	char reply[8], id[256];
	int idlen;

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	make_keypair(f, "srv", &n.server_kp);
	make_keypair(f, "agent", &n.client_kp);
	assert_int_equal(mkdir(path_in(f->dir, "allowed"), 0755), 0);
	assert_int_equal(rename(path_in(f->dir, "agent.pub"), path_in(f->dir, "allowed/agent.pub")),
			 0);
	/* other names in the directory are not keys */
	assert_int_equal(write_file(path_in(f->dir, "allowed/README"), "not a key"), 0);
	net_start(f, &n, path_in(f->dir, "allowed"), 17401);
	assert_int_equal(curve_zap_allowed_count(n.zap), 1);
	net_connect(&n, &n.client_kp, n.server_kp.public_z85, 17401);
	assert_int_equal(monitor_wait(&n, ZMQ_EVENT_HANDSHAKE_SUCCEEDED, WAIT_MS),
			 ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
	/* and back: the routing id of the accepted peer */
	zmq_pollitem_t it = {.socket = n.server, .events = ZMQ_POLLIN};
	assert_int_equal(zmq_poll(&it, 1, WAIT_MS), 1);
	idlen = zmq_recv(n.server, id, sizeof(id), 0);
	assert_true(idlen > 0);
	assert_int_equal(zmq_recv(n.server, reply, sizeof(reply), 0), 5);
	zmq_send(n.server, id, (size_t)idlen, ZMQ_SNDMORE);
	zmq_send(n.server, "ack", 3, 0);
	it.socket = n.client;
	assert_int_equal(zmq_poll(&it, 1, WAIT_MS), 1);
	assert_int_equal(zmq_recv(n.client, reply, sizeof(reply), 0), 3);
	assert_memory_equal(reply, "ack", 3);
	assert_int_equal(curve_zap_refused(n.zap), 0);
	net_stop(&n);
}

static void test_unknown_client_refused_and_counted(void **state)
{
	struct fixture *f = *state;
	struct net n = {0};
	struct curve_keypair stranger;
	char list[512];
	long long end;

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	make_keypair(f, "srv", &n.server_kp);
	make_keypair(f, "stranger", &stranger);
	/* a file of keys: the zmq_curve(7) client only */
	snprintf(list, sizeof(list), "# allowed Agents\n\n%s node01\n", CLIENT_PUBLIC);
	const char *allowed = write_mode(f, "allowed.txt", list, 0644);
	net_start(f, &n, allowed, 17402);
	assert_int_equal(curve_zap_allowed_count(n.zap), 1);
	net_connect(&n, &stranger, n.server_kp.public_z85, 17402);
	assert_int_equal(monitor_wait(&n, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
						  ZMQ_EVENT_HANDSHAKE_SUCCEEDED,
				      WAIT_MS),
			 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
	for (end = now_ms() + WAIT_MS; !curve_zap_refused(n.zap) && now_ms() < end;)
		usleep(10000);
	assert_true(curve_zap_refused(n.zap) >= 1);
	assert_true(curve_zap_refused_fn(n.zap) >= 1);
	assert_int_equal(server_receives(&n, 300), 0);
	net_stop(&n);
}

static void test_wrong_server_key_never_connects(void **state)
{
	struct fixture *f = *state;
	struct net n = {0};
	struct curve_keypair other;

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	make_keypair(f, "srv", &n.server_kp);
	make_keypair(f, "agent", &n.client_kp);
	make_keypair(f, "other", &other);
	net_start(f, &n, path_in(f->dir, "agent.pub"), 17403);
	/* the client believes the server is "other": the handshake fails
	 * before any ZAP request, and nothing is ever delivered */
	net_connect(&n, &n.client_kp, other.public_z85, 17403);
	assert_int_equal(monitor_wait(&n, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
						  ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
						  ZMQ_EVENT_HANDSHAKE_SUCCEEDED,
				      WAIT_MS) &
			     ZMQ_EVENT_HANDSHAKE_SUCCEEDED,
			 0);
	assert_int_equal(server_receives(&n, 1000), 0);
	assert_int_equal(curve_zap_refused(n.zap), 0);
	net_stop(&n);
}

static void test_allow_list_refusals(void **state)
{
	struct fixture *f = *state;
	void *ctx = zmq_ctx_new();
	struct curve_zap *zap, *second;

	SKIP_UNLESS(zmq_has("curve"), "libzmq without CURVE");
	/* empty */
	const char *empty = write_mode(f, "empty.txt", "# none yet\n", 0644);
	assert_null(curve_zap__new(ctx, empty, f->err, sizeof(f->err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(f->err, "no Agent key"));
	/* malformed line, with its number */
	const char *bad = write_mode(f, "bad.txt", CLIENT_PUBLIC "\nnot-a-key\n", 0644);
	assert_null(curve_zap__new(ctx, bad, f->err, sizeof(f->err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(f->err, "bad.txt:2:"));
	/* another user could add a key */
	const char *writable = write_mode(f, "writable.txt", CLIENT_PUBLIC "\n", 0666);
	assert_null(curve_zap__new(ctx, writable, f->err, sizeof(f->err)));
	assert_int_equal(errno, EPERM);
	/* a directory with a group-writable *.pub */
	assert_int_equal(mkdir(path_in(f->dir, "keys"), 0755), 0);
	write_mode(f, "keys/a.pub", CLIENT_PUBLIC "\n", 0644);
	write_mode(f, "keys/b.pub", SERVER_PUBLIC "\n", 0664);
	assert_null(curve_zap__new(ctx, path_in(f->dir, "keys"), f->err, sizeof(f->err)));
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(f->err, "b.pub"));
	chmod(path_in(f->dir, "keys/b.pub"), 0644);
	zap = curve_zap__new(ctx, path_in(f->dir, "keys"), f->err, sizeof(f->err));
	assert_non_null(zap);
	assert_int_equal(curve_zap_allowed_count(zap), 2);
	/* one handler per context */
	second = curve_zap__new(ctx, path_in(f->dir, "keys"), f->err, sizeof(f->err));
	assert_null(second);
	assert_int_equal(errno, EADDRINUSE);
	curve_zap__free(zap);
	assert_null(curve_zap__new(ctx, path_in(f->dir, "absent"), f->err, sizeof(f->err)));
	assert_int_equal(errno, ENOENT);
	zmq_ctx_term(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_load_keypair_derives_public, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_secret_modes_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_secret_owner_and_link_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_keys_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keygen, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_right_key_talks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_client_refused_and_counted, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_wrong_server_key_never_connects, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_allow_list_refusals, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
