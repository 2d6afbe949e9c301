/* publish_queue — see publish_queue.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/publish_queue.h"
#include "userspace/log/log.h"

struct publish_queue {
	size_t cap_bytes, bytes;
	struct queued_batch *items; /* oldest first */
	size_t n, cap;
	struct publish_loss loss;
	int storage_failing; /* to log the change of state once */
};

struct publish_queue *publish_queue__new(size_t cap_bytes)
{
	struct publish_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
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

int publish_queue_over_cap(const struct publish_queue *q)
{
	return q->bytes > q->cap_bytes && q->n > 1;
}

const struct publish_loss *publish_queue_loss(const struct publish_queue *q)
{
	return &q->loss;
}

int publish_queue_storage_failing(const struct publish_queue *q)
{
	return q->storage_failing;
}

struct queued_batch *publish_queue_head(struct publish_queue *q)
{
	return q->n ? &q->items[0] : NULL;
}

static void queue_remove(struct publish_queue *q, size_t i)
{
	q->bytes -= q->items[i].len;
	free(q->items[i].buf);
	memmove(&q->items[i], &q->items[i + 1], (q->n - i - 1) * sizeof(*q->items));
	q->n--;
}

void publish_queue_count_lost(struct publish_queue *q, uint64_t samples, int code)
{
	q->loss.failed_samples += samples;
	q->loss.failed_batches++;
	if (code)
		q->loss.code = code;
	else if (!q->loss.code)
		q->loss.code = ETIMEDOUT; /* never answered */
}

void publish_queue_count_refused(struct publish_queue *q, uint64_t samples, const char *reason)
{
	q->loss.refused_samples += samples;
	q->loss.refused_batches++;
	snprintf(q->loss.reason, sizeof(q->loss.reason), "%s", reason ? reason : "");
}

void publish_queue_drop_oldest(struct publish_queue *q)
{
	if (!q->n)
		return;
	publish_queue_count_lost(q, q->items[0].samples, 0);
	queue_remove(q, 0);
}

void publish_queue_abandon(struct publish_queue *q)
{
	while (q->n)
		publish_queue_drop_oldest(q);
}

int publish_queue_take_oldest(struct publish_queue *q, struct queued_batch *out)
{
	if (!q->n)
		return -ENOENT;
	*out = q->items[0];
	q->bytes -= out->len;
	memmove(&q->items[0], &q->items[1], (q->n - 1) * sizeof(*q->items));
	q->n--;
	return 0;
}

int publish_queue_push_packed(struct publish_queue *q, const struct queued_batch *qb)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		struct queued_batch *items = realloc(q->items, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		q->items = items;
		q->cap = cap;
	}
	q->items[q->n++] = *qb;
	q->bytes += qb->len;
	return 0;
}

int publish_queue_push(struct publish_queue *q, wire_envelope *env)
{
	struct queued_batch qb = {0};
	size_t i;
	int err;

	if (env->body_case != NUNATAK__WIRE__ENVELOPE__BODY_BATCH || !env->batch)
		return -EINVAL;
	qb.buf = wire_pack(env, &qb.len);
	if (!qb.buf)
		return -ENOMEM;
	qb.seq = env->batch->seq;
	qb.incarnation = env->batch->incarnation;
	qb.last = env->batch->has_last && env->batch->last;
	for (i = 0; i < env->batch->n_samples; i++)
		qb.samples += env->batch->samples[i]->sample_count;
	err = publish_queue_push_packed(q, &qb);
	if (err)
		free(qb.buf);
	return err;
}

static ssize_t queue_find(const struct publish_queue *q, uint64_t incarnation, uint64_t seq)
{
	size_t i;

	for (i = 0; i < q->n; i++)
		if (q->items[i].seq == seq && q->items[i].incarnation == incarnation)
			return (ssize_t)i;
	return -1;
}

static void queue_storage_state(struct publish_queue *q, int failing, const char *why)
{
	if (failing && !q->storage_failing)
		pr_warn("the aggregator cannot store batches (%s): keeping them, resent every 2 s",
			why);
	else if (!failing && q->storage_failing)
		pr_info("the aggregator stores batches again");
	q->storage_failing = failing;
}

int publish_queue_ack(struct publish_queue *q, uint64_t incarnation, uint64_t seq,
		      uint64_t *samples)
{
	ssize_t i = queue_find(q, incarnation, seq);

	if (i < 0)
		return 0;
	if (samples)
		*samples = q->items[i].samples;
	queue_remove(q, (size_t)i);
	queue_storage_state(q, 0, NULL);
	return 1;
}

int publish_queue_error(struct publish_queue *q, const Nunatak__Wire__Error *e)
{
	ssize_t i;
	int code = e->has_code ? e->code : 0;

	if (!e->has_seq)
		return 0;
	i = queue_find(q, e->has_incarnation ? e->incarnation : q->n ? q->items[0].incarnation : 0,
		       e->seq);
	if (i < 0)
		return 0;
	snprintf(q->loss.reason, sizeof(q->loss.reason), "%s", e->message ? e->message : "");
	if (wire_storage_error_transient(code)) {
		q->loss.code = code;
		queue_storage_state(q, 1, q->loss.reason);
		return 2;
	}
	pr_warn("aggregator refused batch %llu for good: %s", (unsigned long long)e->seq,
		q->loss.reason);
	q->loss.refused_samples += q->items[i].samples;
	q->loss.refused_batches++;
	queue_remove(q, (size_t)i);
	return 1;
}
