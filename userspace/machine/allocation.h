/* allocation — the share of the Machine this process was given: the
 * cores it may run on (affinity mask), its cgroup CPU quota and memory limit.
 *
 * Both cgroup hierarchies are read: v2 (the "0::/path" line of
 * /proc/self/cgroup, cpu.max and memory.max) and v1 (the "N:cpu,...:/path"
 * and "N:memory:/path" lines, cpu.cfs_quota_us / cpu.cfs_period_us and
 * memory.limit_in_bytes under <root>/<controller>/<path>). A limit set on an
 * ancestor cgroup binds too: the smallest one from the cgroup up to the root
 * is kept. When the cgroup's own directory is not visible (a cgroup
 * namespace shows "/"), the root directory of the controller is read.
 *
 * No limit is not zero: cpu_quota NAN and memory_limit_bytes -1 mean none
 * (v1's "-1" quota and its page-counter maximum, v2's "max").
 */
#ifndef NUNATAK_MACHINE_ALLOCATION_H
#define NUNATAK_MACHINE_ALLOCATION_H

#include <sched.h>
#include <stdint.h>

struct allocation {
	int visible_cores; /* CPU_COUNT(&mask) */
	cpu_set_t mask; /* sched_getaffinity of this process */
	double cpu_quota; /* cores (quota / period), NAN: none */
	int64_t memory_limit_bytes; /* -1: none */
};

/* The allocation from a cgroup filesystem root (e.g. "/sys/fs/cgroup", or a
 * fixture directory) and a /proc/self/cgroup text, with the given affinity
 * mask. 0, or -EINVAL (NULL argument). Unreadable limits are "none". */
int allocation_parse(const char *cgroup_root, const char *proc_self_cgroup,
		     const cpu_set_t *mask, struct allocation *out);

/* allocation_parse of /sys/fs/cgroup, /proc/self/cgroup and
 * sched_getaffinity(0): 0 or -errno */
int allocation_read(struct allocation *out);

/* The threads calibration may use: min(visible cores, ceil(quota)), at
 * least 1. */
int allocation_threads(const struct allocation *a);

#endif
