/* target.bpf.h — the Target set's map, for BPF programs only.
 *
 * Every BPF unit declares the same `targets` map (contract in
 * bpf/target.h); task.bpf.c owns it and the Agent gives the other units
 * its fd (bpf_map__reuse_fd) before they load.
 */
#ifndef NUNATAK_BPF_TARGET_BPF_H
#define NUNATAK_BPF_TARGET_BPF_H

#include "bpf/target.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGET_PROCESSES);
	__type(key, __u32);
	__type(value, struct target_info);
} targets SEC(".maps");

#endif
