/* selftest_token.h — contract between bpf/selftest_token.bpf.c and
 * tests/unit/test_bpf_token.c (as bpf/selftest.h, for the exec decisions:
 * leaving a user's Target, the credentials that decide it, finding a Run token in an environment and
 * deciding its adoption). */
#ifndef NUNATAK_BPF_SELFTEST_TOKEN_H
#define NUNATAK_BPF_SELFTEST_TOKEN_H

#include "bpf/target.h"
#include "bpf/token.h"

enum selftest_token_op {
	SELFTEST_EXEC = 1,  /* target_exec(tgid, cred) */
	SELFTEST_ENV_FIND,  /* token_env_find(start_stack), in the test's memory */
	SELFTEST_ADOPTS,    /* token_adopts(key, tgid, cred, netns, want_netns) */
	SELFTEST_CRED_READ, /* target_cred_read(the calling task) into cred */
};

struct selftest_token_args {
	__u32 op;
	__u32 tgid;
	__u32 netns;
	__u32 want_netns;
	__u32 pad;
	__s32 ret;
	__u64 start_stack;
	struct target_cred cred; /* in (EXEC, ADOPTS), out (CRED_READ) */
	struct token_key key;    /* out (ENV_FIND), in (ADOPTS) */
	struct target_info info; /* out (EXEC, ADOPTS) */
};

#endif
