/* agent — the per-node collector: one Agent per node serves many Targets
 * (one per Run, or per token a Run's Aggregator OPENed here), drains what
 * the kernel aggregated into Batches, one Target's each, and publishes
 * them to the Aggregators over ZeroMQ (one DEALER per endpoint; the
 * embedded node service gives one `inproc://` endpoint).
 *
 * Event-driven, never blocking: the caller polls agent_fd() with
 * agent_timeout_ms() and calls agent_dispatch(), which applies kernel
 * reports, drains every drain_interval_ms, reads Acks/Errors/OPEN/CLOSE,
 * resends and spools. Callbacks (agent_done_fn) run inside
 * agent_dispatch() (or inside the call that starts the operation when it
 * can be answered at once, e.g. no sampling); they must not free the Agent.
 *
 * Targets: a Run's processes join by agent_target_follow, by a token
 * (NUNATAK_RUN in their environment) or, for a job Target, by their Slurm
 * job (its running processes at the start, later ones by their cgroup in
 * the kernel: agent_job.c). One-shot Controls (ATTACH) are
 * agent_control_request.
 *
 * A capability that is missing here (no BPF, perf_event_open refused, ...)
 * does not make agent__new() fail: it is a node-level Degradation carried
 * by every Target's Batches, and the Agent publishes what it can.
 *
 * Publishing, per Target: Batches queue in memory (queue_cap_bytes); one
 * is in flight, resent every AGENT_RESEND_MS with the same (incarnation,
 * seq) until its Ack; a storage error of the Aggregator (disk full) keeps
 * it, a refusal drops it and counts it (storage_refused_* counters). No
 * Ack for AGENT_RESEND_MS, or the memory queue over its cap: Batches go to
 * spool_dir (spool.h), within spool_cap_bytes; beyond it they are dropped,
 * counted, and the Run gets the `spool-full` Degradation. Spooled Batches
 * are replayed oldest first once the Aggregator answers again, also those
 * of an earlier incarnation of the Agent (found at agent__new()).
 *
 * Node-level kernel counters (samples dropped, stacks lost, ...) are
 * reported to each Target as their growth since it started: a loss while
 * several Targets run is reported to all of them. samples_sent and
 * batches_sent are the Target's own.
 *
 * Wire identity: incarnation is a nonzero u64 fixed at agent__new()
 * (CLOCK_REALTIME ns XOR getrandom); seq counts from 0 per Target. The
 * dedup key of a Batch is (run_id, node, incarnation, seq).
 */
#ifndef NUNATAK_AGENT_H
#define NUNATAK_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct agent;
struct curve_keypair; /* userspace/wire/curve.h */
struct pmu_event_set; /* userspace/agent/pmu_events.h */

#define AGENT_RESEND_MS 2000	      /* a Batch without Ack is resent, and spooled */
#define AGENT_HELLO_MS 1000	      /* Hello to every Aggregator */
#define AGENT_DRAIN_DEFAULT_MS 1000
#define AGENT_START_TIMEOUT_MS 5000   /* START without answer: done(-ETIMEDOUT) */
#define AGENT_END_EXTRA_MS 10000      /* agent_target_end bound beyond the FINALIZE budget */

struct agent_opts {
	const char *node;
	void *zmq_ctx;
	const char *const *endpoints; /* Aggregators; a Run goes to
				       * endpoints[agent_route(route key, n)], the key its
				       * run_id unless its Target names one (a job Run: the
				       * job id); OPEN comes from any, its Run goes back there */
	size_t n_endpoints;
	const struct curve_keypair *curve_self; /* NULL: no CURVE */
	const char *curve_server_public;	/* Z85 public key of the Aggregators */
	long frequency;			/* samples per second per CPU */
	size_t queue_cap_bytes;		/* per Target, in memory; 0: 64 MiB */
	const char *spool_dir;		/* NULL: no spool */
	uint64_t spool_cap_bytes;	/* 0: 1 GiB */
	int netns_only;	       /* token adoption only in this network namespace */
	int drain_interval_ms; /* 0: AGENT_DRAIN_DEFAULT_MS */
	int unwinder;	       /* enum sample_unwinder (bpf/sample.h): how user Stacks are walked */
	/* the sampling group's events (pmu_events.h); NULL: this Machine's,
	 * by its processor (/proc/cpuinfo). Borrowed; tests give software
	 * events standing in for the PMU's. */
	const struct pmu_event_set *pmu;
	/* the MPI probes' budget of a Target that gives none (a share, 0 <
	 * b < 1; 0: MPI_BUDGET_DEFAULT): the configuration's [mpi] budget */
	double mpi_budget;
};

