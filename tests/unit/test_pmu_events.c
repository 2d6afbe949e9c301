/* Unit tests for userspace/agent/pmu_events: the sampling group of each
 * microarchitecture, looked up from REAL /proc/cpuinfo texts (the machine
 * part's fixtures, tests/unit/data/cpuinfo/) through cpu_id, and by
 * (vendor, family, model); the encodings against perf's pmu-events tables;
 * an unknown processor gets no group and a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/pmu_events.h"
#include "userspace/machine/cpu_id.h"

/* the set of a captured /proc/cpuinfo (NULL: none, *reason set) */
static const struct pmu_event_set *set_of_cpuinfo(const char *file, const char **reason)
{
	char path[512], *text;
	struct cpu_id id;
	const char *slash = strrchr(__FILE__, '/');
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%.*s/data/cpuinfo/%s", (int)(slash - __FILE__), __FILE__,
		 file);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, n + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, n, f), (size_t)n);
	fclose(f);
	assert_int_equal(cpu_id_parse(text, &id), 0);
	free(text);
	*reason = NULL;
	return pmu_events_for(id.microarchitecture, reason);
}

/* every set: 1..PMU_SET_MAX_EVENTS events, raw, weighted, feeding FLOP and DRAM */
static void assert_sane_set(const struct pmu_event_set *set)
{
	size_t i;

	assert_non_null(set);
	assert_true(set->n_events >= 1 && set->n_events <= PMU_SET_MAX_EVENTS);
	for (i = 0; i < set->n_events; i++) {
		assert_int_equal(set->events[i].type, PERF_TYPE_RAW);
		assert_true(set->events[i].weight >= 1);
		assert_true(set->events[i].counter < PMU_COUNTERS);
		assert_non_null(set->events[i].name);
	}
	assert_true(pmu_event_set_has(set, PMU_FLOP_DP));
	assert_true(pmu_event_set_has(set, PMU_DRAM_BYTES));
	assert_non_null(set->caveat);
}

static const struct pmu_event *event_named(const struct pmu_event_set *set, const char *name)
{
	size_t i;

	for (i = 0; i < set->n_events; i++)
		if (!strcmp(set->events[i].name, name))
			return &set->events[i];
	fail_msg("%s has no event %s", set->microarchitecture, name);
	return NULL;
}

static void test_amd_from_cpuinfo(void **state)
{
	const struct pmu_event_set *set;
	const char *reason;

	(void)state;
	/* this machine: EPYC family 25 model 1 */
	set = set_of_cpuinfo("this-machine-amd-epyc-zen3.cpuinfo", &reason);
	assert_sane_set(set);
	assert_string_equal(set->microarchitecture, "zen3");
	/* amdzen3 floating-point.json: fp_ret_sse_avx_ops.all, event 0x03 umask 0xff */
	assert_int_equal(event_named(set, "fp_ret_sse_avx_ops.all")->config, 0xff03);
	/* amdzen3 memory.json: ls_any_fills_from_sys mem_io_local 0x08 | remote 0x40 */
	assert_int_equal(set->events[1].config, 0x4844);
	assert_int_equal(set->events[1].weight, 64);
	/* Zen does not tell the precisions apart: no flop_sp, and the set says so */
	assert_true(set->precision_mixed);
	assert_false(pmu_event_set_has(set, PMU_FLOP_SP));

	set = set_of_cpuinfo("amd-epyc-7302p-zen2.cpuinfo", &reason);
	assert_sane_set(set);
	assert_string_equal(set->microarchitecture, "zen2");
	/* amdzen2: demand fills ls_refills_from_sys (0x43) local + remote DRAM */
	assert_int_equal(set->events[1].config, 0x4843);

	/* Zen 1 has no set: never one borrowed from a neighbour */
	assert_null(set_of_cpuinfo("amd-epyc-7451-zen1.cpuinfo", &reason));
	assert_non_null(reason);
	assert_non_null(strstr(reason, "time only"));
}

