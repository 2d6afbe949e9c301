/* cache_size — the last-level cache the calibration threads can fill, so
 * that the triad's arrays go well beyond it: for each CPU used, its
 * highest-level cache (sysfs cpuN/cache/indexK: level, size,
 * shared_cpu_list), each distinct instance (by shared_cpu_list) counted
 * once, summed.
 */
#ifndef NUNATAK_CALIBRATION_CACHE_SIZE_H
#define NUNATAK_CALIBRATION_CACHE_SIZE_H

/* @sysfs_cpu_root: "/sys/devices/system/cpu" (or a fixture). 0 with
 * *bytes; -ENOENT when no cache is described; -EINVAL bad arguments;
 * -ENOMEM. */
int llc_bytes(const char *sysfs_cpu_root, const int *cpus, int n, long long *bytes);

#endif
