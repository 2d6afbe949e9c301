// SPDX-License-Identifier: GPL-2.0
/* sample.bpf.c — timed samples of Target processes, aggregated in the kernel.
 *
 * Contract in bpf/sample.h. Runs on every sample of every CPU: a task
 * outside the Target set costs one map lookup and returns. A sample taken
 * in the kernel gets its kernel frames (bpf_get_stack); the user Stack is
 * walked from the unwind tables the Agent loaded (bpf/unwind.bpf.h), or by
 * the kernel's frame-pointer walk when the Agent asks for it (`unwinder`).
 * The leaf ip comes from the user registers and is always right even
 * where the unwinder is not. What is decided (key, addition, slot, Stack
 * storage) is in bpf/sample.bpf.h, tested apart.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/sample.h"
#include "bpf/target.bpf.h"
#include "bpf/sample.bpf.h"
#include "bpf/unwind.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct sample_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_SAMPLE_KEYS);
	__type(key, struct sample_key);
	__type(value, struct sample_value);
};

struct sample_map samples0 SEC(".maps");
struct sample_map samples1 SEC(".maps");

/* stacks0 holds the Stacks of samples0's keys, stacks1 of samples1's:
 * the Agent empties the inactive pair without racing the program.
 * Allocated as Stacks arrive (a Stack is 1.5 KiB). */
struct stack_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_STACKS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct stack_value);
};

struct stack_map stacks0 SEC(".maps");
struct stack_map stacks1 SEC(".maps");

__u64 sample_counters[SAMPLE_COUNTERS];

/* enum sample_unwinder, set by the Agent before load */
const volatile __u32 unwinder = SAMPLE_UNWINDER_TABLES;

/* The sampling group (bpf/sample.h), set by the Agent before load:
 * pmu_events counting events per CPU, event i of cpu at index
 * cpu * MAX_PMU_EVENTS + i of pmu_fds, its growth × pmu_weight[i] added
 * to counter pmu_counter_of[i]. 0: no group, and the verifier removes
 * every instruction of it (a sample costs what it did without). */
const volatile __u32 pmu_events = 0;
const volatile __u32 pmu_counter_of[MAX_PMU_EVENTS];
const volatile __u32 pmu_weight[MAX_PMU_EVENTS];

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1); /* the sampler sets CPUs × MAX_PMU_EVENTS */
} pmu_fds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pmu_reading);
} pmu_last SEC(".maps");

static __always_inline void count(__u32 counter)
{
	if (counter < SAMPLE_COUNTERS)
		__sync_fetch_and_add(&sample_counters[counter], 1);
}

/* The weighted growth of the group's counters since this CPU's previous
 * sample (of any task: the slice that ends here) into growth[]. An event
 * read for the first time, or refused, adds nothing for this slice. */
static __always_inline void pmu_slice(__u64 *growth)
{
	struct bpf_perf_event_value v;
	struct pmu_reading *last;
	__u32 zero = 0, cpu = bpf_get_smp_processor_id(), i, c;
	__u64 now;

	last = bpf_map_lookup_elem(&pmu_last, &zero);
	if (!last)
		return;
	for (i = 0; i < MAX_PMU_EVENTS; i++) {
		if (i >= pmu_events)
			break;
		if (bpf_perf_event_read_value(&pmu_fds, (__u64)cpu * MAX_PMU_EVENTS + i, &v,
					      sizeof(v))) {
			last->valid &= ~(1u << i);
			count(SAMPLE_PMU_UNREAD);
			continue;
		}
		now = pmu_scale(v.counter, v.enabled, v.running);
		c = pmu_counter_of[i];
		if ((last->valid & (1u << i)) && now >= last->scaled[i] && c < SAMPLE_PMU_COUNTERS)
			growth[c] += (now - last->scaled[i]) * pmu_weight[i];
		last->scaled[i] = now;
		last->valid |= 1u << i;
	}
}

/* the kernel frames of a sample taken in the kernel, into s->stack */
static __always_inline void stack_kernel(struct bpf_perf_event_data *ctx,
					 struct unwind_scratch *s)
{
	/* one frame more than kept: 65 back means deeper than 64 */
	long n = bpf_get_stack(ctx, s->stack.ips, (MAX_KERNEL_FRAMES + 1) * sizeof(__u64), 0);
	__u32 i;

	if (n <= 0)
		return;
	s->stack.n_kernel = n / sizeof(__u64);
	if (s->stack.n_kernel > MAX_KERNEL_FRAMES) {
		s->stack.n_kernel = MAX_KERNEL_FRAMES;
		s->stack.kernel_truncated = 1;
		count(SAMPLE_KERNEL_TRUNCATED);
	}
	for (i = 0; i < MAX_KERNEL_FRAMES; i++) {
		if (i >= s->stack.n_kernel)
			break;
		unwind_fold(s, s->stack.ips[i]);
	}
}

