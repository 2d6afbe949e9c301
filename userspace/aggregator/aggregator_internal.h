/* aggregator_internal — what the aggregator*.c files share; not for other
 * modules.
 *
 * Threads: the serving thread (aggregator_serve) owns the socket, the
 * table of Runs and the table of Agents. A Run being finalized belongs to
 * its finalize thread from the moment it starts (pivot, directory,
 * manifest) until the serving thread joins it (done_fd), which then
 * answers FINALIZE and closes the Run.
 */
#ifndef NUNATAK_AGGREGATOR_INTERNAL_H
#define NUNATAK_AGGREGATOR_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <zmq.h>

#include "userspace/aggregator/aggregator.h"
#include "userspace/wire/wire.h"

#define AGG_ROUTING_ID_MAX 256
#define AGG_NODES_WAIT_DEFAULT_MS 5000
#define AGG_NODES_WAIT_MAX_MS 600000
/* the room kept for the end of a Run (agg_storage_reserve) */
#define STORAGE_RESERVE_BYTES (512 * 1024)

struct agg_job;
struct agg_worker;

/* a ZeroMQ routing id: who to answer */
struct agg_peer {
	unsigned char id[AGG_ROUTING_ID_MAX];
	size_t len;
	/* who the transport says it is: its CURVE public key (the ZAP
	 * handler's user id), "" without authentication */
	char key[48];
};

/* A node that has a Run: OPENed, or sent Batches of it */
struct agg_node {
	char *name;
	int opened;	   /* OPEN sent */
	int sent_batch;	   /* a Batch of it stored */
	int sent_last;	   /* its last Batch (Batch.last) stored */
	int joined;	   /* a node of a prolog job Run that STARTed it */
	time_t last_batch; /* wall clock of its latest Batch, 0: none */
};

enum agg_run_state {
	RUN_COLLECTING, /* Batches stored */
	RUN_CLOSING,	/* FINALIZE received: CLOSE sent, waiting for last Batches */
	RUN_FINALIZING, /* its finalize thread runs */
};

struct agg_run {
	struct agg_run *next;
	struct aggregator *agg;
	char *run_id, *run_dir, *origin, *symbolizer;
	char origin_key[48]; /* the key of the Agent that STARTed it: FINALIZE is its */
	char token[33];	     /* "" none */
	uid_t uid;
	gid_t gid;
	long frequency;
	int mpi_events;
	struct pivot *pivot;
	int dir_fd; /* the Run directory, opened as the owner and locked */
	json_t *manifest;
	struct agg_node *nodes;
	size_t n_nodes;
	struct agg_job *job; /* NULL: not a job Run (aggregator_job.h) */
	uint64_t batches, samples;
	enum agg_run_state state;
	/* FINALIZE; requester.len 0: nobody to answer (a prolog job Run
	 * finalized at its deadline) */
	struct agg_peer requester;
	json_t *finalize;
	long long nodes_deadline_ms;
	int cancel_fd; /* readable: the finalize stops llvm-symbolizer */
	pthread_t thread;
	int thread_started;
	atomic_int done;
	int fin_err;
	char fin_why[1024];
};

/* A node name and the Agent key it belongs to: the first key that named
 * it (Hello, Batch.node, Control.node) or the key that STARTed a resumed
 * Run of it; a key has one node name, a name one key */
struct agg_binding {
	struct agg_binding *next;
	char key[48];
	char *node;
};

/* An Agent that said Hello */
struct agg_agent {
	struct agg_agent *next;
	char *node, *version, *machine_json;
	uint64_t incarnation;
	struct agg_peer peer;
	long long last_contact_ms; /* clock_monotonic_ms() */
	time_t last_contact;	   /* wall clock */
	long active_targets;
};

struct aggregator {
	void *socket;
	/* aggregator_stop() and aggregator_interrupt() from another thread:
	 * eventfds that stay readable once written; done_fd: a finalize
	 * thread ended */
	int stop_fd, cancel_fd, done_fd;
	/* what may block (munge, Slurm): its thread starts at the first job
	 * request (aggregator_worker.h) */
	struct agg_worker *worker;
	int job_ended_grace_ms; /* aggregator_opts' (aggregator_job.h) */
	/* ATTACH refusals: any user can cause them, so they are logged once
	 * per AGG_ATTACH_LOG_MS with the count of those not logged */
	long long attach_logged_ms;
	uint64_t attach_unlogged;
	int interrupt_next; /* the next finalize starts interrupted */
	char *endpoint_shown;
	int open_dir_fd; /* <state_dir>/open, -1: no resume */
	enum aggregator_root_runs root_runs;
	struct agg_run *runs;
	struct agg_agent *agents;
	struct agg_binding *bindings;
	uint64_t received, stored, duplicates, refused;
	uint64_t (*refused_fn)(void *ctx);
	void *refused_ctx;
	int finalized; /* Runs finalized (aggregator_serve once) */
};

/* aggregator.c: answers to a peer */
int agg_send(struct aggregator *agg, const struct agg_peer *to, wire_envelope *env);
int agg_reply_ack(struct aggregator *agg, const struct agg_peer *to, const char *run_id,
		  const char *node, uint64_t seq, int has_incarnation, uint64_t incarnation,
		  const char *json);
/* run_id: the Run it concerns (Error.run_id), NULL: none */
int agg_reply_error(struct aggregator *agg, const struct agg_peer *to, int code, const char *run_id,
		    const char *message);
/* agg_reply_error() without the log line (the caller logs, or not) */
int agg_send_error(struct aggregator *agg, const struct agg_peer *to, int code, const char *run_id,
		   const char *message);
