// SPDX-License-Identifier: GPL-2.0
/* task.bpf.c — the Target set follows fork; exec and exit are reported.
 *
 * Contract in bpf/task.h. A fork inside a Target adds the child process
 * before it runs its first instruction, so nothing it does is missed; the
 * exit of a thread group snapshots its counters and removes it. The
 * threads of a Target process are counted (bpf/task.h, task_threads) so
 * that the exit is reported by the thread that added the last share. The
 * decisions are the helpers of bpf/target.bpf.h and bpf/task.bpf.h; the
 * programs here only read the task and count what was refused.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/task.h"
#include "bpf/target.bpf.h"
#include "bpf/task.bpf.h"
#include "bpf/token.bpf.h"
#include "bpf/job.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TASK_EVENTS_BYTES);
} task_events SEC(".maps");

__u64 task_counters[TASK_COUNTERS];

/* set by the Agent: how many tokens `tokens` and job names `jobs` hold
 * (both 0: an exec or fork outside every Target costs one lookup), and the
 * network namespace adopted processes must run in (its inode; 0: any) */
volatile __u32 token_count;
volatile __u32 job_count;
volatile __u32 token_netns;
/* set by the Agent: 1 when, at an exec whose cgroups name no job at all,
 * the environment's SLURM_JOB_ID is the job's word (nodes whose Slurm
 * makes no job cgroup: proctrack/linuxproc, pgid) */
volatile __u32 job_env;

static __always_inline struct task_event *task_event_reserve(__u32 kind, struct task_struct *task,
							     const struct target_info *target)
{
	struct task_event *e;

	e = bpf_ringbuf_reserve(&task_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&task_counters[TASK_DROP_EVENTS], 1);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->tgid = BPF_CORE_READ(task, tgid);
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->target_id = target->target_id;
	e->time_ns = bpf_ktime_get_ns();
	/* the process' start: the last thread to exit need not be its leader */
	e->start_time_ns = BPF_CORE_READ(task, group_leader, start_time);
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), task->comm);
	return e;
}

/* task's process is single-threaded and in a Target from now on (a fork
 * inside one, an exec, an adoption): its threads are counted from 1 */
static __always_inline void task_count_from_one(struct task_struct *task)
{
	struct task_totals_key key;

	task_totals_key_of(task, &key);
	if (task_threads_set(&key, 1))
		__sync_fetch_and_add(&task_counters[TASK_DROP_TOTALS], 1);
}

/* a thread created in a Target process: one more to wait for at its exit */
static __always_inline void task_count_thread(struct task_struct *child)
{
	struct task_totals_key key;

	task_totals_key_of(child, &key);
	if (task_threads_new(&key, BPF_CORE_READ(child, signal, live.counter)))
		__sync_fetch_and_add(&task_counters[TASK_DROP_TOTALS], 1);
}

/* The Target entry that adopts task (outside every Target), NULL when
 * none: its Run token (at exec, tokens registered), else its job's
 * cgroup (jobs registered), else, at exec, when the Agent asked for it
 * (job_env) and no cgroup of it names a job at all, SLURM_JOB_ID in its
 * environment.
 * One scan of the environment looks for both. */
static __always_inline const struct token_info *task_adopter(struct task_struct *task,
							     int at_exec)
{
	const struct token_info *t = NULL, *by_cgroup = NULL;
	struct token_scan sc = {};
	int named = 0;

	if (job_count)
		by_cgroup = job_of_task(task, &named);
	if (at_exec) {
		sc.want = (token_count ? ENV_WANT_TOKEN : 0) |
			  (job_count && job_env && !named ? ENV_WANT_JOB : 0);
		if (sc.want)
			env_scan(BPF_CORE_READ(task, mm, start_stack), &sc);
		if (sc.found)
			t = token_lookup(&sc.key);
	}
	if (!t)
		t = by_cgroup;
	if (!t && (sc.seen & ENV_WANT_JOB))
		t = job_of_env(&sc.job);
	return t;
}

/* A process outside every Target: adopted when a Run token in its new
 * environment (at exec) or its job's cgroup names a Target whose rule its
 * credentials (and network namespace) pass: 1 and *info, or 0 */
static __always_inline int task_adopt(struct task_struct *task, __u32 tgid, int at_exec,
				      struct target_info *info)
{
	const struct token_info *t = task_adopter(task, at_exec);
	struct target_cred cred;
	long err;

