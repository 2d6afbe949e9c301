/* mpi_probes_attach — the probes of each Target process (see
 * mpi_probes.h): attached with the process' pid as the kernel's filter,
 * so that a process outside every Target never traps, released when it
 * exits. Removing a uprobe waits for a grace period, so an exit's probes
 * are released by a thread of their own: the Agent's loop never waits. */
#include <errno.h>
#include <pthread.h>
#include <search.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_budget.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/mpi_probes_internal.h"
#include "userspace/agent/uprobe_set.h"
#include "userspace/log/log.h"

/* how long mpi_probes__free waits for the releases under way */
#define RELEASE_WAIT_S 30
#define RELEASE_THREADS 16

/* the releases under way; freed by the last of mpi_probes and its jobs */
struct mpi_releaser {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int pending; /* jobs not done */
	int refs;    /* mpi_probes + each job */
};

struct mpi_releaser *mpi_releaser__new(void)
{
	struct mpi_releaser *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->refs = 1;
	return r;
}

static void releaser_put(struct mpi_releaser *r)
{
	int last;

	pthread_mutex_lock(&r->mu);
	last = --r->refs == 0;
	pthread_mutex_unlock(&r->mu);
	if (last) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
		free(r);
	}
}

struct release_share {
	struct uprobe_set *sets;
	size_t n;
};

static void *release_share_run(void *arg)
{
	struct release_share *share = arg;
	size_t i;

	for (i = 0; i < share->n; i++)
		uprobe_set_release(&share->sets[i]);
	return NULL;
}

/* Releases sets[0..n) from up to RELEASE_THREADS threads: each removal
 * waits for a grace period (tens of ms here, per perf-event probe as per
 * uprobe_multi link), in parallel the waits overlap. */
static void release_sets(struct uprobe_set *sets, size_t n)
{
	struct release_share shares[RELEASE_THREADS];
	pthread_t threads[RELEASE_THREADS];
	size_t per = (n + RELEASE_THREADS - 1) / RELEASE_THREADS, i;
	int started[RELEASE_THREADS] = {};

	for (i = 0; i < RELEASE_THREADS && per; i++) {
		size_t first = i * per < n ? i * per : n;

		shares[i] = (struct release_share){sets + first, n - first < per ? n - first : per};
		started[i] = !pthread_create(&threads[i], NULL, release_share_run, &shares[i]);
		if (!started[i])
			release_share_run(&shares[i]);
	}
	for (i = 0; i < RELEASE_THREADS; i++)
		if (started[i])
			pthread_join(threads[i], NULL);
}

struct release_job {
	struct mpi_releaser *r;
	struct uprobe_set *sets;
	size_t n;
};

void mpi_releaser_job_start(struct mpi_releaser *r)
{
	pthread_mutex_lock(&r->mu);
	r->pending++;
	r->refs++;
	pthread_mutex_unlock(&r->mu);
}

void mpi_releaser_job_done(struct mpi_releaser *r)
{
	pthread_mutex_lock(&r->mu);
	r->pending--;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	releaser_put(r);
}

static void *release_job_run(void *arg)
{
	struct release_job *job = arg;
	struct mpi_releaser *r = job->r;

	release_sets(job->sets, job->n);
	free(job->sets);
	free(job);
	mpi_releaser_job_done(r);
	return NULL;
}

/* Releases sets (taken) in a detached thread; here when none starts */
void mpi_probes_release_async(struct mpi_releaser *r, struct uprobe_set *sets, size_t n)
{
	struct release_job *job = malloc(sizeof(*job));
	pthread_attr_t attr;
	pthread_t th;
	int err = -1;

	if (!n) {
		free(sets);
		free(job);
		return;
	}
	if (job) {
		*job = (struct release_job){r, sets, n};
		mpi_releaser_job_start(r);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&th, &attr, release_job_run, job);
		pthread_attr_destroy(&attr);
		if (!err)
			return;
		mpi_releaser_job_done(r);
		free(job);
	}
	release_sets(sets, n);
	free(sets);
}

