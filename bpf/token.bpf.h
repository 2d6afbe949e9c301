/* token.bpf.h — finding a Run token in a new process' environment and
 * deciding its adoption, for BPF programs only (contract in bpf/token.h).
 *
 * `static __always_inline` helpers of plain values (and of user memory of
 * the current task), so that bpf/selftest_token.bpf.c drives them through
 * bpf_prog_test_run_opts on a stack laid out by the test
 * (tests/unit/test_bpf_token.c). The map is declared here: every object
 * that includes it has its own; the Agent fills task.bpf.c's.
 */
#ifndef NUNATAK_BPF_TOKEN_BPF_H
#define NUNATAK_BPF_TOKEN_BPF_H

#include "bpf/target.bpf.h"
#include "bpf/token.h"
#include "bpf/job.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TOKENS);
	__type(key, struct token_key);
	__type(value, struct token_info);
} tokens SEC(".maps");

/* one string of the scan: "NUNATAK_RUN=" + 32 characters + NUL fits,
 * a longer one is read truncated and does not match; so does
 * "SLURM_JOB_ID=" + 10 digits + NUL */
#define TOKEN_ENV_READ_BYTES (TOKEN_ENV_PREFIX_BYTES + TOKEN_HEX_BYTES + 4)

/* envp pointers read at once: one read per chunk, not per string */
#define TOKEN_ENV_CHUNK 8

/* what one scan of an environment looks for (and found) */
#define ENV_WANT_TOKEN 1u /* NUNATAK_RUN=<32 hex> */
#define ENV_WANT_JOB 2u	  /* SLURM_JOB_ID=<digits> (bpf/job.h) */

struct token_scan {
	__u64 envp;           /* user address of envp[0] (64-bit pointers) */
	__u32 want;           /* ENV_WANT_* */
	__u32 seen;           /* ENV_WANT_* met (the first occurrence counts) */
	struct token_key key; /* out: ENV_WANT_TOKEN */
	struct job_key job;   /* out: ENV_WANT_JOB, "job_<digits>"; "" when malformed */
	int found;            /* the token */
};

static __always_inline int token_env_prefix(const char *s)
{
	const char prefix[TOKEN_ENV_PREFIX_BYTES] = "NUNATAK_RUN=";
	int i;

#pragma unroll
	for (i = 0; i < TOKEN_ENV_PREFIX_BYTES; i++)
		if (s[i] != prefix[i])
			return 0;
	return 1;
}

/* 1 when buf (n bytes read with its NUL) is "SLURM_JOB_ID=...", and
 * then *key is "job_<digits>" for 1 to 10 decimal digits, "" otherwise;
 * 0 (another variable) */
static __always_inline int job_env_key(const char *buf, long n, struct job_key *key)
{
	const char prefix[JOB_ENV_PREFIX_BYTES] = JOB_ENV_PREFIX;
	long digits = n - 1 - JOB_ENV_PREFIX_BYTES;
	int i;

	__builtin_memset(key, 0, sizeof(*key));
	if (n < JOB_ENV_PREFIX_BYTES + 1)
		return 0;
#pragma unroll
	for (i = 0; i < JOB_ENV_PREFIX_BYTES; i++)
		if (buf[i] != prefix[i])
			return 0;
	if (digits < 1 || digits > JOB_NAME_BYTES - 1 - JOB_NAME_PREFIX_BYTES)
		return 1;
	for (i = 0; i < JOB_NAME_BYTES - 1 - JOB_NAME_PREFIX_BYTES && i < digits; i++) {
		char c = buf[JOB_ENV_PREFIX_BYTES + i];

		if (c < '0' || c > '9') {
			__builtin_memset(key, 0, sizeof(*key));
			return 1;
		}
		key->name[JOB_NAME_PREFIX_BYTES + i] = c;
	}
	__builtin_memcpy(key->name, JOB_NAME_PREFIX, JOB_NAME_PREFIX_BYTES);
	return 1;
}

/* Environment string str: what it is of what sc wants; 1 when sc has
 * met all it wants (the scan stops), else 0. Its first 8 bytes first (all
 * but a few strings end there); a string shorter than 8 is followed by
 * more of the stack's strings, readable.
 * A global function: the verifier checks it once, on its own, instead of
 * in every state of the scan's unrolled chunk (311 000 instructions and
 * 1.1 s of every start before). The caller reads only what it returns:
 * sc is the scan's, written here. */
