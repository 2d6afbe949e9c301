/* doctor_pmu — see doctor_pmu.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "userspace/agent/pmu_cause.h"
#include "userspace/agent/pmu_events.h"
#include "userspace/doctor/doctor_pmu.h"
#include "userspace/machine/cpu_id.h"

/* the group's events and counters into name (set non-NULL) */
static void pmu_group_name(const struct pmu_event_set *set, char *name, size_t len)
{
	size_t i, n;
	int c;

	n = (size_t)snprintf(name, len, "the %s group (", set->microarchitecture);
	for (c = 0; c < PMU_COUNTERS && n < len; c++)
		if (pmu_event_set_has(set, (enum pmu_counter)c))
			n += (size_t)snprintf(name + n, len - n, "%s%s",
					      n && name[n - 1] != '(' ? ", " : "",
					      pmu_counter_name((enum pmu_counter)c));
	for (i = 0; i < set->n_events && n < len; i++)
		n += (size_t)snprintf(name + n, len - n, "%s%s", i ? ", " : "; events ",
				      set->events[i].name);
	if (n < len)
		snprintf(name + n, len - n, "%s)",
			 set->precision_mixed ? "; single-precision FLOP counted as double" : "");
}

enum doctor_status doctor_pmu_group(const struct cpu_id *id, char *detail, size_t len)
{
	const char *who = id->model_name[0] ? id->model_name : id->vendor, *reason;
	const struct pmu_event_set *set =
	    id->microarchitecture ? pmu_events_for(id->microarchitecture, &reason) : NULL;
	char group[400];

	if (!set) {
		snprintf(detail, len,
			 "%s (%s family %d model %d, %s): nunatak's event table has no FLOP/DRAM "
			 "group for it",
			 who, id->vendor, id->family, id->model,
			 id->microarchitecture ? id->microarchitecture
					       : "microarchitecture unknown");
		return DOCTOR_MISSING;
	}
	pmu_group_name(set, group, sizeof(group));
	snprintf(detail, len, "%s: %s", who, group);
	return DOCTOR_OK;
}

/* the "pmu" check: the Agent's decision (pmu_cause.h) on the Agent's facts */
static enum pmu_cause check_pmu(struct doctor_report *r, struct pmu_facts *f, struct pmu_verdict *v)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	char why[256] = "", core[64] = "";

	if (f->set) {
		f->group_err =
		    pmu_event_set_probe(f->set, ncpu > 0 ? (int)ncpu : 1, why, sizeof(why));
		f->group_why = f->group_err ? why : NULL;
	}
	switch (pmu_cause_decide(f, v)) {
	case PMU_CAUSE_NONE:
		if (f->set)
			doctor_check(r, "pmu", DOCTOR_OK, NULL, "%s's counters open",
				     f->set->microarchitecture);
		else
			doctor_check(r, "pmu", DOCTOR_OK, NULL, "a PMU (%s) counts cycles",
				     pmu_core_listed(f->devices, core, sizeof(core)) ? core
										     : "unnamed");
		break;
	case PMU_CAUSE_REFUSED:
		doctor_check(r, "pmu", DOCTOR_WARNING, v->remedy, "%s", v->message);
		break;
	default:
		doctor_check(r, "pmu", DOCTOR_MISSING, v->remedy, "%s", v->message);
	}
	return v->cause;
}

void doctor_pmu_checks(struct doctor_report *r)
{
	struct pmu_verdict v;
	struct pmu_facts f;
	struct cpu_id id;
	char detail[512];
	enum doctor_status s;
	enum pmu_cause cause;

	pmu_facts_here(&f, &id);
	cause = check_pmu(r, &f, &v);
	/* without BPF a Run samples nothing: bpf-denied says it alone, as in a Run */
	if (cause != PMU_CAUSE_NONE && doctor_check_status(r, "bpf") != DOCTOR_MISSING)
		doctor_degradation(r, PMU_DEGRADATION, v.message, v.remedy);
	if (!f.id) {
		doctor_check(r, "pmu_counter_group", DOCTOR_MISSING, NULL,
			     "the processor cannot be identified from /proc/cpuinfo: %s",
			     strerror(-f.id_err));
		return;
	}
	s = doctor_pmu_group(&id, detail, sizeof(detail));
	/* the cause is the pmu check's: said once, the remedy too; without a
	 * PMU the table's group is a fact of no use here, and said so */
	doctor_check(r, "pmu_counter_group", s, NULL, "%s%s", detail,
		     cause == PMU_CAUSE_NO_PMU ? " (of no use here: no PMU, see pmu)" : "");
	if (cause == PMU_CAUSE_NONE && f.set && f.set->precision_mixed) /* agent_pmu.c's words */
		doctor_degradation(r, "flop-precision-unknown", f.set->caveat,
				   "read flop_dp as the FLOP of every precision; compare "
				   "single-precision code with flops_sp by hand");
}
