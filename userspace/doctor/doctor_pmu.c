/* doctor_pmu — see doctor_pmu.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "userspace/agent/pmu_events.h"
#include "userspace/doctor/doctor_pmu.h"
#include "userspace/machine/cpu_id.h"

#define DEGRADATION "hardware-counters-unavailable"

static const char REMEDY_NO_PMU[] =
    "profile on bare metal or in a VM that exposes its PMU (KVM: -cpu host with pmu=on; "
    "`perf stat -e cycles true` works there); time is still sampled";

/* the group's events and counters into name, or -ENOENT with reason */
static int pmu_group_lookup(const struct cpu_id *id, char *name, size_t len, const char **reason)
{
	const struct pmu_event_set *set;
	size_t i, n;
	int c;

	*reason = "its microarchitecture is unknown";
	set = id->microarchitecture ? pmu_events_for(id->microarchitecture, reason) : NULL;
	if (!set)
		return -ENOENT;
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
	return 0;
}

enum doctor_status doctor_pmu_group(const struct cpu_id *id, int pmu_present, char *detail,
				    size_t len)
{
	char group[400];
	const char *who = id->model_name[0] ? id->model_name : id->vendor, *reason;

	if (pmu_group_lookup(id, group, sizeof(group), &reason)) {
		snprintf(
		    detail, len,
		    "%s (%s, family %d model %d): no FLOP/DRAM event group: %s: time only", who,
		    id->microarchitecture ? id->microarchitecture : "microarchitecture unknown",
		    id->family, id->model, reason);
		return DOCTOR_MISSING;
	}
	if (!pmu_present) {
		snprintf(detail, len, "%s: %s is known, but there is no PMU to count its events",
			 who, group);
		return DOCTOR_MISSING;
	}
	snprintf(detail, len, "%s: %s", who, group);
	return DOCTOR_OK;
}

/* 0 when a cycles counter of this process (user mode: allowed by
 * perf_event_paranoid <= 2 to everyone) opens, else -errno */
static int open_cycles(void)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_HARDWARE,
	    .size = sizeof(attr),
	    .config = PERF_COUNT_HW_CPU_CYCLES,
	    .exclude_kernel = 1,
	    .exclude_hv = 1,
	    .disabled = 1,
	};
	int fd = (int)syscall(__NR_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int check_pmu(struct doctor_report *r)
{
	char msg[320];
	int e = open_cycles();

	if (!e) {
		doctor_check(r, "pmu", DOCTOR_OK, NULL, "a cycles counter opens");
		return 1;
	}
	if (e == -EACCES || e == -EPERM) {
		snprintf(msg, sizeof(msg),
			 "a cycles counter is refused to this user (%s): perf_event_paranoid",
			 strerror(-e));
		doctor_check(r, "pmu", DOCTOR_WARNING,
			     "profile as root or through nunatakd, which may use the PMU", "%s",
			     msg);
		return 0;
	}
	snprintf(msg, sizeof(msg),
		 "no PMU on this Machine: a cycles counter cannot be opened (%s): FLOP and DRAM "
		 "counters are not sampled and roofline placements are unavailable",
		 strerror(-e));
	doctor_check(r, "pmu", DOCTOR_MISSING, REMEDY_NO_PMU, "%s", msg);
	doctor_degradation(r, DEGRADATION, msg, REMEDY_NO_PMU);
	return 0;
}

void doctor_pmu_checks(struct doctor_report *r)
{
	int present = check_pmu(r);
	const struct pmu_event_set *set;
	const char *reason;
	char detail[512];
	struct cpu_id id;
	enum doctor_status s;
	int e = cpu_id_read(&id);

	if (e) {
		doctor_check(r, "pmu_counter_group", DOCTOR_MISSING, NULL,
			     "the processor cannot be identified from /proc/cpuinfo: %s",
			     strerror(-e));
		return;
	}
	s = doctor_pmu_group(&id, present, detail, sizeof(detail));
	doctor_check(r, "pmu_counter_group", s,
		     s == DOCTOR_OK ? NULL
		     : present	    ? "time is sampled; FLOP and DRAM counters need a processor "
				      "nunatak has an event table for"
				    : REMEDY_NO_PMU,
		     "%s", detail);
	if (s != DOCTOR_OK && present)
		doctor_degradation(r, DEGRADATION, detail,
				   "time is sampled; FLOP and DRAM counters need a processor "
				   "nunatak has an event table for");
	set = s == DOCTOR_OK ? pmu_events_for(id.microarchitecture, &reason) : NULL;
	if (set && set->precision_mixed) /* the Agent's own words (agent_pmu.c) */
		doctor_degradation(r, "flop-precision-unknown", set->caveat,
				   "read flop_dp as the FLOP of every precision; compare "
				   "single-precision code with flops_sp by hand");
}
