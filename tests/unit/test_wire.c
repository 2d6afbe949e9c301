/* test_wire — Envelope framing: unpacking valid, malformed and newer
 * Envelopes, and one frame over a real ZeroMQ inproc PAIR. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/wire/wire.h"

/* a packed Hello Envelope of the given version; free() the result */
static uint8_t *pack_hello(uint32_t major, uint32_t minor, size_t *len)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Hello hello = NUNATAK__WIRE__HELLO__INIT;
	uint8_t *buf;

	hello.agent_version = "0.9.1";
	hello.node = "node07";
	env.protocol_major = major;
	env.protocol_minor = minor;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	*len = nunatak__wire__envelope__get_packed_size(&env);
	buf = malloc(*len);
	assert_non_null(buf);
	assert_int_equal(nunatak__wire__envelope__pack(&env, buf), *len);
	return buf;
}

static void check_hello(const wire_envelope *env)
{
	assert_int_equal(env->body_case, NUNATAK__WIRE__ENVELOPE__BODY_HELLO);
	assert_string_equal(env->hello->agent_version, "0.9.1");
	assert_string_equal(env->hello->node, "node07");
}

static void test_unpack_valid(void **state)
{
	char why[256] = "untouched";
	wire_envelope *env;
	uint8_t *buf;
	size_t len;

	(void)state;
	buf = pack_hello(WIRE_PROTOCOL_MAJOR, WIRE_PROTOCOL_MINOR, &len);
	env = wire_unpack(buf, len, why, sizeof(why));
	assert_non_null(env);
	assert_int_equal(env->protocol_major, WIRE_PROTOCOL_MAJOR);
	assert_int_equal(env->protocol_minor, WIRE_PROTOCOL_MINOR);
	check_hello(env);
	wire_envelope_free(env);
	free(buf);

	/* a newer minor is compatible, and so is an older major */
	buf = pack_hello(WIRE_PROTOCOL_MAJOR, WIRE_PROTOCOL_MINOR + 5, &len);
	env = wire_unpack(buf, len, why, sizeof(why));
	assert_non_null(env);
	assert_int_equal(env->protocol_minor, WIRE_PROTOCOL_MINOR + 5);
	wire_envelope_free(env);
	free(buf);
	buf = pack_hello(WIRE_PROTOCOL_MAJOR - 1, 3, &len);
	env = wire_unpack(buf, len, why, sizeof(why));
	assert_non_null(env);
	wire_envelope_free(env);
	free(buf);
	wire_envelope_free(NULL);
}

static void expect_malformed(const void *data, size_t len)
{
	char why[256] = "";
	char want[64];

	errno = 0;
	assert_null(wire_unpack(data, len, why, sizeof(why)));
	assert_int_equal(errno, EBADMSG);
	snprintf(want, sizeof(want), "(%zu bytes)", len);
	assert_non_null(strstr(why, "malformed"));
	assert_non_null(strstr(why, want));
}

static void test_unpack_malformed(void **state)
{
	uint8_t noise[200], ff[16];
	uint32_t x = 0x12345678;
	uint8_t *buf;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(noise); i++) { /* xorshift: fixed "random" bytes */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		noise[i] = (uint8_t)x;
	}
	expect_malformed(noise, sizeof(noise));
	memset(ff, 0xff, sizeof(ff)); /* a varint that never ends */
	expect_malformed(ff, sizeof(ff));
	expect_malformed("", 0); /* the required version is missing */

	buf = pack_hello(WIRE_PROTOCOL_MAJOR, WIRE_PROTOCOL_MINOR, &len);
	expect_malformed(buf, len - 1); /* cut inside the Hello */
	expect_malformed(buf, 1);
	free(buf);
}

static void test_unpack_newer_major(void **state)
{
	char why[256] = "", v_theirs[32], v_ours[32];
	uint8_t *buf;
	size_t len;

	(void)state;
	buf = pack_hello(WIRE_PROTOCOL_MAJOR + 1, 2, &len);
	errno = 0;
	assert_null(wire_unpack(buf, len, why, sizeof(why)));
	assert_int_equal(errno, EPROTONOSUPPORT);
	snprintf(v_theirs, sizeof(v_theirs), "%u.2", WIRE_PROTOCOL_MAJOR + 1);
	snprintf(v_ours, sizeof(v_ours), "%u.%u", WIRE_PROTOCOL_MAJOR, WIRE_PROTOCOL_MINOR);
	assert_non_null(strstr(why, v_theirs));
	assert_non_null(strstr(why, v_ours));
	free(buf);
}

static void test_send_over_zmq_pair(void **state)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT, *got;
	Nunatak__Wire__Ack ack = NUNATAK__WIRE__ACK__INIT;
	void *ctx, *tx, *rx;
	char why[256] = "";
	zmq_msg_t msg;
	int timeout_ms = 5000;

	(void)state;
	ctx = zmq_ctx_new();
	assert_non_null(ctx);
	rx = zmq_socket(ctx, ZMQ_PAIR);
	tx = zmq_socket(ctx, ZMQ_PAIR);
	assert_non_null(rx);
	assert_non_null(tx);
	assert_int_equal(zmq_setsockopt(rx, ZMQ_RCVTIMEO, &timeout_ms, sizeof(timeout_ms)), 0);
	assert_int_equal(zmq_bind(rx, "inproc://test-wire"), 0);
	assert_int_equal(zmq_connect(tx, "inproc://test-wire"), 0);

	ack.run_id = "run-42";
	ack.node = "node07";
	ack.seq = 17;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ACK;
	env.ack = &ack;
	env.protocol_major = 99; /* wire_send sets the version */
	env.protocol_minor = 99;
	assert_int_equal(wire_send(tx, &env), 0);
	assert_int_equal(env.protocol_major, WIRE_PROTOCOL_MAJOR);
	assert_int_equal(env.protocol_minor, WIRE_PROTOCOL_MINOR);

	zmq_msg_init(&msg);
	assert_true(zmq_msg_recv(&msg, rx, 0) >= 0);
	assert_int_equal(zmq_msg_more(&msg), 0); /* one frame */
	got = wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), why, sizeof(why));
	zmq_msg_close(&msg);
	assert_non_null(got);
	assert_int_equal(got->protocol_major, WIRE_PROTOCOL_MAJOR);
	assert_int_equal(got->protocol_minor, WIRE_PROTOCOL_MINOR);
	assert_int_equal(got->body_case, NUNATAK__WIRE__ENVELOPE__BODY_ACK);
	assert_string_equal(got->ack->run_id, "run-42");
	assert_string_equal(got->ack->node, "node07");
	assert_int_equal(got->ack->seq, 17);
	wire_envelope_free(got);

	zmq_close(tx);
	zmq_close(rx);
	zmq_ctx_term(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unpack_valid),
	    cmocka_unit_test(test_unpack_malformed),
	    cmocka_unit_test(test_unpack_newer_major),
	    cmocka_unit_test(test_send_over_zmq_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
