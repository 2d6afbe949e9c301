/* agent_internal — what the Agent's files share; not for other modules
 * (agent.h is the interface):
 *   agent.c         node level: BPF, modules, sideband, MPI probes,
 *                   hardware counters, kernel reports, processes
 *   agent_target.c  Targets: start, follow, end, status
 *   agent_publish.c one Target's Batch from what was drained
 *   agent_send.c    connections to the Aggregators: Hello, Controls,
 *                   Acks/Errors, OPEN/CLOSE
 *   agent_dispatch.c sending Batches, spool, the end's steps, dispatch,
 *                   timers, status
 *   agent_control.c one-shot Controls (agent_control_request)
 *   agent_orphans.c spooled Batches of no Target: to which Aggregator
 *   agent_job.c     job Targets: a Slurm job's processes (kern)
 */
#ifndef NUNATAK_AGENT_INTERNAL_H
#define NUNATAK_AGENT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/unwinder.h"
#include "userspace/launch/rank_identity.h"

#define AGENT_TOKEN_LEN 32
#define AGENT_INTERRUPT_GRACE_MS 3000
#define AGENT_END_FLUSH_MS 3000 /* the end waits this long for the queue's Acks */
/* ... and this long when the Aggregator answered lately: storing a last
 * Batch of 10 000 new deep Stacks takes it 3 s and more on a loaded 2-core
 * node, and an Aggregator that is alive is worth waiting for */
#define AGENT_END_FLUSH_LIVE_MS 8000
#define AGENT_FINALIZE_RESEND_MS 5000 /* FINALIZE without answer is sent again */
#define AGENT_TABLES_WAIT_MS 2000 /* a Run's start waits this long for its program's unwind tables */
#define AGENT_RETRY_MS 100 /* a send the socket refused (no Aggregator) is tried again */

struct spool;
struct batch_builder;
struct batch_locus;
struct module;

struct pending_degradation {
	char *name, *message, *remedy;
};

struct degradation_list {
	struct pending_degradation *items;
	size_t n;
};

struct drained_sample {
	struct sample_key key;
	struct sample_value value;
	int stack_lost; /* stack holds the leaf alone */
	struct stack_value stack;
};

/* what the Agent knows of one observed process beyond its mappings */
struct process_info {
	pid_t tgid;
	uint32_t target_id;	       /* 0: not known yet */
	struct rank_identity identity; /* read from its environment at exec */
	uint64_t exit_ns;	       /* 0: running */
};

enum target_state {
	TARGET_STARTING,   /* START sent (or to send), no Ack yet */
	TARGET_ACTIVE,	   /* publishing */
	TARGET_ENDING,	   /* last Batch queued: waiting for the queue to empty */
	TARGET_FINALIZING, /* FINALIZE sent, waiting for its Ack */
	TARGET_DONE,	   /* done() called: freed at the end of the dispatch */
};

/* node-level kernel counters when the Target started: a Run reports the
 * growth since then */
struct counter_base {
	struct sampler_counters s;
	struct unwinder_stats u;
	uint64_t mapping_lost;
	uint64_t mpi[MPI_COUNTERS];
	uint64_t components[COMPONENT_COUNTERS];
};

struct agent_target {
	struct agent_target *next;
	struct agent *a;
	char *run_id;
	uint32_t id; /* Target id in BPF */
	uid_t uid;
	gid_t gid;
	int mpi_events;
	double mpi_budget; /* agent_target_opts.mpi_budget */
	int components; /* registered with the Component probes */
	char token[AGENT_TOKEN_LEN + 1]; /* "" none */
	size_t conn;			 /* its Aggregator: a->conns[conn] */
	enum target_state state;
	int opened;			 /* OPENed by an Aggregator: no START/FINALIZE */
	uint32_t job_id;		 /* 0: none; else a job Target (agent_job.c) */
	int job_attached;		 /* agent_job_attach succeeded: detach at the end */
	void (*closed)(void *ctx, const char *run_id, const char *json);
	void *closed_ctx;
	int close_handed;		 /* a CLOSE was handed to closed() (once) */
	agent_done_fn done;
	void *done_ctx;
	char *control_json; /* START or FINALIZE json to send */
	int control_action; /* 0: none pending */
	long long control_sent_ms, deadline_ms;
	int interrupted, interrupt_sent;
	int last_queued;	/* ENDING: the last Batch is queued */
	long long flush_deadline_ms; /* ENDING: what is not acked by then is lost */
	long long end_ms;	     /* when ENDING began */
	char *finalize_json;
	struct publish_queue *queue;
	uint64_t seq;
	int spooling; /* Batches go to the spool until its entries of this Target are replayed */
	/* the Batch in flight: the oldest spooled one of t, else its queue's head */
	int inflight_valid, inflight_from_spool;
	uint64_t inflight_seq;
	long long inflight_sent_ms;  /* last send; 0 not sent (yet: the socket refused) */
	long long inflight_first_ms; /* first attempt: no Ack since then */
	long long retry_ms;	     /* the socket refused: next attempt */
	uint64_t samples_sent, batches_sent, batches_acked, batches_spooled;
	uint64_t spool_dropped_batches, spool_dropped_samples;
	uint64_t drained_lost;
	struct counter_base base;
	struct degradation_list degradations;
	struct task_event *exits;
	size_t n_exits, cap_exits;
	struct drained_sample *drained;
	size_t n_drained, cap_drained;
	struct mpi_event *mpi_events_buf;
	size_t n_mpi_events, cap_mpi_events;
};

