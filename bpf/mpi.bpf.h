/* mpi.bpf.h — what bpf/mpi.bpf.c decides about one MPI call, for BPF
 * programs only (contract in bpf/mpi.h): the state of a call from its
 * attach cookie and arguments, the outermost call of a thread (nested
 * calls and PMPI_X reached from MPI_X are not counted twice; a Fortran
 * binding's arguments taken from its nested C call), and the
 * running totals of a call site.
 *
 * `static __always_inline` helpers of plain values (no uprobe ctx), so
 * that bpf/selftest.bpf.c drives them through bpf_prog_test_run_opts
 * (tests/unit/test_bpf_helpers.c). The maps are declared here: every
 * object that includes it has its own.
 */
#ifndef NUNATAK_BPF_MPI_BPF_H
#define NUNATAK_BPF_MPI_BPF_H

#include "bpf/mpi.h"
#include "bpf/target.h"

#include "bpf/errno.bpf.h"

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

/* count, datatype and peer of st from the raw registers count_arg,
 * type_arg and peer_arg of the argument positions cookie gives (unset
 * where it gives none). count and peer are C ints: only the low 32 bits
 * of their registers are defined. */
static __always_inline void mpi_call_state_args(struct mpi_call_state *st, __u64 cookie,
						__u64 count_arg, __u64 type_arg, __u64 peer_arg)
{
	st->count = MPI_COOKIE_COUNT_ARG(cookie) ? (__u32)count_arg : 0;
	st->datatype = MPI_COOKIE_TYPE_ARG(cookie) ? type_arg : 0;
	st->peer = MPI_COOKIE_PEER_ARG(cookie) ? (__s32)peer_arg : -1;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, __u32); /* tgid */
	__type(value, struct mpi_gate);
} mpi_gates SEC(".maps");

/* the gate of process tgid, NULL when every call of it is probed */
static __always_inline const struct mpi_gate *mpi_gate_of(__u32 tgid)
{
	return bpf_map_lookup_elem(&mpi_gates, &tgid);
}

/* MPI_Init, MPI_Init_thread and MPI_Finalize: probed on every call, never
 * in windows (one call each in a process' life) */
static __always_inline int mpi_lifetime_function(__u32 function)
{
	return function == MPI_FN_INIT || function == MPI_FN_INIT_THREAD ||
	       function == MPI_FN_FINALIZE;
}

/* enum mpi_gated of a call of function entered at now_ns under gate g */
static __always_inline __u32 mpi_gate_class(const struct mpi_gate *g, __u32 function,
					    __u64 now_ns)
{
	if (!g || mpi_lifetime_function(function))
		return MPI_COUNTED;
	return now_ns >= g->open_ns && now_ns < g->close_ns ? MPI_WINDOWED : MPI_UNCOUNTED;
}

/* Whether the state st of a thread, found in flight at an entry of
 * function at now_ns, is stale: the probes were detached while the call
 * ran, its return was never seen, and it must be replaced rather than make
 * every later call of the thread nested. Under gate g: a call entered
 * before the current window opened (its window's probes were detached
 * since); at MPI_Finalize (never called inside another MPI call), one
 * entered before the last window closed. No gate: never detached. */
static __always_inline int mpi_call_stale(const struct mpi_call_state *st,
					  const struct mpi_gate *g, __u32 function, __u64 now_ns)
{
	if (!g)
		return 0;
	if (st->start_ns < g->open_ns)
		return 1;
	return mpi_lifetime_function(function) && g->close_ns <= now_ns &&
	       st->start_ns < g->close_ns;
}

/* The state of an outermost call of process tgid to the function the
 * attach cookie names, its arguments as mpi_call_state_args reads them;
 * a Fortran binding's (MPI_COOKIE_FORTRAN) are left for its nested C
 * call (mpi_call_nested). */
static __always_inline void mpi_call_state_init(struct mpi_call_state *st, __u32 tgid, __u64 cookie,
						__u64 count_arg, __u64 type_arg, __u64 peer_arg)
{
	__builtin_memset(st, 0, sizeof(*st));
	st->depth = 1;
	st->tgid = tgid;
	st->function = MPI_COOKIE_FN(cookie);
	mpi_call_state_args(st, cookie, count_arg, type_arg, peer_arg);
	st->args_pending = MPI_COOKIE_FORTRAN(cookie);
}

/* The return address of the function a uprobe at its first instruction
 * interrupted: where it was called from (one instruction past the call),
 * by the architecture's calling convention — x86-64: the call pushed it,
 * it is at *sp; arm64 and riscv64: it is in the link register (lr, x30 /
 * ra), not yet saved by the prologue (and not yet signed by pointer
 * authentication, which the callee's prologue does). 0 when unreadable. */
static __always_inline __u64 mpi_return_address(struct pt_regs *regs)
{
	__u64 ra = 0;

#if defined(__TARGET_ARCH_x86)
	bpf_probe_read_user(&ra, sizeof(ra), (const void *)PT_REGS_SP_CORE(regs));
#elif defined(__TARGET_ARCH_arm64) || defined(__TARGET_ARCH_riscv)
	ra = PT_REGS_RET_CORE(regs);
#else
#error "mpi_return_address: the return address convention of this architecture is not known"
#endif
	return ra;
}

