/* pmu_cause — see pmu_cause.h. */
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "userspace/agent/pmu_cause.h"
#include "userspace/agent/pmu_events.h"
#include "userspace/machine/cpu_id.h"

/* what every message ends with: the Run goes on without them */
#define TIME_ONLY "FLOP and DRAM are not counted, time only"

static const char REMEDY_NO_PMU[] =
    "profile on bare metal or in a VM that exposes its PMU (KVM/QEMU: -cpu host,pmu=on; "
    "`perf stat -e cycles true` counts cycles there)";

static int is_core_pmu(const char *name)
{
	static const char *const exact[] = {"cpu", "cpu_core", "cpu_atom", "cpum_cf"};
	size_t i;

	for (i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(name, exact[i]))
			return 1;
	return !strncmp(name, "armv8_", 6) || !strncmp(name, "armv7_", 6);
}

int pmu_core_listed(const char *devices, char *name, size_t len)
{
	DIR *d = opendir(devices);
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d)))
		if (is_core_pmu(e->d_name)) {
			snprintf(name, len, "%s", e->d_name);
			found = 1;
		}
	closedir(d);
	return found;
}

int pmu_open_cycles(void)
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

static int kernel_says_no_pmu(int err)
{
	return err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV;
}

const char *pmu_open_failure(int err)
{
	if (kernel_says_no_pmu(err))
		return "no PMU on this Machine";
	if (err == -EACCES || err == -EPERM)
		return "refused to this user";
	if (err == -EBUSY)
		return "in use";
	return "not accepted by this PMU";
}

static int read_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v;

	if (!f)
		return PMU_PARANOID_UNKNOWN;
	if (fscanf(f, "%d", &v) != 1)
		v = PMU_PARANOID_UNKNOWN;
	fclose(f);
	return v;
}

void pmu_facts_here(struct pmu_facts *f, struct cpu_id *id)
{
	const char *reason;
	int err = cpu_id_read(id);

	*f = (struct pmu_facts){
	    .devices = PMU_DEVICES,
	    .id = err ? NULL : id,
	    .id_err = err,
	    .set = err ? NULL : pmu_events_for(id->microarchitecture, &reason),
	    .cycles_err = pmu_open_cycles(),
	    .paranoid = read_paranoid(),
	};
}

/* "AMD EPYC 9B45 (AuthenticAMD family 26 model 2, zen5)" */
static void processor(const struct cpu_id *id, char *out, size_t len)
{
	snprintf(out, len, "%s%s(%s family %d model %d, %s)", id->model_name,
		 id->model_name[0] ? " " : "", id->vendor, id->family, id->model,
		 id->microarchitecture ? id->microarchitecture : "microarchitecture unknown");
}

static void no_pmu(const struct pmu_facts *f, const char *core, struct pmu_verdict *v)
{
	if (core[0])
		snprintf(v->message, sizeof(v->message),
			 "no PMU on this Machine: %s lists the PMU '%s', but the kernel opens no "
			 "cycles counter on it (%s): " TIME_ONLY,
			 f->devices, core, strerror(-f->cycles_err));
	else
		snprintf(v->message, sizeof(v->message),
			 "no PMU on this Machine: %s lists no processor PMU and a cycles counter "
			 "cannot be opened (%s): " TIME_ONLY,
			 f->devices, strerror(-f->cycles_err));
	snprintf(v->remedy, sizeof(v->remedy), "%s", REMEDY_NO_PMU);
}

static void unknown_model(const struct pmu_facts *f, struct pmu_verdict *v)
{
	char who[200];

	if (!f->id) {
		snprintf(v->message, sizeof(v->message),
			 "this Machine's processor cannot be identified (/proc/cpuinfo: %s), so "
			 "none of its PMU's events is known: " TIME_ONLY,
			 strerror(-f->id_err));
		snprintf(v->remedy, sizeof(v->remedy),
			 "make /proc/cpuinfo readable to the profiler (a container: mount /proc)");
		return;
	}
	processor(f->id, who, sizeof(who));
	snprintf(v->message, sizeof(v->message),
		 "this Machine's processor is not in nunatak's event table: no FLOP or DRAM "
		 "event is known for %s: " TIME_ONLY,
		 who);
	snprintf(v->remedy, sizeof(v->remedy),
		 "FLOP and DRAM counting needs %s family %d model %d in nunatak's event table "
		 "(userspace/agent/pmu_events.c, from Linux perf's pmu-events tables of its "
		 "microarchitecture): ask nunatak's developers for it with this family and model",
		 f->id->vendor, f->id->family, f->id->model);
}

/* the cause 3's kinds: the PMU is there, ENOENT means the event is not */
static const char *refusal(int err)
{
	if (err == -EACCES || err == -EPERM)
		return "denied";
	return err == -EBUSY ? "in use" : "not accepted by this PMU";
}

static void refused(const struct pmu_facts *f, struct pmu_verdict *v)
{
	int err = f->group_err; /* nonzero here: the group was refused */
	char paranoid[48] = "";

	if (f->paranoid != PMU_PARANOID_UNKNOWN)
		snprintf(paranoid, sizeof(paranoid), "; kernel.perf_event_paranoid = %d",
			 f->paranoid);
	if (f->group_why)
		snprintf(v->message, sizeof(v->message),
			 "the PMU's counters are %s: %s%s: " TIME_ONLY, refusal(err), f->group_why,
			 err == -EACCES || err == -EPERM ? paranoid : "");
	else
		snprintf(v->message, sizeof(v->message),
			 "the PMU's counters are %s: %s's counters cannot be opened (%s)%s: "
			 "" TIME_ONLY,
			 refusal(err), f->set->microarchitecture, strerror(-err),
			 err == -EACCES || err == -EPERM ? paranoid : "");
	if (err == -EACCES || err == -EPERM)
		snprintf(v->remedy, sizeof(v->remedy),
			 "profile as root or through nunatakd (system-wide counting events need "
			 "CAP_PERFMON or kernel.perf_event_paranoid <= 0); in a container, allow "
			 "perf_event_open in its seccomp profile");
	else if (err == -EBUSY)
		snprintf(v->remedy, sizeof(v->remedy),
			 "free the PMU's counters: stop the other profiler using them, or the NMI "
			 "watchdog (sysctl kernel.nmi_watchdog=0)");
	else
		snprintf(v->remedy, sizeof(v->remedy),
			 "this PMU does not take the event (a virtual PMU exposing part of the "
			 "counters?): check `perf stat -e cycles true`, else report the processor "
			 "to nunatak's developers");
}

enum pmu_cause pmu_cause_decide(const struct pmu_facts *f, struct pmu_verdict *v)
{
	char core[64] = "";
	int listed = pmu_core_listed(f->devices, core, sizeof(core));

	if (!listed)
		core[0] = '\0';
	v->message[0] = v->remedy[0] = '\0';
	if (f->set && !f->group_err) /* the group opened: whatever sysfs lists, it counts */
		return v->cause = PMU_CAUSE_NONE;
	if (f->cycles_err && (!listed || kernel_says_no_pmu(f->cycles_err))) {
		no_pmu(f, core, v);
		return v->cause = PMU_CAUSE_NO_PMU;
	}
	if (!f->set) {
		unknown_model(f, v);
		return v->cause = PMU_CAUSE_UNKNOWN_MODEL;
	}
	refused(f, v);
	return v->cause = PMU_CAUSE_REFUSED;
}
