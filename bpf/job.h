/* job.h — Slurm jobs: how a process of a job that no Target follows joins
 * the job's Target (contract between bpf/task.bpf.c and the Agent's
 * sampler; the job Target itself: userspace/agent/agent_job.c).
 *
 * Slurm puts every process of a job step in a cgroup whose path holds a
 * component "job_<id>" (v1, as on these machines: freezer
 * /slurm_<node>/uid_U/job_J/step_S; /slurm/uid_U/job_J/step_S/task_N; v2:
 * /system.slice/slurmstepd.scope/job_J/step_S/user/task_N). The Agent
 * registers the name "job_<J>" of a job Target (`jobs`: name -> Target and
 * owner, struct token_info as for Run tokens). While at least one is
 * registered (job_count), at sched_process_exec of a process outside every
 * Target and at sched_process_fork of a parent outside every Target (the
 * child is looked at: this closes the race of the Agent's /proc scan), the
 * names of the task's cgroup and of its ancestors are looked up: the
 * default hierarchy's (dfl_cgrp) and, when the kernel has it, the v1
 * freezer hierarchy's, at most JOB_CGROUP_DEPTH names each, nearest
 * first. A registered name adopts the process with exactly the rule of
 * Run tokens (bpf/target.h target_adoption_allows: a user's job Target
 * takes the processes the user could debug; a root one, root's only; the
 * Agent's network namespace when it asked). The security boundary is that
 * rule, not the name: a user can name a cgroup job_J only where it was
 * delegated to them, and then puts only their own processes into their
 * own Run.
 *
 * A Slurm that makes no job cgroup (proctrack/linuxproc or pgid, no
 * task/cgroup) leaves the environment as the only word: when the Agent
 * asks for it (job_env: it saw no Slurm cgroup on the node), an exec
 * whose cgroups name no job at all ("job_" nowhere among the names walked)
 * has its new environment scanned for SLURM_JOB_ID=<digits> (the first
 * occurrence, as getenv; the same scan as the Run token's, bpf/token.h),
 * and "job_<digits>" is looked up as a cgroup name would be. The process
 * controls its environment, so this is a hint only; the rule above still
 * decides.
 *
 * Adopted at exec: reported as TASK_EVENT_EXEC with exec_seq 0. Adopted at
 * fork: the child enters as the child of a followed process does (a new
 * image, exec_seq 0) and, since the Agent never saw its parent, is
 * reported as TASK_EVENT_EXEC with exec_seq 0 as well (its mappings are
 * read from /proc). Both count TASK_ADOPTED.
 *
 * Cost, on every exec and fork of the node while a job is registered
 * (BPF statistics, BPF_STATS_RUN_TIME, this machine: Linux 6.18, 2 CPUs;
 * tests/unit/test_sampler_jobs.c test_cost prints them): an exec 0.5 us
 * with no job registered (one lookup, two global reads), 1.1 us with one
 * registered for a process outside every job cgroup (the default
 * hierarchy's and the freezer's names walked: 2 + 1 here), 1.5-2.1 us for
 * one in a job cgroup (5 freezer names) whose credentials the rule
 * refuses; a fork of a parent outside every Target 0.3-0.5 us without a
 * job, 0.6-1.2 us with one. The environment fallback, when on, adds the
 * scan to an exec outside every job cgroup: 5.6-5.8 us for the test's 37
 * strings (as a registered Run token does, bpf/token.h). Figures vary
 * with the machine's load by about 30 %.
 */
#ifndef NUNATAK_BPF_JOB_H
#define NUNATAK_BPF_JOB_H

#include "bpf/token.h"

/* "job_<decimal id>", NUL padded: a 32-bit id has at most 10 digits */
#define JOB_NAME_BYTES 16
#ifndef MAX_JOBS
#define MAX_JOBS 1024
#endif
/* cgroup names looked at per hierarchy, the task's own first */
#define JOB_CGROUP_DEPTH 8
#define JOB_NAME_PREFIX "job_"
#define JOB_NAME_PREFIX_BYTES 4
/* the environment's word, when no cgroup names a job (at exec) */
#define JOB_ENV_PREFIX "SLURM_JOB_ID="
#define JOB_ENV_PREFIX_BYTES 13

struct job_key {
	char name[JOB_NAME_BYTES];
};

#endif
