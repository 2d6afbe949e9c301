/* sampler — the BPF side of the Agent: loads bpf/task.bpf.c and
 * bpf/sample.bpf.c once, opens one sampling perf event per CPU, keeps the
 * Target set (processes, and the Run tokens that adopt processes at their
 * exec: bpf/token.h) and drains what the kernel aggregated.
 *
 * Lifecycle (STYLE.md 2): open, configure, load, attach, all inside
 * sampler__new(). The sampling events are opened disabled: an idle
 * sampler (no Target) costs no sampling interrupt; sampler_set_active()
 * enables and disables them (the tracepoints that keep the Target set
 * stay attached, so a process adopted or followed is never missed). A
 * Slurm job's name registered for a Target adopts the job's processes as
 * they exec or fork (bpf/job.h). Draining flips the active sample map and reads the other
 * one, so increments made while draining are kept for the next drain. The
 * flip waits until no sampling program is still inside the old map (the
 * in-flight counts of bpf/sample.h), within SAMPLER_FLIP_TIMEOUT_NS; a
 * drain that waited longer goes on and is counted (flip_timeouts). A
 * sample is either handed to the drain's callback, or counted in one of
 * the counters below: seen = handed over + drop_keys + drain_lost, once
 * the Target is gone and two drains have emptied both maps.
 */
#ifndef NUNATAK_AGENT_SAMPLER_H
#define NUNATAK_AGENT_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bpf/sample.h"
#include "bpf/target.h"
#include "bpf/task.h"
#include "bpf/token.h"
#include "bpf/job.h"

struct sampler;
struct pmu_event_set; /* userspace/agent/pmu_events.h */

struct sampler_opts {
	long frequency; /* samples per second per CPU */
	int unwinder;   /* enum sample_unwinder (bpf/sample.h) */
	int netns_only; /* as sampler_set_netns_only(s, 1) */
	/* the sampling group's counting events (bpf/sample.h), opened on every
	 * CPU beside the sampling event and read at each sample; NULL: none.
	 * Borrowed: it must outlive the sampler. When an event cannot be
	 * opened (no PMU, ...) the sampler samples time only and
	 * sampler_pmu_unavailable() says why. */
	const struct pmu_event_set *pmu;
	/* called once the Target set's map exists, before the sampling
	 * program loads: other BPF units that share the map may load beside
	 * it (NULL: none). The fd is the sampler's: valid while it lives. */
	void (*targets_ready)(int targets_fd, void *ctx);
	void *targets_ready_ctx;
};

/* Kernel-side counters, running totals since the sampler started. */
struct sampler_counters {
	uint64_t seen;         /* samples of Target processes */
	uint64_t drop_keys;    /* samples lost: sample map full */
	uint64_t drop_stacks;  /* Stacks lost (leaf kept): the stack map was full */
	uint64_t drop_collisions; /* Stacks lost (leaf kept): UNWIND_DIGEST_PROBES
				   * other Stacks held their digests */
	uint64_t stack_collisions; /* digests another Stack held (stored all the same) */
	uint64_t kernel_truncated; /* kernel parts deeper than MAX_KERNEL_FRAMES */
	uint64_t pmu_unread;   /* counting-event readings the kernel refused (slices lost) */
	uint64_t unwind_end[UNWIND_END_COUNT]; /* samples by how their user Stack ended */
	uint64_t drop_targets; /* children not followed: target map full */
	uint64_t drop_events;  /* exec/exit reports lost: ring buffer full */
	uint64_t drop_totals;  /* processes whose counters are partial */
	uint64_t drain_lost;   /* samples lost at a drain: not handed over by a
				* drain whose callback failed, or met a slot
				* flipping twice (kernel SAMPLE_DROP_FLIP) */
	uint64_t flip_timeouts; /* drains that went on before the sampling
				 * programs had left the old map: samples they
				 * added after it was read are lost, uncounted */
	uint64_t skipped_credentials; /* samples not taken: a process of a
				       * user's Target under other credentials */
	uint64_t adopted;      /* processes a Run token or a job's cgroup adopted
				* at their exec (or fork: jobs) */
	uint64_t left;         /* processes that left a Target at a setuid exec */
};

/* how long a drain waits for the sampling programs to leave the old map */
#define SAMPLER_FLIP_TIMEOUT_NS (100 * 1000 * 1000ull)

/* NULL + errno on failure; err then says which step failed and why. */
struct sampler *sampler__new(const struct sampler_opts *opts, char *err, size_t errlen);
void sampler__free(struct sampler *s);

/* the Target set's map, to share with other BPF units */
int sampler_targets_fd(const struct sampler *s);

/* number of CPUs sampled */
int sampler_cpus(const struct sampler *s);

/* Put process tgid (and, through fork, its future children) in Target
 * target_id, owned by uid (TARGET_UID_ANY: a root Target, any process).
 * In a user's Target, an exec that gives the process another real or
 * effective uid (a setuid program) takes it out: TASK_EVENT_LEFT, never
 * sampled after that exec, its forks not followed. 0 or -errno. */
int sampler_add_target(struct sampler *s, pid_t tgid, uint32_t target_id, uint32_t uid);

/* A running process the caller found (a job's, by its cgroup) joins
 * Target target_id, owned by uid, unless it is in a Target already:
 * 0, -EEXIST (followed already: e.g. the kernel adopted it at a fork or
 * exec meanwhile), -EINVAL, or -errno. The caller checked its
 * credentials (bpf/target.h target_adoption_allows); a process under
 * other credentials is not sampled all the same (bpf/sample.bpf.c). */
