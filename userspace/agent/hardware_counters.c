/* hardware_counters — see hardware_counters.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/pmu_cause.h"

struct counted {
	pid_t tgid;
	int cycles_fd, instructions_fd;
};

struct hardware_counters {
	char reason[160]; /* "" when counting works */
	uint32_t type;
	uint64_t config[2]; /* cycles, instructions */
	struct counted *procs;
	size_t n, cap;
};

static int open_counter(const struct hardware_counters *hc, pid_t pid, uint64_t config)
{
	struct perf_event_attr attr = {
		.type = hc->type,
		.size = sizeof(attr),
		.config = config,
		.inherit = 1,
		.exclude_kernel = 0,
	};

	return syscall(__NR_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

struct hardware_counters *hardware_counters__new_events(uint32_t type, uint64_t first,
							uint64_t second)
{
	struct hardware_counters *hc = calloc(1, sizeof(*hc));
	int fd, err;

	if (!hc)
		return NULL;
	hc->type = type;
	hc->config[0] = first;
	hc->config[1] = second;
	fd = open_counter(hc, 0, first);
	err = fd < 0 ? -errno : 0;
	if (err) /* the Run's Degradation says why at length (pmu_cause.h) */
		snprintf(hc->reason, sizeof(hc->reason), "%s: %s cannot be opened (%s)",
			 pmu_open_failure(err),
			 type == PERF_TYPE_HARDWARE ? "a cycles counter" : "the counter",
			 strerror(-err));
	else
		close(fd);
	return hc;
}

struct hardware_counters *hardware_counters__new(void)
{
	return hardware_counters__new_events(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
					     PERF_COUNT_HW_INSTRUCTIONS);
}

size_t hardware_counters_processes(const struct hardware_counters *hc)
{
	return hc->n;
}

void hardware_counters__free(struct hardware_counters *hc)
{
	size_t i;

	if (!hc)
		return;
	for (i = 0; i < hc->n; i++) {
		close(hc->procs[i].cycles_fd);
		close(hc->procs[i].instructions_fd);
	}
	free(hc->procs);
	free(hc);
}

const char *hardware_counters_unavailable(const struct hardware_counters *hc)
{
	return hc->reason[0] ? hc->reason : NULL;
}

int hardware_counters_start(struct hardware_counters *hc, pid_t tgid)
{
	struct counted c = { .tgid = tgid };
	size_t i;

	if (hc->reason[0])
		return -EOPNOTSUPP;
	for (i = 0; i < hc->n; i++)
		if (hc->procs[i].tgid == tgid)
			return 0; /* an exec again: the pair goes on counting */
	if (hc->n == hc->cap) {
		size_t cap = hc->cap ? hc->cap * 2 : 32;
		struct counted *procs = realloc(hc->procs, cap * sizeof(*procs));

		if (!procs)
			return -ENOMEM;
		hc->procs = procs;
		hc->cap = cap;
	}
	c.cycles_fd = open_counter(hc, tgid, hc->config[0]);
	c.instructions_fd = open_counter(hc, tgid, hc->config[1]);
	if (c.cycles_fd < 0 || c.instructions_fd < 0) {
		int err = -errno;

		if (c.cycles_fd >= 0)
			close(c.cycles_fd);
		if (c.instructions_fd >= 0)
			close(c.instructions_fd);
		return err;
	}
	hc->procs[hc->n++] = c;
	return 0;
}

int hardware_counters_finish(struct hardware_counters *hc, pid_t tgid, uint64_t *cycles,
			     uint64_t *instructions, const char **reason)
{
	size_t i;
	int ok;

	*reason = hc->reason[0] ? hc->reason : "not counted: the process was not seen at exec";
	for (i = 0; i < hc->n; i++) {
		struct counted *c = &hc->procs[i];

		if (c->tgid != tgid)
			continue;
		ok = read(c->cycles_fd, cycles, sizeof(*cycles)) == sizeof(*cycles) &&
		     read(c->instructions_fd, instructions, sizeof(*instructions)) ==
			     sizeof(*instructions);
		close(c->cycles_fd);
		close(c->instructions_fd);
		hc->procs[i] = hc->procs[--hc->n];
		if (!ok) {
			*reason = "the hardware counters could not be read";
			return -EIO;
		}
		return 0;
	}
	return -ENOENT;
}
