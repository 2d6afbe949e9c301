// SPDX-License-Identifier: GPL-2.0
/* sample.bpf.c — timed samples of Target processes, aggregated in the kernel.
 *
 * Contract in bpf/sample.h. Runs on every sample of every CPU: a task
 * outside the Target set costs one map lookup and returns. The user stack is
 * unwound by frame pointers; the leaf ip comes from the user registers and
 * is always right even where the unwinder is not.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/sample.h"
#include "bpf/target.bpf.h"

#define EFAULT 14
#define EEXIST 17

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

volatile __u32 active_slot;
__u64 sample_counters[SAMPLE_COUNTERS];

static __always_inline int sample_add(void *map, const struct sample_key *key, __u64 period)
{
	struct sample_value *value, zero = {};
	long err;

	value = bpf_map_lookup_elem(map, key);
	if (!value) {
		/* -EEXIST: another CPU inserted it first, which is fine */
		err = bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		if (err && err != -EEXIST)
			return -1;
		value = bpf_map_lookup_elem(map, key);
		if (!value)
			return -1;
	}
	__sync_fetch_and_add(&value->samples, 1);
	__sync_fetch_and_add(&value->period_sum, period);
	return 0;
}

/* Build the key of a sample of the current task; 0 when the task is not in
 * a Target. Kept apart from the perf_event wrapper so it can be reasoned
 * about (and driven) without a sampling interrupt. */
static __always_inline int sample_key_build(struct sample_key *key, __u64 pid_tgid,
					    __u64 interrupted_ip)
{
	struct target_info *target;
	struct task_struct *task;
	struct pt_regs *user_regs;
	__u32 tgid = pid_tgid >> 32;

	target = bpf_map_lookup_elem(&targets, &tgid);
	if (!target)
		return 0;
	key->exec_seq = target->exec_seq;
	key->tgid = tgid;
	key->tid = (__u32)pid_tgid;
	task = bpf_get_current_task_btf();
	user_regs = (struct pt_regs *)bpf_task_pt_regs(task);
	key->leaf_ip = BPF_CORE_READ(user_regs, ip);
	if (interrupted_ip != key->leaf_ip)
		key->flags |= SAMPLE_FLAG_KERNEL;
	return 1;
}

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx)
{
	struct sample_key key = {};
	__u32 slot;
	int err;

	if (!sample_key_build(&key, bpf_get_current_pid_tgid(), PT_REGS_IP(&ctx->regs)))
		return 0;
	__sync_fetch_and_add(&sample_counters[SAMPLE_SEEN], 1);

	slot = active_slot; /* once: the stack and the sample go to one pair */
	if (slot)
		key.user_stack_id = bpf_get_stackid(ctx, &stacks1, BPF_F_USER_STACK);
	else
		key.user_stack_id = bpf_get_stackid(ctx, &stacks0, BPF_F_USER_STACK);
	if (key.user_stack_id == -EFAULT)
		__sync_fetch_and_add(&sample_counters[SAMPLE_STACK_UNREADABLE], 1);
	else if (key.user_stack_id < 0)
		__sync_fetch_and_add(&sample_counters[SAMPLE_DROP_STACKS], 1);

	if (slot)
		err = sample_add(&samples1, &key, ctx->sample_period);
	else
		err = sample_add(&samples0, &key, ctx->sample_period);
	if (err)
		__sync_fetch_and_add(&sample_counters[SAMPLE_DROP_KEYS], 1);
	return 0;
}
