/* aggregator — receives Batches from Agents over ZeroMQ (a ROUTER socket),
 * stores each exactly once in its Run's measured pivot, acknowledges it
 * only once it is durable (committed), and finalizes a Run when told; many
 * Runs at a time, from many Agents (nodes).
 *
 * Protocol (userspace/wire/nunatak.proto, contracts in issue 7's design):
 *  - Control START {"run": {...}, "runs_dir", "owner": {"uid","gid"},
 *    "symbolizer", "token"?, "frequency", "mpi_events"} creates the Run:
 *    <runs_dir>/<name>-YYYYMMDD-HHMMSS made AS THE OWNER (as_owner.h),
 *    pivot.sqlite, a first manifest.json (run_manifest.h); Ack.json
 *    {"run_id","run_dir"}. Errors carry code = errno (EACCES/EPERM: runs
 *    directory refused, ENOSPC, EEXIST: run_id in use by another owner,
 *    EINVAL: malformed). A START repeated for an open Run of the same owner
 *    is acknowledged again with its directory. With a token, Control OPEN
 *    goes to every Agent but the origin's, now and when one says Hello.
 *  - Batch: stored once by (run, node, incarnation, seq) and acked
 *    (Ack.incarnation); refused with an Error naming seq and incarnation.
 *    FINALIZE of a Run is accepted only from the Agent (CURVE key, the
 *    ZAP user id) that STARTed it.
 *  - Nodes and keys: with CURVE, a node name belongs to one Agent key (the
 *    ZAP user id), the first that named it; a Hello, Batch or Control
 *    naming another node than its key's is refused (EPERM), counted
 *    (counters.refused), never stored. A Batch of a Run is accepted from
 *    its origin node and the nodes it was OPENed to only (EPERM
 *    otherwise). Without authentication (in-process): no such checks.
 *  - Control FINALIZE {"exit_code","end","symbolizer_budget_ms",
 *    "interrupted","nodes_wait_ms"}: CLOSE to the Run's other nodes, a
 *    wait of up to nodes_wait_ms for their last Batch (a node missing:
 *    `node-lost`), then the finalize in a thread of its own (llvm-symbolizer
 *    spawned as the owner) while other Runs go on; Ack.json {"run_dir"}.
 *  - Job Runs (issue 8, aggregator_job.h): ATTACH {"job_id","credential",
 *    "run",...} checked in a worker thread (munge credential, the job in
 *    Slurm: running, the caller's or root's), the Run made for the job's
 *    owner in <work_dir>/.nunatak, Ack.json {"run_id","run_dir","owner",
 *    "job","frequency"}, OPEN {"job_id",...} to the job's other nodes, and
 *    CLOSE {"why":"job-ended"} to the origin once the job no longer runs.
 *    START with "job" {"id","nodes","mode":"prolog"}: the first job node
 *    makes the Run, the others join it; FINALIZE of each node's Epilog is
 *    acked at once ({"run_dir","pending_nodes"}) while nodes are pending,
 *    the last once finalized; nodes that never report are `nodes-missing`.
 *  - Hello: the Agent is tracked (no reply); STATUS: Ack.json (design; each
 *    Run with "job": {"id","mode","uid","user","nodes","since"} or null).
 *  - Ack and Error from Agents (answers to OPEN): noted, no reply.
 * Malformed, truncated, oversized (> AGGREGATOR_MAX_MESSAGE_BYTES) and
 * newer-major messages are refused with an Error, counted, and the
 * Aggregator goes on.
 */
#ifndef NUNATAK_AGGREGATOR_H
#define NUNATAK_AGGREGATOR_H

#include <stdint.h>

#define AGGREGATOR_MAX_MESSAGE_BYTES (64u << 20)

struct aggregator;

/* Runs whose owner is root (uid 0): the root of a compute node (who holds
 * its Agent key) must not write as root on the Aggregator's host */
enum aggregator_root_runs {
	/* refused (EPERM) from a CURVE-authenticated Agent, a remote one;
	 * served from an unauthenticated peer (the in-process Aggregator of
	 * nunatakd or of the CLI, where root is root already) */
	AGG_ROOT_RUNS_LOCAL = 0,
	AGG_ROOT_RUNS_ALLOWED, /* served from any Agent (--allow-root-runs) */
	AGG_ROOT_RUNS_REFUSED, /* refused from any (nunatak-aggregator --no-curve) */
};

struct aggregator_opts {
	void *router;		    /* a bound ROUTER socket, taken (closed at free) */
	const char *state_dir;	    /* NULL: no resume (embedded, nunatakd's own) */
	const char *endpoint_shown; /* for STATUS; NULL: "" */
	enum aggregator_root_runs root_runs;
	/* job Runs (issue 8): munged's socket for ATTACH credentials (NULL:
	 * munge's default) and the slurm.conf of job lookups (NULL:
	 * libslurm's); copied. Neither library is called before the first
	 * job request (ATTACH, or a START with "job"). */
	const char *munge_socket;
	const char *slurm_conf;
	/* a job Run whose job ended this long ago without being ended by its
	 * nodes (Epilogs; an attach's origin) is finalized, `nodes-missing`;
	 * 0: 60 s (the tests make it shorter) */
	int job_ended_grace_ms;
};

/* With state_dir: <state_dir>/open/ is made (0700) when missing, and every
 * Run left open there is reopened (its directory as its owner, its pivot):
 * Batches and FINALIZE after a restart land in it. A Run that cannot be
 * reopened is said (pr_warn) and forgotten. NULL + errno. */
struct aggregator *aggregator__new_opts(const struct aggregator_opts *o);
/* aggregator__new_opts() with the router only */
struct aggregator *aggregator__new(void *router_socket);
/* Stops the finalizes under way (as aggregator_interrupt) and waits for
 * them; the open Runs are closed, not finalized (their state files stay:
 * a next Aggregator resumes them). */
void aggregator__free(struct aggregator *agg);

/* Serve until a Run is finalized (once = 1), or until aggregator_stop()
 * (-ECANCELED; a message already waiting is served first), or until the
 * ZeroMQ context is terminated (-ETERM). 0 or -errno. */
int aggregator_serve(struct aggregator *agg, int once);

/* Both safe to call from another thread than the one serving, any time
 * between aggregator__new() and aggregator__free().
 *
 * aggregator_interrupt(): the finalizes under way (or the next one) stop
 * running llvm-symbolizer at once; addresses it did not name keep their
 * ELF names and the Run gets a run-interrupted Degradation. The finalize
 * still ends (measurements, manifest) and is acknowledged.
 * aggregator_stop(): the same, and aggregator_serve() returns. */
void aggregator_interrupt(struct aggregator *agg);
void aggregator_stop(struct aggregator *agg);

/* The count of Agents refused by the transport (the CURVE ZAP handler),
 * shown by STATUS as counters.agents_refused; fn(ctx) is called on the
 * serving thread. Before aggregator_serve(). */
void aggregator_set_refused_counter(struct aggregator *agg, uint64_t (*fn)(void *ctx), void *ctx);

#endif
