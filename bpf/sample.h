/* sample.h — contract between bpf/sample.bpf.c and the Agent's sampler.
 *
 * The kernel aggregates timed samples of Target processes per
 * (Target, tgid, tid, user stack id, leaf ip); the Agent drains the inactive one of
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
#ifndef MAX_STACK_DEPTH
#define MAX_STACK_DEPTH 127
#endif

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

struct sample_key {
	__u32 tgid;
	__u32 tid;
	__u64 leaf_ip;       /* user instruction pointer: always right */
	__s32 user_stack_id; /* frame-pointer stack in `stacks`, or -errno */
	__u32 flags;
	__u32 exec_seq;      /* target_info.exec_seq: the image sampled */
	__u32 target_id;     /* target_info.target_id: the Target sampled */
};

struct sample_value {
	__u64 samples;
	__u64 period_sum; /* Σ event period: ns for cpu-clock, cycles for cycles */
};

enum sample_counter {
	SAMPLE_SEEN = 0,         /* samples of Target processes */
	SAMPLE_DROP_KEYS,        /* sample map full: sample lost */
	SAMPLE_DROP_STACKS,      /* stack map full: leaf kept, stack lost */
	SAMPLE_STACK_UNREADABLE, /* no user stack to read (e.g. mid-exec): leaf kept */
	SAMPLE_DROP_FLIP,        /* the slot flipped twice under the program: sample lost */
	SAMPLE_SKIP_CREDENTIALS, /* a Target process whose credentials are not its
				  * owner's (between its setuid exec and leaving) */
	SAMPLE_COUNTERS,
};

#endif