/* Loads BPF once; no perf event is enabled until a Target exists. NULL +
 * errno (err says what) only when the Agent cannot exist at all (ENOMEM,
 * a socket, an endpoint refused, spool_dir unusable). */
struct agent *agent__new(const struct agent_opts *o, char *err, size_t errlen);
/* Targets still open are abandoned (their queue counted as lost on
 * stderr; their spooled Batches stay for the next incarnation). */
void agent__free(struct agent *a);

/* 1 when samples can be taken on this node */
int agent_sampling(const struct agent *a);
int agent_cpus(const struct agent *a);
uint64_t agent_incarnation(const struct agent *a);

/* Node-level Degradations; stops at cb's first non-zero return. */
int agent_for_each_degradation(const struct agent *a,
			       int (*cb)(const char *name, const char *message, const char *remedy,
					 void *ctx),
			       void *ctx);

/* FNV-1a 64 of run_id, mod n (n 0: 0) */
size_t agent_route(const char *run_id, size_t n);

/* err 0 success; json: Ack.json (may be NULL), or when err < 0 the
 * Aggregator's Error message / what failed (never NULL then). */
typedef void (*agent_done_fn)(void *ctx, int err, const char *json);

struct agent_target_opts {
	const char *run_id;	/* 32 lowercase hex (any [A-Za-z0-9_.-]{1,64} is accepted) */
	uid_t uid;		/* owner; 0 = any (root Target) */
	gid_t gid;
	int mpi_events;		/* every MPI call as an Event */
	/* the MPI probes' cost budget, a share of each rank's time (0 <
	 * b < 1; 0: MPI_BUDGET_DEFAULT; NAN: every call, --mpi-exact) */
	double mpi_budget;
	const char *target_exe; /* the program behind any launcher (MPI probing); NULL */
	/* Components (component_probes.h): patterns[0..n_components) and the
	 * step function (NULL: none; the whole run is one Step); borrowed */
	const char *const *components;
	size_t n_components;
	const char *step;
	const char *token;	/* NULL, or 32 hex: processes whose environment holds
				 * NUNATAK_RUN=<token> (and the owner's uid) join */
	const char *start_json; /* the START to send; NULL: no START (OPENed Target) */
	uint32_t job_id;	/* 0: none; else a job Target: Slurm job job_id's processes
				 * on this node join (agent_job_attach), owner uid/gid */
	const char *route_key;	/* NULL: run_id; the Target's Aggregator (START, Batches,
				 * last Batch, FINALIZE) is endpoints[agent_route(route_key, n)] */
	/* set: a CLOSE from the Aggregator for this Target is handed to
	 * closed() (the caller then ends the Run with agent_target_end)
	 * instead of ending the Target; json: the CLOSE's json ({"why":
	 * "job-ended"|...}, "{}" when it had none). Runs inside
	 * agent_dispatch(). */
	void (*closed)(void *ctx, const char *run_id, const char *json);
	void *closed_ctx;
};

/* The Components of a run-start request, req's "components" (absent, or
 * an array of at most AGENT_MAX_COMPONENTS non-empty strings) and "step"
 * (absent, or a non-empty string), into o (components pointing into
 * patterns[AGENT_MAX_COMPONENTS], strings borrowed from req) when o is
 * given. 0, or -EINVAL (nothing set). */
#define AGENT_MAX_COMPONENTS 64
int agent_components_of_json(const json_t *req, struct agent_target_opts *o,
			     const char **patterns);

/* Creates the Target (perf events enabled when it is the first) and
 * sends START when start_json is given. async: done(ctx, 0, Ack.json)
 * once START is acked, done(ctx, -ETIMEDOUT, ...) after
 * AGENT_START_TIMEOUT_MS, done(ctx, -code, message) on an Error (the
 * Target is then removed). Without start_json, done (may be NULL) is
 * called at once with 0. 0, or -EEXIST (run_id known), -EINVAL, -ENOMEM. */
int agent_target_start(struct agent *a, const struct agent_target_opts *o, agent_done_fn done,
		       void *ctx);
/* pid and its future descendants join the Target (call before it execs) */
int agent_target_follow(struct agent *a, const char *run_id, pid_t pid);
int agent_target_add_degradation(struct agent *a, const char *run_id, const char *name,
				 const char *message, const char *remedy);