/* An MPI entry of thread tid of tgid (at now_ns, under gate g, its attach
 * cookie and raw argument registers) inside a call of that thread already
 * in flight: counted as nested (1), not as a call. 0: it is an outermost
 * call (a tid reused by another process does not inherit a depth, a stale
 * state is replaced). The first nested C call (not MPI_COOKIE_FORTRAN) of
 * the function of an outermost Fortran binding gives that call its
 * arguments, read as mpi_call_state_init reads them (the binding's own C
 * call: Open MPI's mpi_send_ calls PMPI_Send, MPICH's MPI_Send; its f08
 * bindings reach them through the mpif.h ones or directly). */
static __always_inline int mpi_call_nested(__u32 tid, __u32 tgid, const struct mpi_gate *g,
					   __u64 now_ns, __u64 cookie, __u64 count_arg,
					   __u64 type_arg, __u64 peer_arg)
{
	struct mpi_call_state *st = bpf_map_lookup_elem(&mpi_calls, &tid);

	if (st && st->depth > 0 && st->tgid == tgid && !mpi_call_stale(st, g, MPI_COOKIE_FN(cookie), now_ns)) {
		st->depth++;
		if (st->args_pending && !MPI_COOKIE_FORTRAN(cookie) &&
		    MPI_COOKIE_FN(cookie) == st->function) {
			mpi_call_state_args(st, cookie, count_arg, type_arg, peer_arg);
			st->args_pending = 0;
		}
		return 1;
	}
	return 0;
}

/* An outermost call begins. 0, or -errno (map full: the caller counts
 * MPI_DROP_THREADS). */
static __always_inline int mpi_call_begin(__u32 tid, const struct mpi_call_state *st)
{
	return (int)bpf_map_update_elem(&mpi_calls, &tid, st, BPF_ANY);
}

/* An MPI return of thread tid of tgid: 1 and *done when it ends the
 * thread's outermost call (the state is removed: the map holds only calls
 * in flight), 0 when it ends a nested one or none is known. */
static __always_inline int mpi_call_end(__u32 tid, __u32 tgid, struct mpi_call_state *done)
{
	struct mpi_call_state *st = bpf_map_lookup_elem(&mpi_calls, &tid);

	if (!st || st->depth == 0 || st->tgid != tgid)
		return 0;
	if (--st->depth > 0)
		return 0;
	*done = *st;
	bpf_map_delete_elem(&mpi_calls, &tid);
	return 1;
}

/* One call of duration_ns and count elements at site key (windowed: it
 * was counted inside a sampled window). 0, or -errno when the map refused
 * a new site (the caller counts MPI_DROP_SITES). */
static __always_inline int mpi_site_add(const struct mpi_site_key *key, __u64 duration_ns,
					__u64 count, int windowed)
{
	struct mpi_site_value *v, zero = {};
	long err;

	v = bpf_map_lookup_elem(&mpi_sites, key);
	if (!v) {
		zero.min_ns = ~0ULL;
		err = bpf_map_update_elem(&mpi_sites, key, &zero, BPF_NOEXIST);
		if (err && err != -EEXIST)
			return (int)err;
		v = bpf_map_lookup_elem(&mpi_sites, key);
		if (!v)
			return -ENOENT;
	}
	__sync_fetch_and_add(&v->calls, 1);
	__sync_fetch_and_add(&v->total_ns, duration_ns);
	__sync_fetch_and_add(&v->count_sum, count);
	if (windowed) {
		__sync_fetch_and_add(&v->win_calls, 1);
		__sync_fetch_and_add(&v->win_total_ns, duration_ns);
		__sync_fetch_and_add(&v->win_count_sum, count);
	}
	/* min/max: threads of one process rarely share a call site at the
	 * same instant; a lost race costs an extreme, not a count */
	if (duration_ns < v->min_ns)
		v->min_ns = duration_ns;
	if (duration_ns > v->max_ns)
		v->max_ns = duration_ns;
	return 0;
}

/* the MPI state of process tgid, created at its first need; NULL when
 * the map is full */
static __always_inline struct mpi_process *mpi_process_of(__u32 tgid)
{
	struct mpi_process *p, zero = {};

	p = bpf_map_lookup_elem(&mpi_processes, &tgid);
	if (p)
		return p;
	bpf_map_update_elem(&mpi_processes, &tgid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&mpi_processes, &tgid);
}

/* The outermost call done of process tgid ended at now_ns: its site's
 * totals (none when it was MPI_UNCOUNTED), and when MPI_Init returned. 0
 * or what mpi_site_add said. */
static __always_inline int mpi_call_account(__u32 tgid, const struct mpi_call_state *done,
					    __u64 now_ns)
{
	struct mpi_site_key key = {};
	struct mpi_process *proc;

	if (done->gated == MPI_UNCOUNTED)
		return 0;
	if (done->function == MPI_FN_INIT || done->function == MPI_FN_INIT_THREAD) {
		proc = mpi_process_of(tgid);
		if (proc && !proc->init_end_ns)
			proc->init_end_ns = now_ns;
	}
	if (done->gated == MPI_WINDOWED) {
		proc = mpi_process_of(tgid);
		if (proc) {
			__sync_fetch_and_add(&proc->windowed_calls, 1);
			__sync_fetch_and_add(&proc->windowed_ns, now_ns - done->start_ns);
		}
	}
	key.tgid = tgid;
	key.function = done->function;
	key.call_site = done->call_site;
	key.datatype = done->datatype;
	return mpi_site_add(&key, now_ns - done->start_ns, done->count,
			    done->gated == MPI_WINDOWED);
}

#endif
