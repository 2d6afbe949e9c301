/* Tests of publish_queue (one Target's unacknowledged Batches): Acks by
 * (incarnation, seq) only, a storage error keeps the Batch, a refusal
 * removes and counts it, the oldest taken (for the spool) or dropped
 * (counted), the byte cap, and the counts of Batches lost elsewhere. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "userspace/agent/publish_queue.h"
#include "userspace/wire/wire.h"

/* queues a Batch of seq with `samples` samples in one SampleCount */
static void push(struct publish_queue *q, uint64_t incarnation, uint64_t seq, uint64_t samples)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__SampleCount sc = NUNATAK__WIRE__SAMPLE_COUNT__INIT, *scs[1] = {&sc};

	b.run_id = "r";
	b.node = "n";
	b.seq = seq;
	b.has_incarnation = 1;
	b.incarnation = incarnation;
	sc.counter = "cpu-clock";
	sc.sample_count = samples;
	b.samples = scs;
	b.n_samples = 1;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_BATCH;
	env.batch = &b;
	assert_int_equal(publish_queue_push(q, &env), 0);
}

static Nunatak__Wire__Error error_of(uint64_t incarnation, uint64_t seq, int code)
{
	Nunatak__Wire__Error e = NUNATAK__WIRE__ERROR__INIT;

	e.message = "why";
	e.has_seq = e.has_incarnation = 1;
	e.seq = seq;
	e.incarnation = incarnation;
	e.has_code = 1;
	e.code = code;
	return e;
}

static void test_ack_by_incarnation_and_seq(void **state)
{
	struct publish_queue *q = publish_queue__new(0);
	uint64_t samples = 0;

	(void)state;
	push(q, 7, 0, 3);
	push(q, 7, 1, 4);
	assert_int_equal(publish_queue_head(q)->seq, 0);
	assert_int_equal(publish_queue_ack(q, 8, 0, &samples), 0); /* another incarnation */
	assert_int_equal(publish_queue_ack(q, 7, 5, &samples), 0);
	assert_int_equal(publish_queue_ack(q, 7, 0, &samples), 1);
	assert_int_equal(samples, 3);
	assert_int_equal(publish_queue_length(q), 1);
	assert_int_equal(publish_queue_head(q)->seq, 1);
	assert_int_equal(publish_queue_head(q)->samples, 4);
	publish_queue__free(q);
}

static void test_errors(void **state)
{
	struct publish_queue *q = publish_queue__new(0);
	Nunatak__Wire__Error e;

	(void)state;
	push(q, 7, 0, 3);
	push(q, 7, 1, 4);
	e = error_of(7, 0, ENOSPC);
	assert_int_equal(publish_queue_error(q, &e), 2); /* kept */
	assert_int_equal(publish_queue_length(q), 2);
	assert_true(publish_queue_storage_failing(q));
	e = error_of(7, 1, EINVAL);
	assert_int_equal(publish_queue_error(q, &e), 1); /* refused for good */
	assert_int_equal(publish_queue_length(q), 1);
	assert_int_equal(publish_queue_loss(q)->refused_batches, 1);
	assert_int_equal(publish_queue_loss(q)->refused_samples, 4);
	e = error_of(7, 9, EINVAL);
	assert_int_equal(publish_queue_error(q, &e), 0); /* not ours */
	assert_int_equal(publish_queue_ack(q, 7, 0, NULL), 1);
	assert_false(publish_queue_storage_failing(q));
	publish_queue__free(q);
}

static void test_take_drop_cap(void **state)
{
	struct publish_queue *q = publish_queue__new(1);
	struct queued_batch qb;

	(void)state;
	push(q, 7, 0, 3);
	assert_false(publish_queue_over_cap(q)); /* the newest is always kept */
	push(q, 7, 1, 4);
	assert_true(publish_queue_over_cap(q));
	assert_int_equal(publish_queue_take_oldest(q, &qb), 0);
	assert_int_equal(qb.seq, 0);
	assert_int_equal(qb.samples, 3);
	free(qb.buf);
	assert_int_equal(publish_queue_loss(q)->failed_batches, 0); /* taken is not lost */
	push(q, 7, 2, 5);
	publish_queue_drop_oldest(q);
	assert_int_equal(publish_queue_loss(q)->failed_batches, 1);
	assert_int_equal(publish_queue_loss(q)->failed_samples, 4);
	assert_int_equal(publish_queue_loss(q)->code, ETIMEDOUT);
	publish_queue_count_lost(q, 10, ENOSPC);
	publish_queue_count_refused(q, 2, "refused");
	publish_queue_abandon(q);
	assert_int_equal(publish_queue_length(q), 0);
	assert_int_equal(publish_queue_bytes(q), 0);
	assert_int_equal(publish_queue_loss(q)->failed_batches, 3);
	assert_int_equal(publish_queue_loss(q)->failed_samples, 19);
	assert_int_equal(publish_queue_loss(q)->code, ENOSPC);
	assert_int_equal(publish_queue_loss(q)->refused_batches, 1);
	assert_int_equal(publish_queue_take_oldest(q, &qb), -ENOENT);
	publish_queue__free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ack_by_incarnation_and_seq),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_take_drop_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