/* a one-shot Control (agent_control_request), answered by an Ack or an
 * Error for its run_id, or timed out */
struct agent_request {
	struct agent_request *next;
	char *run_id, *json;
	int action;
	size_t conn;
	agent_done_fn done;
	void *ctx;
	long long deadline_ms;
	long long sent_ms;  /* 0: not sent yet (no Aggregator connected) */
	long long retry_ms; /* not sent: next attempt */
};

/* where the spooled Batches of a Run without Target go (agent_orphans.c):
 * the Aggregator of its ended Target (a route key), or the next one
 * after an Aggregator that does not know the Run */
struct agent_orphan_route {
	char run_id[72];
	uint64_t incarnation;
	size_t conn, tried;
};

/* one DEALER per Aggregator endpoint */
struct agent_conn {
	char *endpoint;
	void *socket;
	int fd;			  /* ZMQ_FD, in the epoll set */
	long long last_contact_ms; /* last message received; 0 never */
	long long next_hello_ms;
	int connected;		  /* the last Hello could be sent */
	struct agent_target *control_owner; /* the Target whose Control is in flight */
	/* a Batch of an earlier incarnation (spool) in flight */
	int orphan_in_flight;
	char orphan_run_id[72];
	uint64_t orphan_incarnation, orphan_seq;
	long long orphan_sent_ms;
	long long orphan_scan_ms; /* next look for one */
};

/* 1 when the Aggregator of c sent something within two resend periods */
static inline int agent_conn_answering(const struct agent_conn *c, long long now)
{
	return c->last_contact_ms && now - c->last_contact_ms < 2 * AGENT_RESEND_MS;
}


struct agent {
	struct agent_opts opts;
	char *node;
	uint64_t incarnation;
	char *machine_json;
	struct agent_conn *conns;
	size_t n_conns;
	struct spool *spool;
	struct mpi_probes *mpi;
	/* the MPI probes' load, in a thread beside the sampling program's */
	pthread_t mpi_thread;
	int mpi_loading;       /* mpi_thread runs (or ran, not joined) */
	struct mpi_probes *mpi_loaded; /* its result, NULL with mpi_err */
	int mpi_targets_fd;            /* the sampler's Target set, for it */
	char mpi_err[256];
	struct component_probes *components; /* loaded by the first Target with Components */
	struct hardware_counters *hw;
	void *processes; /* tsearch tree of struct process_info, by tgid */
	struct sampler *sampler;
	struct module_table *modules;
	struct sideband *sideband;
	struct unwinder *unwinder;             /* NULL: frame pointers, or no tables */
	struct kernel_symbols *kernel_symbols; /* NULL: kernel frames stay unnamed */
	int kernel_symbols_read;	       /* its Degradation said, at the first kernel frame */
	int kernel_symbols_reading;	       /* kernel_symbols_thread runs (or ran, not joined) */
	int kernel_symbols_err;		       /* why kernel_symbols is NULL */
	pthread_t kernel_symbols_thread;
	int epoll_fd;
	int active;	 /* perf events enabled */
	struct degradation_list degradations; /* node level */
	const struct pmu_event_set *pmu_asked; /* agent_pmu.c: the group asked, NULL: none */
	int pmu_refused_err;                   /* its -errno when it failed on a CPU */
	char pmu_refused[256];                 /* and sampler__new's words then */
	struct agent_target *targets;
	struct agent_request *requests; /* agent_control.c */
	size_t n_requests;
	struct agent_orphan_route *orphan_routes; /* agent_orphans.c */
	size_t n_orphan_routes;
	uint32_t next_target_id;
	long long next_drain_ms;
	int mpi_installed_probed; /* the MPI libraries installed were probed */
};

