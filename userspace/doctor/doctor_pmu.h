/* doctor_pmu — the PMU and its counter group: can a cycles counter be
 * opened here (no PMU, as on most VMs, or one the caller may not use), and
 * does nunatak know the FLOP/DRAM event group of this processor's
 * microarchitecture (cpu_id.h) in the pmu part's table (pmu_events.h)?
 * Without either, a Run samples time only
 * and every roofline placement is unavailable: the Degradation
 * hardware-counters-unavailable.
 */
#ifndef NUNATAK_DOCTOR_PMU_H
#define NUNATAK_DOCTOR_PMU_H

#include <stddef.h>

#include "userspace/doctor/doctor_report.h"

struct cpu_id;

/* The status of the counter group for a processor: DOCTOR_OK when its
 * microarchitecture has a FLOP/DRAM group, else DOCTOR_MISSING (unknown
 * processor, or no group for it); detail says which. pmu_present: the
 * cycles counter opened (a known group on a Machine without PMU is still
 * DOCTOR_MISSING, detail naming the group it would use). */
enum doctor_status doctor_pmu_group(const struct cpu_id *id, int pmu_present, char *detail,
				    size_t len);

/* Adds the "pmu" and "pmu_counter_group" checks (and the Degradation). */
void doctor_pmu_checks(struct doctor_report *r);

#endif