static void test_intel_from_cpuinfo(void **state)
{
	const struct pmu_event_set *set, *sky;
	const char *reason;
	uint64_t dp = 0, sp = 0;
	size_t i;

	(void)state;
	sky = set_of_cpuinfo("intel-xeon-gold-6126-skylake-sp.cpuinfo", &reason);
	assert_sane_set(sky);
	assert_false(sky->precision_mixed);
	assert_true(pmu_event_set_has(sky, PMU_FLOP_SP));
	/* FP_ARITH_INST_RETIRED (0xc7): FLOP per instruction by width */
	assert_int_equal(event_named(sky, "FP_ARITH_INST_RETIRED.256B_PACKED_DOUBLE")->config,
			 0x10c7);
	assert_int_equal(event_named(sky, "FP_ARITH_INST_RETIRED.256B_PACKED_DOUBLE")->weight, 4);
	assert_int_equal(event_named(sky, "FP_ARITH_INST_RETIRED.512B_PACKED_SINGLE")->weight, 16);
	assert_int_equal(event_named(sky, "OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD")->config,
			 0x10b0);
	/* the weights: 1+2+4+8 for double, 1+4+8+16 for single */
	for (i = 0; i < sky->n_events; i++) {
		if (sky->events[i].counter == PMU_FLOP_DP)
			dp += sky->events[i].weight;
		if (sky->events[i].counter == PMU_FLOP_SP)
			sp += sky->events[i].weight;
	}
	assert_int_equal(dp, 15);
	assert_int_equal(sp, 29);

	/* Cascade Lake (model 85, stepping 7): the same events */
	set = set_of_cpuinfo("intel-xeon-platinum-8259cl-cascadelake.cpuinfo", &reason);
	assert_sane_set(set);
	assert_ptr_equal(set->events, sky->events);

	/* client and old cores: no set, a reason */
	assert_null(set_of_cpuinfo("intel-core-i7-1165g7-tigerlake.cpuinfo", &reason));
	assert_non_null(reason);
	assert_null(set_of_cpuinfo("intel-xeon-x7550-nehalem-ex.cpuinfo", &reason));
	assert_null(set_of_cpuinfo("arm-azure-cobalt100-neoverse-n2.cpuinfo", &reason));
}

static void test_lookup_by_family_model(void **state)
{
	const struct pmu_event_set *set;
	const char *reason = NULL;

	(void)state;
	/* Genoa (family 25 model 0x11): Zen 4, fp_ret_sse_avx_ops.all is 0x1f there */
	set = pmu_events_lookup("AuthenticAMD", 25, 0x11, &reason);
	assert_sane_set(set);
	assert_string_equal(set->microarchitecture, "zen4");
	assert_int_equal(set->events[0].config, 0x1f03);
	/* Sapphire Rapids (6/143): OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD is 0x21 */
	set = pmu_events_lookup("GenuineIntel", 6, 143, &reason);
	assert_sane_set(set);
	assert_int_equal(event_named(set, "OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD")->config,
			 0x1021);
	set = pmu_events_lookup("GenuineIntel", 6, 106, &reason); /* Ice Lake-SP */
	assert_sane_set(set);
	/* unknown: none, with the reason */
	reason = NULL;
	assert_null(pmu_events_lookup("GenuineIntel", 6, 250, &reason));
	assert_non_null(strstr(reason, "not known"));
	reason = NULL;
	assert_null(pmu_events_lookup("HygonGenuine", 24, 1, &reason));
	assert_non_null(reason);
	assert_null(pmu_events_for("no-such-core", &reason));
	assert_non_null(strstr(reason, "no FLOP or DRAM counting events"));
}

static void test_counter_names(void **state)
{
	(void)state;
	assert_string_equal(pmu_counter_name(PMU_FLOP_DP), "flop_dp");
	assert_string_equal(pmu_counter_name(PMU_FLOP_SP), "flop_sp");
	assert_string_equal(pmu_counter_name(PMU_DRAM_BYTES), "dram_bytes");
	assert_null(pmu_counter_name(PMU_COUNTERS));
	assert_false(pmu_event_set_has(NULL, PMU_FLOP_DP));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_amd_from_cpuinfo),
		cmocka_unit_test(test_intel_from_cpuinfo),
		cmocka_unit_test(test_lookup_by_family_model),
		cmocka_unit_test(test_counter_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
