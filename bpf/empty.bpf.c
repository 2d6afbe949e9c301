// SPDX-License-Identifier: GPL-2.0
/* empty.bpf.c — the bare sampling interrupt: the same perf events as
 * sample.bpf.c with a program that does nothing. The benchmark's baseline
 * for the mechanism's own cost (tests/bench). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("perf_event")
int empty_sample(void *ctx)
{
	return 0;
}