/* node: Control.node, the node it is sent to (NULL: none) */
int agg_send_control(struct aggregator *agg, const struct agg_peer *to, int action,
		     const char *run_id, const char *json, const char *node);
void agg_eventfd_signal(int fd);

/* aggregator_run.c: the table of Runs */
/* a new Run, not in the table yet (agg_run_close() frees it); NULL */
struct agg_run *agg_run_new(struct aggregator *agg, const char *run_id, const char *origin,
			    const char *symbolizer);
/* a run_id is a file name in the state directory: [0-9A-Za-z_-], 1..64 */
int agg_run_id_valid(const char *id);
/* the reserve file of a Run (make 1) or its removal (0), as the owner */
int agg_storage_reserve(int dir_fd, int make);
int agg_token_valid(const char *t); /* 32 lowercase hex digits */
/* The Run directory run_dir opened as the owner (the caller switched),
 * checked (the owner's, 0700, not a link) and locked; its descriptor or
 * -errno with why. */
int agg_open_run_dir(const char *run_dir, uid_t uid, char *why, size_t whylen);
struct agg_run *agg_run_find(struct aggregator *agg, const char *run_id);

/* aggregator_start.c: START */
int agg_run_start(struct aggregator *agg, const struct agg_peer *from,
		  const Nunatak__Wire__Control *c);
/* Run run_id of node origin, asked by from (its key: the Run's origin
 * key), made from spec (START's json: "run", "runs_dir", "owner",
 * "symbolizer", "token", "frequency", "mpi_events"): its directory, pivot
 * and first manifest made as the owner. Not in the table yet
 * (agg_run_register). 0 and *out, or -errno with why (nothing left). */
int agg_run_create(struct aggregator *agg, const struct agg_peer *from, const char *run_id,
		   const char *origin, const json_t *spec, struct agg_run **out, char *why,
		   size_t whylen);
/* r into the table, its state file written (resumable) */
void agg_run_register(struct aggregator *agg, struct agg_run *r);
/* START's Ack {"run_id","run_dir"} */
int agg_reply_start_ack(struct aggregator *agg, const struct agg_peer *from,
			const struct agg_run *r);
int agg_run_store_batch(struct aggregator *agg, const struct agg_peer *from,
			const Nunatak__Wire__Batch *b);
struct agg_node *agg_run_node(struct agg_run *r, const char *node); /* added when new */
struct agg_node *agg_run_node_find(struct agg_run *r, const char *node); /* NULL: none */
void agg_run_close(struct agg_run *r); /* unlinks it from the table and frees it */
/* a Run whose application never ran: closed, its directory removed as the
 * owner when it holds only nunatak's files (run_dir_discard); its state
 * file removed. 1 removed, 0 left in place (said) */
int agg_run_discard(struct aggregator *agg, struct agg_run *r);

/* aggregator_finalize.c */
int agg_finalize_request(struct aggregator *agg, const struct agg_peer *from,
			 const Nunatak__Wire__Control *c);
/* r (collecting) closes: CLOSE to its other nodes, the wait for their
 * last Batch (fin's nodes_wait_ms), then its finalize; from (NULL: nobody)
 * is answered once it is done; fin taken */
void agg_finalize_begin(struct aggregator *agg, struct agg_run *r, const struct agg_peer *from,
			json_t *fin);
/* the integer j[key] when in min..max, else dflt */
int agg_json_int_in(const json_t *j, const char *key, int min, int max, int dflt);
/* the closing Runs whose nodes are all in or whose wait is over start
 * their finalize; the finalizes done are answered. The ms until the
 * nearest wait ends (-1: none). */
int agg_finalize_tick(struct aggregator *agg);
void agg_finalize_interrupt_all(struct aggregator *agg);
void agg_finalize_join_all(struct aggregator *agg); /* at free: bounded by the budgets */

/* aggregator_agents.c */
/* May the peer from speak as node (Hello.node, Batch.node, Control.node)?
 * Without authentication (from->key ""): yes. Otherwise node must be the
 * name bound to from's key; a key not bound yet is bound to node when no
 * other key has it. 0, or -EPERM with why (what = the message, for it). */
int agg_node_claim(struct aggregator *agg, const struct agg_peer *from, const char *node,
		   const char *what, char *why, size_t whylen);
/* key bound to node (a resumed Run's origin); -EEXIST: either is bound
 * otherwise, -ENOMEM */
int agg_node_bind(struct aggregator *agg, const char *key, const char *node);
void agg_hello(struct aggregator *agg, const struct agg_peer *from, const Nunatak__Wire__Hello *h);
struct agg_agent *agg_agent_find(struct aggregator *agg, const char *node);
/* OPEN of Run r to every Agent but its origin's that has not had it */
void agg_open_to_agents(struct aggregator *agg, struct agg_run *r);
int agg_status(struct aggregator *agg, const struct agg_peer *from,
	       const Nunatak__Wire__Control *c);
void agg_agents_free(struct aggregator *agg);

/* aggregator_state.c: <state_dir>/open/<run_id>.json */
int agg_state_open(struct aggregator *agg, const char *state_dir);
int agg_state_write(struct aggregator *agg, const struct agg_run *r);
void agg_state_remove(struct aggregator *agg, const char *run_id);
void agg_state_resume(struct aggregator *agg);
/* the Run a state file names reopened into the table: 0 or -errno, why */
int agg_run_reopen(struct aggregator *agg, const json_t *state, char *why, size_t whylen);

#endif
