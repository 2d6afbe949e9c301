/* selftest_unwind.h — contract between bpf/selftest_unwind.bpf.c and
 * tests/unit/test_bpf_unwind.c (as bpf/selftest.h, for the user Stack
 * walk of bpf/unwind.bpf.h): the walk of the calling thread's own user
 * stack, from the registers it entered the bpf() system call with. */
#ifndef NUNATAK_BPF_SELFTEST_UNWIND_H
#define NUNATAK_BPF_SELFTEST_UNWIND_H

#include "bpf/sample.h"

struct selftest_unwind_args {
	__u32 tgid; /* in: whose unwind_procs entry to walk with */
	__s32 ret;  /* out: 0, or -1 no scratch */
	struct stack_value stack; /* out: the user frames, innermost first */
};

#endif
