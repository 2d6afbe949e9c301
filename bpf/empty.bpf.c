// SPDX-License-Identifier: GPL-2.0
/* empty.bpf.c — the bare mechanisms, for benchmarks: the same perf events as
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

/* the bare uprobe: an entry and a return probe that do nothing, the
 * baseline of the MPI probes' cost (tests/bench/mpi_call.sh) */
SEC("uprobe")
int empty_uprobe(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int empty_uretprobe(void *ctx)
{
	return 0;
}