/* the probes of pts in path for tgid (-1: every process) into set
 * (released by the caller on failure) */
static int attach_points(struct mpi_probes *mp, const char *path, const struct probe_points *pts,
			 pid_t tgid, struct uprobe_set *set)
{
	return uprobe_set_attach(set, mp->skel->progs.mpi_entry, mp->skel->progs.mpi_return,
				 mp->multi, path, pts->offsets, pts->cookies, pts->n, tgid);
}

int mpi_probes_attach_wide(struct mpi_probes *mp, struct probed_library *lib)
{
	int err = attach_points(mp, lib->module->path, &lib->once, -1, &lib->wide);

	if (err)
		uprobe_set_release(&lib->wide);
	return err;
}

static int process_cmp(const void *a, const void *b)
{
	pid_t pa = ((const struct probed_process *)a)->tgid;
	pid_t pb = ((const struct probed_process *)b)->tgid;

	return (pa > pb) - (pa < pb);
}

static struct probed_process *process_find(struct mpi_probes *mp, pid_t tgid)
{
	struct probed_process key = {.tgid = tgid};
	void *node = tfind(&key, &mp->processes, process_cmp);

	return node ? *(struct probed_process **)node : NULL;
}

/* the probes of `which` (offset of the points in struct probed_library)
 * of the libraries *sets lacks, in order; a failure keeps what was
 * attached */
static int attach_missing(struct mpi_probes *mp, pid_t tgid, size_t which,
			  struct uprobe_set **sets, size_t *n_sets)
{
	struct uprobe_set *grown;
	int err;

	if (*n_sets >= mp->n_libraries)
		return 0;
	grown = realloc(*sets, mp->n_libraries * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	*sets = grown;
	while (*n_sets < mp->n_libraries) {
		const struct probed_library *lib = &mp->libraries[*n_sets];
		const struct probe_points *pts = (const void *)((const char *)lib + which);

		err = attach_points(mp, lib->module->path, pts, tgid, &grown[*n_sets]);
		if (err) {
			uprobe_set_release(&grown[*n_sets]);
			return err;
		}
		(*n_sets)++;
	}
	return 0;
}

/* the libraries p lacks: MPI_Finalize always, the others while windowed */
static int process_attach_missing(struct mpi_probes *mp, struct probed_process *p)
{
	int err = attach_missing(mp, p->tgid, offsetof(struct probed_library, life), &p->sets,
				 &p->n_sets);

	if (!err && p->windowed)
		err = attach_missing(mp, p->tgid, offsetof(struct probed_library, each), &p->wsets,
				     &p->n_wsets);
	return err;
}

int mpi_probes_attach_missing_windowed(struct mpi_probes *mp, struct probed_process *p)
{
	return attach_missing(mp, p->tgid, offsetof(struct probed_library, each), &p->wsets,
			      &p->n_wsets);
}

int mpi_probes_windowed_attach(struct mpi_probes *mp, pid_t tgid)
{
	struct probed_process *p = process_find(mp, tgid);
	int err;

	if (!p)
		return -ENOENT;
	if (p->windowed)
		return 1;
	if (p->attaching)
		return 0;
	err = mpi_probes_windowed_start(mp, p);
	return err;
}

int mpi_probes_windowed_attached(struct mpi_probes *mp, pid_t tgid)
{
	struct probed_process *p = process_find(mp, tgid);

	return p ? mpi_probes_windowed_ready(mp, p) : -ENOENT;
}

int mpi_probes_windowed(struct mpi_probes *mp, pid_t tgid, int on)
{
	struct probed_process *p = process_find(mp, tgid);

	if (!p)
		return -ENOENT;
	mpi_probes_windowed_abandon(mp, p);
	p->windowed = on;
	if (on)
		return process_attach_missing(mp, p);
	if (p->n_wsets)
		mpi_probes_release_async(mp->releaser, p->wsets, p->n_wsets);
	else
		free(p->wsets);
	p->wsets = NULL;
	p->n_wsets = 0;
	return 0;
}

static void process_drop(struct mpi_probes *mp, struct probed_process *p, int wait)
{
	tdelete(p, &mp->processes, process_cmp);
	mp->n_processes--;
	mpi_probes_windowed_abandon(mp, p);
	if (wait) {
		release_sets(p->sets, p->n_sets);
		free(p->sets);
		release_sets(p->wsets, p->n_wsets);
		free(p->wsets);
	} else {
		mpi_probes_release_async(mp->releaser, p->sets, p->n_sets);
		mpi_probes_release_async(mp->releaser, p->wsets, p->n_wsets);
	}
	free(p);
}

int mpi_probes_process_exec(struct mpi_probes *mp, pid_t tgid)
{
	struct probed_process *p;
	int err;

	if (tgid <= 0)
		return -EINVAL;
	p = process_find(mp, tgid);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->tgid = tgid;
		p->windowed = 1;
		if (!tsearch(p, &mp->processes, process_cmp)) {
			free(p);
			return -ENOMEM;
		}
		mp->n_processes++;
		mpi_budget_process_new(mp, tgid);
	}
	err = process_attach_missing(mp, p);
	if (err == -ESRCH) { /* gone already: no exit report will ask */
		process_drop(mp, p, 0);
	} else if (err) {
		pr_warn("probing the MPI libraries for process %d failed: %s", (int)tgid,
			strerror(-err));
	}
	return err;
}

