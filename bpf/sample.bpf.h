/* sample.bpf.h — what bpf/sample.bpf.c decides about one sample, for BPF
 * programs only (contract in bpf/sample.h): the key of a sample, its
 * addition to a sample map, and entering/leaving the active slot.
 *
 * `static __always_inline` helpers of plain values (no perf_event ctx), so
 * that bpf/selftest.bpf.c drives them through bpf_prog_test_run_opts,
 * since a perf_event program cannot be test-run
 * (tests/unit/test_bpf_helpers.c). Declares the globals the Agent flips
 * and waits on: every object that includes it has its own.
 */
#ifndef NUNATAK_BPF_SAMPLE_BPF_H
#define NUNATAK_BPF_SAMPLE_BPF_H

#include "bpf/sample.h"
#include "bpf/target.h"

#include "bpf/errno.bpf.h"
#ifndef EBUSY
#define EBUSY 16
#endif

volatile __u32 active_slot;
struct sample_inflight sample_inflight[MAX_SAMPLE_CPUS];

/* The key of a sample of thread pid_tgid (bpf_get_current_pid_tgid()
 * layout) of Target process target: user_ip is where its user registers
 * point (always right, the unwinder or not), interrupted_ip where the
 * sample interrupted it; they differ when it was in the kernel. The Stack
 * digest is the caller's to set. */
static __always_inline void sample_key_fill(struct sample_key *key,
					    const struct target_info *target, __u64 pid_tgid,
					    __u64 user_ip, __u64 interrupted_ip)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->tgid = pid_tgid >> 32;
	key->tid = (__u32)pid_tgid;
	key->exec_seq = target->exec_seq;
	key->target_id = target->target_id;
	key->leaf_ip = user_ip;
	if (interrupted_ip != user_ip)
		key->flags |= SAMPLE_FLAG_KERNEL;
}

/* counter scaled to the whole enabled time when the kernel multiplexed the
 * event (ran it only `running` ns of `enabled`): in 1/1024 steps, so that
 * no product overflows before 200 days of enabled time */
static __always_inline __u64 pmu_scale(__u64 counter, __u64 enabled, __u64 running)
{
	__u64 ratio;

	if (!running || running >= enabled)
		return running ? counter : 0;
	ratio = enabled * 1024 / running;
	return (counter >> 10) * ratio + (((counter & 1023) * ratio) >> 10);
}

/* One more sample of key, of period, in map, with the growth of the
 * sampling group's counters in its slice (NULL: no group). 0, or -errno
 * when the map refused a new key (full: the caller counts
 * SAMPLE_DROP_KEYS). */
static __always_inline int sample_add(void *map, const struct sample_key *key, __u64 period,
				      const __u64 *pmu)
{
	struct sample_value *value, zero = {};
	long err;

	value = bpf_map_lookup_elem(map, key);
	if (!value) {
		/* -EEXIST: another CPU inserted it first, which is fine */
		err = bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		if (err && err != -EEXIST)
			return (int)err;
		value = bpf_map_lookup_elem(map, key);
		if (!value)
			return -ENOENT;
	}
	__sync_fetch_and_add(&value->samples, 1);
	__sync_fetch_and_add(&value->period_sum, period);
	if (pmu) {
		__sync_fetch_and_add(&value->pmu[0], pmu[0]);
		__sync_fetch_and_add(&value->pmu[1], pmu[1]);
		__sync_fetch_and_add(&value->pmu[2], pmu[2]);
	}
	return 0;
}

static __always_inline struct sample_inflight *sample_inflight_of(__u32 cpu)
{
	return &sample_inflight[cpu < MAX_SAMPLE_CPUS ? cpu : MAX_SAMPLE_CPUS - 1];
}

/* a fetching atomic, its result kept: the BPF memory model makes it a
 * full barrier (a non-fetching add orders nothing on arm64) */
static __always_inline __u64 sample_fetch_add(__u64 *p, __u64 v)
{
	__u64 old = __sync_fetch_and_add(p, v);

	asm volatile("" : : "r"(old) : "memory");
	return old;
}

/* Enters the active slot on cpu (bpf_get_smp_processor_id()): the slot,
 * to write to and then leave with sample_slot_exit(), or -EBUSY when it
 * flipped twice while entering (the caller counts SAMPLE_DROP_FLIP). */
static __always_inline int sample_slot_enter(__u32 cpu)
{
	struct sample_inflight *in = sample_inflight_of(cpu);
	__u32 slot, tries;

	for (tries = 0; tries < 2; tries++) {
		slot = active_slot & 1;
		sample_fetch_add(&in->count[slot], 1);
		if ((active_slot & 1) == slot)
			return (int)slot;
		sample_fetch_add(&in->count[slot], (__u64)-1);
	}
	return -EBUSY;
}

/* Two Stacks under one digest are the same when their check (a second,
 * independent 64-bit hash of their frames), their sizes, how they ended
 * and their leaf agree: a loop over 192 frames cost the verifier 40 % of
 * the program (0.2 s at every load). */
static __always_inline int stack_equal(const struct stack_value *a, const struct stack_value *b)
{
	return a->check == b->check && a->n_kernel == b->n_kernel && a->n_user == b->n_user &&
	       a->user_end == b->user_end && a->kernel_truncated == b->kernel_truncated &&
	       a->ips[0] == b->ips[0];
}

/* Stores Stack v of digest in stack map map: the digest it is stored
 * under (0 never is one), or 0 when it could not be stored: *why is then
 * SAMPLE_DROP_STACKS (the map is full) or SAMPLE_DROP_COLLISIONS.
 * *collisions counts the digests other Stacks held. */
static __always_inline __u64 stack_store(void *map, const struct stack_value *v, __u64 digest,
					 __u32 *why, __u32 *collisions)
{
	const struct stack_value *old;
	__u64 key;
	__u32 probe;
	long err;

	for (probe = 0; probe < UNWIND_DIGEST_PROBES; probe++) {
		key = (digest + probe) ?: 1;
		old = bpf_map_lookup_elem(map, &key);
		if (!old) {
			err = bpf_map_update_elem(map, &key, v, BPF_NOEXIST);
			if (!err)
				return key;
			if (err != -EEXIST) {
				*why = SAMPLE_DROP_STACKS;
				return 0;
			}
			old = bpf_map_lookup_elem(map, &key); /* another CPU stored it first */
			if (!old)
				continue;
		}
		if (stack_equal(old, v))
			return key;
		(*collisions)++;
	}
	*why = SAMPLE_DROP_COLLISIONS;
	return 0;
}

/* Leaves slot: what the program wrote is visible before the count drops */
static __always_inline void sample_slot_exit(__u32 cpu, __u32 slot)
{
	sample_fetch_add(&sample_inflight_of(cpu)->count[slot & 1], (__u64)-1);
}

#endif