/* agent.c */
/* the kernel's unwind tables and process mappings up to date with the
 * module table (unwinder_sync) */
void agent_unwinder_sync(struct agent *a);
/* agent_pmu.c: the sampling group to ask for (agent_opts.pmu, else this
 * Machine's; NULL: none), remembered; nothing said yet */
const struct pmu_event_set *agent_pmu_choose(struct agent *a);
/* once the sampler exists (never without: bpf-denied says it all), the
 * Degradation of the counters it does not sample (pmu_cause.h), or their
 * caveat */
void agent_pmu_degradations(struct agent *a);
/* 1 when sampler__new's err (errnum its errno) says the group's events
 * could not be opened on every CPU (kept for agent_pmu_degradations): the
 * caller tries without */
int agent_pmu_refused(struct agent *a, const char *err, int errnum);
/* the kernel's symbols (read by a thread from the Agent's start on,
 * waited for at the first kernel frame); NULL when they cannot be read
 * (a node Degradation) */
struct kernel_symbols *agent_kernel_symbols(struct agent *a);
int degradation_list_add(struct degradation_list *l, const char *name, const char *message,
			 const char *remedy);
void degradation_list_free(struct degradation_list *l);
int agent_add_node_degradation(struct agent *a, const char *name, const char *message,
			       const char *remedy);
int agent_process_info_cmp(const void *a, const void *b);
struct process_info *agent_process_info(struct agent *a, pid_t tgid, int create);
void agent_process_info_delete(struct agent *a, pid_t tgid);
/* the Target process tgid belongs to, NULL when none */
struct agent_target *agent_target_of_tgid(struct agent *a, pid_t tgid);
struct agent_target *agent_target_by_id(struct agent *a, uint32_t id);
struct agent_target *agent_target_find(const struct agent *a, const char *run_id);
/* Applies pending kernel reports (mappings, exec, exit, MPI Events). */
int agent_process_events(struct agent *a);
/* drains the kernel maps into each Target's drained samples */
int agent_drain_all(struct agent *a);
/* perf events on when ≥1 Target exists */
void agent_update_active(struct agent *a);
int agent_sampler_add_target(struct agent *a, pid_t tgid, struct agent_target *t);
void agent_sampler_remove_target(struct agent *a, struct agent_target *t);
/* the owner's uid as BPF wants it (TARGET_UID_ANY for a root Target) */
uint32_t agent_target_uid(const struct agent_target *t);

/* agent_components.c */
/* t's Components (o->components, o->step): the probes loaded at the first,
 * t's patterns registered, the modules known searched; what fails is a
 * Degradation of t. 0 or -ENOMEM. */
int agent_components_start(struct agent *a, struct agent_target *t,
			   const struct agent_target_opts *o);
/* t's patterns forgotten (the probes released after the last Target's) */
void agent_components_end(struct agent_target *t);
/* process tgid maps module m (module_table_on_mapping): probed where the
 * patterns of tgid's Target name its functions */
void agent_components_mapped(pid_t tgid, struct module *m, void *agent);
/* t's Component costs and Steps (not in the last Batch), the probe cost
 * and losses as counters; in the last Batch the Degradations
 * component-costs-lost and component-not-found */
int agent_add_components(struct agent_target *t, struct batch_builder *b, int last);

/* agent_publish.c */
/* the Locus of thread tid of process tgid, as the Agent knows it */
void agent_locus(struct agent *a, pid_t tgid, pid_t tid, struct batch_locus *l);
/* Builds t's next Batch from what was drained for it and queues it (or
 * spools it). last 1: the final Batch (counters and Degradations only). */
int agent_target_queue_batch(struct agent_target *t, int last);
/* forget what t's published Batch holds (exits, MPI Events) */
void agent_target_forget_published(struct agent_target *t);
/* Says on stderr what never reached the Run. */
void agent_target_report_loss(struct agent_target *t);

