/* aggregator_worker — the Aggregator's one thread for what may block:
 * munge credential checks and Slurm job lookups (libmunge, libslurm), so
 * that the serving thread never waits on munged or slurmctld.
 *
 * The serving thread submits work (agg_worker_submit: never blocks; a full
 * queue refuses with -EAGAIN) and, when the eventfd agg_worker_fd() is
 * readable, takes the work done (agg_worker_take) and calls its done() on
 * its own thread. A work's run() is called on the worker thread only: it
 * must touch nothing of the Aggregator but its own work (and the worker's
 * immutable settings). The thread starts at the first submit: a machine
 * that never serves a job request never calls into libslurm or libmunge,
 * and libslurm is used by that one thread only.
 */
#ifndef NUNATAK_AGGREGATOR_WORKER_H
#define NUNATAK_AGGREGATOR_WORKER_H

#include <stddef.h>

#define AGG_WORKER_QUEUE_MAX 64

struct aggregator;
struct agg_worker;

struct agg_work {
	struct agg_work *next;
	/* on the worker thread: the blocking part */
	void (*run)(struct agg_work *w, const struct agg_worker *worker);
	/* on the serving thread, once run() returned; frees w */
	void (*done)(struct aggregator *agg, struct agg_work *w);
	/* frees w when it will never be done (the Aggregator is freed) */
	void (*discard)(struct agg_work *w);
};

/* munge_socket / slurm_conf copied (NULL: the libraries' defaults). No
 * thread yet. NULL + errno. */
struct agg_worker *agg_worker_new(const char *munge_socket, const char *slurm_conf);
/* Stops the thread (after the call under way: libslurm and libmunge bound
 * their own waits) and discards the work not done. */
void agg_worker_free(struct agg_worker *w);
/* readable when work is done (drained by agg_worker_take) */
int agg_worker_fd(const struct agg_worker *w);
/* NULL: munge's default socket / libslurm's configuration */
const char *agg_worker_munge_socket(const struct agg_worker *w);
const char *agg_worker_slurm_conf(const struct agg_worker *w);
/* 0: queued (w is the worker's until done() is called); -EAGAIN: the
 * queue holds AGG_WORKER_QUEUE_MAX works; -errno: no thread. */
int agg_worker_submit(struct agg_worker *w, struct agg_work *work);
/* the works done, in order, NULL-terminated list through next; the
 * eventfd drained. NULL: none. */
struct agg_work *agg_worker_take(struct agg_worker *w);
/* works queued or running */
size_t agg_worker_pending(const struct agg_worker *w);

#endif
