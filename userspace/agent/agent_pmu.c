/* agent_pmu — which sampling group the Agent asks of its sampler
 * (pmu_events.h) and, once the sampler exists, the node Degradations of
 * what it does not get: no FLOP or DRAM counter at all
 * (`hardware-counters-unavailable`, its one cause decided by pmu_cause.h
 * in doctor's words), or FLOP without their precision
 * (`flop-precision-unknown`, AMD Zen). Nothing is said before the sampler
 * exists: without BPF (bpf-denied) nothing is sampled, time included, and
 * that Degradation says so alone. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "userspace/agent/agent_internal.h"
#include "userspace/agent/pmu_cause.h"
#include "userspace/agent/pmu_events.h"
#include "userspace/agent/sampler.h"
#include "userspace/log/log.h"
#include "userspace/machine/cpu_id.h"

const struct pmu_event_set *agent_pmu_choose(struct agent *a)
{
	struct pmu_facts f;
	struct cpu_id id;

	a->pmu_refused_err = 0;
	a->pmu_refused[0] = '\0';
	if (a->opts.pmu)
		return a->pmu_asked = a->opts.pmu;
	pmu_facts_here(&f, &id);
	return a->pmu_asked = f.set;
}

int agent_pmu_refused(struct agent *a, const char *err, int errnum)
{
	if (strncmp(err, SAMPLER_PMU_OPEN_FAILED, strlen(SAMPLER_PMU_OPEN_FAILED)))
		return 0;
	a->pmu_refused_err = errnum > 0 ? -errnum : -EIO;
	snprintf(a->pmu_refused, sizeof(a->pmu_refused), "%s", err);
	return 1;
}

void agent_pmu_degradations(struct agent *a)
{
	const struct pmu_event_set *set = sampler_pmu(a->sampler);
	struct pmu_verdict v;
	struct pmu_facts f;
	struct cpu_id id;
	char msg[512];

	pmu_facts_here(&f, &id);
	f.set = a->pmu_asked;
	if (a->pmu_refused_err) {
		f.group_err = a->pmu_refused_err;
		f.group_why = a->pmu_refused;
	} else {
		f.group_why = sampler_pmu_unavailable(a->sampler, &f.group_err);
	}
	if (pmu_cause_decide(&f, &v) != PMU_CAUSE_NONE) {
		agent_add_node_degradation(a, PMU_DEGRADATION, v.message, v.remedy);
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
