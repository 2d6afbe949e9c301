/* token.h — Run tokens: how a process that no Target follows joins one
 * at its exec (contract between bpf/task.bpf.c and the Agent's sampler).
 *
 * The CLI puts NUNATAK_RUN=<32 lowercase hex> in the environment of the
 * application; launchers forward it to the ranks they start on other
 * nodes. The Agent registers the token of a Run (`tokens`: token text ->
 * Target and owner); at sched_process_exec of a process outside every
 * Target, while at least one token is registered, the kernel scans the
 * new environment (the first TOKEN_ENV_MAX strings) for that variable.
 * A registered token adopts the process into its Target when its
 * credentials are the token's owner's (bpf/target.h: every uid, one gid,
 * no capability, dumpable as the user; for TARGET_UID_ANY, a root Run's,
 * every uid 0: a user who saw a root Run's token cannot put processes of
 * theirs into it) and, when
 * the Agent asked for it, when it runs in the Agent's network namespace.
 * The adoption is reported as TASK_EVENT_EXEC (bpf/task.h) with the
 * Target's id and exec_seq 0. The scan reads the initial stack as 64-bit
 * words: a 32-bit (compat) process is never adopted (its argc does not
 * read as one: the scan gives up).
 *
 * Cost, on every exec of the node while a token is registered (BPF
 * statistics, this machine): 4.7 us for 37 environment strings, 32 us for
 * 337 (0.6 us with no token: one global read).
 */
#ifndef NUNATAK_BPF_TOKEN_H
#define NUNATAK_BPF_TOKEN_H

#ifndef MAX_TOKENS
#define MAX_TOKENS 4096
#endif
#define TOKEN_HEX_BYTES 32
/* environment strings looked at per exec: a variable beyond is not seen */
#define TOKEN_ENV_MAX 4096
/* "NUNATAK_RUN=" */
#define TOKEN_ENV_PREFIX_BYTES 12

struct token_key {
	char hex[TOKEN_HEX_BYTES]; /* lowercase hex, no terminator */
};

struct token_info {
	__u32 target_id;
	__u32 uid; /* the Run's owner, or TARGET_UID_ANY */
};

#endif
