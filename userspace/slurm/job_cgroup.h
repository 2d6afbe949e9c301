/* job_cgroup — which Slurm job a process of this node belongs to, from
 * what the kernel says of it: its cgroups (/proc/PID/cgroup), else, when
 * no cgroup of it names a Slurm job at all (proctrack/linuxproc or pgid),
 * SLURM_JOB_ID in its environment (/proc/PID/environ).
 *
 * Slurm's layouts (every one of them holds a path component
 * "job_<decimal id>", the step, when there is one, right below it as
 * "step_<name>"):
 *   v1 (these machines)  N:freezer:/slurm_<node>/uid_U/job_J/step_S
 *                        N:memory:/slurm/uid_U/job_J/step_S/task_T
 *   v2                   0::/system.slice/slurmstepd.scope/job_J/step_S/user/task_T
 * with S a number, "batch", "extern" or "interactive". slurmstepd itself
 * sits at job level (no step).
 *
 * The cgroup path is written by root (Slurm) and authoritative; the
 * environment is the process' own and only a hint: whoever uses these
 * answers to let a process into a user's Run checks the process'
 * credentials as well (userspace/agent/agent_job.c, bpf/target.h).
 * Pure parsing and a /proc scan; no allocation survives a call.
 */
#ifndef NUNATAK_SLURM_JOB_CGROUP_H
#define NUNATAK_SLURM_JOB_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* text: a /proc/PID/cgroup text (lines "ID:controllers:/path", the last
 * newline optional). 1 and *job (and step: the S of "step_S" right below
 * "job_J", "" when none; truncated to steplen - 1; step may be NULL) when
 * a line names a Slurm job cgroup (a path component job_<1..4294967295>,
 * the outermost of a path); the line with a step wins over one without.
 * 0 when none does; -EINVAL when the text is malformed (a line without
 * its two colons, a path not absolute, NULL) or two lines name different
 * jobs. */
int job_cgroup_parse(const char *text, uint32_t *job, char *step, size_t steplen);

/* env: an environ block (NUL-separated NAME=VALUE, len bytes, the last
 * NUL optional). 1 and *job when it holds SLURM_JOB_ID=<1..4294967295>
 * (decimal digits only; its first occurrence counts, as for getenv), else
 * 0 (absent or malformed). */
int job_environ_parse(const char *env, size_t len, uint32_t *job);

/* The job of process pid from /proc: 1 and *job (and step, as
 * job_cgroup_parse) by its cgroups, else by its environment when its
 * cgroups name no Slurm job at all (step ""); 0 none; -ENOENT/-ESRCH
 * gone, -EACCES, -EINVAL (malformed cgroup text), -errno. */
int job_of_process(pid_t pid, uint32_t *job, char *step, size_t steplen);

/* 1 when this node shows Slurm job cgroups (its proctrack or task plugin
 * makes them): a directory "slurm" or "slurm_*" at the top of a v1
 * hierarchy under root (NULL: /sys/fs/cgroup), or
 * system.slice/slurmstepd.scope in a cgroup2 one (root or root/unified);
 * 0 when none (proctrack/linuxproc, pgid; or no job ran here yet). */
int job_cgroups_in_use(const char *root);

/* any owner, for job_processes_for_each */
#define JOB_ANY_OWNER ((uid_t)-1)

/* Calls cb(pid, ctx) for every process (thread group) of job on this node,
 * as job_of_process says, in /proc order, among those whose /proc/PID is
 * owned by owner (JOB_ANY_OWNER: all): the kernel gives /proc/PID the
 * process' euid, or root's when it is not dumpable, so another user's
 * processes cost one fstat, never a read of their (up to 1 MiB)
 * environment. Stops at cb's first non-zero return and returns it; else
 * 0, or -errno when /proc cannot be read. Processes that vanish or cannot
 * be read meanwhile are skipped. */
int job_processes_for_each(uint32_t job, uid_t owner, int (*cb)(pid_t pid, void *ctx),
			   void *ctx);

#endif
