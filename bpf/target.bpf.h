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

/* mm->flags was an unsigned long before Linux 6.18, a bitmap since */
struct mm_struct___flags_long {
	unsigned long flags;
} __attribute__((preserve_access_index));

struct mm_struct___flags_bitmap {
	mm_flags_t flags;
} __attribute__((preserve_access_index));

static __always_inline __u32 target_mm_dumpable(struct mm_struct *mm)
{
	unsigned long flags = 0;

	if (!mm)
		return 0;
	if (bpf_core_type_exists(mm_flags_t))
		bpf_core_read(&flags, sizeof(flags),
			      &((struct mm_struct___flags_bitmap *)mm)->flags.__mm_flags[0]);
	else
		flags = BPF_CORE_READ((struct mm_struct___flags_long *)mm, flags);
	return (__u32)(flags & TARGET_DUMPABLE_MASK);
}

/* the credentials of task (committed: after an exec's, at
 * sched_process_exec) into *c */
static __always_inline void target_cred_read(struct task_struct *task, struct target_cred *c)
{
	const struct cred *cred = BPF_CORE_READ(task, real_cred);

	c->uid = BPF_CORE_READ(cred, uid.val);
	c->euid = BPF_CORE_READ(cred, euid.val);
	c->suid = BPF_CORE_READ(cred, suid.val);
	c->fsuid = BPF_CORE_READ(cred, fsuid.val);
	c->gid = BPF_CORE_READ(cred, gid.val);
	c->egid = BPF_CORE_READ(cred, egid.val);
	c->sgid = BPF_CORE_READ(cred, sgid.val);
	c->fsgid = BPF_CORE_READ(cred, fsgid.val);
	/* capabilities inside a user namespace of its own give nothing here */
	c->caps = BPF_CORE_READ(cred, cap_permitted.val) != 0 &&
		  BPF_CORE_READ(cred, user_ns, level) == 0;
	c->dumpable = target_mm_dumpable(BPF_CORE_READ(task, mm));
}

/* An exec of process tgid, whose credentials are now c (committed before
 * sched_process_exec): a Target process stays with one more image, or
 * leaves its Target (its entry removed: never sampled again, its forks
 * not followed). *out: its entry, after the exec or as it was when it
 * left. */
static __always_inline int target_exec(__u32 tgid, const struct target_cred *c,
				       struct target_info *out)
{
	struct target_info *t = target_lookup(tgid);

	if (!t)
		return TARGET_EXEC_OUTSIDE;
	if (!target_cred_allows(t->uid, c)) {
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
