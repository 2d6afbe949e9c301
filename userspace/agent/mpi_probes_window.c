/* mpi_probes_window — the windowed (`each`) probes of a process attached
 * off the Agent's loop (mpi_probes_internal.h: mpi_probes_windowed_start,
 * mpi_probes_windowed_ready). Attaching a uprobe waits for an RCU grace
 * period (0.2-19 ms measured here per window), so a thread of its own
 * attaches, from a copy of the libraries' paths and points (the library
 * table may grow meanwhile); the Agent's loop asks whether it is done and
 * takes the probes then: a serving thread never waits on anything. The
 * job counts as a release under way of the releaser's
 * (mpi_probes_release_all waits for it before the programs are unloaded);
 * a job whose process is gone before it finished releases what it
 * attached itself. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes_internal.h"
#include "userspace/agent/uprobe_set.h"

enum job_state { JOB_RUNNING, JOB_DONE, JOB_ORPHANED };

struct mpi_attach_job {
	pthread_mutex_t mu;
	enum job_state state;
	struct mpi_releaser *r;
	struct bpf_program *entry, *ret;
	int multi;
	pid_t tgid;
	size_t n;		  /* libraries to attach */
	char **paths;		  /* [n] */
	struct probe_points *pts; /* [n] */
	struct uprobe_set *sets;  /* [n], the result */
	size_t n_sets;		  /* attached whole */
	int err;
};

static void job_free(struct mpi_attach_job *job)
{
	size_t i;

	for (i = 0; i < job->n; i++)
		free(job->paths[i]);
	free(job->paths);
	free(job->pts);
	free(job->sets);
	pthread_mutex_destroy(&job->mu);
	free(job);
}

static void *job_run(void *arg)
{
	struct mpi_attach_job *job = arg;
	struct mpi_releaser *r = job->r;
	int orphaned;
	size_t i;

	for (i = 0; i < job->n && !job->err; i++) {
		job->err = uprobe_set_attach(&job->sets[i], job->entry, job->ret, job->multi,
					     job->paths[i], job->pts[i].offsets,
					     job->pts[i].cookies, job->pts[i].n, job->tgid);
		if (job->err)
			uprobe_set_release(&job->sets[i]);
		else
			job->n_sets++;
	}
	pthread_mutex_lock(&job->mu);
	orphaned = job->state == JOB_ORPHANED;
	job->state = JOB_DONE;
	pthread_mutex_unlock(&job->mu);
	if (orphaned) { /* nobody takes them: released here */
		for (i = 0; i < job->n_sets; i++)
			uprobe_set_release(&job->sets[i]);
		job_free(job);
	}
	mpi_releaser_job_done(r);
	return NULL;
}

int mpi_probes_windowed_start(struct mpi_probes *mp, struct probed_process *p)
{
	struct mpi_attach_job *job;
	pthread_attr_t attr;
	pthread_t th;
	size_t i;
	int err;

	if (p->attaching || p->windowed)
		return -EBUSY;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	pthread_mutex_init(&job->mu, NULL);
	job->state = JOB_RUNNING;
	job->r = mp->releaser;
	job->entry = mp->skel->progs.mpi_entry;
	job->ret = mp->skel->progs.mpi_return;
	job->multi = mp->multi;
	job->tgid = p->tgid;
	job->n = mp->n_libraries;
	job->paths = calloc(job->n + 1, sizeof(*job->paths));
	job->pts = calloc(job->n + 1, sizeof(*job->pts));
	job->sets = calloc(job->n + 1, sizeof(*job->sets));
	if (!job->paths || !job->pts || !job->sets) {
		job->n = 0;
		job_free(job);
		return -ENOMEM;
	}
	for (i = 0; i < job->n; i++) {
		job->sets[i] = UPROBE_SET_EMPTY;
		job->pts[i] = mp->libraries[i].each;
		job->paths[i] = strdup(mp->libraries[i].module->path);
		if (!job->paths[i]) {
			job_free(job);
			return -ENOMEM;
		}
	}
	mpi_releaser_job_start(job->r);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, job_run, job);
	pthread_attr_destroy(&attr);
	if (err) {
		mpi_releaser_job_done(job->r);
		job_free(job);
		return -err;
	}
	p->attaching = job;
	return 0;
}

int mpi_probes_windowed_ready(struct mpi_probes *mp, struct probed_process *p)
{
	struct mpi_attach_job *job = p->attaching;
	int done, err;

	if (!job)
		return p->windowed ? 1 : -ENOENT;
	pthread_mutex_lock(&job->mu);
	done = job->state == JOB_DONE;
	pthread_mutex_unlock(&job->mu);
	if (!done)
		return 0;
	p->attaching = NULL;
	err = job->err;
	if (err) {
		mpi_probes_release_async(mp->releaser, job->sets, job->n_sets);
	} else {
		free(p->wsets);
		p->wsets = job->sets;
		p->n_wsets = job->n_sets;
		p->windowed = 1;
		/* the libraries known since the job started */
		err = mpi_probes_attach_missing_windowed(mp, p);
	}
	job->sets = NULL;
	job_free(job);
	return err ? err : 1;
}

void mpi_probes_windowed_abandon(struct mpi_probes *mp, struct probed_process *p)
{
	struct mpi_attach_job *job = p->attaching;
	int done;

	if (!job)
		return;
	p->attaching = NULL;
	pthread_mutex_lock(&job->mu);
	done = job->state == JOB_DONE;
	if (!done)
		job->state = JOB_ORPHANED;
	pthread_mutex_unlock(&job->mu);
	if (!done)
		return; /* the job releases its probes and frees itself */
	mpi_probes_release_async(mp->releaser, job->sets, job->n_sets);
	job->sets = NULL;
	job_free(job);
}
