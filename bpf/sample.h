/* sample.h — contract between bpf/sample.bpf.c and the Agent's sampler.
 *
 * The kernel aggregates timed samples of Target processes per
 * (Target, tgid, tid, stack, leaf ip); the Agent drains the inactive one of
 * two map pairs (double buffering: `active_slot` says which pair of sample
 * and stack maps the program writes) so that no increment and no stack is
 * lost while draining.
 *
 * The flip: a program counts itself in `sample_inflight[cpu].count[slot]`
 * (a fetching atomic, a full barrier), then reads `active_slot` again, and
 * writes to that slot only if it did not change; otherwise it leaves and
 * tries the new one. The Agent stores the new `active_slot`, then waits
 * (with a bound) until the old slot's counts sum to 0: after that, no
 * program can write to the old pair (Dekker's argument: either the program
 * saw the new slot, or the Agent saw its count).
 */
#ifndef NUNATAK_BPF_SAMPLE_H
#define NUNATAK_BPF_SAMPLE_H

#ifndef MAX_SAMPLE_KEYS
#define MAX_SAMPLE_KEYS 65536
#endif
#ifndef MAX_STACKS
#define MAX_STACKS 32768
#endif

#include "bpf/unwind.h"

#ifndef MAX_SAMPLE_CPUS
#define MAX_SAMPLE_CPUS 1024 /* CPUs beyond share the last entry: slower, still exact */
#endif

/* the programs running on one CPU inside each slot (0 or 1 but for the
 * shared last entry); one cache line per CPU */
struct sample_inflight {
	__u64 count[2];
	__u64 pad[6];
};

/* the sample interrupted the task in kernel mode: leaf_ip is where user
 * code entered the kernel */
#define SAMPLE_FLAG_KERNEL 1u

/* A Stack: kernel frames first (innermost first, only for a sample taken
 * in the kernel), then user frames (innermost first, ips[n_kernel] is
 * the user leaf). Stored once per drain in the stack map of the active
 * slot under its 64-bit digest; two different Stacks with one digest
 * are told apart by their check, a second 64-bit hash of another mix
 * (the second goes to the next free digest), so no sample loses its
 * Stack to a collision; two Stacks are merged only if both hashes, their
 * sizes and their leaf agree (odds of 2^-128 a pair). */
struct stack_value {
	__u16 n_kernel;
	__u16 n_user;
	__u8 user_end;   /* enum unwind_end: how the user part ended */
	__u8 kernel_truncated; /* 1: deeper than MAX_KERNEL_FRAMES */
	__u8 pad[2];
	__u64 check;     /* a second hash of the frames (bpf/unwind.bpf.h unwind_fold) */
	__u64 ips[MAX_FRAMES];
};

struct sample_key {
	__u32 tgid;
	__u32 tid;
	__u64 leaf_ip;       /* user instruction pointer: always right */
	__u64 stack;         /* digest of the Stack in the slot's stack map; 0: no Stack */
	__u32 flags;
	__u32 exec_seq;      /* target_info.exec_seq: the image sampled */
	__u32 target_id;     /* target_info.target_id: the Target sampled */
	__u32 pad;
};

/* The sampling group (userspace/agent/pmu_events.h): up to MAX_PMU_EVENTS
 * counting events per CPU, opened beside the sampling event, read at every
 * sample of the CPU; the weighted growth of each since the CPU's previous
 * sample (the time slice that ended at this sample) is added to the
 * sample's value under its counter. Without a group (rodata pmu_events 0)
 * the program reads nothing and pmu[] stays 0. */
#ifndef MAX_PMU_EVENTS
#define MAX_PMU_EVENTS 10
#endif
#define SAMPLE_PMU_COUNTERS 3 /* enum pmu_counter: flop_dp, flop_sp, dram_bytes */

struct sample_value {
	__u64 samples;
	__u64 period_sum; /* Σ event period: ns for cpu-clock, cycles for cycles */
	__u64 pmu[SAMPLE_PMU_COUNTERS]; /* Σ weighted counting-event growth (FLOP, bytes) */
};

/* a CPU's counting events at its previous sample (scaled by enabled/running
 * when the kernel multiplexed them) */
struct pmu_reading {
	__u64 scaled[MAX_PMU_EVENTS];
	__u32 valid; /* bit i: scaled[i] holds a reading */
	__u32 pad;
};

enum sample_counter {
	SAMPLE_SEEN = 0,         /* samples of Target processes */
	SAMPLE_DROP_KEYS,        /* sample map full: sample lost */
	SAMPLE_DROP_STACKS,      /* stack map full (not a collision): leaf kept, Stack lost */
	SAMPLE_STACK_COLLISIONS, /* digests another Stack held: stored under the next one */
	SAMPLE_DROP_COLLISIONS,  /* ... UNWIND_DIGEST_PROBES times: leaf kept, Stack lost */
	SAMPLE_DROP_FLIP,        /* the slot flipped twice under the program: sample lost */
	SAMPLE_SKIP_CREDENTIALS, /* a Target process whose credentials are not its
				  * owner's (between its setuid exec and leaving) */
	SAMPLE_KERNEL_TRUNCATED, /* kernel part deeper than MAX_KERNEL_FRAMES */
	SAMPLE_PMU_UNREAD,       /* counting-event readings refused: that slice's growth lost */
	SAMPLE_UNWIND_END,       /* + enum unwind_end: how each sample's user Stack ended */
	SAMPLE_COUNTERS = SAMPLE_UNWIND_END + UNWIND_END_COUNT,
};

/* different Stacks with one digest tried before the Stack is given up */
#define UNWIND_DIGEST_PROBES 4

/* how user Stacks are walked (rodata `unwinder` of bpf/sample.bpf.c) */
enum sample_unwinder {
	SAMPLE_UNWINDER_TABLES = 0,         /* unwind tables, bpf/unwind.h */
	SAMPLE_UNWINDER_FRAME_POINTERS = 1, /* the kernel's frame-pointer walk only */
};

#endif
