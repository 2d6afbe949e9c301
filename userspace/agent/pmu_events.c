/* pmu_events — see pmu_events.h. Encodings from Linux perf's pmu-events
 * tables (tools/perf/pmu-events/arch/x86/DIR/NAME.json), one comment per
 * event naming the file it comes from. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "userspace/agent/pmu_events.h"
#include "userspace/machine/cpu_id.h"

#define LINE_BYTES 64

/* Intel: event select | unit mask << 8 */
#define INTEL(ev, umask) ((uint64_t)(ev) | (uint64_t)(umask) << 8)
/* AMD: event select bits 7:0, unit mask 15:8, event select bits 11:8 at 35:32 */
#define AMD(ev, umask)                                                                             \
	((uint64_t)((ev)&0xff) | (uint64_t)(umask) << 8 | (uint64_t)((ev) >> 8) << 32)

#define FP_ARITH(name, umask, counter, flop)                                                       \
	{                                                                                          \
		"FP_ARITH_INST_RETIRED." name, PERF_TYPE_RAW, INTEL(0xc7, umask), counter, flop    \
	}

/* FP_ARITH_INST_RETIRED (0xc7), floating-point.json of skylakex,
 * cascadelakex, icelakex, sapphirerapids: "Each count represents N
 * computation operations", FM(N)ADD counting twice */
#define FP_ARITH_ALL_WIDTHS                                                                        \
	FP_ARITH("SCALAR_DOUBLE", 0x01, PMU_FLOP_DP, 1),                                           \
	    FP_ARITH("128B_PACKED_DOUBLE", 0x04, PMU_FLOP_DP, 2),                                  \
	    FP_ARITH("256B_PACKED_DOUBLE", 0x10, PMU_FLOP_DP, 4),                                  \
	    FP_ARITH("512B_PACKED_DOUBLE", 0x40, PMU_FLOP_DP, 8),                                  \
	    FP_ARITH("SCALAR_SINGLE", 0x02, PMU_FLOP_SP, 1),                                       \
	    FP_ARITH("128B_PACKED_SINGLE", 0x08, PMU_FLOP_SP, 4),                                  \
	    FP_ARITH("256B_PACKED_SINGLE", 0x20, PMU_FLOP_SP, 8),                                  \
	    FP_ARITH("512B_PACKED_SINGLE", 0x80, PMU_FLOP_SP, 16)

/* skylakex/cascadelakex and icelakex memory.json / cache.json:
 * OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD, event 0xb0 umask 0x10 */
static const struct pmu_event skylake_server[] = {
    FP_ARITH_ALL_WIDTHS,
    {"OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD", PERF_TYPE_RAW, INTEL(0xb0, 0x10), PMU_DRAM_BYTES,
     LINE_BYTES},
};

/* sapphirerapids cache.json: OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD moved
 * to event 0x21 umask 0x10 */
static const struct pmu_event sapphirerapids[] = {
    FP_ARITH_ALL_WIDTHS,
    {"OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD", PERF_TYPE_RAW, INTEL(0x21, 0x10), PMU_DRAM_BYTES,
     LINE_BYTES},
};

/* amdzen2 floating-point.json: fp_ret_sse_avx_ops.all, event 0x03 umask
 * 0xff ("the number of retired SSE/AVX FLOPS", MAC counted as 2; the kernel
 * pairs it with its MergeEvent); amdzen2 memory.json:
 * ls_refills_from_sys.ls_mabresp_lcl_dram (0x43, umask 0x08) and
 * .ls_mabresp_rmt_dram (0x40): demand data-cache fills from DRAM or I/O */
static const struct pmu_event zen2[] = {
    {"fp_ret_sse_avx_ops.all", PERF_TYPE_RAW, AMD(0x03, 0xff), PMU_FLOP_DP, 1},
    {"ls_refills_from_sys.ls_mabresp_lcl_dram+rmt_dram", PERF_TYPE_RAW, AMD(0x43, 0x48),
     PMU_DRAM_BYTES, LINE_BYTES},
};

/* amdzen3 floating-point.json: fp_ret_sse_avx_ops.all (0x03, umask 0xff);
 * amdzen3 memory.json: ls_any_fills_from_sys.mem_io_local (0x44, umask
 * 0x08) and .mem_io_remote (0x40): any data-cache fill (demand and
 * prefetch) from DRAM or I/O */
static const struct pmu_event zen3[] = {
    {"fp_ret_sse_avx_ops.all", PERF_TYPE_RAW, AMD(0x03, 0xff), PMU_FLOP_DP, 1},
    {"ls_any_fills_from_sys.mem_io_local+mem_io_remote", PERF_TYPE_RAW, AMD(0x44, 0x48),
     PMU_DRAM_BYTES, LINE_BYTES},
};

