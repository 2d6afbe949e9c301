/* publish_queue — see publish_queue.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "userspace/agent/publish_queue.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

struct queued_batch {
	uint64_t seq;
	void *buf; /* the packed Envelope, sent as it is every time */
	size_t len;
	uint64_t samples; /* Σ sample_count of the Batch */
	int sent;	  /* sent during the current flush */
};

struct publish_queue {
	void *socket;
	size_t cap_bytes, bytes;
	struct queued_batch *items; /* oldest first */
	size_t n, cap;
	struct publish_loss loss;
	int storage_failing; /* to log the change of state once, not each flush */
};

struct publish_queue *publish_queue__new(void *socket, size_t cap_bytes)
{
	struct publish_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->socket = socket;
	q->cap_bytes = cap_bytes ? cap_bytes : PUBLISH_QUEUE_DEFAULT_CAP_BYTES;
	return q;
}

void publish_queue__free(struct publish_queue *q)
{
	size_t i;

	if (!q)
		return;
	for (i = 0; i < q->n; i++)
		free(q->items[i].buf);
	free(q->items);
	free(q);
}

size_t publish_queue_length(const struct publish_queue *q)
{
	return q->n;
}

size_t publish_queue_bytes(const struct publish_queue *q)
{
	return q->bytes;
}

const struct publish_loss *publish_queue_loss(const struct publish_queue *q)
{
	return &q->loss;
}

static void queue_remove(struct publish_queue *q, size_t i)
{
	q->bytes -= q->items[i].len;
	free(q->items[i].buf);
	memmove(&q->items[i], &q->items[i + 1], (q->n - i - 1) * sizeof(*q->items));
	q->n--;
}

static void queue_drop(struct publish_queue *q, size_t i)
{
	q->loss.failed_samples += q->items[i].samples;
	q->loss.failed_batches++;
	if (!q->loss.code)
		q->loss.code = ETIMEDOUT; /* never answered */
	queue_remove(q, i);
}

void publish_queue_abandon(struct publish_queue *q)
{
	while (q->n)
		queue_drop(q, 0);
}

int publish_queue_push(struct publish_queue *q, wire_envelope *env)
{
	struct queued_batch *qb;
	size_t i;

	if (env->body_case != NUNATAK__WIRE__ENVELOPE__BODY_BATCH || !env->batch)
		return -EINVAL;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		struct queued_batch *items = realloc(q->items, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		q->items = items;
		q->cap = cap;
	}
	qb = &q->items[q->n];
	memset(qb, 0, sizeof(*qb));
	qb->buf = wire_pack(env, &qb->len);
	if (!qb->buf)
		return -ENOMEM;
	qb->seq = env->batch->seq;
	for (i = 0; i < env->batch->n_samples; i++)
		qb->samples += env->batch->samples[i]->sample_count;
	q->n++;
	q->bytes += qb->len;
	while (q->bytes > q->cap_bytes && q->n > 1) {
		if (q->loss.failed_batches == 0)
			pr_warn("batches not stored exceed %zu bytes in memory: dropping the "
				"oldest, counted as storage-failed",
				q->cap_bytes);
		queue_drop(q, 0);
	}
	return 0;
}

static ssize_t queue_find(const struct publish_queue *q, uint64_t seq)
{
	size_t i;

	for (i = 0; i < q->n; i++)
		if (q->items[i].seq == seq)
			return (ssize_t)i;
	return -1;
}

static void queue_storage_state(struct publish_queue *q, int failing, const char *why)
{
	if (failing && !q->storage_failing)
		pr_warn("the aggregator cannot store batches (%s): keeping them in memory, up to "
			"%zu bytes",
			why, q->cap_bytes);
	else if (!failing && q->storage_failing)
		pr_info("the aggregator stores batches again");
	q->storage_failing = failing;
}

/* A refusal: dropped and counted when final, kept when storage may come
 * back. 0, or -code when the oldest Batch is kept. */
static int queue_on_error(struct publish_queue *q, const Nunatak__Wire__Error *e)
{
	ssize_t i = e->has_seq ? queue_find(q, e->seq) : -1;
	int code = e->has_code ? e->code : 0;

	if (i < 0) { /* not about a queued Batch (already acked, or protocol) */
		pr_debug("aggregator error: %s", e->message);
		return 0;
	}
	snprintf(q->loss.reason, sizeof(q->loss.reason), "%s", e->message ? e->message : "");
	if (wire_storage_error_transient(code)) {
		q->loss.code = code;
		queue_storage_state(q, 1, q->loss.reason);
		q->items[i].sent = 0;
		return i == 0 ? -code : 0;
	}
	pr_warn("aggregator refused batch %llu for good: %s", (unsigned long long)e->seq,
		q->loss.reason);
	q->loss.refused_samples += q->items[i].samples;
	q->loss.refused_batches++;
	queue_remove(q, (size_t)i);
	return 0;
}

/* Reads one reply; 0, -EAGAIN (none there), -code (see above). */
static int queue_read_reply(struct publish_queue *q)
{
	wire_envelope *reply;
	char why[256];
	zmq_msg_t msg;
	ssize_t i;
	int err = 0;

	zmq_msg_init(&msg);
	if (zmq_msg_recv(&msg, q->socket, ZMQ_DONTWAIT) < 0) {
		err = -zmq_errno();
		zmq_msg_close(&msg);
		return err;
	}
	reply = wire_unpack(zmq_msg_data(&msg), zmq_msg_size(&msg), why, sizeof(why));
	zmq_msg_close(&msg);
	if (!reply) {
		pr_warn("aggregator reply refused: %s", why);
		return 0;
	}
	if (reply->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ACK) {
		i = queue_find(q, reply->ack->seq);
		if (i >= 0) {
			queue_remove(q, (size_t)i);
			queue_storage_state(q, 0, NULL);
		}
	} else if (reply->body_case == NUNATAK__WIRE__ENVELOPE__BODY_ERROR) {
		err = queue_on_error(q, reply->error);
	}
	wire_envelope_free(reply);
	return err;
}

/* Waits up to ms for a reply and reads it. 0, -ETIMEDOUT, -code. */
static int queue_wait_reply(struct publish_queue *q, long long ms)
{
	zmq_pollitem_t item = {.socket = q->socket, .events = ZMQ_POLLIN};
	int rc = zmq_poll(&item, 1, ms);

	if (rc < 0)
		return zmq_errno() == EINTR ? 0 : -zmq_errno();
	if (rc == 0)
		return -ETIMEDOUT;
	rc = queue_read_reply(q);
	return rc == -EAGAIN ? 0 : rc;
}

int publish_queue_flush(struct publish_queue *q, int wait_ms)
{
	long long deadline = clock_monotonic_ms() + (wait_ms > 0 ? wait_ms : 0);
	size_t i;
	int err;

	while ((err = queue_read_reply(q)) != -EAGAIN)
		if (err && err != -EINTR && !wire_storage_error_transient(-err))
			return err;
	for (i = 0; i < q->n; i++)
		q->items[i].sent = 0;
	err = 0;
	while (q->n) {
		struct queued_batch *head = &q->items[0];
		long long left = deadline - clock_monotonic_ms();

		if (!head->sent) {
			if (zmq_send(q->socket, head->buf, head->len, ZMQ_DONTWAIT) < 0)
				return zmq_errno() == EAGAIN ? -ETIMEDOUT : -zmq_errno();
			head->sent = 1;
		}
		if (left <= 0)
			return -ETIMEDOUT;
		err = queue_wait_reply(q, left);
		if (err)
			return err;
	}
	return 0;
}
