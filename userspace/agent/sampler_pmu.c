/* sampler_pmu — the sampling group's counting events (bpf/sample.h,
 * userspace/agent/pmu_events.h): probed and written into the program's
 * rodata before load, opened on every CPU after it, enabled with the
 * sampling events. A group that cannot be opened (no PMU: a VM) leaves
 * the program without one, the reason kept for the Run's Degradation. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "userspace/agent/pmu_events.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sampler_internal.h"

_Static_assert(PMU_SET_MAX_EVENTS == MAX_PMU_EVENTS, "one bound for the group");
_Static_assert(PMU_COUNTERS == SAMPLE_PMU_COUNTERS, "one list of counters");

void sampler_pmu_configure(struct sampler *s, const struct pmu_event_set *set)
{
	size_t i;

	if (!set)
		return;
	if (!set->n_events || set->n_events > MAX_PMU_EVENTS) {
		snprintf(s->pmu_unavailable, sizeof(s->pmu_unavailable),
			 "the group of %s has %zu events (1 to %d)", set->microarchitecture,
			 set->n_events, MAX_PMU_EVENTS);
		s->pmu_err = -E2BIG;
		return;
	}
	s->pmu_err =
	    pmu_event_set_probe(set, s->ncpu, s->pmu_unavailable, sizeof(s->pmu_unavailable));
	if (s->pmu_err)
		return;
	s->pmu = set;
	s->sample->rodata->pmu_events = set->n_events;
	for (i = 0; i < set->n_events; i++) {
		s->sample->rodata->pmu_counter_of[i] = set->events[i].counter;
		s->sample->rodata->pmu_weight[i] = set->events[i].weight;
	}
	bpf_map__set_max_entries(s->sample->maps.pmu_fds, s->ncpu * MAX_PMU_EVENTS);
}

int sampler_pmu_open(struct sampler *s, char *err, size_t errlen)
{
	int map_fd, cpu, fd, e;
	__u32 key;
	size_t i, n = (size_t)s->ncpu * MAX_PMU_EVENTS;

	if (!s->pmu)
		return 0;
	s->pmu_fds = malloc(n * sizeof(*s->pmu_fds));
	if (!s->pmu_fds)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		s->pmu_fds[i] = -1;
	map_fd = bpf_map__fd(s->sample->maps.pmu_fds);
	for (cpu = 0; cpu < s->ncpu; cpu++) {
		if (s->perf_fds[cpu] < 0)
			continue; /* offline: no sample there either */
		for (i = 0; i < s->pmu->n_events; i++) {
			key = cpu * MAX_PMU_EVENTS + i;
			fd = pmu_event_open(&s->pmu->events[i], cpu);
			if (fd < 0 || bpf_map_update_elem(map_fd, &key, &fd, BPF_ANY)) {
				e = -errno;
				if (fd >= 0)
					close(fd);
				snprintf(err, errlen,
					 SAMPLER_PMU_OPEN_FAILED " %s on cpu %d failed: %s",
					 s->pmu->events[i].name, cpu, strerror(-e));
				return e;
			}
			s->pmu_fds[key] = fd;
		}
	}
	return 0;
}

int sampler_pmu_set_active(struct sampler *s, int on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
	size_t i, n = (size_t)s->ncpu * MAX_PMU_EVENTS;
	int err = 0;

	for (i = 0; s->pmu_fds && i < n; i++)
		if (s->pmu_fds[i] >= 0 && ioctl(s->pmu_fds[i], req, 0) && !err)
			err = -errno;
	return err;
}

void sampler_pmu_close(struct sampler *s)
{
	size_t i, n = (size_t)s->ncpu * MAX_PMU_EVENTS;

	for (i = 0; s->pmu_fds && i < n; i++)
		if (s->pmu_fds[i] >= 0)
			close(s->pmu_fds[i]);
	free(s->pmu_fds);
	s->pmu_fds = NULL;
}

const struct pmu_event_set *sampler_pmu(const struct sampler *s)
{
	return s->pmu;
}

const char *sampler_pmu_unavailable(const struct sampler *s, int *err)
{
	*err = s->pmu_err;
	return s->pmu_unavailable[0] ? s->pmu_unavailable : NULL;
}
