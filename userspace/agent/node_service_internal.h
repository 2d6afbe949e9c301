/* node_service_internal — what node_service.c (the loop, the clients),
 * node_service_run.c (the Runs) and node_service_status.c share. */
#ifndef NUNATAK_AGENT_NODE_SERVICE_INTERNAL_H
#define NUNATAK_AGENT_NODE_SERVICE_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "userspace/agent/node_service.h"
#include "userspace/control/control_server.h"
#include "userspace/wire/curve.h"

/* lingering processes are looked at this often */
#define NS_LINGER_POLL_MS 50
/* FINALIZE: how long the Aggregator waits for other nodes' last Batch */
#define NS_NODES_WAIT_MS 5000
/* a prolog Run's FINALIZE at this node's Epilog (design8 section 3) */
#define NS_EPILOG_BUDGET_MS 5000
#define NS_EPILOG_NODES_WAIT_MS 20000
#define NS_MAX_CLIENTS 1024
/* connections of one uid at a time (root: any): one user cannot take every
 * slot of NS_MAX_CLIENTS */
#define NS_MAX_CLIENTS_PER_UID 16
/* requests of one connection not answered yet: beyond, its next requests
 * are not read until a reply goes out (a run-end and the run-interrupt
 * sent while it waits are two) */
#define NS_MAX_PENDING 4
/* no descriptor left to accept with: the listening socket rests this long */
#define NS_LISTEN_PAUSE_MS 100
/* refused connections are said at most this often */
#define NS_REFUSED_WARN_MS 60000
/* requests read from one connection per turn of the loop */
#define NS_READS_PER_TURN 4
/* status: how long the Aggregators' STATUS answers are waited for */
#define NS_STATUS_WAIT_MS 1000

struct ns_client {
	int fd;
	struct control_peer peer;
	int dead;    /* a reply could not be sent: closed at the next turn */
	int pending; /* requests read and not answered yet */
	int reading; /* EPOLLIN is on (pending < NS_MAX_PENDING) */
	struct ns_client *next;
};

struct ns_status_link; /* node_service_status.c: one Aggregator's STATUS */
struct ns_status_wait;

enum ns_run_state {
	NS_RUN_STARTING, /* START sent, its Ack awaited */
	NS_RUN_ACTIVE,	 /* the application runs */
	NS_RUN_LINGER,	 /* run-end came: its other processes are waited for */
	NS_RUN_ENDING,	 /* agent_target_end() under way */
};

enum ns_run_kind {
	NS_RUN_PLAIN,  /* run-start: a process tree of the client's */
	NS_RUN_ATTACH, /* attach: a Slurm job's processes, a Run of its connection */
	NS_RUN_PROLOG, /* job-prolog: a Slurm job's processes, of no connection */
};

struct ns_run {
	struct node_service *ns;
	struct ns_client *client; /* NULL once its connection closed (a prolog Run: always) */
	char run_id[65];
	enum ns_run_kind kind;
	uint32_t job_id;   /* 0: not a job Run */
	uid_t attacher;	   /* attach: the uid that asked */
	struct ns_client *waiter; /* detach / job-prolog / job-epilog awaiting its answer */
	const char *waiter_request;
	const char *ended_by; /* attach: "run-end", "detach", "job-ended", "service-stop" */
	int end_asked;	      /* attach: its client's run-end is to be answered at the end */
	json_t *info;	      /* attach: the Ack's owner, job, frequency */
	long asked_hz;	      /* a job Run's asked frequency; 0 none */
	uid_t uid;
	gid_t gid;
	pid_t pid; /* the process of run-start */
	enum ns_run_state state;
	int interrupted, discard;
	long long linger_start_ms, linger_end_ms;
	json_t *exit_code; /* run-end's, or null */
	char end[32];	   /* run-end's "end" */
	int symbolizer_budget_ms;
	json_t *outlived; /* [{pid, comm}] */
	char run_dir[PATH_MAX];
	struct ns_run *next;
};

struct node_service {
	const struct config *cfg; /* NULL: defaults */
	struct agent *agent;
	void *zctx;
	int own_zctx;
	struct aggregator *agg;
	pthread_t agg_thread;
	int agg_started;
	char agg_endpoint[80];
	char **endpoints; /* the Aggregators the Agent publishes to */
	size_t n_endpoints;
	int curve; /* kp and server_public are set: CURVE to the Aggregators */
	struct curve_keypair kp;
	char server_public[CURVE_KEY_Z85_LEN + 1];
	char node[256];
	long frequency;
	int unwinder; /* enum sample_unwinder */
	const struct pmu_event_set *pmu; /* the sampling group asked for; NULL: the Machine's */
	int drain_interval_ms;
	int epfd, listen_fd, stop_fd, signal_fd, quiet;
	char control_path[108];
	struct ns_client *clients;
	size_t n_clients;
	struct ns_run *runs;
	struct ns_status_link *links; /* [n_endpoints], NULL until the first status */
	struct ns_status_wait *waits; /* status requests waiting for the Aggregators */
	long long listen_paused_until_ms; /* 0: listening */
	int refused;			  /* connections refused since the last warning */
	long long refused_warned_ms;
	long long listen_warned_ms;
	int stopping;
	long long stop_deadline_ms;
};