/* amdzen4 floating-point.json: fp_ret_sse_avx_ops.all is umask 0x1f there
 * (0x10: bfloat16 MAC); cache.json: ls_any_fills_from_sys.dram_io_near
 * (0x44, umask 0x08) and .dram_io_far (0x40) */
static const struct pmu_event zen4[] = {
    {"fp_ret_sse_avx_ops.all", PERF_TYPE_RAW, AMD(0x03, 0x1f), PMU_FLOP_DP, 1},
    {"ls_any_fills_from_sys.dram_io_near+dram_io_far", PERF_TYPE_RAW, AMD(0x44, 0x48),
     PMU_DRAM_BYTES, LINE_BYTES},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char intel_caveat[] =
    "FLOP from FP_ARITH_INST_RETIRED by width (x87 not counted; eight events multiplexed "
    "on the core's counters: scaled estimates); dram_bytes = L3-missing demand data reads "
    "x 64 B (no prefetch, no write-back: a lower bound)";
static const char amd_caveat[] =
    "FLOP from FpRetSseAvxOps, every precision together (counted under flop_dp; "
    "flop_sp not measured); dram_bytes = data-cache fills from DRAM x 64 B (no L2 "
    "prefetch fill, no write-back: a lower bound)";

static const struct pmu_event_set sets[] = {
    {"zen2", zen2, N(zen2), 1, amd_caveat},
    {"zen3", zen3, N(zen3), 1, amd_caveat},
    {"zen4", zen4, N(zen4), 1, amd_caveat},
    {"skylake-server", skylake_server, N(skylake_server), 0, intel_caveat},
    /* cpu_id names model 85 by its stepping when it knows it */
    {"cascadelake", skylake_server, N(skylake_server), 0, intel_caveat},
    {"cooperlake", skylake_server, N(skylake_server), 0, intel_caveat},
    {"icelake-server", skylake_server, N(skylake_server), 0, intel_caveat},
    {"sapphirerapids", sapphirerapids, N(sapphirerapids), 0, intel_caveat},
    {"emeraldrapids", sapphirerapids, N(sapphirerapids), 0, intel_caveat},
};

static const char *const counter_names[PMU_COUNTERS] = {
    [PMU_FLOP_DP] = "flop_dp",
    [PMU_FLOP_SP] = "flop_sp",
    [PMU_DRAM_BYTES] = "dram_bytes",
};

const char *pmu_counter_name(enum pmu_counter c)
{
	return (unsigned)c < PMU_COUNTERS ? counter_names[c] : NULL;
}

const struct pmu_event_set *pmu_events_for(const char *microarchitecture, const char **reason)
{
	size_t i;

	if (!microarchitecture) {
		*reason = "the processor's microarchitecture is not known: no FLOP or DRAM "
			  "counter to sample, time only";
		return NULL;
	}
	for (i = 0; i < N(sets); i++)
		if (!strcmp(sets[i].microarchitecture, microarchitecture))
			return &sets[i];
	*reason = "no FLOP or DRAM counting events are known for this microarchitecture: "
		  "time only";
	return NULL;
}

const struct pmu_event_set *pmu_events_lookup(const char *vendor, int family, int model,
					      const char **reason)
{
	return pmu_events_for(cpu_id_microarchitecture(vendor, family, model), reason);
}

int pmu_event_set_has(const struct pmu_event_set *set, enum pmu_counter c)
{
	size_t i;

	for (i = 0; set && i < set->n_events; i++)
		if (set->events[i].counter == c)
			return 1;
	return 0;
}

int pmu_event_open(const struct pmu_event *e, int cpu)
{
	struct perf_event_attr attr = {
	    .type = e->type,
	    .size = sizeof(attr),
	    .config = e->config,
	    .disabled = 1,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int pmu_event_set_probe(const struct pmu_event_set *set, int ncpu, char *why, size_t len)
{
	int cpu, fd = -1, err = -ENODEV;
	size_t i;

	for (i = 0; i < set->n_events; i++) {
		for (cpu = 0, err = -ENODEV; cpu < ncpu; cpu++) {
			fd = pmu_event_open(&set->events[i], cpu);
			err = fd < 0 ? -errno : 0;
			if (err != -ENODEV) /* ENODEV: an offline CPU, try the next */
				break;
		}
		if (err) {
			snprintf(why, len, "%s's counter %s cannot be opened (%s)",
				 set->microarchitecture, set->events[i].name, strerror(-err));
			return err;
		}
		close(fd);
	}
	return 0;
}