/* The Target's processes seen start and not seen exit (as of the last
 * dispatch), in pid order, comm "" unknown; stops at cb's first non-zero
 * return and returns it. -ENOENT unknown run_id. */
int agent_target_for_each_live_process(struct agent *a, const char *run_id,
				       int (*cb)(pid_t pid, const char *comm, void *ctx),
				       void *ctx);
/* number of those; -ENOENT */
int agent_target_live_processes(struct agent *a, const char *run_id);
/* The end: drains, sends the last Batch (Batch.last, final counters) once
 * the queue is acked (or spooled/lost: counted in it), then FINALIZE with
 * finalize_json when given, and calls done() at its Ack (json: Ack.json)
 * or Error; without finalize_json done() at the last Batch's Ack. Bounded:
 * done(-ETIMEDOUT) after the FINALIZE json's symbolizer_budget_ms +
 * nodes_wait_ms + AGENT_END_EXTRA_MS. The Target is gone after done().
 * Batches still unacknowledged when AGENT_END_FLUSH_MS (agent_internal.h,
 * 3 s; 8 s when the Aggregator answered in the last 4 s) passed: lost and
 * counted in the last Batch when the Aggregator
 * answers (disk full), kept in the spool when it does not answer at all.
 * 0, -ENOENT, -EBUSY (START not acknowledged yet), -EALREADY (end under
 * way). */
int agent_target_end(struct agent *a, const char *run_id, const char *finalize_json,
		     agent_done_fn done, void *ctx);
/* The FINALIZE under way is to stop llvm-symbolizer (sent again with
 * "interrupted": true; one not sent yet goes with it) and done() comes
 * within AGENT_INTERRUPT_GRACE_MS (3 s) of FINALIZE, at most 6 s from now
 * when the last Batch is still on its way. 0, -ENOENT. */
int agent_target_interrupt(struct agent *a, const char *run_id);
/* 1 when run_id is a Target of this Agent */
int agent_target_exists(const struct agent *a, const char *run_id);

/* A one-shot Control (e.g. action NUNATAK__WIRE__CONTROL__ACTION__ATTACH)
 * with json for run_id to the Aggregator endpoints[agent_route(route_key
 * ? route_key : run_id, n)]: done(ctx, 0, Ack.json) at its Ack for run_id,
 * done(ctx, -code, Error.message) at an Error for run_id (without seq),
 * done(ctx, -ETIMEDOUT, "...") after timeout_ms (≤ 0: AGENT_START_TIMEOUT_MS).
 * Sent once (not resent); several may be outstanding (at most
 * AGENT_CONTROL_REQUESTS_MAX), but one per run_id. done runs inside
 * agent_dispatch(), never inside this call. 0, -EINVAL (run_id, action),
 * -EEXIST (one for run_id outstanding, or run_id is a Target), -EBUSY
 * (too many outstanding), -ENOMEM. An Error without run_id nor seq
 * answers the connection's START/FINALIZE in flight, else its oldest
 * request. Requests still outstanding at agent__free() are dropped
 * (done not called). agent_target_start of a run_id with a request
 * outstanding: -EEXIST (start it from done()). */
#define AGENT_CONTROL_REQUESTS_MAX 64
int agent_control_request(struct agent *a, int action, const char *run_id,
			  const char *route_key, const char *json, int timeout_ms,
			  agent_done_fn done, void *ctx);

/* epoll fd: readable when agent_dispatch() has work (kernel reports,
 * ZeroMQ sockets); always valid */
int agent_fd(const struct agent *a);
/* ms until the next timer (drain, resend, Hello, timeouts); -1 none */
int agent_timeout_ms(const struct agent *a);
/* Never blocks: 0 or -errno (fatal only: ENOMEM, ETERM). */
int agent_dispatch(struct agent *a);

/* {"node","incarnation","sampling","sampling_active" (perf events on: a
 *  Target exists),"cpus","endpoints":[{"endpoint",
 *  "connected":bool,"last_contact_ms":N|null}],"degradations":[...],
 *  "targets":[{"run_id","uid","processes","batches_sent","acked",
 *  "queued","spooled","dropped","samples_sent","state","job_id":J|null,"endpoint"}],
 *  "spool":{"dir","bytes","files"}}; NULL on ENOMEM. Caller decrefs. */
json_t *agent_status(const struct agent *a);

#endif
