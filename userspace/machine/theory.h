/* theory — what the Machine's cores can reach on paper: FLOP per cycle per
 * core (double and single precision) of known microarchitectures, crossed
 * with a frequency and a core count.
 *
 * A theoretical value is always `estimated` and says so in its reason. A
 * microarchitecture that is not in the table gets no value (-ENOENT), never
 * an extrapolation from a neighbour. There is no memory bandwidth entry:
 * it depends on the DIMMs, channels and NUMA, which the processor does not
 * say.
 */
#ifndef NUNATAK_MACHINE_THEORY_H
#define NUNATAK_MACHINE_THEORY_H

#include <stddef.h>

#include "userspace/machine/cpu_id.h"

/* FLOP per cycle per core of a microarchitecture (cpu_id's names): 0 or
 * -ENOENT (unknown or NULL). */
int theory_flop_per_cycle(const char *microarchitecture, double *dp, double *sp);

/* Peak FLOP/s = flop per cycle × hz × cores, dp and sp. reason (len bytes)
 * gets the why of the value ("theoretical peak: zen3, 16 dp flop/cycle/core ×
 * 2.45 GHz × 2 cores"), or of its absence. 0, -ENOENT (unknown
 * microarchitecture), -EINVAL (hz not > 0, cores < 1, NULL argument). */
int theory_flops(const struct cpu_id *id, double hz, int cores, double *dp, double *sp,
		 char *reason, size_t len);

/* The rated frequency: cpufreq cpuinfo_max_freq of cpu0 under sysfs_cpu_root
 * (e.g. "/sys/devices/system/cpu"; NULL: skip), else id->rated_hz (the
 * "@ GHz" of the model name), else id->current_hz with a reason saying it is
 * the current, not the rated, frequency. *hz and reason (the source) are
 * written: 0, or -ENOENT when there is none. */
int theory_rated_hz(const struct cpu_id *id, const char *sysfs_cpu_root, double *hz,
		    char *reason, size_t len);

#endif
