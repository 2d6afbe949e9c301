/* aggregator_job — job Runs: Runs of a Slurm job (issue 8's design,
 * section 3), not for other modules than the aggregator's.
 *
 *  - "attach" (aggregator_attach.c): ATTACH {"job_id","credential",...}
 *    from the origin Agent, checked in the worker thread (munge credential
 *    whose payload is "nunatak attach job=J", the uid munge's; the job
 *    RUNNING in Slurm, owned by that uid or the uid root; "peer_uid", the
 *    node service's client, that uid or root; only then EBUSY when a Run
 *    of the job is open, so that no other user learns of it), then the Run is
 *    made with the job's owner (Slurm's uid/gid) in <work_dir>/.nunatak,
 *    OPENed {"job_id",...} to the job's other nodes (now and at their next
 *    Hello); the job is looked at every second in the worker and the
 *    origin is sent CLOSE {"why":"job-ended"} once it no longer runs
 *    (again every AGG_JOB_CLOSE_AGAIN_MS); an origin that never FINALIZEs
 *    it (its nunatakd gone) leaves it finalized AGG_JOB_ENDED_GRACE_MS
 *    after the job's end, `nodes-missing` naming the origin.
 *  - "prolog" (here): START with "job" {"id","nodes" (hostlist),"mode"} by
 *    each job node (the first makes the Run, the others join it), FINALIZE
 *    "job_epilog" by each; acked at once while nodes are pending, the last
 *    acked once finalized; at the nodes_wait_ms deadline, or when the job
 *    has ended for AGG_JOB_ENDED_GRACE_MS (aggregator_opts) without all its Epilogs, the Run
 *    is finalized with a `nodes-missing` Degradation naming the nodes.
 * Everything here runs on the serving thread; what may block is a work of
 * the worker (aggregator_worker.h).
 */
#ifndef NUNATAK_AGGREGATOR_JOB_H
#define NUNATAK_AGGREGATOR_JOB_H

#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "userspace/aggregator/aggregator_internal.h"

#define AGG_JOB_WATCH_MS 1000
#define AGG_JOB_ENDED_GRACE_MS 60000 /* aggregator_opts.job_ended_grace_ms 0 */
#define AGG_JOB_CLOSE_AGAIN_MS 10000

enum agg_job_mode {
	AGG_JOB_ATTACH = 1,
	AGG_JOB_PROLOG = 2,
};

struct agg_job {
	uint32_t id;
	enum agg_job_mode mode;
	char user[64], name[128]; /* "" until Slurm said (prolog: the first look) */
	char *work_dir;		  /* "" unknown */
	char **nodes;		  /* the job's nodes */
	size_t n_nodes;
	unsigned char *epilog; /* per node: its Epilog's FINALIZE came (prolog) */
	time_t since;
	struct agg_peer origin_peer; /* who ATTACHed: CLOSE goes there */
	/* the watch (serving thread) */
	int watching;		      /* a lookup in the worker */
	long long next_watch_ms;      /* clock_monotonic_ms() */
	long long ended_ms;	      /* first seen ended, 0: not seen */
	long long close_sent_ms;      /* CLOSE job-ended sent, 0: not */
	long long epilog_deadline_ms; /* 0: no Epilog yet */
	int auto_failed;	      /* finalized with nobody to answer: failed, not again */
	int lookup_warned;
	int seen;	      /* Slurm knew the job once (ENOENT then means: gone) */
	int abandoned;	      /* attach: its origin never ended it after the job ended */
	char missing_why[64]; /* what nodes-missing says of the wait */
};

/* The job of a prolog START (spec "job" {"id","nodes","mode":"prolog"}),
 * origin one of its nodes. 0 and *out, -EINVAL (malformed), -EPERM
 * (origin not a node of the job), -EBUSY (another Run of that job is
 * open), with why. */
int agg_job_from_start(struct aggregator *agg, const json_t *spec, const char *origin,
		       struct agg_job **out, char *why, size_t whylen);
/* r takes job (NULL: none); its origin node joined */
void agg_job_bind(struct agg_run *r, struct agg_job *job);
void agg_job_free(struct agg_job *job);
/* the open Run of job id, NULL: none */
struct agg_run *agg_job_run_of(struct aggregator *agg, uint32_t id);
/* index of node in job's nodes, -1: not one */
int agg_job_node_index(const struct agg_job *job, const char *node);
/* a START of the prolog job Run r from another node (or again): joined
 * and acked, or refused */
int agg_job_start_join(struct aggregator *agg, const struct agg_peer *from, struct agg_run *r,
		       const Nunatak__Wire__Control *c, const json_t *spec);
/* FINALIZE of the prolog job Run r (fin taken) */
int agg_job_epilog(struct aggregator *agg, const struct agg_peer *from, struct agg_run *r,
		   const Nunatak__Wire__Control *c, json_t *fin);
/* the watches due are asked, the deadlines over are met; the ms until the
 * next (-1: none) */
int agg_job_tick(struct aggregator *agg);
/* at finalize_start, as the owner: `nodes-missing` when nodes of a prolog
 * job Run never sent their Epilog */
void agg_job_degrade(struct agg_run *r);
/* STATUS's "job" of r: {"id","mode","uid","user","nodes","since"} or null */
json_t *agg_job_status_json(const struct agg_run *r);
/* does r go (OPEN) to node's Agent: a token Run to all but its origin,
 * an attach job Run to its job's other nodes */
int agg_job_opens_to(const struct agg_run *r, const char *node);
/* OPEN's json of r (free()), NULL: out of memory */
char *agg_job_open_json(const struct agg_run *r);
/* the job of r for its state file (NULL: none), and back at a resume */
json_t *agg_job_state_json(const struct agg_run *r);
int agg_job_from_state(struct agg_run *r, const json_t *state);

/* aggregator_attach.c */
int agg_job_attach_request(struct aggregator *agg, const struct agg_peer *from,
			   const Nunatak__Wire__Control *c);
/* a lookup of r's job in the worker; 0 or -errno (-EAGAIN: queue full) */
int agg_job_watch_submit(struct aggregator *agg, struct agg_run *r);
/* the job ended: CLOSE {"why":"job-ended"} to r's origin */
void agg_job_send_close(struct aggregator *agg, struct agg_run *r);

#endif
