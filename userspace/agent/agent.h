/* agent — the per-node collector: follows Target processes, drains what
 * the kernel aggregated into Batches and publishes them to the Aggregator
 * over ZeroMQ (a DEALER socket; `inproc://` in `nunatak run`).
 *
 * A capability that is missing here (no BPF, perf_event_open refused, ...)
 * does not make agent__new() fail: it becomes a Degradation carried by the
 * next Batch, and the Agent publishes what it can (possibly nothing but the
 * Degradations).
 *
 * Publishing never blocks for long: a Batch the Aggregator has not
 * acknowledged yet (no reply, or it could not store it: disk full) is kept
 * in memory, within a byte cap, and sent again unchanged (same seq) at the
 * next publish, oldest first; over the cap the oldest is dropped. What
 * was dropped, refused or still unstored at the end is counted
 * (storage_failed_samples/_batches, storage_refused_samples/_batches in
 * later Batches' counters, which the Aggregator turns into the
 * storage-failed Degradation) and said on stderr when even that could not
 * be stored: never lost silently. See publish_queue.h.
 */
#ifndef NUNATAK_AGENT_H
#define NUNATAK_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct agent;
struct publish_loss;

#define AGENT_ACK_WAIT_DEFAULT_MS 2000
#define AGENT_ACK_WAIT_MAX_MS 5000
#define AGENT_FINISH_WAIT_DEFAULT_MS 3000

struct agent_opts {
	const char *run_id;
	const char *node;
	const char *endpoint; /* ZeroMQ endpoint of the Aggregator */
	void *zmq_ctx;
	long frequency;       /* samples per second per CPU */
	int ack_timeout_ms;   /* longest agent_publish() waits for Acks; 0: default,
			       * at most AGENT_ACK_WAIT_MAX_MS */
	size_t queue_cap_bytes; /* Batches kept unacknowledged; 0: 64 MiB */
	int mpi_events;       /* record every MPI call as an Event */
	const char *target_exe; /* the program behind any launcher; NULL unknown */
};

/* NULL + errno only when the Agent cannot exist at all (ENOMEM, socket) */
struct agent *agent__new(const struct agent_opts *opts);
void agent__free(struct agent *a);

/* 1 when samples are being taken */
int agent_sampling(const struct agent *a);
int agent_cpus(const struct agent *a);

/* Observe pid and its future descendants (call before it execs). */
int agent_follow(struct agent *a, pid_t pid);

int agent_add_degradation(struct agent *a, const char *name, const char *message,
			  const char *remedy);

/* Calls cb for every Degradation known so far (to announce them before
 * the application starts); stops at cb's first non-zero return. */
int agent_for_each_degradation(const struct agent *a,
			       int (*cb)(const char *name, const char *message, const char *remedy,
					 void *ctx),
			       void *ctx);

/* Target processes the Agent has seen start (followed, forked or
 * exec'd) and not yet seen exit; -errno. Learnt from the kernel's FORK
 * records and process exit reports as of the last agent_process_events()
 * or agent_publish(): a double-forked grandchild counts, threads do not;
 * a process stops counting at its exit (not at its reaping), and one
 * whose exit report was lost stops when the kernel no longer knows it. 0 when nothing is observed (no sampling). */
int agent_live_processes(const struct agent *a);
/* Calls cb(pid, comm, ctx) for each of those processes, in pid order
 * (comm "" when unknown); stops at cb's first non-zero return and returns
 * it; 0 otherwise. */
int agent_for_each_live_process(const struct agent *a,
				int (*cb)(pid_t pid, const char *comm, void *ctx), void *ctx);

/* fd to poll for pending kernel reports; -1 when nothing is observed */
int agent_fd(const struct agent *a);
/* Apply pending kernel reports (mappings, exec, exit). 0 or -errno. */
int agent_process_events(struct agent *a);

/* Drain, build one Batch, queue it, and send the queued Batches oldest
 * first for at most ack_timeout_ms. A Batch not acknowledged in that time
 * stays queued: that is not an error. 0, or -errno when no Batch could be
 * built (ENOMEM) or the socket failed. */
int agent_publish(struct agent *a);

/* The end of the Run, to call before FINALIZE: publishes what is left,
 * retries the queue for up to wait_ms (0: AGENT_FINISH_WAIT_DEFAULT_MS) in
 * all, counts what is still unstored, and sends a last small Batch with
 * the final counters (Batch.last: the Aggregator may use its storage
 * reserve for it). When that one is not stored either, the loss is said
 * on stderr as the storage-failed Degradation. Later calls do nothing.
 * 0: everything stored; -errno (ENOSPC, ...): samples were lost, counted
 * in the Run; -ETIMEDOUT or the storage error when even the count is not
 * in the Run. */
int agent_finish(struct agent *a, int wait_ms);

/* Batches queued, not acknowledged yet */
size_t agent_unacknowledged(const struct agent *a);
/* what did not reach the Run so far (publish_queue.h) */
const struct publish_loss *agent_loss(const struct agent *a);

#endif
