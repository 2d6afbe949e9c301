// SPDX-License-Identifier: GPL-2.0
/* selftest.bpf.c — the helpers of bpf/X.bpf.h behind SEC("syscall")
 * programs, for bpf_prog_test_run_opts (tests/unit/test_bpf_helpers.c).
 *
 * Contract in bpf/selftest.h. Never attached, never loaded by the Agent:
 * this object has its own targets, task_totals, mpi_* maps and sample
 * slots, filled and read by the test through the skeleton. Each program's
 * arguments and results are one global (`*_args`, in .bss), not its ctx:
 * the verifier refuses the derived ctx pointers struct copies compile to.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/mpi.bpf.h"
#include "bpf/sample.bpf.h"
#include "bpf/selftest.h"
#include "bpf/target.bpf.h"
#include "bpf/task.bpf.h"

#ifndef EINVAL
#define EINVAL 22
#endif

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct sample_key);
	__type(value, struct sample_value);
} selftest_samples SEC(".maps");

struct selftest_target_args target_args;
struct selftest_sample_args sample_args;
struct selftest_totals_args totals_args;
struct selftest_mpi_args mpi_args;

SEC("syscall")
int selftest_target(void *ctx)
{
	struct selftest_target_args *args = &target_args;
	struct target_info *t;

	if (args->op == SELFTEST_FORK) {
		args->ret = target_follow_fork(args->tgid, args->child_tgid);
		return 0;
	}
	t = target_lookup(args->tgid);
	args->ret = !!t;
	if (t)
		args->info = *t;
	return 0;
}

SEC("syscall")
int selftest_sample(void *ctx)
{
	struct selftest_sample_args *args = &sample_args;
	struct target_info *target;
	struct sample_key key;
	int slot;

	if (args->op == SELFTEST_SAMPLE_KEY) {
		target = target_lookup(args->pid_tgid >> 32);
		args->ret = !!target;
		if (target) {
			sample_key_fill(&key, target, args->pid_tgid, args->user_ip,
					args->interrupted_ip);
			args->key = key;
		}
		return 0;
	}
	if (args->op == SELFTEST_PMU_SCALE) {
		args->pmu[0] = pmu_scale(args->pmu[0], args->pmu[1], args->pmu[2]);
		return 0;
	}
	slot = sample_slot_enter(args->cpu);
	args->slot = slot;
	if (slot < 0) {
		args->ret = slot;
		return 0;
	}
	args->inflight = sample_inflight_of(args->cpu)->count[slot & 1];
	key = args->key;
	args->ret = sample_add(&selftest_samples, &key, args->period,
			       args->has_pmu ? args->pmu : NULL);
	sample_slot_exit(args->cpu, slot);
	return 0;
}

SEC("syscall")
int selftest_totals(void *ctx)
{
	struct selftest_totals_args *args = &totals_args;
	struct task_totals_key key = args->key;
	struct task_totals t = args->totals;

	switch (args->op) {
	case SELFTEST_TOTALS_ADD:
		args->ret = task_totals_add(&key, &t);
		break;
	case SELFTEST_TOTALS_TAKE:
		args->ret = task_totals_take(&key, &t);
		args->totals = t;
		break;
	case SELFTEST_TOTALS_KEY:
		task_totals_key_of(bpf_get_current_task_btf(), &key);
		args->key = key;
		args->ret = 0;
		break;
	case SELFTEST_THREADS_SET:
		args->ret = task_threads_set(&key, args->live);
		break;
	case SELFTEST_THREADS_NEW:
		args->ret = task_threads_new(&key, args->live);
		break;
	case SELFTEST_THREADS_EXIT:
		args->ret = task_threads_exit(&key);
		break;
	case SELFTEST_THREADS_FORGET:
		task_threads_forget(&key);
		args->ret = 0;
		break;
	default:
		args->ret = -EINVAL;
	}
	return 0;
}

SEC("syscall")
int selftest_mpi(void *ctx)
{
	struct selftest_mpi_args *args = &mpi_args;
	struct mpi_call_state st;

	if (args->op == SELFTEST_MPI_RETURN_ADDRESS) {
		args->call_site = mpi_return_address((struct pt_regs *)args->regs);
		args->ret = 0;
		return 0;
	}
	if (args->op == SELFTEST_MPI_ENTRY) {
		if (!target_lookup(args->tgid)) {
			args->ret = 0;
			return 0;
		}
		const struct mpi_gate *gate = mpi_gate_of(args->tgid);

		if (mpi_call_nested(args->tid, args->tgid, gate, args->now_ns, args->cookie,
				    args->count_arg, args->type_arg, args->peer_arg)) {
			args->ret = 2;
			return 0;
		}
		mpi_call_state_init(&st, args->tgid, args->cookie, args->count_arg, args->type_arg,
				    args->peer_arg);
		st.call_site = args->call_site;
		st.start_ns = args->now_ns;
		st.gated = mpi_gate_class(gate, st.function, args->now_ns);
		args->state = st;
		args->ret = mpi_call_begin(args->tid, &st) ?: 1;
		return 0;
	}
	args->ret = mpi_call_end(args->tid, args->tgid, &st);
	if (args->ret == 1) {
		args->state = st;
		if (mpi_call_account(args->tgid, &st, args->now_ns))
			args->ret = -ENOENT;
	}
	return 0;
}
