/* agent_pmu — which sampling group the Agent asks of its sampler
 * (pmu_events.h) and the node Degradations of what it does not get: no
 * group at all (`hardware-counters-unavailable`: no PMU, or a processor
 * whose events are not known), or FLOP without their precision
 * (`flop-precision-unknown`, AMD Zen). */
#include <stdio.h>

#include "userspace/agent/agent_internal.h"
#include "userspace/agent/pmu_events.h"
#include "userspace/agent/sampler.h"
#include "userspace/log/log.h"
#include "userspace/machine/cpu_id.h"

#define PMU_DEGRADATION "hardware-counters-unavailable"

const struct pmu_event_set *agent_pmu_choose(struct agent *a)
{
	const struct pmu_event_set *set;
	const char *reason = NULL;
	struct cpu_id id;
	char msg[512];
	int err;

	if (a->opts.pmu)
		return a->opts.pmu;
	err = cpu_id_read(&id);
	set = err ? NULL : pmu_events_for(id.microarchitecture, &reason);
	if (set)
		return set;
	snprintf(msg, sizeof(msg),
		 "no FLOP or DRAM counter is sampled: %s (%s family %d model %d: %s)",
		 err ? "/proc/cpuinfo cannot be read" : reason, err ? "?" : id.vendor,
		 err ? -1 : id.family, err ? -1 : id.model,
		 !err && id.microarchitecture ? id.microarchitecture : "unknown");
	agent_add_node_degradation(a, PMU_DEGRADATION, msg,
				   "time is sampled as usual; FLOP and DRAM Measurements need a "
				   "processor in nunatak's event table (userspace/agent/pmu_events.c)");
	return NULL;
}

void agent_pmu_degradations(struct agent *a)
{
	const struct pmu_event_set *set = sampler_pmu(a->sampler);
	const char *why = sampler_pmu_unavailable(a->sampler);
	char msg[512];

	if (why) {
		snprintf(msg, sizeof(msg), "no FLOP or DRAM counter is sampled: %s", why);
		agent_add_node_degradation(a, PMU_DEGRADATION, msg,
					   "time is sampled as usual; for FLOP and DRAM "
					   "Measurements run on bare metal or in a VM that exposes "
					   "the PMU (KVM: -cpu host with a virtual PMU)");
		return;
	}
	if (set && set->precision_mixed) {
		snprintf(msg, sizeof(msg), "%s counts FLOP without their precision: %s",
			 set->microarchitecture, set->caveat);
		agent_add_node_degradation(a, "flop-precision-unknown", msg,
					   "read flop_dp as the FLOP of every precision; compare "
					   "single-precision code with flops_sp by hand");
	}
	if (set)
		pr_info("sampling group of %s: %zu counting events per CPU (%s)",
			set->microarchitecture, set->n_events, set->caveat);
}
