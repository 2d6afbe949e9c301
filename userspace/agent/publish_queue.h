/* publish_queue — one Target's Batches the Aggregator has not
 * acknowledged yet, packed, oldest first, and what was lost.
 *
 * No socket and no wait here: the Agent sends the head (agent_send.c),
 * at most one in flight, and tells the queue what the Aggregator
 * answered. A Batch leaves the queue in one of four ways, each counted:
 *  - acknowledged (publish_queue_ack): stored by the Aggregator, or
 *    stored before (a resent Batch is the very same bytes, same
 *    incarnation and seq, and storing is idempotent);
 *  - refused (publish_queue_error with a final code): the Aggregator will
 *    never store it (malformed, unknown Run): counted as refused;
 *  - taken (publish_queue_take_oldest): handed to the spool, which now
 *    owns it;
 *  - dropped (publish_queue_drop_oldest, publish_queue_abandon): counted
 *    as not stored (storage_failed_*).
 * A storage error (disk full, I/O error) keeps the Batch: it is resent.
 */
#ifndef NUNATAK_AGENT_PUBLISH_QUEUE_H
#define NUNATAK_AGENT_PUBLISH_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "userspace/wire/wire.h"

#define PUBLISH_QUEUE_DEFAULT_CAP_BYTES (64u << 20)

struct publish_queue;

/* what did not reach the Run, running totals */
struct publish_loss {
	uint64_t failed_samples, failed_batches;   /* dropped or abandoned */
	uint64_t refused_samples, refused_batches; /* refused by the Aggregator */
	int code;	     /* last storage errno the Aggregator gave; ETIMEDOUT: no reply */
	char reason[256];    /* the Aggregator's last refusal or storage error, "" none */
};

struct queued_batch {
	uint64_t incarnation, seq;
	void *buf; /* the packed Envelope, sent as it is every time */
	size_t len;
	uint64_t samples;   /* Σ sample_count of the Batch */
	long long sent_ms;  /* clock_monotonic_ms() of its last send; 0: not sent */
	long long first_sent_ms; /* of its first send; 0: never sent */
	int last;	    /* Batch.last */
};

/* cap_bytes 0: PUBLISH_QUEUE_DEFAULT_CAP_BYTES. NULL + errno (ENOMEM). */
struct publish_queue *publish_queue__new(size_t cap_bytes);
void publish_queue__free(struct publish_queue *q);

/* Packs env (a Batch) and appends it. 0, -EINVAL (not a Batch), -ENOMEM. */
int publish_queue_push(struct publish_queue *q, wire_envelope *env);
/* Appends an already packed Batch (buf is taken on success). */
int publish_queue_push_packed(struct publish_queue *q, const struct queued_batch *qb);

/* the oldest Batch (the one to send), NULL when empty */
struct queued_batch *publish_queue_head(struct publish_queue *q);
size_t publish_queue_length(const struct publish_queue *q);
size_t publish_queue_bytes(const struct publish_queue *q);
/* 1 when the bytes queued exceed the cap and more than one Batch is kept */
int publish_queue_over_cap(const struct publish_queue *q);

/* The Ack of (incarnation, seq): 1 when it named a queued Batch (removed,
 * *samples its samples when samples is not NULL), 0 otherwise. */
int publish_queue_ack(struct publish_queue *q, uint64_t incarnation, uint64_t seq,
		      uint64_t *samples);
/* An Error naming (incarnation, seq): 0 when it names no queued Batch;
 * 1 refused for good (removed, counted); 2 storage error (kept). */
int publish_queue_error(struct publish_queue *q, const Nunatak__Wire__Error *e);

/* Moves the oldest out into *out (the caller owns out->buf). -ENOENT empty. */
int publish_queue_take_oldest(struct publish_queue *q, struct queued_batch *out);
/* Drops the oldest, counted as not stored. */
void publish_queue_drop_oldest(struct publish_queue *q);
/* Counts every queued Batch as not stored and empties the queue. */
void publish_queue_abandon(struct publish_queue *q);
/* Counts a Batch refused for good that was not queued (a spooled one). */
void publish_queue_count_refused(struct publish_queue *q, uint64_t samples, const char *reason);
/* Counts a Batch that never was queued (the spool dropped it) as not stored. */
void publish_queue_count_lost(struct publish_queue *q, uint64_t samples, int code);

const struct publish_loss *publish_queue_loss(const struct publish_queue *q);
/* 1 while the Aggregator says it cannot store (logged once per change) */
int publish_queue_storage_failing(const struct publish_queue *q);

#endif
