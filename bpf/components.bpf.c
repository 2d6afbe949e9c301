// SPDX-License-Identifier: GPL-2.0
/* components.bpf.c — the costs of Component calls of Target processes, per
 * thread and per Step (contract in bpf/components.h).
 *
 * Entry: a process outside every Target costs one map lookup; else the
 * thread's frame is pushed with a snapshot of its clocks, faults, context
 * switches and the process' peak RSS. Return: the frame of the same
 * Component is popped (the frames above it, whose returns were never seen
 * — longjmp, exceptions — are counted lost), its inclusive costs added to
 * its parent frame's children, and its self costs (inclusive - children)
 * to the running totals. The thread's CPU time is its wall time minus its
 * off-CPU time, which sched_switch counts only for threads inside a
 * Component call.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/components.h"
#include "bpf/target.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 component_page_size = 4096;
/* the probe-cost measurement: this process counts as a Target process */
volatile __u32 component_calibration_tgid;

__u64 component_counters[COMPONENT_COUNTERS];

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct component_thread);
} component_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MAX_COMPONENT_COSTS);
	__type(key, struct component_cost_key);
	__type(value, struct component_cost_value);
} component_costs SEC(".maps");

/* the Targets whose Run gave a --step function */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_COMPONENT_TARGETS);
	__type(key, __u32);  /* target_id */
	__type(value, __u8); /* 1 */
} component_step_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, __u32); /* tgid */
	__type(value, struct component_step_state);
} component_steps_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_COMPONENT_STEPS);
	__type(key, struct component_step_key);
	__type(value, struct component_step_value);
} component_steps SEC(".maps");

/* the process' peak RSS in bytes: the high-water mark the kernel keeps
 * (updated only when RSS is about to drop) or the current RSS when higher.
 * mm->rss_stat as percpu_counters (Linux 6.2+): their shared count, which
 * lags the per-CPU deltas by at most a batch per CPU */
static __always_inline __u64 component_peak_rss(struct task_struct *task)
{
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	__s64 rss = 0, v;
	__u64 hiwater;
	int i;

	if (!mm)
		return 0;
	hiwater = BPF_CORE_READ(mm, hiwater_rss);
	for (i = 0; i < 4; i++) { /* file, anon, swap entries (not resident), shmem */
		if (i == 2)
			continue;
		v = BPF_CORE_READ(mm, rss_stat[i].count);
		rss += v > 0 ? v : 0;
	}
	return ((__u64)rss > hiwater ? (__u64)rss : hiwater) * component_page_size;
}

static __always_inline void component_count(int which)
{
	__sync_fetch_and_add(&component_counters[which], 1);
}

/* A call's phase and Step, by where process tgid is in its Steps */
static __always_inline void component_phase_of(__u32 tgid, int has_step, __u32 *phase, __s32 *step)
{
	struct component_step_state *st;

	*phase = COMPONENT_PHASE_STEP;
	*step = 0;
	if (!has_step)
		return;
	st = bpf_map_lookup_elem(&component_steps_state, &tgid);
	if (!st || (!st->next_step && !st->step_depth)) {
		*phase = COMPONENT_PHASE_SETUP;
		*step = -1;
	} else if (!st->step_depth) {
		*phase = COMPONENT_PHASE_BETWEEN;
		*step = st->current;
	} else {
		*step = st->current;
	}
}

/* Step `step` of tgid begins (end_ns 0) or ends at now */
static __always_inline void component_step_mark(__u32 tgid, int has_step, __u32 step, __u64 now,
						int end)
{
	struct component_step_key key = {.tgid = tgid, .step = step};
	struct component_step_value *v, fresh = {.start_ns = now};

	v = bpf_map_lookup_elem(&component_steps, &key);
	if (v) {
		if (end)
			v->end_ns = now;
		return;
	}
	if (end && has_step)
		return; /* its start was lost (counted then) */
	if (end)
		fresh.end_ns = now;
	if (bpf_map_update_elem(&component_steps, &key, &fresh, BPF_NOEXIST))
		component_count(COMPONENT_LOST_STEPS);
}

/* the entry of the step function: the outermost call begins a Step */
static __always_inline void component_step_begin(__u32 tgid, __u64 now)
{
	struct component_step_state *st, zero = {.current = -1};
	__u32 k;

	st = bpf_map_lookup_elem(&component_steps_state, &tgid);
	if (!st) {
		bpf_map_update_elem(&component_steps_state, &tgid, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&component_steps_state, &tgid);
		if (!st) {
			component_count(COMPONENT_LOST_STEPS);
			return;
		}
	}
	if (st->step_depth++)
		return;
	k = st->next_step++;
	st->current = (__s32)k;
	component_step_mark(tgid, 1, k, now, 0);
}

