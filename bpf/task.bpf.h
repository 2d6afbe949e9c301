/* task.bpf.h — the per-process totals of bpf/task.bpf.c, for BPF programs
 * only (contract in bpf/task.h).
 *
 * Each exiting thread of a Target process adds its share under the
 * process' identity (task_totals_key_of); the last thread (by the count
 * of task_threads) takes the totals and removes them. The helpers are `static __always_inline` so
 * that bpf/selftest.bpf.c drives them through bpf_prog_test_run_opts,
 * late thread included (tests/unit/test_bpf_helpers.c).
 */
#ifndef NUNATAK_BPF_TASK_BPF_H
#define NUNATAK_BPF_TASK_BPF_H

#include "bpf/task.h"

#include "bpf/errno.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, struct task_totals_key);
	__type(value, struct task_totals);
} task_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, struct task_totals_key);
	__type(value, struct task_threads);
} task_threads SEC(".maps");

/* The process task belongs to, as a key no later process can have: a pid
 * is reused, the start time of a thread group leader is not (exec by
 * another thread hands the leader's start time over, de_thread()). */
static __always_inline void task_totals_key_of(struct task_struct *task,
					       struct task_totals_key *key)
{
	key->tgid = BPF_CORE_READ(task, tgid);
	key->pad = 0;
	key->start_time_ns = BPF_CORE_READ(task, group_leader, start_time);
}

/* 1 when the kernel keeps the run-queue delay of a task (CONFIG_SCHED_INFO) */
static __always_inline int task_has_run_delay(void)
{
	return bpf_core_field_exists(((struct task_struct *)0)->sched_info.run_delay);
}

/* what task itself used: its share of its process' totals */
static __always_inline void task_share_read(struct task_struct *task, struct task_totals *share)
{
	share->utime_ns = BPF_CORE_READ(task, utime);
	share->stime_ns = BPF_CORE_READ(task, stime);
	share->nvcsw = BPF_CORE_READ(task, nvcsw);
	share->nivcsw = BPF_CORE_READ(task, nivcsw);
	share->min_flt = BPF_CORE_READ(task, min_flt);
	share->maj_flt = BPF_CORE_READ(task, maj_flt);
	share->runtime_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	share->run_delay_ns = 0;
	if (task_has_run_delay())
		share->run_delay_ns = BPF_CORE_READ(task, sched_info.run_delay);
}

/* Adds share to the totals of key, creating them. 0, or -errno when the
 * map refused the entry (full: the caller counts TASK_DROP_TOTALS). */
static __always_inline int task_totals_add(const struct task_totals_key *key,
					   const struct task_totals *share)
{
	struct task_totals *t, zero = {};
	long err;

	t = bpf_map_lookup_elem(&task_totals, key);
	if (!t) {
		/* -EEXIST: another thread of the process created it first */
		err = bpf_map_update_elem(&task_totals, key, &zero, BPF_NOEXIST);
		if (err && err != -EEXIST)
			return (int)err;
		t = bpf_map_lookup_elem(&task_totals, key);
		if (!t)
			return -ENOENT;
	}
	__sync_fetch_and_add(&t->utime_ns, share->utime_ns);
	__sync_fetch_and_add(&t->stime_ns, share->stime_ns);
	__sync_fetch_and_add(&t->nvcsw, share->nvcsw);
	__sync_fetch_and_add(&t->nivcsw, share->nivcsw);
	__sync_fetch_and_add(&t->min_flt, share->min_flt);
	__sync_fetch_and_add(&t->maj_flt, share->maj_flt);
	__sync_fetch_and_add(&t->runtime_ns, share->runtime_ns);
	__sync_fetch_and_add(&t->run_delay_ns, share->run_delay_ns);
	return 0;
}

/* Moves the totals of key into *out (the last exit of the process): 0, or
 * -ENOENT when there are none (the map was full at every add). */
static __always_inline int task_totals_take(const struct task_totals_key *key,
					    struct task_totals *out)
{
	struct task_totals *t;

	t = bpf_map_lookup_elem(&task_totals, key);
	if (!t)
		return -ENOENT;
	*out = *t;
	bpf_map_delete_elem(&task_totals, key);
	return 0;
}

/* The process of key has n threads from now on (it entered a Target
 * single-threaded: n = 1): 0, or -errno (map full: the caller counts
 * TASK_DROP_TOTALS; its exit falls back to signal->live) */
static __always_inline int task_threads_set(const struct task_totals_key *key, __s64 n)
{
	struct task_threads t = {.left = n};

	return (int)bpf_map_update_elem(&task_threads, key, &t, BPF_ANY);
}

/* A thread was created in the process of key (at the fork tracepoint, before
 * it runs); live: signal->live then, the new thread included, the count of
 * a process not counted yet. 0, or -errno (map full) */
static __always_inline int task_threads_new(const struct task_totals_key *key, __s64 live)
{
	struct task_threads *t, first = {.left = live};
	long err;

	t = bpf_map_lookup_elem(&task_threads, key);
	if (t) {
		__sync_fetch_and_add(&t->left, 1);
		return 0;
	}
	err = bpf_map_update_elem(&task_threads, key, &first, BPF_NOEXIST);
	if (err != -EEXIST)
		return (int)err;
	/* another thread of the process created it first */
	t = bpf_map_lookup_elem(&task_threads, key);
	if (!t)
		return -ENOENT;
	__sync_fetch_and_add(&t->left, 1);
	return 0;
}

/* A thread of the process of key passed its exit (after adding its
 * share): 1 when it was the last one counted (the count is removed), 0
 * when others are left, -ENOENT when the process' threads are not counted */
static __always_inline int task_threads_exit(const struct task_totals_key *key)
{
	struct task_threads *t;

	t = bpf_map_lookup_elem(&task_threads, key);
	if (!t)
		return -ENOENT;
	if (__sync_fetch_and_add(&t->left, -1) > 1)
		return 0;
	bpf_map_delete_elem(&task_threads, key);
	return 1;
}

/* The process of key left every Target alive (its Run ended, it exec'd
 * out): its thread creations are no longer seen, so its count is dropped,
 * not kept wrong; a Target that takes it again counts it afresh */
static __always_inline void task_threads_forget(const struct task_totals_key *key)
{
	if (bpf_map_lookup_elem(&task_threads, key))
		bpf_map_delete_elem(&task_threads, key);
}

#endif
