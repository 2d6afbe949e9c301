/* node_service — the node's profiling service: one Agent (agent.h), its
 * control socket (userspace/control), and, when no Aggregator is
 * configured, an Aggregator of its own in a thread (inproc://). nunatakd
 * is one; `nunatak run` without a daemon runs one in a thread and talks to
 * it over a socketpair with the same protocol.
 *
 * One event loop (node_service_run) owns every descriptor: the listening
 * socket and its clients, the Agent's (agent_fd, agent_timeout_ms,
 * agent_dispatch), an eventfd for node_service_stop() and, in nunatakd, a
 * signalfd. Nothing in it blocks: START and FINALIZE are answered through
 * the Agent's callbacks, the wait for lingering processes is a timer.
 *
 * Requests (control.h), each decided by the SO_PEERCRED of its connection:
 *  run-start {"run": START.run facts, "runs_dir": abs, "symbolizer": abs|"",
 *	"target_exe": abs|null, "token": 32 hex, "pid": the gated child,
 *	"mpi_events": bool, "degradations": [{name,message,remedy}] (optional)}
 *	granted when the peer could debug pid itself (control_server.h:
 *	control_may_observe; root: any), looked at before and after its follow;
 *	the Run is owned by the peer's uid and gid, whatever the request says.
 *	→ {"ok", "reply":"run-start", "run_id", "run_dir", "sampling", "cpus",
 *	   "frequency", "degradations": [...]}
 *  run-end {"run_id", "exit_code": N|null, "end": ISO (optional),
 *	"linger_ms", "symbolizer_budget_ms", "discard": bool (optional: the
 *	application never ran)}: waits up to linger_ms for the Target's
 *	processes other than the one of run-start, names those left in a
 *	processes-outlived Degradation, ends the Target and replies when the
 *	Run is finalized: {"ok", "reply":"run-end", "run_dir", "outlived":
 *	[{pid, comm}], "interrupted": bool}
 *  run-interrupt {"run_id"}: the linger (if under way) ends now and the
 *	finalize runs without llvm-symbolizer; {"ok", "reply":"run-interrupt"}
 *  status {}: {"ok", "reply":"status", "agent": agent_status() with other
 *	users' Targets left out (root sees all), "aggregators": [STATUS...]}
 *	(each Aggregator asked at once, without waiting in the loop; one that
 *	does not answer within 1 s is {"endpoint", "error"})
 *
 * The Slurm job Runs (node_service_job.c; design8 sections 3 and 5):
 *  attach {"job_id": J, "credential": munge "nunatak attach job=J",
 *	"frequency": N|null (asked; the Agent samples every Target at the
 *	service's frequency, which ATTACH and START carry and the reply says),
 *	"name": N|null, "symbolizer": abs|"" (optional),
 *	"effective_configuration": {...} (optional), "symbolizer_budget_ms"
 *	(optional: at a detach or the job's end; 60 s)}: any user; ATTACH to
 *	the Aggregator of route key "J" (it checks the credential and asks
 *	Slurm whose job it is; ATTACH's "peer_uid" is the connection's uid,
 *	which munge's must be), at most 10 s; at most 2 attaches of a user
 *	and 48 of all users wait for it (EAGAIN beyond; root: any); its Ack
 *	makes a job Target
 *	owned by the job's owner. → {"ok", "reply":"attach", "run_id",
 *	"run_dir", "owner": {uid,gid,user}, "job": {id,name,nodes,work_dir},
 *	"frequency": what this node samples at (its configuration's, whatever
 *	was asked), "frequency_asked": N|null}; when they differ the Run gets
 *	the Degradation frequency-fixed; the Aggregator's Error as it is (EPERM: not the caller's
 *	job). One attach of a job per node service: EBUSY for a granted one,
 *	named only to root, the job's owner and its attacher (another user's
 *	not answered yet neither blocks nor is named). The Run is then a
 *	Run of the connection as a run-start's is (run-end with linger_ms 0,
 *	run-interrupt, the connection closing); it also ends at a detach or
 *	when its Aggregator CLOSEs it (the job ended), and the connection is
 *	then told unasked: {"ok", "reply":"run-end", "run_dir", "ended_by":
 *	"detach"|"job-ended"|"closed"|"service-stop"|"run-end", "interrupted",
 *	"outlived": [], "job"}.
 *  detach {"job_id"}: root, the job's owner or the uid that attached;
 *	ends the attach of J through this node service and replies once it
 *	is finalized {"ok", "reply":"detach", "run_dir"}; ENOENT "no attach
 *	of job J on this node".
 *  job-prolog {"job_id", "uid", "gid", "work_dir", "nodes": hostlist,
 *	"cluster", "frequency"|null, "symbolizer" (optional)}: root only (the
 *	Slurm Prolog). The prolog Run "job-<cluster>-<J>" (cluster kept to
 *	[A-Za-z0-9_-]): a job Target of route key "J" and START with "job"
 *	{"id","nodes","mode":"prolog"}, runs_dir <work_dir>/.nunatak made when
 *	missing; not bound to any connection. → once START is answered (5 s
 *	at most) {"ok", "run_id", "run_dir", "frequency" (this node's),
 *	"frequency_asked"} (frequency-fixed as for attach)
 *	("already": true when it runs).
 *  job-epilog {"job_id", "cluster", "exit_code"|null}: root only. This
 *	node's FINALIZE of the prolog Run ("job_epilog": true, the Aggregator
 *	waits 20 s for the other nodes'); → at its Ack {"ok", "run_dir",
 *	"pending_nodes": [...], "finalized": bool}, or {"ok", "none": true}
 *	when no prolog Run of J is here.
 *  The Aggregators' Runs in status carry "job" (design8 section 3).
 * The loop waits for no client: a reply that finds no room drops its client;
 * a connection has at most NS_MAX_PENDING requests unanswered, a uid at most
 * NS_MAX_CLIENTS_PER_UID connections (root: any).
 * Only the connection that started a Run may end or interrupt it. A
 * connection that closes with a Run not ended ends it, interrupted.
 */