static __always_inline void component_step_end(__u32 tgid, __u64 now)
{
	struct component_step_state *st = bpf_map_lookup_elem(&component_steps_state, &tgid);

	if (!st || !st->step_depth || --st->step_depth)
		return;
	component_step_mark(tgid, 1, (__u32)st->current, now, 1);
}

/* whether process tgid is observed (1) and its Run gave a --step (*has_step) */
static __always_inline int component_target(__u32 tgid, int *has_step)
{
	struct target_info *t;

	*has_step = 0;
	if (tgid == component_calibration_tgid)
		return 1;
	t = target_lookup(tgid);
	if (!t)
		return 0;
	*has_step = !!bpf_map_lookup_elem(&component_step_targets, &t->target_id);
	return 1;
}

SEC("uprobe")
int BPF_KPROBE(component_entry)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx), now;
	__u32 tgid = pid_tgid >> 32;
	struct task_struct *task;
	struct component_thread *th;
	struct component_frame *f;
	int has_step;

	if (!component_target(tgid, &has_step))
		return 0;
	task = bpf_get_current_task_btf();
	th = bpf_task_storage_get(&component_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!th) {
		component_count(COMPONENT_LOST_NO_STORAGE);
		return 0;
	}
	now = bpf_ktime_get_ns();
	if (has_step && (cookie & COMPONENT_STEP_FLAG))
		component_step_begin(tgid, now);
	else if (!has_step)
		component_step_mark(tgid, 0, 0, now, 0); /* the one Step: first seen */
	if (th->depth >= MAX_COMPONENT_DEPTH) {
		th->overflow++;
		component_count(COMPONENT_LOST_DEPTH);
		return 0;
	}
	f = &th->frames[th->depth & (MAX_COMPONENT_DEPTH - 1)];
	__builtin_memset(f, 0, sizeof(*f));
	f->component = COMPONENT_COOKIE_ID(cookie);
	component_phase_of(tgid, has_step, &f->phase, &f->step);
	f->entry_off_cpu_ns = th->off_cpu_ns;
	f->entry_minor_faults = BPF_CORE_READ(task, min_flt);
	f->entry_major_faults = BPF_CORE_READ(task, maj_flt);
	f->entry_nvcsw = BPF_CORE_READ(task, nvcsw);
	f->entry_nivcsw = BPF_CORE_READ(task, nivcsw);
	f->entry_peak_rss = component_peak_rss(task);
	th->depth++;
	f->entry_ns = bpf_ktime_get_ns(); /* last: the snapshot's own cost is not the call's */
	return 0;
}