int mpi_probes_process_exit(struct mpi_probes *mp, pid_t tgid)
{
	struct probed_process *p = process_find(mp, tgid);

	if (!p)
		return -ENOENT;
	mpi_budget_process_end(mp, tgid);
	process_drop(mp, p, 0);
	return 0;
}

int mpi_probes_processes(const struct mpi_probes *mp)
{
	return (int)mp->n_processes;
}

struct walk_ctx {
	struct mpi_probes *mp;
	struct probed_process **list;
	size_t n;
};

static void collect_process(const void *node, VISIT which, void *closure)
{
	struct walk_ctx *w = closure;

	if (which == postorder || which == leaf)
		w->list[w->n++] = *(struct probed_process *const *)node;
}

/* the processes, in a list: the tree is not changed while it is walked */
static struct probed_process **process_list(struct mpi_probes *mp, size_t *n)
{
	struct walk_ctx w = {mp, calloc(mp->n_processes + 1, sizeof(*w.list)), 0};

	if (w.list)
		twalk_r(mp->processes, collect_process, &w);
	*n = w.n;
	return w.list;
}

int mpi_probes_attach_new_library(struct mpi_probes *mp)
{
	struct probed_process **list;
	size_t n, i;
	int err = 0, e;

	list = process_list(mp, &n);
	if (!list)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		e = process_attach_missing(mp, list[i]);
		if (e == -ESRCH)
			process_drop(mp, list[i], 0);
		else if (e && !err)
			err = e;
	}
	free(list);
	return err;
}

/* every process' probes, now, and the releases under way, within
 * RELEASE_WAIT_S: mpi_probes__free */
void mpi_probes_release_all(struct mpi_probes *mp)
{
	struct probed_process **list;
	struct mpi_releaser *r = mp->releaser;
	struct timespec deadline;
	size_t n = 0, i;

	list = mp->processes ? process_list(mp, &n) : NULL;
	for (i = 0; i < n; i++)
		process_drop(mp, list[i], 1);
	free(list);
	for (i = 0; i < mp->n_libraries; i++)
		uprobe_set_release(&mp->libraries[i].wide);
	if (!r)
		return;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += RELEASE_WAIT_S;
	pthread_mutex_lock(&r->mu);
	while (r->pending > 0)
		if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) == ETIMEDOUT)
			break;
	if (r->pending > 0)
		pr_warn("%d releases of MPI probes still under way after %d s: left to finish",
			r->pending, RELEASE_WAIT_S);
	pthread_mutex_unlock(&r->mu);
	releaser_put(r);
	mp->releaser = NULL;
}
