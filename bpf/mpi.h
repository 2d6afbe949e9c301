/* mpi.h — contract between bpf/mpi.bpf.c and the Agent's MPI probes.
 *
 * One entry and one return program serve every probed MPI function; the
 * attach cookie says which function it is and where its arguments are
 * (MPI_COOKIE_*). Per (tgid, function, call site, datatype) the kernel
 * keeps running totals; per tgid, when MPI_Init returned and
 * MPI_Finalize was entered. Only the outermost MPI call of a thread
 * counts: an MPI function the library calls inside another is not
 * counted twice (nor is a call that reaches both MPI_X and PMPI_X).
 * A Fortran binding (mpi_send_, MPI_SEND, mpi_send_f08_, ...: cookie bit
 * MPI_COOKIE_FORTRAN) is probed as its C function: it is the outermost
 * call, so its return address is the application's Fortran routine, but
 * its arguments are references and Fortran handles: count, datatype and
 * peer are the first nested C call's of the same function.
 */
#ifndef NUNATAK_BPF_MPI_H
#define NUNATAK_BPF_MPI_H

#ifndef MAX_MPI_SITES
#define MAX_MPI_SITES 16384
#endif
#ifndef MAX_MPI_THREADS
#define MAX_MPI_THREADS 16384
#endif
#ifndef MAX_MPI_EVENT_TARGETS
#define MAX_MPI_EVENT_TARGETS 4096 /* Targets that asked for Events */
#endif
#ifndef MPI_EVENTS_BYTES
#define MPI_EVENTS_BYTES (4 * 1024 * 1024)
#endif

enum mpi_function {
	MPI_FN_INIT = 0,
	MPI_FN_INIT_THREAD,
	MPI_FN_FINALIZE,
	MPI_FN_SEND,
	MPI_FN_RECV,
	MPI_FN_ISEND,
	MPI_FN_IRECV,
	MPI_FN_SENDRECV,
	MPI_FN_WAIT,
	MPI_FN_WAITALL,
	MPI_FN_WAITANY,
	MPI_FN_WAITSOME,
	MPI_FN_TEST,
	MPI_FN_TESTALL,
	MPI_FN_PROBE,
	MPI_FN_IPROBE,
	MPI_FN_BARRIER,
	MPI_FN_BCAST,
	MPI_FN_REDUCE,
	MPI_FN_ALLREDUCE,
	MPI_FN_ALLGATHER,
	MPI_FN_ALLGATHERV,
	MPI_FN_ALLTOALL,
	MPI_FN_ALLTOALLV,
	MPI_FN_GATHER,
	MPI_FN_GATHERV,
	MPI_FN_SCATTER,
	MPI_FN_SCATTERV,
	MPI_FN_REDUCE_SCATTER,
	MPI_FUNCTIONS,
};

/* attach cookie: function id and argument layout (1-based positions, 0 = none) */
#define MPI_COOKIE_FN(c) ((c) & 0xff)
#define MPI_COOKIE_COUNT_ARG(c) (((c) >> 8) & 0xf)
#define MPI_COOKIE_TYPE_ARG(c) (((c) >> 12) & 0xf)
#define MPI_COOKIE_PEER_ARG(c) (((c) >> 16) & 0xf)
#define MPI_COOKIE(fn, count_arg, type_arg, peer_arg)                                             \
	((__u64)(fn) | ((__u64)(count_arg) << 8) | ((__u64)(type_arg) << 12) |                    \
	 ((__u64)(peer_arg) << 16))
/* a Fortran binding of function fn: no argument read from its registers */
#define MPI_COOKIE_FORTRAN(c) (((c) >> 20) & 1)
#define MPI_COOKIE_FORTRAN_BINDING(fn) ((__u64)(fn) | (1ULL << 20))

struct mpi_site_key {
	__u32 tgid;
	__u32 function;  /* enum mpi_function */
	__u64 call_site; /* return address */
	__u64 datatype;  /* handle as passed; 0 when the function has none */
};

struct mpi_site_value {
	__u64 calls;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 count_sum; /* Σ count argument */
	/* of those, the calls counted inside sampled windows (MPI_WINDOWED):
	 * the rest were counted while every call was probed */
	__u64 win_calls;
	__u64 win_total_ns;
	__u64 win_count_sum;
};

/* the call of one thread in flight (kernel-side, in mpi_calls by tid;
 * here so that the BPF selftests can read it) */
struct mpi_call_state {
	__u64 start_ns;
	__u64 call_site;
	__u64 count;
	__u64 datatype;
	__s32 peer;
	__u32 function;
	__u32 depth; /* nested MPI calls of this thread */
	__u32 tgid;  /* a tid reused by another process is a new thread */
	__u32 args_pending; /* a Fortran binding's call: count, datatype and peer
			     * not yet read from a nested C call */
	__u32 gated; /* enum mpi_gated: how the call counts, decided at its entry */
	__u32 pad;
};

/* How a call counts, by its process' gate at its entry (mpi_gate_class) */
enum mpi_gated {
	MPI_COUNTED = 0,   /* every call of the process is probed: measured */
	MPI_WINDOWED = 1,  /* entered inside a sampled window: counted, weighed later */
	MPI_UNCOUNTED = 2, /* entered outside every window (the probes were being
			    * attached or detached): not counted */
};

/* A process probed in sampled windows (the Agent's cost budget,
 * userspace/agent/mpi_budget.c) has a gate: the calls of its windowed
 * functions (all but MPI_Init, MPI_Init_thread and MPI_Finalize) entered
 * in [open_ns, close_ns) count as MPI_WINDOWED, those entered outside it as
 * MPI_UNCOUNTED. The Agent writes it: {0, t} when it stops probing every
 * call at t, {t, ~0} when a window opens at t, {t, t'} when it closes at
 * t' (before the probes are detached: a window's bounds are exact even
 * though attaching and detaching take time). No gate: every call counts.
 * bpf_ktime_get_ns time (CLOCK_MONOTONIC). */
struct mpi_gate {
	__u64 open_ns;
	__u64 close_ns;
};

struct mpi_process {
	__u64 init_end_ns;       /* 0: not yet */
	__u64 finalize_start_ns; /* 0: not yet */
	__u64 probed_calls;      /* entries that trapped, nested ones included */
	__u64 windowed_calls;    /* outermost calls counted as MPI_WINDOWED */
	__u64 windowed_ns;       /* and their duration */
};

struct mpi_event {
	__u32 tgid;
	__u32 tid;
	__u32 function;
	__s32 peer;        /* -1 unknown */
	__u64 start_ns;
	__u64 duration_ns;
	__u64 count;
	__u64 datatype;
};

enum mpi_counter {
	MPI_CALLS_SEEN = 0,
	MPI_DROP_SITES,   /* site map full: a call not counted */
	MPI_DROP_THREADS, /* thread state map full: a call not timed */
	MPI_DROP_EVENTS,  /* event ring buffer full */
	MPI_COUNTERS,
};

#endif