static __always_inline __u64 sub0(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* the inclusive costs of frame f ending now */
static __always_inline void component_inclusive(struct task_struct *task,
						const struct component_thread *th,
						const struct component_frame *f, __u64 now,
						struct component_cost *c)
{
	c->wall_ns = sub0(now, f->entry_ns);
	c->cpu_ns = sub0(c->wall_ns, sub0(th->off_cpu_ns, f->entry_off_cpu_ns));
	c->minor_faults = sub0(BPF_CORE_READ(task, min_flt), f->entry_minor_faults);
	c->major_faults = sub0(BPF_CORE_READ(task, maj_flt), f->entry_major_faults);
	c->voluntary_switches = sub0(BPF_CORE_READ(task, nvcsw), f->entry_nvcsw);
	c->involuntary_switches = sub0(BPF_CORE_READ(task, nivcsw), f->entry_nivcsw);
	c->peak_rss_increase = sub0(component_peak_rss(task), f->entry_peak_rss);
}

/* adds one call's self costs to key's running totals */
static __always_inline void component_account(const struct component_cost_key *key,
					      const struct component_cost *self)
{
	struct component_cost_value *v, zero = {};

	v = bpf_map_lookup_elem(&component_costs, key);
	if (!v) {
		bpf_map_update_elem(&component_costs, key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&component_costs, key);
		if (!v) {
			component_count(COMPONENT_LOST_MAP);
			return;
		}
	}
	__sync_fetch_and_add(&v->calls, 1);
	__sync_fetch_and_add(&v->self.wall_ns, self->wall_ns);
	__sync_fetch_and_add(&v->self.cpu_ns, self->cpu_ns);
	__sync_fetch_and_add(&v->self.minor_faults, self->minor_faults);
	__sync_fetch_and_add(&v->self.major_faults, self->major_faults);
	__sync_fetch_and_add(&v->self.voluntary_switches, self->voluntary_switches);
	__sync_fetch_and_add(&v->self.involuntary_switches, self->involuntary_switches);
	__sync_fetch_and_add(&v->self.peak_rss_increase, self->peak_rss_increase);
	component_count(COMPONENT_CALLS_SEEN);
}

/* the depth (1..) of the innermost frame of component id, 0: none */
static __always_inline __u32 component_find(const struct component_thread *th, __u32 id)
{
	__u32 i, d;

	for (i = 0; i < MAX_COMPONENT_DEPTH; i++) {
		if (i >= th->depth)
			break;
		d = th->depth - 1 - i;
		if (th->frames[d & (MAX_COMPONENT_DEPTH - 1)].component == id)
			return d + 1;
	}
	return 0;
}

static __always_inline void cost_add(struct component_cost *to, const struct component_cost *c)
{
	to->wall_ns += c->wall_ns;
	to->cpu_ns += c->cpu_ns;
	to->minor_faults += c->minor_faults;
	to->major_faults += c->major_faults;
	to->voluntary_switches += c->voluntary_switches;
	to->involuntary_switches += c->involuntary_switches;
	to->peak_rss_increase += c->peak_rss_increase;
}

SEC("uretprobe")
int BPF_KRETPROBE(component_return)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = pid_tgid >> 32, id = COMPONENT_COOKIE_ID(cookie), d;
	struct task_struct *task = bpf_get_current_task_btf();
	struct component_cost_key key = {.tgid = tgid, .tid = (__u32)pid_tgid, .component = id};
	struct component_cost incl, self;
	struct component_thread *th;
	struct component_frame *f;
	int has_step;

	th = bpf_task_storage_get(&component_threads, task, 0, 0);
	if (!th)
		return 0;
	if (th->overflow) {
		th->overflow--;
		goto step;
	}
	d = component_find(th, id);
	if (!d)
		goto step; /* its entry was not seen: probed while in the call */
	if (th->depth > d) {
		__sync_fetch_and_add(&component_counters[COMPONENT_LOST_UNBALANCED], th->depth - d);
		th->depth = d;
	}
	f = &th->frames[(d - 1) & (MAX_COMPONENT_DEPTH - 1)];
	component_inclusive(task, th, f, now, &incl);
	self = incl;
	self.wall_ns = sub0(incl.wall_ns, f->children.wall_ns);
	self.cpu_ns = sub0(incl.cpu_ns, f->children.cpu_ns);
	self.minor_faults = sub0(incl.minor_faults, f->children.minor_faults);
	self.major_faults = sub0(incl.major_faults, f->children.major_faults);
	self.voluntary_switches = sub0(incl.voluntary_switches, f->children.voluntary_switches);
	self.involuntary_switches =
	    sub0(incl.involuntary_switches, f->children.involuntary_switches);
	key.step = f->step;
	key.phase = f->phase;
	if (d > 1) {
		struct component_frame *parent = &th->frames[(d - 2) & (MAX_COMPONENT_DEPTH - 1)];

		key.parent = parent->component;
		cost_add(&parent->children, &incl);
	}
	th->depth = d - 1;
	component_account(&key, &self);
step:
	if (!component_target(tgid, &has_step))
		return 0;
	if (has_step && (cookie & COMPONENT_STEP_FLAG))
		component_step_end(tgid, now);
	else if (!has_step)
		component_step_mark(tgid, 0, 0, now, 1); /* the one Step: last seen */
	return 0;
}

/* off-CPU time of the threads inside a Component call: one storage
 * lookup for each of the two threads otherwise */
SEC("tp_btf/sched_switch")
int BPF_PROG(component_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct component_thread *th;
	__u64 now = bpf_ktime_get_ns();

	th = bpf_task_storage_get(&component_threads, prev, 0, 0);
	if (th && th->depth)
		th->switched_out_ns = now;
	th = bpf_task_storage_get(&component_threads, next, 0, 0);
	if (th && th->switched_out_ns) {
		th->off_cpu_ns += sub0(now, th->switched_out_ns);
		th->switched_out_ns = 0;
	}
	return 0;
}
