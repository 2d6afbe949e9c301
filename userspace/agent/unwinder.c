/* unwinder — see unwinder.h; the worker thread is unwinder_tables.c. */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/unwinder.h"
#include "userspace/agent/unwinder_internal.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

/* written in place through the maps' mmap: an array's stride is its value
 * size rounded up to 8 */
_Static_assert(sizeof(struct unwind_rule) % 8 == 0, "unwind_rule: a multiple of 8 bytes");
_Static_assert(sizeof(struct unwind_row) % 8 == 0, "unwind_row: a multiple of 8 bytes");

static int loaded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct loaded_table *)a)->identity,
		      ((const struct loaded_table *)b)->identity);
}

static void *map_shared(int fd, size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (bytes + page - 1) / page * page;
}

static int unwinder_map(struct unwinder *u, const struct sampler_unwind_maps *maps)
{
	u->rules_bytes = page_round((size_t)maps->max_rules * sizeof(struct unwind_rule));
	u->rows_bytes = page_round((size_t)maps->max_rows * sizeof(struct unwind_row));
	u->rules_mem = map_shared(maps->rules_fd, u->rules_bytes);
	if (!u->rules_mem)
		return -errno;
	u->rows_mem = map_shared(maps->rows_fd, u->rows_bytes);
	return u->rows_mem ? 0 : -errno;
}

struct unwinder *unwinder__new(const struct sampler_unwind_maps *maps)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int err = -ENOMEM;

	if (!u)
		return NULL;
	u->maps = *maps;
	u->event_fd = -1;
	u->next_table = 1;
	u->stats.rows_max = maps->max_rows;
	u->stats.rules_max = maps->max_rules;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->wake, NULL);
	pthread_cond_init(&u->idle, NULL);
	u->rules = unwind_rules__new();
	u->proc = calloc(1, sizeof(*u->proc));
	if (!u->rules || !u->proc)
		goto fail;
	err = unwinder_map(u, maps);
	if (err)
		goto fail;
	u->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->event_fd < 0) {
		err = -errno;
		goto fail;
	}
	err = -pthread_create(&u->worker, NULL, unwinder_worker, u);
	if (err)
		goto fail;
	u->worker_started = 1;
	return u;
fail:
	unwinder__free(u);
	errno = -err;
	return NULL;
}

static void loaded_free(void *p)
{
	struct loaded_table *l = p;

	free(l->identity);
	free(l->path);
	free(l);
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->worker_started) {
		pthread_mutex_lock(&u->lock);
		u->stopping = 1;
		pthread_cond_signal(&u->wake);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->worker, NULL); /* a compile in progress ends first */
	}
	if (u->rules_mem)
		munmap(u->rules_mem, u->rules_bytes);
	if (u->rows_mem)
		munmap(u->rows_mem, u->rows_bytes);
	if (u->event_fd >= 0)
		close(u->event_fd);
	tdestroy(u->by_identity, loaded_free);
	unwind_rules__free(u->rules);
	pthread_cond_destroy(&u->wake);
	pthread_cond_destroy(&u->idle);
	pthread_mutex_destroy(&u->lock);
	free(u->waiting);
	free(u->proc);
	free(u);
}

int unwinder_fd(const struct unwinder *u)
{
	return u->event_fd;
}

/* Queues l by size, smallest first: a process' small libraries (its own
 * code, libgomp) get their tables in milliseconds rather than after a
 * large one it maps first (libgfortran, libmpich: 30 to 500 ms). */
static void queue_job(struct unwinder *u, struct loaded_table *l)
{
	struct loaded_table **at = &u->jobs;

	while (*at && (*at)->bytes <= l->bytes)
		at = &(*at)->next_job;
	l->next_job = *at;
	*at = l;
}

/* a new entry for m, its table asked of the worker; with the lock held */
static struct loaded_table *ask_table(struct unwinder *u, const struct module *m, uint64_t bytes)
{
	struct loaded_table *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->bytes = bytes;
	l->identity = strdup(m->identity);
	l->path = strdup(m->path);
	l->inode = m->inode;
	if (!l->identity || !l->path || !tsearch(l, &u->by_identity, loaded_cmp)) {
		loaded_free(l);
		return NULL;
	}
	queue_job(u, l);
	pthread_cond_signal(&u->wake);
	return l;
}

/* the table id of module m: 0 while the worker compiles it (asked the
 * first time), or when it has none */
static uint32_t module_table_id(struct unwinder *u, struct module *m)
{
	struct loaded_table key = { .identity = m->identity }, *l;
	struct stat st;
	void **node;

	if (m->unwind_table || m->unwind_err)
		return m->unwind_table;
	if (!m->elf || !m->identity) {
		m->unwind_err = -ENOENT;
		return 0;
	}
	/* only this thread adds entries: looked up, then (the size taken
	 * outside the lock: a stat may block) added */
	pthread_mutex_lock(&u->lock);
	node = tfind(&key, &u->by_identity, loaded_cmp);
	pthread_mutex_unlock(&u->lock);
	if (!node) {
		uint64_t bytes = stat(m->path, &st) ? UINT64_MAX : (uint64_t)st.st_size;

		pthread_mutex_lock(&u->lock);
		ask_table(u, m, bytes); /* NULL (ENOMEM): asked again at the next change */
		pthread_mutex_unlock(&u->lock);
		u->proc_waits = 1;
		return 0;
	}
	pthread_mutex_lock(&u->lock);
	l = *(struct loaded_table **)node;
	if (l->state != TABLE_DONE)
		u->proc_waits = 1;
	if (l->state == TABLE_DONE) {
		m->unwind_table = l->id;
		m->unwind_err = l->id ? 0 : (l->err ? l->err : -ENODATA);
	}
	pthread_mutex_unlock(&u->lock);
	return m->unwind_table;
}

