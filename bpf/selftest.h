/* selftest.h — contract between bpf/selftest.bpf.c and
 * tests/unit/test_bpf_helpers.c.
 *
 * Each SEC("syscall") program of selftest.bpf.c reads one of these from a
 * global of the object (`target_args`...) and writes its results there;
 * the test sets it through the skeleton, runs the program with
 * bpf_prog_test_run_opts and reads it back. The programs drive the
 * `static __always_inline` helpers the real programs use (bpf/X.bpf.h) on
 * the selftest object's own maps: what a perf_event, tracepoint or uprobe
 * program decides, without a sampling interrupt, a fork or an MPI call.
 */
#ifndef NUNATAK_BPF_SELFTEST_H
#define NUNATAK_BPF_SELFTEST_H

#include "bpf/mpi.h"
#include "bpf/sample.h"
#include "bpf/target.h"
#include "bpf/task.h"

enum selftest_op {
	SELFTEST_LOOKUP = 1,  /* target_lookup(tgid) */
	SELFTEST_FORK,	      /* target_follow_fork(tgid, child_tgid) */
	SELFTEST_SAMPLE_KEY,  /* target_lookup + sample_key_fill */
	SELFTEST_SAMPLE_ADD,  /* sample_slot_enter, sample_add, sample_slot_exit */
	SELFTEST_PMU_SCALE,   /* pmu_scale */
	SELFTEST_TOTALS_ADD,  /* task_totals_add */
	SELFTEST_TOTALS_TAKE, /* task_totals_take */
	SELFTEST_TOTALS_KEY,  /* task_totals_key_of(the calling task) */
	SELFTEST_THREADS_SET, /* task_threads_set(key, live) */
	SELFTEST_THREADS_NEW, /* task_threads_new(key, live) */
	SELFTEST_THREADS_EXIT, /* task_threads_exit(key) */
	SELFTEST_THREADS_FORGET, /* task_threads_forget(key) */
	SELFTEST_MPI_ENTRY,   /* what mpi_entry does, registers given */
	SELFTEST_MPI_RETURN,  /* what mpi_return does */
	SELFTEST_MPI_RETURN_ADDRESS, /* mpi_return_address(regs) */
};

struct selftest_target_args {
	__u32 op;
	__u32 tgid;
	__u32 child_tgid;
	__s32 ret;
	struct target_info info; /* out: the entry of tgid (LOOKUP) */
};

struct selftest_sample_args {
	__u32 op;
	__u32 cpu;
	__u64 pid_tgid;
	__u64 user_ip;
	__u64 interrupted_ip;
	__u64 period;
	__s32 ret;	       /* out: SAMPLE_KEY 1 Target, 0 not; SAMPLE_ADD 0 or -errno */
	__s32 slot;	       /* out: the slot entered (SAMPLE_ADD) */
	__u64 inflight;	       /* out: sample_inflight[cpu].count[slot] while inside */
	struct sample_key key; /* out (SAMPLE_KEY), in (SAMPLE_ADD) */
	__u32 has_pmu;	       /* in (SAMPLE_ADD): add pmu[] as the slice's group growth */
	__u32 pad;
	__u64 pmu[SAMPLE_PMU_COUNTERS]; /* in (SAMPLE_ADD); PMU_SCALE: counter, enabled,
					 * running in, pmu[0] the scaled count out */
};

struct selftest_totals_args {
	__u32 op;
	__s32 ret;
	struct task_totals_key key; /* in, out for TOTALS_KEY */
	struct task_totals totals;  /* in: the share (ADD); out: the totals (TAKE) */
	__s64 live;		    /* in: THREADS_SET's n, THREADS_NEW's live */
};

struct selftest_mpi_args {
	__u32 op;
	__u32 tid;
	__u32 tgid;
	__s32 ret; /* ENTRY: 0 not a Target, 1 outermost, 2 nested, <0 refused;
		    * RETURN: 0 nothing ended, 1 outermost ended, <0 site refused */
	__u64 cookie;
	__u64 count_arg;
	__u64 type_arg;
	__u64 peer_arg;
	__u64 call_site;
	__u64 now_ns;
	struct mpi_call_state state; /* out: the state stored (ENTRY) or ended (RETURN) */
	__u64 regs[64]; /* in (RETURN_ADDRESS): the kernel's struct pt_regs, as
			 * the uprobe sees it; out: call_site */
};

#endif
