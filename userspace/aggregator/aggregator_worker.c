/* aggregator_worker — see aggregator_worker.h: a bounded queue, one
 * thread, the works done handed back through an eventfd. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "userspace/aggregator/aggregator_worker.h"
#include "userspace/log/log.h"

struct agg_worker {
	char *munge_socket, *slurm_conf;
	int done_fd;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	int started, stop;
	/* under lock: queued (head, tail), done (head, tail) */
	struct agg_work *queue, **queue_tail, *done, **done_tail;
	atomic_size_t pending; /* queued + running */
};

static char *dup_or_null(const char *s, int *fail)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*fail = 1;
	return d;
}

struct agg_worker *agg_worker_new(const char *munge_socket, const char *slurm_conf)
{
	struct agg_worker *w = calloc(1, sizeof(*w));
	int fail = 0;

	if (!w)
		return NULL;
	w->munge_socket = dup_or_null(munge_socket, &fail);
	w->slurm_conf = dup_or_null(slurm_conf, &fail);
	w->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fail || w->done_fd < 0) {
		int err = fail ? ENOMEM : errno;

		if (w->done_fd >= 0)
			close(w->done_fd);
		free(w->munge_socket);
		free(w->slurm_conf);
		free(w);
		errno = err;
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	w->queue_tail = &w->queue;
	w->done_tail = &w->done;
	return w;
}

static void discard_list(struct agg_work *list)
{
	while (list) {
		struct agg_work *next = list->next;

		list->discard(list);
		list = next;
	}
}

void agg_worker_free(struct agg_worker *w)
{
	if (!w)
		return;
	if (w->started) {
		pthread_mutex_lock(&w->lock);
		w->stop = 1;
		pthread_cond_signal(&w->wake);
		pthread_mutex_unlock(&w->lock);
		/* bounded by the call in progress: munge_cred_check waits for
		 * munged at most 10 s, slurm_job_lookup for slurmctld at most
		 * 2 x MessageTimeout (userspace/slurm/slurm_job.h); the queue
		 * behind it is discarded, not run */
		pthread_join(w->thread, NULL);
	}
	discard_list(w->queue);
	discard_list(w->done);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	close(w->done_fd);
	free(w->munge_socket);
	free(w->slurm_conf);
	free(w);
}

int agg_worker_fd(const struct agg_worker *w)
{
	return w->done_fd;
}

const char *agg_worker_munge_socket(const struct agg_worker *w)
{
	return w->munge_socket;
}

const char *agg_worker_slurm_conf(const struct agg_worker *w)
{
	return w->slurm_conf;
}

size_t agg_worker_pending(const struct agg_worker *w)
{
	return atomic_load(&((struct agg_worker *)w)->pending);
}

static void *worker_thread(void *arg)
{
	struct agg_worker *w = arg;
	struct agg_work *work;
	uint64_t one = 1;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->queue && !w->stop)
			pthread_cond_wait(&w->wake, &w->lock);
		if (w->stop)
			break;
		work = w->queue;
		w->queue = work->next;
		if (!w->queue)
			w->queue_tail = &w->queue;
		pthread_mutex_unlock(&w->lock);
		work->next = NULL;
		work->run(work, w);
		pthread_mutex_lock(&w->lock);
		*w->done_tail = work;
		w->done_tail = &work->next;
		if (write(w->done_fd, &one, sizeof(one)) < 0)
			pr_debug("aggregator worker: eventfd: %s", strerror(errno));
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int agg_worker_submit(struct agg_worker *w, struct agg_work *work)
{
	int err;

	if (atomic_load(&w->pending) >= AGG_WORKER_QUEUE_MAX)
		return -EAGAIN;
	if (!w->started) {
		err = pthread_create(&w->thread, NULL, worker_thread, w);
		if (err)
			return -err;
		w->started = 1;
	}
	work->next = NULL;
	atomic_fetch_add(&w->pending, 1);
	pthread_mutex_lock(&w->lock);
	*w->queue_tail = work;
	w->queue_tail = &work->next;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

struct agg_work *agg_worker_take(struct agg_worker *w)
{
	struct agg_work *list, *x;
	uint64_t n;

	if (read(w->done_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		pr_debug("aggregator worker: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&w->lock);
	list = w->done;
	w->done = NULL;
	w->done_tail = &w->done;
	pthread_mutex_unlock(&w->lock);
	for (x = list; x; x = x->next)
		atomic_fetch_sub(&w->pending, 1);
	return list;
}
