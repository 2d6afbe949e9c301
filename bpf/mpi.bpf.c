// SPDX-License-Identifier: GPL-2.0
/* mpi.bpf.c — MPI calls of Target processes, timed per call site.
 *
 * Contract in bpf/mpi.h. Entry: a process outside every Target costs one
 * map lookup; for the outermost MPI call of a thread, remember when it
 * started, its return address (the call site) and its count, datatype and
 * peer arguments. Return: add the call to its site's running totals, and
 * to the Event ring buffer when Events are asked for.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/mpi.h"
#include "bpf/target.bpf.h"

#define EEXIST 17

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 mpi_events_enabled = 0;

struct mpi_call_state {
	__u64 start_ns;
	__u64 call_site;
	__u64 count;
	__u64 datatype;
	__s32 peer;
	__u32 function;
	__u32 depth; /* nested MPI calls of this thread */
	__u32 tgid;  /* a tid reused by another process is a new thread */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_MPI_THREADS);
	__type(key, __u32); /* tid */
	__type(value, struct mpi_call_state);
} mpi_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_MPI_SITES);
	__type(key, struct mpi_site_key);
	__type(value, struct mpi_site_value);
} mpi_sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, __u32); /* tgid */
	__type(value, struct mpi_process);
} mpi_processes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, MPI_EVENTS_BYTES);
} mpi_events SEC(".maps");

__u64 mpi_counters[MPI_COUNTERS];

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

static __always_inline struct mpi_process *mpi_process_of(__u32 tgid)
{
	struct mpi_process *p, zero = {};

	p = bpf_map_lookup_elem(&mpi_processes, &tgid);
	if (p)
		return p;
	bpf_map_update_elem(&mpi_processes, &tgid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&mpi_processes, &tgid);
}

SEC("uprobe")
int BPF_KPROBE(mpi_entry)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid, n;
	struct mpi_call_state *st, fresh = {};
	struct mpi_process *proc;

	if (!bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	st = bpf_map_lookup_elem(&mpi_calls, &tid);
	if (st && st->depth > 0 && st->tgid == tgid) {
		st->depth++;
		return 0;
	}
	fresh.depth = 1;
	fresh.tgid = tgid;
	fresh.function = MPI_COOKIE_FN(cookie);
	fresh.peer = -1;
	bpf_probe_read_user(&fresh.call_site, sizeof(fresh.call_site), (void *)PT_REGS_SP(ctx));
	n = MPI_COOKIE_COUNT_ARG(cookie);
	if (n)
		fresh.count = (__u32)mpi_arg(ctx, n); /* int count */
	n = MPI_COOKIE_TYPE_ARG(cookie);
	if (n)
		fresh.datatype = mpi_arg(ctx, n);
	n = MPI_COOKIE_PEER_ARG(cookie);
	if (n)
		fresh.peer = (__s32)mpi_arg(ctx, n);
	if (fresh.function == MPI_FN_FINALIZE) {
		proc = mpi_process_of(tgid);
		if (proc && !proc->finalize_start_ns)
			proc->finalize_start_ns = bpf_ktime_get_ns();
	}
	fresh.start_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&mpi_calls, &tid, &fresh, BPF_ANY))
		__sync_fetch_and_add(&mpi_counters[MPI_DROP_THREADS], 1);
	return 0;
}

static __always_inline void mpi_site_add(const struct mpi_site_key *key, __u64 duration,
					 __u64 count)
{
	struct mpi_site_value *v, zero = {};
	long err;

	v = bpf_map_lookup_elem(&mpi_sites, key);
	if (!v) {
		zero.min_ns = ~0ULL;
		err = bpf_map_update_elem(&mpi_sites, key, &zero, BPF_NOEXIST);
		if (err && err != -EEXIST) {
			__sync_fetch_and_add(&mpi_counters[MPI_DROP_SITES], 1);
			return;
		}
		v = bpf_map_lookup_elem(&mpi_sites, key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->calls, 1);
	__sync_fetch_and_add(&v->total_ns, duration);
	__sync_fetch_and_add(&v->count_sum, count);
	/* min/max: threads of one process rarely share a call site at the
	 * same instant; a lost race costs an extreme, not a count */
	if (duration < v->min_ns)
		v->min_ns = duration;
	if (duration > v->max_ns)
		v->max_ns = duration;
}

SEC("uretprobe")
int BPF_KRETPROBE(mpi_return)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct mpi_site_key key = {};
	struct mpi_call_state *st;
	struct mpi_process *proc;
	struct mpi_event *e;
	__u64 duration;

	st = bpf_map_lookup_elem(&mpi_calls, &tid);
	if (!st || st->depth == 0 || st->tgid != tgid)
		return 0;
	if (--st->depth > 0)
		return 0;
	duration = now - st->start_ns;
	key.tgid = tgid;
	key.function = st->function;
	key.call_site = st->call_site;
	key.datatype = st->datatype;
	__sync_fetch_and_add(&mpi_counters[MPI_CALLS_SEEN], 1);
	mpi_site_add(&key, duration, st->count);

	if (st->function == MPI_FN_INIT || st->function == MPI_FN_INIT_THREAD) {
		proc = mpi_process_of(tgid);
		if (proc && !proc->init_end_ns)
			proc->init_end_ns = now;
	}
	if (mpi_events_enabled) {
		e = bpf_ringbuf_reserve(&mpi_events, sizeof(*e), 0);
		if (!e) {
			__sync_fetch_and_add(&mpi_counters[MPI_DROP_EVENTS], 1);
		} else {
			e->tgid = tgid;
			e->tid = tid;
			e->function = st->function;
			e->peer = st->peer;
			e->start_ns = st->start_ns;
			e->duration_ns = duration;
			e->count = st->count;
			e->datatype = st->datatype;
			/* the Agent reads Events when it publishes: waking it at
			 * every call would take a CPU from the ranks; only a
			 * filling buffer is worth a wakeup */
			bpf_ringbuf_submit(e, bpf_ringbuf_query(&mpi_events, BPF_RB_AVAIL_DATA) >
						      MPI_EVENTS_BYTES / 2
						  ? BPF_RB_FORCE_WAKEUP
						  : BPF_RB_NO_WAKEUP);
		}
	}
	/* the outermost call is over: the map holds only calls in flight */
	bpf_map_delete_elem(&mpi_calls, &tid);
	return 0;
}
