/* unwinder_tables — the unwinder's worker thread: compiles the unwind
 * table of each module identity asked for (userspace/unwind/), writes
 * its new rules and its rows in place into the kernel's mapped arrays,
 * then names the table in unwind_tables, and says so on the event fd.
 * A compile takes up to half a second for a large library: never on the
 * Agent's thread, which would meanwhile not see execs or attach MPI
 * probes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "userspace/agent/unwinder_internal.h"
#include "userspace/elf/elf_open.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

/* the rules interned since the last call, into the kernel's array */
static void publish_rules(struct unwinder *u)
{
	size_t n = unwind_rules_count(u->rules);

	for (; u->rules_loaded < n && u->rules_loaded < u->maps.max_rules; u->rules_loaded++)
		u->rules_mem[u->rules_loaded] = *unwind_rules_get(u->rules, u->rules_loaded);
}

/* rows[0..n) into the pool as a new table: 0 and *id, or -ENOSPC */
static int publish_table(struct unwinder *u, const struct unwind_row *rows, size_t n, uint32_t *id)
{
	struct unwind_table t = { .first_row = u->rows_used, .n_rows = (uint32_t)n };
	uint32_t key = u->next_table;

	if (n > (size_t)(u->maps.max_rows - u->rows_used) || n > (1u << 24) ||
	    key >= u->maps.max_tables || unwind_rules_count(u->rules) > u->maps.max_rules)
		return -ENOSPC;
	publish_rules(u);
	memcpy(&u->rows_mem[u->rows_used], rows, n * sizeof(*rows));
	/* rules and rows before the table that names them: the syscall orders them */
	if (bpf_map_update_elem(u->maps.tables_fd, &key, &t, BPF_ANY))
		return -errno;
	u->rows_used += (uint32_t)n;
	u->next_table++;
	*id = key;
	return 0;
}

/* compiles job's file and loads it: 0 and *id, or -errno */
static int load_table(struct unwinder *u, const struct loaded_table *job, uint32_t *id,
		      uint64_t *ns)
{
	struct unwind_table_stats ts = { 0 };
	struct unwind_row *rows = NULL;
	uint64_t t0 = clock_monotonic_ns();
	struct stat st;
	size_t n = 0;
	int fd, err;

	fd = elf_open_regular(job->path, job->inode, &st);
	if (fd < 0)
		return fd;
	err = unwind_table_compile(fd, u->rules, &rows, &n, &ts);
	close(fd);
	if (!err)
		err = publish_table(u, rows, n, id);
	free(rows);
	*ns = clock_monotonic_ns() - t0;
	pr_info("unwind table of '%s': %zu rows from %llu FDEs in %.1f ms: %s", job->path, n,
		 (unsigned long long)ts.fdes, *ns / 1e6, err ? strerror(-err) : "loaded");
	return err;
}

static void count_result(struct unwinder_stats *s, int err, uint64_t ns)
{
	s->compile_ns += ns;
	if (!err)
		s->tables_loaded++;
	else if (err == -ENODATA)
		s->tables_empty++;
	else if (err == -ENOSPC)
		s->tables_refused++;
	else
		s->tables_failed++;
}

/* the next job, or NULL when stopping; with the lock held */
static struct loaded_table *next_job(struct unwinder *u)
{
	struct loaded_table *job;

	while (!u->jobs && !u->stopping)
		pthread_cond_wait(&u->wake, &u->lock);
	if (u->stopping)
		return NULL;
	job = u->jobs;
	u->working = 1;
	u->jobs = job->next_job;
	return job;
}

void *unwinder_worker(void *arg)
{
	struct unwinder *u = arg;
	struct loaded_table *job;
	uint64_t ns = 0, one = 1;
	uint32_t id = 0;
	int err;

	/* the application comes first: tables compiled beside it must not
	 * take its cores (a Run's start waits for its program's own) */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10))
		pr_debug("unwinder: nice: %s", strerror(errno));
	pthread_mutex_lock(&u->lock);
	while ((job = next_job(u))) {
		pthread_mutex_unlock(&u->lock);
		id = 0;
		err = load_table(u, job, &id, &ns);
		pthread_mutex_lock(&u->lock);
		job->id = err ? 0 : id;
		job->err = err;
		job->state = TABLE_DONE;
		u->working = 0;
		pthread_cond_broadcast(&u->idle); /* a table done; idle when no job is left */
		free(job->path);
		job->path = NULL;
		count_result(&u->stats, err, ns);
		u->stats.rows_used = u->rows_used;
		u->stats.rules_used = u->rules_loaded;
		u->completed++;
		if (write(u->event_fd, &one, sizeof(one)) < 0)
			pr_debug("unwinder event: %s", strerror(errno));
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}
