// SPDX-License-Identifier: GPL-2.0
/* selftest_token.bpf.c — the exec decisions of bpf/target.bpf.h and
 * bpf/token.bpf.h behind a SEC("syscall") program, for
 * bpf_prog_test_run_opts (tests/unit/test_bpf_token.c). Contract in
 * bpf/selftest_token.h; like bpf/selftest.bpf.c, never attached, its own
 * maps, its arguments one global. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/selftest_token.h"
#include "bpf/target.bpf.h"
#include "bpf/token.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct selftest_token_args token_args;

SEC("syscall")
int selftest_token(void *ctx)
{
	struct selftest_token_args *args = &token_args;
	struct target_info info = {};
	struct target_cred cred = args->cred;
	struct token_key key = {};

	switch (args->op) {
	case SELFTEST_EXEC:
		args->ret = target_exec(args->tgid, &cred, &info);
		args->info = info;
		break;
	case SELFTEST_ENV_FIND:
		args->ret = token_env_find(args->start_stack, &key);
		args->key = key;
		break;
	case SELFTEST_ADOPTS:
		key = args->key;
		args->ret = token_adopts(&key, args->tgid, &cred, args->netns, args->want_netns,
					 &info);
		args->info = info;
		break;
	case SELFTEST_CRED_READ:
		target_cred_read(bpf_get_current_task_btf(), &cred);
		args->cred = cred;
		args->ret = 0;
		break;
	default:
		args->ret = -22;
	}
	return 0;
}