int sampler_adopt_process(struct sampler *s, pid_t tgid, uint32_t target_id, uint32_t uid);

/* Every process of Target target_id leaves the set, and the Run tokens
 * and job names of that Target are removed (no exec or fork is adopted
 * into it any more): 0 or -errno. Their pending reports stay to be
 * polled. */
int sampler_remove_target(struct sampler *s, uint32_t target_id);

/* Run tokens (bpf/token.h): an exec of a process outside every Target
 * whose environment holds NUNATAK_RUN=token_hex32, and whose real and
 * effective uid are uid (any for TARGET_UID_ANY), joins Target target_id
 * (reported as TASK_EVENT_EXEC, exec_seq 0). token_hex32: exactly 32
 * lowercase hex digits (-EINVAL otherwise). 0, -EEXIST (registered
 * already), -ENOSPC (MAX_TOKENS), or -errno. */
int sampler_add_token(struct sampler *s, const char *token_hex32, uint32_t target_id,
		      uint32_t uid);
/* 0, or -ENOENT when it was not registered */
int sampler_remove_token(struct sampler *s, const char *token_hex32);
/* Slurm jobs (bpf/job.h): an exec of a process outside every Target, or
 * a fork of a parent outside every Target, whose cgroup (or an ancestor,
 * default hierarchy or v1 freezer) is named "job_<job_id>" joins Target
 * target_id under the rule of tokens (uid: the owner, TARGET_UID_ANY a
 * root Target: root's processes only). 0, -EINVAL (job_id 0), -EEXIST
 * (job_id registered already), -ENOSPC (MAX_JOBS), or -errno. */
int sampler_add_job(struct sampler *s, uint32_t job_id, uint32_t target_id, uint32_t uid);
/* 0, or -ENOENT when job_id is not registered for Target target_id */
int sampler_remove_job(struct sampler *s, uint32_t job_id, uint32_t target_id);
/* on: at an exec whose cgroups name no job at all (bpf/job.h: the
 * default hierarchy's, the v1 freezer's), SLURM_JOB_ID=<id> in the new
 * environment adopts it as its job's cgroup would (for a Slurm that makes
 * no job cgroup: proctrack/linuxproc, pgid). It costs an environment
 * scan at every such exec of the node while a job is registered; it goes
 * off when the last job is removed. 0 or -errno. */
int sampler_set_job_env(struct sampler *s, int on);
/* "job_<job_id>" into *key, NUL padded */
void sampler_job_key(uint32_t job_id, struct job_key *key);

/* on: tokens and jobs adopt only processes in this process' network namespace
 * (the node's own, when several "nodes" share a kernel). Any time; it
 * applies to the execs that follow. 0 or -errno. */
int sampler_set_netns_only(struct sampler *s, int on);

/* The group sampled (its events' growth in sample_value.pmu[], by enum
 * pmu_counter), or NULL: none asked, or it could not be opened. */
const struct pmu_event_set *sampler_pmu(const struct sampler *s);
/* which of the group's counters did not open (the sampler's string), NULL
 * when it is sampled or none was asked; *err its -errno (0 with NULL) */
const char *sampler_pmu_unavailable(const struct sampler *s, int *err);
/* how sampler__new's err begins when the group, probed fine, could not be
 * opened on every CPU (the counters taken meanwhile): try without it */
#define SAMPLER_PMU_OPEN_FAILED "opening the counting event"

/* Enables (on) or disables every sampling perf event (ioctl): 0 or
 * -errno (the first failure; the other CPUs were still asked). */
int sampler_set_active(struct sampler *s, int on);
/* 1 when the sampling events are enabled */
int sampler_active(const struct sampler *s);

/* e is the sampler's copy; in an exit report utime_ns + stime_ns is the
 * exact CPU time of the process (runtime_ns, split in the ticks' ratio) */
typedef int (*sampler_task_event_fn)(const struct task_event *e, void *ctx);
/* epoll fd readable when exec/exit reports are pending */
int sampler_task_events_fd(const struct sampler *s);
int sampler_poll_task_events(struct sampler *s, sampler_task_event_fn fn, void *ctx);

/* One aggregated sample and its Stack (bpf/sample.h: kernel frames, then
 * user frames, innermost first), NULL when the Stack was lost (the leaf
 * is key->leaf_ip). */
typedef int (*sampler_sample_fn)(const struct sample_key *key, const struct sample_value *value,
				 const struct stack_value *stack, void *ctx);
/* Drain every sample aggregated since the previous drain. 0 or -errno; a
 * non-zero return of fn stops the drain and is returned: the samples not
 * handed over are counted in drain_lost (those fn received are fn's). */
int sampler_drain(struct sampler *s, sampler_sample_fn fn, void *ctx);

/* Waits until no sampling program is inside slot, as counted in
 * inflight[0..n) (the sampler's own or, in tests, any): 0, or -ETIMEDOUT
 * after timeout_ns. */
int sampler_wait_slot_quiet(const struct sample_inflight *inflight, int n, unsigned int slot,
			    uint64_t timeout_ns);

void sampler_read_counters(const struct sampler *s, struct sampler_counters *out);

/* the maps of the unwind tables (bpf/unwind.h), filled by unwinder.h */
struct sampler_unwind_maps {
	int rules_fd, rows_fd, tables_fd, procs_fd;
	uint32_t max_rules, max_rows, max_tables;
};
/* 0, or -ENOENT when the sampler walks frame pointers (no tables used) */
int sampler_unwind_maps(const struct sampler *s, struct sampler_unwind_maps *out);

#endif
