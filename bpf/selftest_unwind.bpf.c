// SPDX-License-Identifier: GPL-2.0
/* selftest_unwind.bpf.c — bpf/unwind.bpf.h's walk behind a SEC("syscall")
 * program, for bpf_prog_test_run_opts (tests/unit/test_bpf_unwind.c).
 *
 * Contract in bpf/selftest_unwind.h. The program walks the user stack of
 * the thread that runs it (the test), from the registers it entered the
 * kernel with, through this object's own unwind maps, which the test
 * fills with the Agent's code (userspace/agent/unwinder.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/selftest_unwind.h"
#include "bpf/unwind.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct selftest_unwind_args unwind_args;

SEC("syscall")
int selftest_unwind(void *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct unwind_scratch *s = unwind_scratch_get();

	if (!s) {
		unwind_args.ret = -1;
		return 0;
	}
	s->stack.n_kernel = 0;
	s->stack.n_user = 0;
	s->digest = 0;
	unwind_user(s, unwind_args.tgid, PT_REGS_IP_CORE(regs), PT_REGS_SP_CORE(regs),
		    PT_REGS_FP_CORE(regs));
	bpf_probe_read_kernel(&unwind_args.stack, sizeof(unwind_args.stack), &s->stack);
	unwind_args.ret = 0;
	return 0;
}