/* node_service_run.c */
/* a new Run of c (NULL: of no connection) with a fresh run_id, linked in
 * ns->runs; NULL on ENOMEM */
struct ns_run *ns_run_new(struct node_service *ns, struct ns_client *c);
void ns_run_free(struct ns_run *r);
/* the end of r's Target and FINALIZE; the answer ends in ns_job_ended()
 * for a job Run (which frees r) */
void ns_run_finish(struct ns_run *r);
int ns_run_start(struct node_service *ns, struct ns_client *c, json_t *req);
int ns_run_end(struct node_service *ns, struct ns_client *c, json_t *req);
int ns_run_interrupt(struct node_service *ns, struct ns_client *c, json_t *req);
/* the client's connection closed: its Runs end, interrupted */
void ns_runs_orphan(struct node_service *ns, struct ns_client *c);
/* every Run not ending is ended, interrupted (the service stops) */
void ns_runs_end_all(struct node_service *ns);
/* the lingering Runs: ended when their processes are gone or at the bound;
 * the ms until the next look, -1 none */
int ns_runs_tick(struct node_service *ns);
/* why an Aggregator's answer to a request of r failed (err < 0): its
 * Error's message (json), timeout_why at -ETIMEDOUT, else strerror(-err);
 * borrowed (json or a static text) */
const char *ns_answer_why(int err, const char *json, const char *timeout_why);
/* r->run_dir := the "run_dir" of an Ack (ack may be NULL); unchanged when it
 * has none */
void ns_run_take_run_dir(struct ns_run *r, const json_t *ack);
/* START's answer (err, json: agent_done_fn's) taken for r: 0 with r->run_dir
 * from the Ack and r ACTIVE; or err (< 0) replied to c's request with
 * ns_answer_why and r freed */
int ns_run_started(struct ns_run *r, struct ns_client *c, const char *request, int err,
		   const char *json, const char *timeout_why);

/* node_service_agg.c: the Aggregators the Agent publishes to, those of
 * [service] (sc may be NULL), else its own started; err says why not */
int ns_choose_endpoints(struct node_service *ns, const struct service_config *sc, char *err,
			size_t errlen);
/* its own Aggregator stopped (bounded) and freed */
void ns_aggregator_free(struct node_service *ns);

/* node_service_job.c: the job Runs' requests (node_service.h) */
int ns_attach(struct node_service *ns, struct ns_client *c, json_t *req);
int ns_detach(struct node_service *ns, struct ns_client *c, json_t *req);
int ns_job_prolog(struct node_service *ns, struct ns_client *c, json_t *req);
int ns_job_epilog(struct node_service *ns, struct ns_client *c, json_t *req);
/* a job Run's FINALIZE answered (err < 0: failed): its client and waiter
 * told; r freed */
void ns_job_ended(struct ns_run *r, int err, const char *json);

/* node_service_status.c: status asks every Aggregator at once over a
 * DEALER of its own (never waiting in the loop) and replies when all
 * answered or at NS_STATUS_WAIT_MS */
int ns_status(struct node_service *ns, struct ns_client *c, json_t *req);
/* takes the Aggregators' answers, replies to the status requests that are
 * complete or due; the ms until the next due one, -1 none */
int ns_status_tick(struct node_service *ns);
/* c's connection closed: its status requests are forgotten */
void ns_status_forget(struct node_service *ns, struct ns_client *c);
void ns_status_free(struct node_service *ns);

/* node_service.c: fd (readable) wakes the loop, which then runs its ticks */
int ns_watch_wakeup(struct node_service *ns, int fd);

/* node_service.c: sends a reply to c (NULL: dropped), takes its reference,
 * never waits: a client whose socket has no room for it (it does not read
 * its replies) is dropped at the next turn of the loop */
void ns_reply(struct node_service *ns, struct ns_client *c, const char *request, json_t *reply);
/* the same for a message the client did not ask for (a job Run's end):
 * its count of pending requests is left alone */
void ns_notify(struct node_service *ns, struct ns_client *c, const char *request, json_t *reply);

#endif
