/* target.h — the Target set shared by every BPF unit and the Agent.
 *
 * One hash map, `targets`, owned by task.bpf.c and reused (same fd) by the
 * other units: key = tgid of an observed process, value = struct
 * target_info. A process outside it costs one lookup and nothing else.
 *
 * A Target of a user (uid != TARGET_UID_ANY) holds only processes the
 * user could debug themselves (struct target_cred): every uid (real,
 * effective, saved, fs) is the user's, the four gids are one, it holds no
 * capability over the initial user namespace, and the kernel keeps it
 * dumpable as the user (SUID_DUMP_USER). A process that is not so after
 * an exec (a setuid, setgid or file-capability program, an unreadable
 * binary) leaves the set at that exec and is never sampled again; its
 * forks are not followed. A process of the set that is not so at a
 * sample (prctl(PR_SET_DUMPABLE, 0), a changed uid) is not sampled.
 */
#ifndef NUNATAK_BPF_TARGET_H
#define NUNATAK_BPF_TARGET_H

#ifndef MAX_TARGET_PROCESSES
#define MAX_TARGET_PROCESSES 65536
#endif

/* the uid of a Target that may hold any process (a root Target) */
#define TARGET_UID_ANY 0xffffffffu

/* what an exec did to a process (bpf/target.bpf.h target_exec) */
enum target_exec_result {
	TARGET_EXEC_OUTSIDE = 0, /* not a Target process */
	TARGET_EXEC_STAYS = 1,   /* a new image of a Target process */
	TARGET_EXEC_LEFT = 2,    /* its new credentials are not its Target's owner's */
};

/* the dumpability of a process the user may debug (the kernel's
 * SUID_DUMP_USER, mm->flags & MMF_DUMPABLE_MASK) */
#define TARGET_DUMP_USER 1
#define TARGET_DUMPABLE_MASK 3

/* what decides whether a process may be in a user's Target
 * (bpf/target.bpf.h target_cred_read, target_cred_allows) */
struct target_cred {
	__u32 uid, euid, suid, fsuid;
	__u32 gid, egid, sgid, fsgid;
	__u32 dumpable; /* mm->flags & TARGET_DUMPABLE_MASK; 0 without an mm */
	__u32 caps;	/* 1: it holds capabilities over the initial user namespace */
};

/* The rules below are the kernel's (the BPF programs) and the Agent's (a
 * running process it adopts from /proc: userspace/agent/agent_job.c):
 * one definition, plain values only, so both compile it. */
#define TARGET_RULE static inline __attribute__((always_inline))

/* whether a process of credentials c may be in a Target of owner
 * (TARGET_UID_ANY: any process may): what the kernel asks before it lets
 * the owner ptrace it or read its /proc/PID/maps */
TARGET_RULE int target_cred_allows(__u32 owner, const struct target_cred *c)
{
	if (owner == TARGET_UID_ANY)
		return 1;
	return c->uid == owner && c->euid == owner && c->suid == owner && c->fsuid == owner &&
	       c->egid == c->gid && c->sgid == c->gid && c->fsgid == c->gid &&
	       c->dumpable == TARGET_DUMP_USER && !c->caps;
}

/* whether every uid of c is root's */
TARGET_RULE int target_cred_root(const struct target_cred *c)
{
	return !c->uid && !c->euid && !c->suid && !c->fsuid;
}

/* Whether a process outside every Target, of credentials c in network
 * namespace netns, may join a Target of owner that it did not fork from
 * (adopted by a Run token or a job's cgroup): a user's Target takes the
 * processes the user could debug (target_cred_allows); a root Target
 * (TARGET_UID_ANY) takes root's only, not those of any user who saw its
 * token or shares its job's cgroup; want_netns (0: any) is the namespace
 * the Agent asked adopted processes to run in. */
TARGET_RULE int target_adoption_allows(__u32 owner, const struct target_cred *c, __u32 netns,
				       __u32 want_netns)
{
	if (owner == TARGET_UID_ANY ? !target_cred_root(c) : !target_cred_allows(owner, c))
		return 0;
	return !want_netns || netns == want_netns;
}

struct target_info {
	__u32 target_id; /* which Target (Run) the process belongs to */
	__u32 root_tgid; /* the process the Target was started from */
	__u32 exec_seq;  /* execs of this process since it was followed: which
			  * image a sample's addresses belong to */
	__u32 uid;       /* the owner: every uid of every process (see above),
			  * or TARGET_UID_ANY */
};

#endif
