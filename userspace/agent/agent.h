/* agent — the per-node collector: follows Target processes, drains what
 * the kernel aggregated into Batches and publishes them to the Aggregator
 * over ZeroMQ (a DEALER socket; `inproc://` in `nunatak run`).
 *
 * A capability that is missing here (no BPF, perf_event_open refused, ...)
 * does not make agent__new() fail: it becomes a Degradation carried by the
 * next Batch, and the Agent publishes what it can (possibly nothing but the
 * Degradations). A Batch is kept and sent again until the Aggregator
 * acknowledges it.
 */
#ifndef NUNATAK_AGENT_H
#define NUNATAK_AGENT_H

#include <stdint.h>
#include <sys/types.h>

struct agent;

struct agent_opts {
	const char *run_id;
	const char *node;
	const char *endpoint; /* ZeroMQ endpoint of the Aggregator */
	void *zmq_ctx;
	long frequency;       /* samples per second per CPU */
	int ack_timeout_ms;   /* per try; 3 tries */
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
 * or agent_publish(): a double-forked grandchild counts, threads do not.
 * 0 when nothing is observed (no sampling). */
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

/* Drain, build one Batch, send it and wait for its Ack. A Batch left
 * without Ack is kept and sent again, unchanged, at the next call, before
 * a new one. 0, -ETIMEDOUT (no Ack after 3 tries), -errno. */
int agent_publish(struct agent *a);

#endif
