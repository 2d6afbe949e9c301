// SPDX-License-Identifier: GPL-2.0
/* sample.bpf.c — timed samples of Target processes, aggregated in the kernel.
 *
 * Contract in bpf/sample.h. Runs on every sample of every CPU: a task
 * outside the Target set costs one map lookup and returns. The user stack is
 * unwound by frame pointers; the leaf ip comes from the user registers and
 * is always right even where the unwinder is not. What is decided (key,
 * addition, slot) is in bpf/sample.bpf.h, tested apart.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/sample.h"
#include "bpf/target.bpf.h"
#include "bpf/sample.bpf.h"

#define EFAULT 14

char LICENSE[] SEC("license") = "GPL";

struct sample_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_SAMPLE_KEYS);
	__type(key, struct sample_key);
	__type(value, struct sample_value);
};

struct sample_map samples0 SEC(".maps");
struct sample_map samples1 SEC(".maps");

/* stacks0 holds the stacks of samples0's keys, stacks1 of samples1's:
 * the Agent empties the inactive pair without racing the program */
struct stack_map {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, MAX_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
};

struct stack_map stacks0 SEC(".maps");
struct stack_map stacks1 SEC(".maps");

__u64 sample_counters[SAMPLE_COUNTERS];

/* the stack and the sample of one slot's pair */
static __always_inline void sample_record(struct bpf_perf_event_data *ctx, struct sample_key *key,
					  int slot)
{
	if (slot)
		key->user_stack_id = bpf_get_stackid(ctx, &stacks1, BPF_F_USER_STACK);
	else
		key->user_stack_id = bpf_get_stackid(ctx, &stacks0, BPF_F_USER_STACK);
	if (key->user_stack_id == -EFAULT)
		__sync_fetch_and_add(&sample_counters[SAMPLE_STACK_UNREADABLE], 1);
	else if (key->user_stack_id < 0)
		__sync_fetch_and_add(&sample_counters[SAMPLE_DROP_STACKS], 1);
	if (sample_add(slot ? (void *)&samples1 : (void *)&samples0, key, ctx->sample_period))
		__sync_fetch_and_add(&sample_counters[SAMPLE_DROP_KEYS], 1);
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
	__u32 cpu;
	int slot;

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
			__sync_fetch_and_add(&sample_counters[SAMPLE_SKIP_CREDENTIALS], 1);
			return 0;
		}
	}
	__sync_fetch_and_add(&sample_counters[SAMPLE_SEEN], 1);
	user_regs = (struct pt_regs *)bpf_task_pt_regs(task);
	sample_key_fill(&key, target, pid_tgid, PT_REGS_IP_CORE(user_regs),
			PT_REGS_IP(&ctx->regs));

	cpu = bpf_get_smp_processor_id();
	slot = sample_slot_enter(cpu);
	if (slot < 0) {
		__sync_fetch_and_add(&sample_counters[SAMPLE_DROP_FLIP], 1);
		return 0;
	}
	sample_record(ctx, &key, slot);
	sample_slot_exit(cpu, slot);
	return 0;
}