__noinline int token_env_match(struct token_scan *sc, __u64 str)
{
	const char *eight = "NUNATAK_", *job_eight = "SLURM_JO";
	char buf[TOKEN_ENV_READ_BYTES];
	__u64 head = 0;
	__u32 open;
	long n;

	if (!sc)
		return 1;
	open = sc->want & ~sc->seen;
	if (bpf_probe_read_user(&head, sizeof(head), (const void *)str))
		return 0;
	if ((open & ENV_WANT_TOKEN) && head == *(const __u64 *)eight) {
		n = bpf_probe_read_user_str(buf, sizeof(buf), (const void *)str);
		if (n == TOKEN_ENV_PREFIX_BYTES + TOKEN_HEX_BYTES + 1 && token_env_prefix(buf)) {
			__builtin_memcpy(sc->key.hex, buf + TOKEN_ENV_PREFIX_BYTES,
					 TOKEN_HEX_BYTES);
			sc->found = 1;
			sc->seen |= ENV_WANT_TOKEN;
		}
	} else if ((open & ENV_WANT_JOB) && head == *(const __u64 *)job_eight) {
		n = bpf_probe_read_user_str(buf, sizeof(buf), (const void *)str);
		/* not SLURM_JOB_NAME= and the like; the first occurrence counts */
		if (job_env_key(buf, n, &sc->job))
			sc->seen |= ENV_WANT_JOB;
	}
	return (sc->seen & sc->want) == sc->want;
}

/* bpf_loop callback: environment strings [i * CHUNK, (i + 1) * CHUNK);
 * 1 stops the scan (all found, the end of envp, or unreadable) */
static long token_scan_chunk(__u64 i, void *ctx)
{
	struct token_scan *sc = ctx;
	__u64 str[TOKEN_ENV_CHUNK];
	int k;

	/* envp is followed by auxv and the strings: a chunk past its NULL
	 * is still on the stack */
	if (bpf_probe_read_user(str, sizeof(str),
				(const void *)(sc->envp + i * sizeof(str))))
		return 1;
#pragma unroll
	for (k = 0; k < TOKEN_ENV_CHUNK; k++) {
		if (!str[k] || token_env_match(sc, str[k]))
			return 1;
	}
	return 0;
}

/* Scans the environment of the process whose initial stack (argc,
 * argv[], NULL, envp[], NULL) is at user address start_stack, in the
 * current task's memory, for what sc->want names (its first TOKEN_ENV_MAX
 * strings): sc->seen says what was met. */
static __always_inline void env_scan(__u64 start_stack, struct token_scan *sc)
{
	__u64 argc = 0;

	if (!start_stack || bpf_probe_read_user(&argc, sizeof(argc), (const void *)start_stack))
		return;
	if (argc > (1u << 20)) /* not a stack */
		return;
	sc->envp = start_stack + (argc + 2) * sizeof(__u64);
	bpf_loop(TOKEN_ENV_MAX / TOKEN_ENV_CHUNK, token_scan_chunk, sc, 0);
}

/* The token of the process whose initial stack is at start_stack: 1 and
 * *key, or 0 when its first TOKEN_ENV_MAX environment strings hold none. */
static __always_inline int token_env_find(__u64 start_stack, struct token_key *key)
{
	struct token_scan sc = {.want = ENV_WANT_TOKEN};

	env_scan(start_stack, &sc);
	if (sc.found)
		*key = sc.key;
	return sc.found;
}

/* Whether the Target entry t (a token's or a job's: struct token_info)
 * adopts process tgid of credentials c in network namespace netns
 * (target_adoption_allows, want_netns: the Agent's, 0 = any): 1 and
 * *info (its Target entry, exec_seq 0, root_tgid tgid), or 0. The one
 * adoption decision of every way a process joins a Target it did not
 * fork from. */
static __always_inline int target_adopts(const struct token_info *t, __u32 tgid,
					 const struct target_cred *c, __u32 netns,
					 __u32 want_netns, struct target_info *info)
{
	if (!t || !target_adoption_allows(t->uid, c, netns, want_netns))
		return 0;
	info->target_id = t->target_id;
	info->root_tgid = tgid;
	info->exec_seq = 0;
	info->uid = t->uid;
	return 1;
}

/* the Target entry of a registered token, NULL when none */
static __always_inline const struct token_info *token_lookup(const struct token_key *key)
{
	return bpf_map_lookup_elem(&tokens, key);
}

/* Whether token key adopts a process (target_adopts): 1 and *info, or 0. */
static __always_inline int token_adopts(const struct token_key *key, __u32 tgid,
					const struct target_cred *c, __u32 netns,
					__u32 want_netns, struct target_info *info)
{
	return target_adopts(token_lookup(key), tgid, c, netns, want_netns, info);
}

#endif
