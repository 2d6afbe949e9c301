/* doctor_pmu — the PMU and its counter group, in the Agent's words: the
 * "pmu" check is the one cause (pmu_cause.h: no PMU, a processor not in
 * nunatak's event table, counters refused) the Agent would record as the
 * Degradation hardware-counters-unavailable, decided by the same function
 * on the same facts (the group probed as the sampler probes it); the
 * "pmu_counter_group" check names the FLOP/DRAM group of this processor in
 * the table (pmu_events.h), or says there is none (a fact, not the cause:
 * on a Machine without PMU no group would count). The Degradation is not
 * listed when BPF is denied: a Run then samples nothing and bpf-denied
 * says it alone.
 */
#ifndef NUNATAK_DOCTOR_PMU_H
#define NUNATAK_DOCTOR_PMU_H

#include <stddef.h>

#include "userspace/doctor/doctor_report.h"

struct cpu_id;

/* The status of the counter group for a processor: DOCTOR_OK when nunatak's
 * table has its microarchitecture's FLOP/DRAM group (detail names it), else
 * DOCTOR_MISSING (unknown processor, or no group for it; detail says
 * which). Whether the group counts here is the "pmu" check's. */
enum doctor_status doctor_pmu_group(const struct cpu_id *id, char *detail, size_t len);

/* Adds the "pmu" and "pmu_counter_group" checks (and the Degradation). */
void doctor_pmu_checks(struct doctor_report *r);

#endif