void unwinder_prepare(struct unwinder *u, struct module *m)
{
	module_table_id(u, m);
}

static int add_mapping(const struct module_mapping *mm, void *ctx)
{
	struct unwinder *u = ctx;
	struct unwind_mapping *out;

	if (u->proc->n >= MAX_PROC_MAPPINGS) {
		u->mappings_dropped++;
		return 0;
	}
	out = &u->proc->mappings[u->proc->n++];
	*out = (struct unwind_mapping){ .start = mm->start, .end = mm->end, .pgoff = mm->pgoff };
	if (module_is_vdso(mm->module))
		out->flags = UNWIND_MAPPING_FRAME_POINTER; /* built with them */
	else
		out->table = module_table_id(u, mm->module);
	return 0;
}

/* tgid waits for a table (listed once), or no more */
static void set_waiting(struct unwinder *u, pid_t tgid, int waits)
{
	size_t i;
	pid_t *grown;

	for (i = 0; i < u->n_waiting && u->waiting[i] != tgid; i++)
		;
	if (!waits) {
		if (i < u->n_waiting)
			u->waiting[i] = u->waiting[--u->n_waiting];
		return;
	}
	if (i < u->n_waiting)
		return;
	if (u->n_waiting == u->cap_waiting) {
		size_t cap = u->cap_waiting ? u->cap_waiting * 2 : 16;

		grown = realloc(u->waiting, cap * sizeof(*grown));
		if (!grown)
			return; /* its next change brings its tables */
		u->waiting = grown;
		u->cap_waiting = cap;
	}
	u->waiting[u->n_waiting++] = tgid;
}

static int sync_process(struct unwinder *u, struct module_table *table, pid_t tgid)
{
	__u32 key = (__u32)tgid;
	int err;

	u->proc->n = 0;
	u->proc_waits = 0;
	err = module_table_for_each_mapping(table, tgid, add_mapping, u);
	set_waiting(u, tgid, !err && u->proc_waits);
	if (err == -ESRCH) { /* exited, or never known: no entry */
		if (bpf_map_delete_elem(u->maps.procs_fd, &key) && errno != ENOENT)
			return -errno;
		return 0;
	}
	if (err)
		return err;
	if (bpf_map_update_elem(u->maps.procs_fd, &key, u->proc, BPF_ANY)) {
		err = -errno;
		u->procs_refused++;
		return err;
	}
	return 0;
}

int unwinder_sync(struct unwinder *u, struct module_table *table)
{
	uint64_t events;
	pid_t *tgids;
	size_t n, i;
	int err, first = 0, completed;

	if (read(u->event_fd, &events, sizeof(events)) < 0 && errno != EAGAIN)
		pr_debug("unwinder event: %s", strerror(errno));
	pthread_mutex_lock(&u->lock);
	completed = u->completed;
	u->completed = 0;
	pthread_mutex_unlock(&u->lock);
	n = module_table_take_changed(table, &tgids);
	for (i = 0; i < n; i++) {
		err = sync_process(u, table, tgids[i]);
		if (err && !first)
			first = err;
	}
	/* tables arrived: the processes that waited for one get them (a
	 * process synced again may wait on, for another table) */
	for (i = u->n_waiting; completed && i > 0; i--)
		sync_process(u, table, u->waiting[i - 1]);
	return first;
}

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *out)
{
	pthread_mutex_lock((pthread_mutex_t *)&u->lock);
	*out = u->stats;
	pthread_mutex_unlock((pthread_mutex_t *)&u->lock);
	out->mappings_dropped = u->mappings_dropped;
	out->procs_refused = u->procs_refused;
}

/* the CLOCK_REALTIME time (the condition variables') ms from now */
static void deadline_in(struct timespec *deadline, long long ms)
{
	clock_gettime(CLOCK_REALTIME, deadline);
	if (ms < 0)
		ms = 0;
	deadline->tv_sec += ms / 1000;
	deadline->tv_nsec += (long)(ms % 1000) * 1000000;
	if (deadline->tv_nsec >= 1000000000) {
		deadline->tv_sec++;
		deadline->tv_nsec -= 1000000000;
	}
}

int unwinder_wait_idle(struct unwinder *u, int timeout_ms)
{
	struct timespec deadline;
	int err = 0;

	deadline_in(&deadline, timeout_ms);
	pthread_mutex_lock(&u->lock);
	while ((u->jobs || u->working) && !err)
		err = pthread_cond_timedwait(&u->idle, &u->lock, &deadline);
	pthread_mutex_unlock(&u->lock);
	return err ? -ETIMEDOUT : 0;
}

int unwinder_wait_module(struct unwinder *u, const struct module *m, long long deadline_ms)
{
	struct loaded_table key = { .identity = m->identity }, *l;
	struct timespec deadline;
	void **node;
	int err = 0;

	if (!m->identity)
		return 0;
	deadline_in(&deadline, deadline_ms - clock_monotonic_ms());
	pthread_mutex_lock(&u->lock);
	for (;;) {
		node = tfind(&key, &u->by_identity, loaded_cmp);
		l = node ? *(struct loaded_table **)node : NULL;
		if (!l || l->state == TABLE_DONE || err)
			break;
		err = pthread_cond_timedwait(&u->idle, &u->lock, &deadline);
	}
	pthread_mutex_unlock(&u->lock);
	return err ? -ETIMEDOUT : 0;
}
