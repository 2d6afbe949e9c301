/* target.h — the Target set shared by every BPF unit and the Agent.
 *
 * One hash map, `targets`, owned by task.bpf.c and reused (same fd) by the
 * other units: key = tgid of an observed process, value = struct
 * target_info. A process outside it costs one lookup and nothing else.
 *
 * A Target of a user (uid != TARGET_UID_ANY) holds only processes whose
 * real and effective uid are that user's: a process whose credentials
 * differ after an exec (a setuid program) leaves the set at that exec,
 * and is never sampled again; its forks are not followed.
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

struct target_info {
	__u32 target_id; /* which Target (Run) the process belongs to */
	__u32 root_tgid; /* the process the Target was started from */
	__u32 exec_seq;  /* execs of this process since it was followed: which
			  * image a sample's addresses belong to */
	__u32 uid;       /* the owner: real and effective uid of every process,
			  * or TARGET_UID_ANY */
};

#endif