/* agent_target.c */
/* [A-Za-z0-9_.-], 1 to SPOOL_RUN_ID_MAX: it names spool files */
int agent_valid_run_id(const char *run_id);
struct agent_target *agent_target_new(struct agent *a, const struct agent_target_opts *o,
				      size_t conn);
void agent_target_free(struct agent_target *t);
/* done() once; the Target is freed after the dispatch */
void agent_target_finish(struct agent_target *t, int err, const char *json);
void agent_targets_reap(struct agent *a);
json_t *agent_target_status(const struct agent_target *t);

/* agent_job.c */
/* The job Target t (t->job_id set) takes job J's processes: registers
 * "job_<J>" in BPF (new processes join at exec/fork), then adopts the
 * running ones (job_processes_for_each) whose credentials t's owner has
 * (the BPF rule, checked from /proc/PID/status and dumpability; a root
 * Target: any), each handled as an adoption at exec (agent_adopt_running).
 * Returns the number adopted or -errno (-ENOSPC: MAX_JOBS, -EEXIST: job J
 * has a Target already). Called by agent_target_start (also at OPEN with
 * a job) when the Agent samples. */
int agent_job_attach(struct agent *a, struct agent_target *t);
/* unregisters job J (no new process joins); at the Target's end, before
 * its last drain. No-op when t->job_id is 0. */
void agent_job_detach(struct agent *a, struct agent_target *t);

/* agent_events.c */
/* A running process tgid that userspace put into Target t
 * (agent_job_attach): what an adoption at exec does (its mappings read
 * from /proc, its rank identity from its environ, hardware counters, MPI
 * probes when it maps a libmpi). */
void agent_adopt_running(struct agent *a, struct agent_target *t, pid_t tgid);

/* agent_send.c */
int agent_conns_open(struct agent *a, char *err, size_t errlen);
void agent_conns_close(struct agent *a);
/* sends what can be sent now for every Target and connection */
int agent_send_all(struct agent *a);
/* reads every message waiting on every connection */
int agent_read_all(struct agent *a);
/* moves t's Batch (taken from its queue) to the spool or counts it lost */
void agent_spool_batch(struct agent_target *t, struct queued_batch *qb);
int agent_conn_readable(const struct agent_conn *c);
/* Hellos due and the next Control of each connection */
void agent_conns_tick(struct agent *a, long long now);
/* one frame, ZMQ_DONTWAIT: 0, -EAGAIN (no Aggregator connected), -errno */
int agent_conn_send_buf(struct agent_conn *c, const void *buf, size_t len);
long long agent_send_next_timer(const struct agent *a);
/* a Hello, a Control on c, ZMQ_DONTWAIT: 0, -EAGAIN (not connected), -errno */
int agent_conn_hello(struct agent *a, struct agent_conn *c);
int agent_conn_control(struct agent *a, struct agent_conn *c, int action, const char *run_id,
		       const char *json);

/* agent_orphans.c: spooled Batches that belong to no Target of this
 * Agent (an earlier incarnation's, or a Target that ended unacked) */
/* one in flight per connection, removed at its Ack or refusal */
void agent_send_orphans(struct agent *a, long long now);
/* t ends with Batches in the spool: they go where t's went */
void agent_orphans_remember(struct agent_target *t);
/* 1 when the Error e on c about its orphan in flight sends that Run's
 * Batches to the next Aggregator (this one does not know the Run) */
int agent_orphan_refused(struct agent *a, struct agent_conn *c, const Nunatak__Wire__Error *e);
void agent_orphans_free(struct agent *a);

/* agent_control.c: the one-shot Controls (agent_control_request) */
/* sends those not sent yet; done(-ETIMEDOUT) for those past their deadline */
void agent_requests_tick(struct agent *a, long long now);
/* 1 when ack (on c) answers a request (done called), else 0 */
int agent_requests_on_ack(struct agent *a, const struct agent_conn *c,
			  const Nunatak__Wire__Ack *ack);
/* 1 when e (on c, without seq) answers a request: the one of its run_id;
 * without run_id, when any_run: the oldest request sent on c */
int agent_requests_on_error(struct agent *a, const struct agent_conn *c,
			    const Nunatak__Wire__Error *e, int any_run);
/* 1 when run_id is a request outstanding */
int agent_request_exists(const struct agent *a, const char *run_id);
long long agent_requests_timer(const struct agent *a);
/* dropped, done not called (agent__free) */
void agent_requests_free(struct agent *a);

#endif
