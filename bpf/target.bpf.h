/* target.bpf.h — the Target set's map and its two operations, for BPF
 * programs only.
 *
 * Every BPF unit declares the same `targets` map (contract in
 * bpf/target.h); task.bpf.c owns it and the Agent gives the other units
 * its fd (bpf_map__reuse_fd) before they load. The helpers are
 * `static __always_inline` so that bpf/selftest.bpf.c drives them through
 * bpf_prog_test_run_opts (tests/unit/test_bpf_helpers.c): membership is
 * decided here and only here.
 */
#ifndef NUNATAK_BPF_TARGET_BPF_H
#define NUNATAK_BPF_TARGET_BPF_H

#include "bpf/target.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, __u32);
	__type(value, struct target_info);
} targets SEC(".maps");

/* the Target entry of process tgid; NULL when it is not observed */
static __always_inline struct target_info *target_lookup(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid);
}

/* A fork: the child process of a Target process joins its Target as a
 * new image (exec_seq 0), before it runs its first instruction. Only the
 * child's own exit removes it: the exit of its parent, or its re-parenting
 * to init or a subreaper, does not touch its entry (a double fork stays
 * observed). 1 followed; 0 the parent is outside every Target, or the
 * "child" is a new thread of the same process; -errno the map refused it
 * (full: the caller counts it). */
static __always_inline int target_follow_fork(__u32 parent_tgid, __u32 child_tgid)
{
	struct target_info *parent, child;
	long err;

	if (child_tgid == parent_tgid)
		return 0;
	parent = target_lookup(parent_tgid);
	if (!parent)
		return 0;
	child = *parent;
	child.exec_seq = 0;
	err = bpf_map_update_elem(&targets, &child_tgid, &child, BPF_ANY);
	return err ? (int)err : 1;
}

/* whether a process of real uid and effective uid may be in a Target of
 * owner (TARGET_UID_ANY: any process may) */
static __always_inline int target_uid_allows(__u32 owner, __u32 uid, __u32 euid)
{
	return owner == TARGET_UID_ANY || (uid == owner && euid == owner);
}

/* An exec of process tgid, whose credentials are now uid and euid
 * (committed before sched_process_exec): a Target process stays with one
 * more image, or leaves its Target (its entry removed: never sampled
 * again, its forks not followed). *out: its entry, after the exec or as
 * it was when it left. */
static __always_inline int target_exec(__u32 tgid, __u32 uid, __u32 euid,
				       struct target_info *out)
{
	struct target_info *t = target_lookup(tgid);

	if (!t)
		return TARGET_EXEC_OUTSIDE;
	if (!target_uid_allows(t->uid, uid, euid)) {
		*out = *t;
		/* a concurrent exit deleted it first: it left all the same */
		bpf_map_delete_elem(&targets, &tgid);
		return TARGET_EXEC_LEFT;
	}
	t->exec_seq++; /* one thread left: exec killed the others */
	*out = *t;
	return TARGET_EXEC_STAYS;
}

#endif
