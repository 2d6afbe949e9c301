/* pmu_cause — the one cause of a Run without hardware counters, decided
 * in one place for the Agent (agent_pmu.c: the Run's Degradation
 * `hardware-counters-unavailable`) and for `nunatak doctor` (doctor_pmu.c),
 * so that both say it with the same words.
 *
 * The causes, in the order they are decided (the first that holds is the
 * one said; the later ones would not help while it holds):
 *  1. PMU_CAUSE_NO_PMU: the Machine has no processor PMU (most VMs, many
 *     cloud and container nodes): the PMU directory of sysfs lists no core
 *     PMU (pmu_core_listed) and a cycles counter cannot be opened, or the
 *     kernel answers a cycles counter with ENOENT/EOPNOTSUPP/ENODEV (no
 *     PMU takes the event, whatever sysfs lists);
 *  2. PMU_CAUSE_UNKNOWN_MODEL: a PMU, but the processor (its family and
 *     model as /proc/cpuinfo gives them) has no FLOP/DRAM group in
 *     nunatak's event table (pmu_events.h), or cannot be identified;
 *  3. PMU_CAUSE_REFUSED: a PMU and a group for the processor, but one of
 *     the group's counters does not open: denied (EACCES/EPERM:
 *     perf_event_paranoid, no CAP_PERFMON, a container's seccomp), in use
 *     (EBUSY), or not accepted by this PMU (EINVAL, ENOENT: a virtual PMU
 *     exposing part of the counters). Each has its own remedy.
 * PMU_CAUSE_NONE: the group opened (or, asked of doctor without a group,
 * nothing is missing).
 *
 * The decision reads nothing but the facts it is given and the PMU
 * directory they name, so a test drives every branch with a tree of its
 * own and a processor of its own; pmu_facts_here() gathers the real ones.
 */
#ifndef NUNATAK_AGENT_PMU_CAUSE_H
#define NUNATAK_AGENT_PMU_CAUSE_H

#include <limits.h>
#include <stddef.h>

struct cpu_id;
struct pmu_event_set;

/* where the kernel lists its PMUs, one directory each */
#define PMU_DEVICES "/sys/bus/event_source/devices"
/* the Degradation of every cause (analysis/diagnostic.h matches on it) */
#define PMU_DEGRADATION "hardware-counters-unavailable"
/* facts.paranoid when /proc/sys/kernel/perf_event_paranoid is unreadable */
#define PMU_PARANOID_UNKNOWN INT_MIN

enum pmu_cause {
	PMU_CAUSE_NONE = 0,
	PMU_CAUSE_NO_PMU,
	PMU_CAUSE_UNKNOWN_MODEL,
	PMU_CAUSE_REFUSED,
};

struct pmu_facts {
	const char *devices;		 /* PMU_DEVICES, or a test's tree */
	const struct cpu_id *id;	 /* borrowed; NULL: /proc/cpuinfo unreadable */
	int id_err;			 /* -errno of reading it when id is NULL */
	const struct pmu_event_set *set; /* the group asked (the table's for id), NULL: none */
	int cycles_err;			 /* pmu_open_cycles(): 0 or -errno */
	int group_err;			 /* opening set's counters: 0 (or not tried), or -errno */
	const char *group_why; /* which counter failed, e.g. "zen4's counter X ... (...)" */
	int paranoid;	       /* kernel.perf_event_paranoid, or PMU_PARANOID_UNKNOWN */
};

struct pmu_verdict {
	enum pmu_cause cause;
	char message[512]; /* "" when PMU_CAUSE_NONE */
	char remedy[384];
};

/* The cause of f (above) into v, which it returns. Never fails. */
enum pmu_cause pmu_cause_decide(const struct pmu_facts *f, struct pmu_verdict *v);

/* The first core PMU devices lists ("cpu" on x86, "cpu_core"/"cpu_atom"
 * on hybrid Intel, "armv8_..." on Arm, "cpum_cf" on s390) into name: 1,
 * else 0 (none, or devices unreadable). */
int pmu_core_listed(const char *devices, char *name, size_t len);

/* Whether a user-mode cycles counter of this process opens (allowed to
 * everyone by perf_event_paranoid <= 2): 0, or -errno. Keeps nothing open. */
int pmu_open_cycles(void);

/* The facts of this Machine: PMU_DEVICES, *id read from /proc/cpuinfo
 * (f->id NULL and f->id_err when it cannot be), its group from the table,
 * pmu_open_cycles(), perf_event_paranoid; group_err 0 and group_why NULL
 * (the caller tries the group and says how it went). */
void pmu_facts_here(struct pmu_facts *f, struct cpu_id *id);

/* What a failed perf_event_open's err says of the PMU, for a reason
 * string: "no PMU on this Machine", "refused to this user", "in use",
 * else "not accepted by this PMU". Static. */
const char *pmu_open_failure(int err);

#endif
