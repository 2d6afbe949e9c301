/* publish_queue — the Batches an Agent has built and the Aggregator has
 * not acknowledged yet, packed, in seq order, and what was lost.
 *
 * A Batch leaves the queue in one of three ways, each counted:
 *  - acknowledged: the Aggregator stored it (or had stored it before: a
 *    Batch is sent again unchanged, same seq, and storing is idempotent
 *    by (node, seq));
 *  - refused: the Aggregator said it will never store it (malformed,
 *    unknown Run): counted as refused;
 *  - dropped: the queue holds more than its byte cap, so the oldest Batch
 *    goes, counted as not stored (as is what publish_queue_abandon()
 *    empties at the end).
 * A storage error (disk full, I/O error) or no reply keeps the Batch: it
 * is sent again at the next flush. Invariant: the bytes queued stay under
 * the cap, except for the one newest Batch, which is always kept.
 * Every wait is bounded by the caller's wait_ms; nothing here blocks on a
 * send (ZMQ_DONTWAIT).
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

/* socket is borrowed (a DEALER connected to the Aggregator); cap_bytes 0:
 * PUBLISH_QUEUE_DEFAULT_CAP_BYTES. NULL + errno (ENOMEM). */
struct publish_queue *publish_queue__new(void *socket, size_t cap_bytes);
void publish_queue__free(struct publish_queue *q);

/* Packs env (a Batch) and appends it; drops the oldest Batches over the
 * cap. 0, -EINVAL (not a Batch), -ENOMEM. */
int publish_queue_push(struct publish_queue *q, wire_envelope *env);

/* Reads the replies already there, then sends the queued Batches oldest
 * first, each after the previous one's Ack, for at most wait_ms in all.
 * 0: the queue is empty; -ETIMEDOUT: no reply in time; -code: the
 * Aggregator could not store the oldest (kept, sent again next time);
 * -errno of the socket. */
int publish_queue_flush(struct publish_queue *q, int wait_ms);

size_t publish_queue_length(const struct publish_queue *q);
size_t publish_queue_bytes(const struct publish_queue *q);

/* Counts every queued Batch as not stored and empties the queue. */
void publish_queue_abandon(struct publish_queue *q);

const struct publish_loss *publish_queue_loss(const struct publish_queue *q);

#endif
