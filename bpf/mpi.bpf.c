// SPDX-License-Identifier: GPL-2.0
/* mpi.bpf.c — MPI calls of Target processes, timed per call site.
 *
 * Contract in bpf/mpi.h. Entry: a process outside every Target costs one
 * map lookup; for the outermost MPI call of a thread, remember when it
 * started, its return address (the call site, mpi_return_address) and its count, datatype and
 * peer arguments (a Fortran binding's: those of its nested C call). Return: add the call to its site's running totals, and
 * to the Event ring buffer when Events are asked for. What is decided is
 * in bpf/mpi.bpf.h, tested apart; here only registers are read.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/mpi.h"
#include "bpf/target.bpf.h"
#include "bpf/mpi.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 mpi_events_enabled = 0;
/* set by the Agent once it chooses Events per Target: then only the
 * Targets in mpi_event_targets get them */
volatile __u32 mpi_events_per_target;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_MPI_EVENT_TARGETS);
	__type(key, __u32);  /* target_id */
	__type(value, __u8); /* 1 */
} mpi_event_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, MPI_EVENTS_BYTES);
} mpi_events SEC(".maps");

__u64 mpi_counters[MPI_COUNTERS];

/* the Agent's own process while it calibrates the probe cost
 * (userspace/agent/mpi_probe_cost.c): probed as a Target process */
volatile __u32 mpi_calibration_tgid;

/* through bpf_probe_read_kernel: the verifier refuses a ctx read at a
 * computed offset, which a switch on n may compile into */
static __always_inline __u64 mpi_arg(struct pt_regs *ctx, __u32 n)
{
	switch (n) {
	case 1: return PT_REGS_PARM1_CORE(ctx);
	case 2: return PT_REGS_PARM2_CORE(ctx);
	case 3: return PT_REGS_PARM3_CORE(ctx);
	case 4: return PT_REGS_PARM4_CORE(ctx);
	case 5: return PT_REGS_PARM5_CORE(ctx);
	default: return 0;
	}
}

SEC("uprobe")
int BPF_KPROBE(mpi_entry)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct mpi_call_state fresh;
	const struct mpi_gate *gate;
	struct mpi_process *proc;
	__u64 count_arg, type_arg, peer_arg, now;

	if (!target_lookup(tgid) && tgid != mpi_calibration_tgid)
		return 0;
	/* every trap costs the rank, counted or not as a call */
	proc = mpi_process_of(tgid);
	if (proc)
		__sync_fetch_and_add(&proc->probed_calls, 1);
	count_arg = mpi_arg(ctx, MPI_COOKIE_COUNT_ARG(cookie));
	type_arg = mpi_arg(ctx, MPI_COOKIE_TYPE_ARG(cookie));
	peer_arg = mpi_arg(ctx, MPI_COOKIE_PEER_ARG(cookie));
	gate = mpi_gate_of(tgid);
	now = bpf_ktime_get_ns();
	if (mpi_call_nested(tid, tgid, gate, now, cookie, count_arg, type_arg, peer_arg))
		return 0;
	mpi_call_state_init(&fresh, tgid, cookie, count_arg, type_arg, peer_arg);
	fresh.call_site = mpi_return_address(ctx);
	if (fresh.function == MPI_FN_FINALIZE && proc && !proc->finalize_start_ns)
		proc->finalize_start_ns = bpf_ktime_get_ns();
	fresh.start_ns = bpf_ktime_get_ns();
	fresh.gated = mpi_gate_class(gate, fresh.function, now);
	if (mpi_call_begin(tid, &fresh))
		__sync_fetch_and_add(&mpi_counters[MPI_DROP_THREADS], 1);
	return 0;
}

static __always_inline void mpi_event_submit(const struct mpi_call_state *done, __u32 tid,
					     __u64 now)
{
	struct mpi_event *e;

	e = bpf_ringbuf_reserve(&mpi_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&mpi_counters[MPI_DROP_EVENTS], 1);
		return;
	}
	e->tgid = done->tgid;
	e->tid = tid;
	e->function = done->function;
	e->peer = done->peer;
	e->start_ns = done->start_ns;
	e->duration_ns = now - done->start_ns;
	e->count = done->count;
	e->datatype = done->datatype;
	/* the Agent reads Events when it publishes: waking it at every call
	 * would take a CPU from the ranks; only a filling buffer is worth a
	 * wakeup */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&mpi_events, BPF_RB_AVAIL_DATA) >
				      MPI_EVENTS_BYTES / 2
				  ? BPF_RB_FORCE_WAKEUP
				  : BPF_RB_NO_WAKEUP);
}

/* the Events of process tgid: every Target's, or only those asked for */
static __always_inline int mpi_events_wanted(__u32 tgid)
{
	struct target_info *t;

	if (!mpi_events_per_target)
		return 1;
	t = target_lookup(tgid);
	return t && bpf_map_lookup_elem(&mpi_event_targets, &t->target_id);
}

SEC("uretprobe")
int BPF_KRETPROBE(mpi_return)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct mpi_call_state done;

	if (!mpi_call_end(tid, tgid, &done) || done.gated == MPI_UNCOUNTED)
		return 0;
	__sync_fetch_and_add(&mpi_counters[MPI_CALLS_SEEN], 1);
	if (mpi_call_account(tgid, &done, now))
		__sync_fetch_and_add(&mpi_counters[MPI_DROP_SITES], 1);
	if (mpi_events_enabled && mpi_events_wanted(tgid))
		mpi_event_submit(&done, tid, now);
	return 0;
}
