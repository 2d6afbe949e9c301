/* pmu_events — the counting events of the sampling group, per
 * microarchitecture: what FLOP and DRAM traffic the PMU of this Machine can
 * count, as raw encodings (perf_event_attr type PERF_TYPE_RAW, config =
 * event select | unit mask << 8 | (event >> 8) << 32 on AMD) with the
 * weight that turns one count into FLOP or bytes.
 *
 * The sampler (sampler.h) opens the events of a set on every CPU beside its
 * sampling event; at each sample the program reads them and adds, to that
 * sample's Stack, weight × (count now − count at the CPU's previous sample)
 * under the set's counter names: "flop_dp", "flop_sp" (unit flop) and
 * "dram_bytes" (unit B).
 *
 * Sources: Linux perf's pmu-events tables (tools/perf/pmu-events/arch/x86/
 * amdzen2, amdzen3, amdzen4, skylakex, cascadelakex, icelakex,
 * sapphirerapids: floating-point.json, memory.json, cache.json).
 *
 * What the counters count, and what they miss:
 * - Intel FP_ARITH_INST_RETIRED.* (event 0xc7) counts retired SSE/AVX
 *   computational instructions by width and precision, an FMA counting
 *   twice: weight = elements per instruction gives FLOP exactly for
 *   add/sub/mul/div/sqrt/min/max/FMA. x87 and integer work are not counted.
 *   Eight events for the two precisions, nine with DRAM's: more than the
 *   core's general counters (4 per thread with Hyper-Threading on
 *   Skylake-SP and Cascade Lake, 8 on Ice Lake-SP and Sapphire Rapids, one
 *   of them often the NMI watchdog's), so the kernel multiplexes them and
 *   each count is scaled by enabled/running time: an estimate, not an
 *   exact count.
 * - AMD Zen 2/3/4 FpRetSseAvxOps (event 0x03) counts retired SSE/AVX FLOP
 *   (an FMA is 2) but does NOT tell double from single precision: on AMD
 *   the whole count goes to "flop_dp" and the set says so (precision_mixed)
 *   so the Run can state that single-precision FLOP are counted as double
 *   and that "flop_sp" is not measured.
 * - DRAM: no per-core event counts DRAM bytes. AMD: data-cache fills from
 *   DRAM or I/O, local and remote NUMA node (Zen 3/4 any fill, including
 *   software and L1 hardware prefetches; Zen 2 demand fills only). Intel:
 *   OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD, demand data reads that missed
 *   the L3. Each is lines × 64 B. Neither counts the L2 prefetcher's fills
 *   nor the write-backs: dram_bytes is a lower bound of the DRAM traffic
 *   (read traffic only), an estimate.
 * An unknown microarchitecture has no set: the sampler samples time only.
 */
#ifndef NUNATAK_AGENT_PMU_EVENTS_H
#define NUNATAK_AGENT_PMU_EVENTS_H

#include <stddef.h>
#include <stdint.h>

/* the counters a set feeds (samples.counter in the pivot) */
enum pmu_counter {
	PMU_FLOP_DP = 0, /* "flop_dp", unit flop */
	PMU_FLOP_SP,	 /* "flop_sp", unit flop */
	PMU_DRAM_BYTES,	 /* "dram_bytes", unit B */
	PMU_COUNTERS,
};

/* "flop_dp", "flop_sp", "dram_bytes"; NULL out of range */
const char *pmu_counter_name(enum pmu_counter c);

/* one counting event */
struct pmu_event {
	const char *name; /* the vendor's event name, as perf's tables spell it */
	uint32_t type;	  /* perf_event_attr.type: PERF_TYPE_RAW (tests: SOFTWARE) */
	uint64_t config;  /* perf_event_attr.config */
	enum pmu_counter counter;
	uint32_t weight; /* FLOP per count, or bytes per count (64 B a line) */
};

#define PMU_SET_MAX_EVENTS 10 /* == MAX_PMU_EVENTS of bpf/sample.h */

/* the events of one microarchitecture */
struct pmu_event_set {
	const char *microarchitecture; /* as cpu_id.h names it */
	const struct pmu_event *events;
	size_t n_events;     /* <= PMU_SET_MAX_EVENTS */
	int precision_mixed; /* 1: flop_dp holds every precision's FLOP */
	const char *caveat;  /* what the counters miss, for the Run */
};

/* The set of microarchitecture (cpu_id.h's name), or NULL with *reason
 * (static) saying why there is none. */
const struct pmu_event_set *pmu_events_for(const char *microarchitecture, const char **reason);

/* The set of an x86 processor by (vendor, family, model) as /proc/cpuinfo
 * gives them (cpu_id.h), or NULL with *reason. */
const struct pmu_event_set *pmu_events_lookup(const char *vendor, int family, int model,
					      const char **reason);

/* A counting event of e on cpu (every task there), opened disabled
 * (PERF_EVENT_IOC_ENABLE starts it): the fd, or -1 with errno. */
int pmu_event_open(const struct pmu_event *e, int cpu);

/* Whether every event of set opens here (on the first online CPU of the
 * ncpu possible ones): 0, or -errno with which did not (e.g. "zen3's
 * counter fp_ret_sse_avx_ops.all cannot be opened (No such file or
 * directory)"); why the Machine has no counters is pmu_cause.h's to say.
 * Opens nothing it keeps. */
int pmu_event_set_probe(const struct pmu_event_set *set, int ncpu, char *why, size_t len);

/* 1 when set feeds counter c */
int pmu_event_set_has(const struct pmu_event_set *set, enum pmu_counter c);

#endif
