/* sample.h — contract between bpf/sample.bpf.c and the Agent's sampler.
 *
 * The kernel aggregates timed samples of Target processes per
 * (tgid, tid, user stack id, leaf ip); the Agent drains the inactive one of
 * two map pairs (double buffering: `active_slot` says which pair of sample
 * and stack maps the program writes) so that no increment and no stack is
 * lost while draining.
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
	__u32 pad;
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
	SAMPLE_COUNTERS,
};

#endif