	if (!t)
		return 0;
	target_cred_read(task, &cred);
	if (!target_adopts(t, tgid, &cred, BPF_CORE_READ(task, nsproxy, net_ns, ns.inum),
			   token_netns, info))
		return 0;
	err = bpf_map_update_elem(&targets, &tgid, info, BPF_NOEXIST);
	if (err) {
		if (err != -EEXIST) /* -EEXIST: followed meanwhile (a fork) */
			__sync_fetch_and_add(&task_counters[TASK_DROP_TARGETS], 1);
		return 0;
	}
	__sync_fetch_and_add(&task_counters[TASK_ADOPTED], 1);
	task_count_from_one(task);
	return 1;
}

/* an adopted process, the first the Agent hears of it (bpf/job.h) */
static __always_inline void task_report_adopted(struct task_struct *task,
						const struct target_info *info)
{
	struct task_event *e = task_event_reserve(TASK_EVENT_EXEC, task, info);

	if (!e)
		return;
	e->exec_seq = 0;
	/* the Agent probes the new image before it reaches main: wake it now */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(task_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid), child_tgid = BPF_CORE_READ(child, tgid);
	struct target_info info;
	int r = target_follow_fork(parent_tgid, child_tgid);

	if (r < 0)
		__sync_fetch_and_add(&task_counters[TASK_DROP_TARGETS], 1);
	else if (r > 0)
		task_count_from_one(child);
	else if (child_tgid == parent_tgid) {
		if (target_lookup(child_tgid))
			task_count_thread(child);
	}
	/* 0 and not a thread: a parent outside every Target, its child may
	 * be a job's */
	else if (job_count && task_adopt(child, child_tgid, 0, &info))
		task_report_adopted(child, &info);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(task_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct target_cred cred;
	struct target_info info;
	struct task_event *e;
	int r;

	if (!target_lookup(tgid)) {
		if ((token_count || job_count) && task_adopt(task, tgid, 1, &info))
			task_report_adopted(task, &info);
		return 0;
	}
	/* the credentials and the dumpability of the new image are committed
	 * already */
	target_cred_read(task, &cred);
	r = target_exec(tgid, &cred, &info);
	if (r == TARGET_EXEC_LEFT)
		__sync_fetch_and_add(&task_counters[TASK_LEFT], 1);
	if (r == TARGET_EXEC_OUTSIDE)
		return 0;
	/* the other threads are gone (de_thread) */
	if (r != TARGET_EXEC_LEFT)
		task_count_from_one(task);
	e = task_event_reserve(r == TARGET_EXEC_LEFT ? TASK_EVENT_LEFT : TASK_EVENT_EXEC, task,
			       &info);
	if (!e)
		return 0;
	e->exec_seq = info.exec_seq;
	/* the Agent probes the new image before it reaches main: wake it now */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(task_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct signal_struct *signal = BPF_CORE_READ(task, signal);
	struct task_totals_key key;
	struct task_totals share, totals = {};
	struct target_info *target, info;
	struct task_event *e;
	int have_totals, last;

	task_totals_key_of(task, &key);
	target = target_lookup(tgid);
	if (!target) {
		task_threads_forget(&key);
		return 0;
	}
	/* every thread adds its share: followed from its first instruction,
	 * the process' threads all exit here */
	task_share_read(task, &share);
	if (task_totals_add(&key, &share))
		__sync_fetch_and_add(&task_counters[TASK_DROP_TOTALS], 1);
	/* only the thread that added the last share: the process is gone.
	 * Uncounted threads (bpf/task.h): the last of the group by
	 * signal->live, which two threads exiting at once may both read 0:
	 * the one whose delete succeeds reports; a thread later still finds
	 * no target and stops above, or adds to a key no later process has */
	last = task_threads_exit(&key);
	if (!last || (last < 0 && BPF_CORE_READ(signal, live.counter) > 0))
		return 0;
	info = *target;
	if (bpf_map_delete_elem(&targets, &tgid))
		return 0;
	have_totals = !task_totals_take(&key, &totals);
	e = task_event_reserve(TASK_EVENT_EXIT, task, &info);
	if (!e)
		return 0;
	e->exit_code = BPF_CORE_READ(task, exit_code);
	if (have_totals) {
		e->utime_ns = totals.utime_ns;
		e->stime_ns = totals.stime_ns;
		e->nvcsw = totals.nvcsw;
		e->nivcsw = totals.nivcsw;
		e->min_flt = totals.min_flt;
		e->maj_flt = totals.maj_flt;
		e->runtime_ns = totals.runtime_ns;
		e->run_delay_ns = totals.run_delay_ns;
		e->has_run_delay = task_has_run_delay();
	}
	e->maxrss_pages = BPF_CORE_READ(signal, maxrss);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