#ifndef NUNATAK_AGENT_NODE_SERVICE_H
#define NUNATAK_AGENT_NODE_SERVICE_H

#include <stddef.h>

struct config;
struct node_service;
struct service_config;
struct pmu_event_set; /* userspace/agent/pmu_events.h */

/* how long node_service_run() gives the Runs still open at a stop */
#define NODE_SERVICE_STOP_WAIT_MS 15000

struct node_service_opts {
	const char *node;	   /* NULL: the host name */
	const char *control_path;  /* NULL: no listening socket (embedded) */
	const struct config *cfg;  /* sampling frequency; NULL: defaults */
	/* nunatakd's [service]: aggregators (none: one of its own), CURVE keys,
	 * spool, netns_only. NULL (embedded): its own Aggregator, no spool */
	const struct service_config *service;
	void *zmq_ctx;		   /* NULL: one of its own */
	int signal_fd;		   /* a signalfd whose INT/TERM stop the service; -1 none */
	int quiet;		   /* 1: Degradations and Runs are not logged (embedded) */
	int unwinder;		   /* enum sample_unwinder: how user Stacks are walked */
	int drain_interval_ms;	   /* 0: the Agent's default */
	const struct pmu_event_set *pmu; /* agent_opts.pmu: NULL this Machine's */
};

/* The Agent (BPF loaded once), the Aggregator thread when needed, the
 * listening socket (0666; the directory must exist). NULL + errno, err
 * says what and what to do. */
struct node_service *node_service__new(const struct node_service_opts *o, char *err,
				       size_t errlen);

/* A connected SOCK_SEQPACKET end (a socketpair's, for the embedded mode);
 * the service takes it. 0 or -errno (fd closed then). Before
 * node_service_run(), or from the thread running it. */
int node_service_add_client(struct node_service *ns, int fd);

/* The event loop, until node_service_stop() or a stop signal: then every
 * Run still open is ended, interrupted, and finalized (bounded by
 * NODE_SERVICE_STOP_WAIT_MS). 0, or -errno on a fatal error. */
int node_service_run(struct node_service *ns);

/* From any thread, or a signal handler. */
void node_service_stop(struct node_service *ns);

/* After node_service_run() returned (or never ran). NULL-safe. */
void node_service__free(struct node_service *ns);

#endif