/* the kernel's own frame-pointer walk of the user stack, after the kernel frames */
static __always_inline void stack_user_frame_pointers(struct bpf_perf_event_data *ctx,
						      struct unwind_scratch *s)
{
	__u32 at = s->stack.n_kernel, i;
	long n;

	if (at > MAX_KERNEL_FRAMES)
		return;
	n = bpf_get_stack(ctx, &s->stack.ips[at], MAX_USER_FRAMES * sizeof(__u64),
			  BPF_F_USER_STACK);
	if (n <= 0) {
		s->stack.user_end = UNWIND_END_READ_FAILED;
		return;
	}
	s->stack.n_user = n / sizeof(__u64);
	/* the walk stops at rbp 0 or an unreadable frame: it cannot tell */
	s->stack.user_end = s->stack.n_user >= MAX_USER_FRAMES ? UNWIND_END_DEPTH
							       : UNWIND_END_COMPLETE;
	for (i = 0; i < MAX_USER_FRAMES; i++) {
		if (i >= s->stack.n_user || at + i >= MAX_FRAMES)
			break;
		unwind_fold(s, s->stack.ips[at + i]);
	}
}

/* The Stack of this sample into the per-CPU scratch: its digest */
static __always_inline __u64 stack_walk(struct bpf_perf_event_data *ctx, struct unwind_scratch *s,
					__u32 tgid, struct pt_regs *user_regs, int in_kernel)
{
	s->digest = 0xcbf29ce484222325ull;
	s->stack.check = 0x84222325cbf29ce4ull;
	s->stack.n_kernel = 0;
	s->stack.n_user = 0;
	s->stack.kernel_truncated = 0;
	if (in_kernel)
		stack_kernel(ctx, s);
	if (unwinder == SAMPLE_UNWINDER_FRAME_POINTERS)
		stack_user_frame_pointers(ctx, s);
	else
		unwind_user(s, tgid, PT_REGS_IP_CORE(user_regs), PT_REGS_SP_CORE(user_regs),
			    PT_REGS_FP_CORE(user_regs));
	return unwind_digest_add(s->digest, ((__u64)s->stack.user_end << 32) | s->stack.n_kernel);
}

/* the Stack and the sample of one slot's pair */
static __always_inline void sample_record(struct bpf_perf_event_data *ctx, struct sample_key *key,
					  struct unwind_scratch *s, __u64 digest, int slot,
					  const __u64 *growth)
{
	__u32 why = 0, collisions = 0;

	key->stack = stack_store(slot ? (void *)&stacks1 : (void *)&stacks0, &s->stack, digest,
				 &why, &collisions);
	if (collisions)
		__sync_fetch_and_add(&sample_counters[SAMPLE_STACK_COLLISIONS], collisions);
	if (sample_add(slot ? (void *)&samples1 : (void *)&samples0, key, ctx->sample_period,
		       pmu_events ? growth : NULL)) {
		count(SAMPLE_DROP_KEYS);
		return;
	}
	/* a kept sample: its Stack lost under the cause, or how it ended */
	if (!key->stack)
		count(why);
	else
		count(SAMPLE_UNWIND_END + s->stack.user_end);
}

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct target_info *target;
	struct target_cred cred;
	struct task_struct *task;
	struct sample_key key;
	struct pt_regs *user_regs;
	struct unwind_scratch *s;
	__u64 digest, growth[SAMPLE_PMU_COUNTERS] = {};
	__u32 cpu;
	int slot;

	/* every sample of the CPU closes a slice, a Target's or not */
	if (pmu_events)
		pmu_slice(growth);
	target = target_lookup(pid_tgid >> 32);
	if (!target)
		return 0;
	task = bpf_get_current_task_btf();
	/* a user's Target: never a sample of what the user could not debug,
	 * not even between a setuid exec committing it and the process
	 * leaving, nor of a process made non-dumpable since */
	if (target->uid != TARGET_UID_ANY) {
		target_cred_read(task, &cred);
		if (!target_cred_allows(target->uid, &cred)) {
			count(SAMPLE_SKIP_CREDENTIALS);
			return 0;
		}
	}
	count(SAMPLE_SEEN);
	user_regs = (struct pt_regs *)bpf_task_pt_regs(task);
	sample_key_fill(&key, target, pid_tgid, PT_REGS_IP_CORE(user_regs),
			PT_REGS_IP(&ctx->regs));
	s = unwind_scratch_get();
	if (!s)
		return 0;
	digest = stack_walk(ctx, s, key.tgid, user_regs, key.flags & SAMPLE_FLAG_KERNEL);

	cpu = bpf_get_smp_processor_id();
	slot = sample_slot_enter(cpu);
	if (slot < 0) {
		count(SAMPLE_DROP_FLIP);
		return 0;
	}
	sample_record(ctx, &key, s, digest, slot, growth);
	sample_slot_exit(cpu, slot);
	return 0;
}
