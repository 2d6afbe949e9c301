/* doctor_pmu — see doctor_pmu.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "userspace/doctor/doctor_pmu.h"
#include "userspace/machine/cpu_id.h"

#define DEGRADATION "hardware-counters-unavailable"

static const char REMEDY_NO_PMU[] =
	"profile on bare metal or in a VM that exposes its PMU (KVM: -cpu host with pmu=on; "
	"`perf stat -e cycles true` works there); time is still sampled";

/* HOOK(pmu): the FLOP/DRAM group of the pmu part (userspace/agent/
 * pmu_events.h, branch i10-pmu) is not merged into this branch: until it
 * is, a group is "known" when the microarchitecture is one the issue
 * promises a group for. The coordinator replaces this function's body by
 * the pmu table's lookup (keyed by vendor, family, model) and its reason. */
static int pmu_group_lookup(const struct cpu_id *id, char *name, size_t len)
{
	static const char *const promised[] = {
	    "zen2", "zen3", "zen4", "skylake-server", "cascadelake-server", "icelake-server",
	    "sapphirerapids", "haswell-server", "broadwell-server",
	};
	size_t i;

	if (!id->microarchitecture)
		return -ENOENT;
	for (i = 0; i < sizeof(promised) / sizeof(promised[0]); i++)
		if (!strcmp(id->microarchitecture, promised[i])) {
			snprintf(name, len, "%s FLOP dp, FLOP sp and DRAM fill events",
				 id->microarchitecture);
			return 0;
		}
	return -ENOENT;
}

enum doctor_status doctor_pmu_group(const struct cpu_id *id, int pmu_present, char *detail,
				    size_t len)
{
	char group[160];
	const char *who = id->model_name[0] ? id->model_name : id->vendor;

	if (pmu_group_lookup(id, group, sizeof(group))) {
		snprintf(detail, len,
			 "%s (%s, family %d model %d): no FLOP/DRAM event group is known for it: "
			 "time only",
			 who, id->microarchitecture ? id->microarchitecture : "microarchitecture unknown",
			 id->family, id->model);
		return DOCTOR_MISSING;
	}
	if (!pmu_present) {
		snprintf(detail, len, "%s: the %s group is known, but there is no PMU to count them",
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
}
