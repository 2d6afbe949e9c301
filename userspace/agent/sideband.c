/* sideband — see sideband.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/sideband.h"
#include "userspace/log/log.h"

#define SIDEBAND_PAGES 64 /* per CPU: 256 KiB */

struct sideband {
	struct module_table *table;
	struct perf_buffer *pb;
	int map_fd;
	uint64_t lost;
	/* records of one poll, sorted by time before they are applied */
	struct perf_event_header **records;
	size_t n_records, cap_records;
};

/* the sample_id trailer every record carries (sample_id_all) */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
};

struct record_mmap2 {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	char filename[];
};

struct record_comm {
	struct perf_event_header header;
	uint32_t pid, tid;
	char comm[];
};

struct record_fork {
	struct perf_event_header header;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct record_lost {
	struct perf_event_header header;
	uint64_t id, lost;
};

static uint64_t record_time(const struct perf_event_header *h)
{
	const struct sample_id *sid;

	if (h->size < sizeof(*h) + sizeof(*sid))
		return 0;
	sid = (const void *)((const char *)h + h->size - sizeof(*sid));
	return sid->time;
}

static enum bpf_perf_event_ret sideband_collect(void *ctx, int cpu, struct perf_event_header *h)
{
	struct sideband *sb = ctx;
	struct perf_event_header *copy;

	(void)cpu;
	if (h->type == PERF_RECORD_LOST) {
		sb->lost += ((struct record_lost *)h)->lost;
		return LIBBPF_PERF_EVENT_CONT;
	}
	if (h->type != PERF_RECORD_MMAP2 && h->type != PERF_RECORD_COMM &&
	    h->type != PERF_RECORD_FORK)
		return LIBBPF_PERF_EVENT_CONT;
	if (sb->n_records == sb->cap_records) {
		size_t cap = sb->cap_records ? sb->cap_records * 2 : 256;
		struct perf_event_header **recs = realloc(sb->records, cap * sizeof(*recs));

		if (!recs)
			goto lost;
		sb->records = recs;
		sb->cap_records = cap;
	}
	copy = malloc(h->size);
	if (!copy)
		goto lost;
	memcpy(copy, h, h->size);
	sb->records[sb->n_records++] = copy;
	return LIBBPF_PERF_EVENT_CONT;
lost:
	sb->lost++;
	return LIBBPF_PERF_EVENT_CONT;
}

static int record_cmp(const void *a, const void *b)
{
	uint64_t ta = record_time(*(struct perf_event_header *const *)a);
	uint64_t tb = record_time(*(struct perf_event_header *const *)b);

	return (ta > tb) - (ta < tb);
}

static void sideband_apply(struct sideband *sb, const struct perf_event_header *h)
{
	if (h->type == PERF_RECORD_FORK) {
		const struct record_fork *r = (const void *)h;

		if (r->pid != r->ppid && module_table_has_process(sb->table, r->ppid))
			module_table_add_process(sb->table, r->pid, r->ppid);
	} else if (h->type == PERF_RECORD_COMM) {
		const struct record_comm *r = (const void *)h;

		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) &&
		    module_table_has_process(sb->table, r->pid))
			module_table_exec(sb->table, r->pid, r->comm);
	} else if (h->type == PERF_RECORD_MMAP2) {
		const struct record_mmap2 *r = (const void *)h;
		uint64_t dev = ((uint64_t)r->maj << 20) | r->min;

		if (module_table_has_process(sb->table, r->pid))
			module_table_map(sb->table, r->pid, r->addr, r->len, r->pgoff, dev, r->ino,
					 r->filename);
	}
}

int sideband_poll(struct sideband *sb)
{
	size_t i;
	int err;

	err = perf_buffer__consume(sb->pb);
	if (err < 0)
		pr_debug("sideband consume failed: %s", strerror(-err));
	if (sb->n_records) /* records is NULL before the first */
		qsort(sb->records, sb->n_records, sizeof(*sb->records), record_cmp);
	for (i = 0; i < sb->n_records; i++) {
		sideband_apply(sb, sb->records[i]);
		free(sb->records[i]);
	}
	sb->n_records = 0;
	return err < 0 ? err : 0;
}

struct sideband *sideband__new(struct module_table *table)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.sample_id_all = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
		/* woken at every record: the unwinder needs a process' code
		 * mappings in the kernel before its samples (wakeup_events
		 * counts samples only, and this event has none) */
		.watermark = 1,
		.wakeup_watermark = 1,
	};
	struct sideband *sb;
	int ncpu, err;

	ncpu = libbpf_num_possible_cpus();
	if (ncpu < 0) {
		errno = -ncpu;
		return NULL;
	}
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return NULL;
	sb->table = table;
	sb->map_fd = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "nunatak_sideband",
				    sizeof(int), sizeof(int), ncpu, NULL);
	if (sb->map_fd < 0) {
		err = -errno;
		goto fail;
	}
	sb->pb = perf_buffer__new_raw(sb->map_fd, SIDEBAND_PAGES, &attr, sideband_collect, sb,
				      NULL);
	if (!sb->pb) {
		err = -errno;
		goto fail;
	}
	return sb;
fail:
	sideband__free(sb);
	errno = -err;
	return NULL;
}

void sideband__free(struct sideband *sb)
{
	size_t i;

	if (!sb)
		return;
	perf_buffer__free(sb->pb);
	if (sb->map_fd >= 0)
		close(sb->map_fd);
	for (i = 0; i < sb->n_records; i++)
		free(sb->records[i]);
	free(sb->records);
	free(sb);
}

int sideband_fd(const struct sideband *sb)
{
	return perf_buffer__epoll_fd(sb->pb);
}

uint64_t sideband_lost(const struct sideband *sb)
{
	return sb->lost;
}
