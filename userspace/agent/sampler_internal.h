/* sampler_internal — the sampler's state, shared by sampler.c (loading,
 * sampling events, draining) and sampler_targets.c (the Target set, the
 * Run tokens and the job names). Not for other modules: they use sampler.h. */
#ifndef NUNATAK_AGENT_SAMPLER_INTERNAL_H
#define NUNATAK_AGENT_SAMPLER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "userspace/agent/sampler.h"
#include "bpf/sample.skel.h"
#include "bpf/task.skel.h"

struct sampler {
	struct task_bpf *task;
	struct sample_bpf *sample;
	struct ring_buffer *task_events;
	int ncpu;
	int *perf_fds;
	int *pmu_fds;        /* ncpu × MAX_PMU_EVENTS counting events (-1: none) */
	const struct pmu_event_set *pmu; /* the group sampled, NULL: none */
	char pmu_unavailable[256];       /* why the group asked for is not sampled */
	int pmu_err;                     /* and its -errno (0: sampled, or none asked) */
	struct bpf_link **links;
	int n_events;
	int active;          /* the sampling events are enabled */
	uint32_t n_tokens;   /* entries of the tokens map (task.bpf.c's token_count) */
	uint32_t n_jobs;     /* entries of the jobs map (task.bpf.c's job_count) */

	sampler_task_event_fn task_event_fn;
	void *task_event_ctx;
	/* scratch for draining */
	struct sample_key *keys;
	size_t cap_keys;
	uint64_t drain_lost;    /* samples a failed drain did not hand over */
	uint64_t flip_timeouts; /* drains that did not see the old map quiet */
};

/* sampler_pmu.c: the sampling group. Before load: probe set's events and
 * configure the program (or keep why not); after the sampling events are
 * open: open the counting events per CPU (0 or -errno, err says which);
 * enable/disable them with the sampling events; close. */
void sampler_pmu_configure(struct sampler *s, const struct pmu_event_set *set);
int sampler_pmu_open(struct sampler *s, char *err, size_t errlen);
int sampler_pmu_set_active(struct sampler *s, int on);
void sampler_pmu_close(struct sampler *s);

#endif
