// SPDX-License-Identifier: GPL-2.0
/* task.bpf.c — the Target set follows fork; exec and exit are reported.
 *
 * Contract in bpf/task.h. A fork inside a Target adds the child process
 * before it runs its first instruction, so nothing it does is missed; the
 * exit of a thread group snapshots its counters and removes it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/task.h"
#include "bpf/target.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TASK_EVENTS_BYTES);
} task_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, __u32);
	__type(value, struct task_totals);
} task_totals SEC(".maps");

__u64 task_counters[TASK_COUNTERS];

/* this thread's share of its process' totals */
static __always_inline struct task_totals *task_totals_add(__u32 tgid, struct task_struct *task)
{
	struct task_totals *t, zero = {};

	t = bpf_map_lookup_elem(&task_totals, &tgid);
	if (!t) {
		bpf_map_update_elem(&task_totals, &tgid, &zero, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&task_totals, &tgid);
		if (!t) {
			__sync_fetch_and_add(&task_counters[TASK_DROP_TOTALS], 1);
			return NULL;
		}
	}
	__sync_fetch_and_add(&t->utime_ns, BPF_CORE_READ(task, utime));
	__sync_fetch_and_add(&t->stime_ns, BPF_CORE_READ(task, stime));
	__sync_fetch_and_add(&t->nvcsw, BPF_CORE_READ(task, nvcsw));
	__sync_fetch_and_add(&t->nivcsw, BPF_CORE_READ(task, nivcsw));
	__sync_fetch_and_add(&t->min_flt, BPF_CORE_READ(task, min_flt));
	__sync_fetch_and_add(&t->maj_flt, BPF_CORE_READ(task, maj_flt));
	return t;
}

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
	e->start_time_ns = BPF_CORE_READ(task, start_time);
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), task->comm);
	return e;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(task_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	struct target_info *target, child_info;

	if (child_tgid == parent_tgid) /* a new thread: its process is already in */
		return 0;
	target = bpf_map_lookup_elem(&targets, &parent_tgid);
	if (!target)
		return 0;
	child_info = *target;
	child_info.exec_seq = 0;
	if (bpf_map_update_elem(&targets, &child_tgid, &child_info, BPF_ANY))
		__sync_fetch_and_add(&task_counters[TASK_DROP_TARGETS], 1);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(task_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct target_info *target;
	struct task_event *e;

	target = bpf_map_lookup_elem(&targets, &tgid);
	if (!target)
		return 0;
	target->exec_seq++; /* one thread left: exec killed the others */
	e = task_event_reserve(TASK_EVENT_EXEC, task, target);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(task_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct signal_struct *signal = BPF_CORE_READ(task, signal);
	struct target_info *target, info;
	struct task_totals *totals;
	struct task_event *e;

	target = bpf_map_lookup_elem(&targets, &tgid);
	if (!target)
		return 0;
	/* every thread adds its share: followed from its first instruction,
	 * the process' threads all exit here */
	totals = task_totals_add(tgid, task);
	/* only the last thread of the group: the process is gone. Two threads
	 * exiting at once may both read 0: the first removes the target, so
	 * the second stops at the lookup above (its share may be lost then) */
	if (BPF_CORE_READ(signal, live.counter) > 0)
		return 0;
	info = *target;
	if (bpf_map_delete_elem(&targets, &tgid))
		return 0;
	e = task_event_reserve(TASK_EVENT_EXIT, task, &info);
	if (e) {
		e->exit_code = BPF_CORE_READ(task, exit_code);
		if (totals) {
			e->utime_ns = totals->utime_ns;
			e->stime_ns = totals->stime_ns;
			e->nvcsw = totals->nvcsw;
			e->nivcsw = totals->nivcsw;
			e->min_flt = totals->min_flt;
			e->maj_flt = totals->maj_flt;
		}
		e->maxrss_pages = BPF_CORE_READ(signal, maxrss);
		bpf_ringbuf_submit(e, 0);
	}
	bpf_map_delete_elem(&task_totals, &tgid);
	return 0;
}
