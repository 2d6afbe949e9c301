/* test_machine_theory — cpu_id on REAL captured /proc/cpuinfo texts
 * (tests/unit/data/cpuinfo/, their sources in its README) and the theory
 * table's lookups on them: the expected FLOP per cycle per core are the
 * published figures (pipes × lanes × 2), written here by hand, never read
 * from the code under test. An unknown processor gets no Ceiling. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/machine/cpu_id.h"
#include "userspace/machine/theory.h"

/* the fixture's text (static buffer), found from the cwd (the repository
 * root, as make test runs) or from the binary (build/tests/..) */
static const char *fixture(const char *name)
{
	static char text[256 * 1024];
	char path[PATH_MAX], exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f;
	size_t got;

	snprintf(path, sizeof(path), "tests/unit/data/cpuinfo/%s", name);
	f = fopen(path, "r");
	if (!f && n > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		snprintf(path, sizeof(path), "%s/../../tests/unit/data/cpuinfo/%s", exe, name);
		f = fopen(path, "r");
	}
	if (!f)
		fail_msg("cannot open fixture '%s'", name);
	got = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[got] = '\0';
	return text;
}

static void parse(const char *name, struct cpu_id *id)
{
	assert_int_equal(cpu_id_parse(fixture(name), id), 0);
}

/* theory_flops at hz × cores must be exactly dp_fpc and sp_fpc flop/cycle/core */
static void assert_peak(const struct cpu_id *id, double hz, int cores, double dp_fpc,
			double sp_fpc)
{
	char reason[512];
	double dp = -1, sp = -1;

	assert_int_equal(theory_flops(id, hz, cores, &dp, &sp, reason, sizeof(reason)), 0);
	assert_near(dp, dp_fpc * hz * cores, 1);
	assert_near(sp, sp_fpc * hz * cores, 1);
	assert_non_null(strstr(reason, "theoretical peak, not measured"));
}

static void test_zen1_epyc_7451(void **state)
{
	struct cpu_id id;

	(void)state;
	parse("amd-epyc-7451-zen1.cpuinfo", &id);
	assert_string_equal(id.vendor, "AuthenticAMD");
	assert_int_equal(id.family, 23);
	assert_int_equal(id.model, 1);
	assert_int_equal(id.stepping, 2);
	assert_string_equal(id.model_name, "AMD EPYC 7451 24-Core Processor");
	assert_string_equal(id.architecture, "x86_64");
	assert_true(isnan(id.rated_hz)); /* no "@ GHz" in the name */
	assert_near(id.current_hz, 2894.214e6, 1);
	assert_true(id.simd & CPU_SIMD_AVX2);
	assert_true(id.simd & CPU_SIMD_FMA);
	assert_false(id.simd & CPU_SIMD_AVX512F);
	assert_string_equal(id.microarchitecture, "zen1");
	/* 2 x 128-bit FMA pipes: 2 pipes x 2 dp lanes x 2 = 8 */
	assert_peak(&id, 2.3e9, 24, 8, 16);
}

static void test_zen2_epyc_7302p(void **state)
{
	struct cpu_id id;

	(void)state;
	parse("amd-epyc-7302p-zen2.cpuinfo", &id);
	assert_int_equal(id.model, 49);
	assert_string_equal(id.microarchitecture, "zen2");
	assert_peak(&id, 3.0e9, 16, 16, 32); /* 2 x 256-bit FMA */
}

static void test_zen3_this_machine(void **state)
{
	struct cpu_id id;
	char reason[256];
	double hz;

	(void)state;
	parse("this-machine-amd-epyc-zen3.cpuinfo", &id);
	assert_int_equal(id.family, 25);
	assert_int_equal(id.model, 1);
	assert_string_equal(id.model_name, "AMD EPYC");
	assert_string_equal(id.microarchitecture, "zen3");
	assert_near(id.current_hz, 2445.404e6, 1);
	assert_peak(&id, 2.445404e9, 2, 16, 32);
	/* no cpufreq here, no "@ GHz": the current frequency, said to be so */
	assert_int_equal(theory_rated_hz(&id, NULL, &hz, reason, sizeof(reason)), 0);
	assert_near(hz, 2445.404e6, 1);
	assert_non_null(strstr(reason, "not the rated one"));
}

static void test_skylake_sp_gold_6126(void **state)
{
	struct cpu_id id;

	(void)state;
	parse("intel-xeon-gold-6126-skylake-sp.cpuinfo", &id);
	assert_string_equal(id.vendor, "GenuineIntel");
	assert_int_equal(id.model, 85);
	assert_int_equal(id.stepping, 4);
	assert_string_equal(id.microarchitecture, "skylake-server");
	assert_near(id.rated_hz, 2.6e9, 1);
	assert_true(id.simd & CPU_SIMD_AVX512F);
	/* Gold 6xxx: 2 x 512-bit FMA units: 2 x 8 x 2 = 32 dp */
	assert_peak(&id, id.rated_hz, 12, 32, 64);
	/* the same core sold as Silver has one unit (Intel ARK) */
	snprintf(id.model_name, sizeof(id.model_name), "Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz");
	assert_peak(&id, 2.2e9, 10, 16, 32);
}

static void test_cascadelake_8259cl(void **state)
{
	struct cpu_id id;
	char reason[512];
	double dp, sp;

	(void)state;
	parse("intel-xeon-platinum-8259cl-cascadelake.cpuinfo", &id);
	assert_int_equal(id.stepping, 7);
	assert_string_equal(id.microarchitecture, "cascadelake");
	assert_near(id.rated_hz, 2.5e9, 1);
	assert_peak(&id, id.rated_hz, 1, 32, 64);
	/* a hypervisor hiding AVX-512: only the 256-bit FMA peak is reachable */
	id.simd &= ~CPU_SIMD_AVX512F;
	assert_int_equal(theory_flops(&id, 2.5e9, 1, &dp, &sp, reason, sizeof(reason)), 0);
	assert_near(dp, 16 * 2.5e9, 1);
	assert_non_null(strstr(reason, "hidden"));
}

static void test_neoverse_n2_cobalt(void **state)
{
	struct cpu_id id;
	char reason[256];
	double hz;

	(void)state;
	parse("arm-azure-cobalt100-neoverse-n2.cpuinfo", &id);
	assert_string_equal(id.architecture, "aarch64");
	assert_string_equal(id.vendor, "ARM");
	assert_int_equal(id.family, 0x41);
	assert_int_equal(id.model, 0xd49);
	assert_int_equal(id.stepping, 0);
	assert_string_equal(id.microarchitecture, "neoverse-n2");
	assert_true(id.simd & CPU_SIMD_NEON);
	assert_true(id.simd & CPU_SIMD_SVE);
	assert_true(id.simd & CPU_SIMD_SVE2);
	assert_peak(&id, 3.4e9, 4, 8, 16); /* 2 x 128-bit FMA pipes */
	/* Arm's cpuinfo says no frequency at all */
	assert_int_equal(theory_rated_hz(&id, NULL, &hz, reason, sizeof(reason)), -ENOENT);
}

static void test_unknown_processors_get_nothing(void **state)
{
	static const char *const names[] = { "intel-xeon-x7550-nehalem-ex.cpuinfo",
					     "intel-core-i7-1165g7-tigerlake.cpuinfo" };
	struct cpu_id id;
	char reason[512];
	double dp = 7, sp = 7;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		parse(names[i], &id);
		assert_null(id.microarchitecture);
		assert_int_equal(theory_flops(&id, 2e9, 8, &dp, &sp, reason, sizeof(reason)),
				 -ENOENT);
		assert_non_null(strstr(reason, id.model_name));
		assert_near(dp, 7, 0); /* untouched: no extrapolation */
	}
	assert_near(id.rated_hz, 2.8e9, 1); /* i7-1165G7 @ 2.80GHz */
}

static void test_table_rows(void **state)
{
	/* the brief's figures, FLOP/cycle/core dp then sp */
	static const struct {
		const char *uarch;
		double dp, sp;
	} want[] = {
		{ "haswell-server", 16, 32 }, { "broadwell-server", 16, 32 },
		{ "skylake-server", 32, 64 }, { "cascadelake", 32, 64 },
		{ "icelake-server", 32, 64 }, { "sapphirerapids", 32, 64 },
		{ "emeraldrapids", 32, 64 },  { "zen1", 8, 16 },
		{ "zen2", 16, 32 },	      { "zen3", 16, 32 },
		{ "zen4", 16, 32 },	      { "zen5", 32, 64 },
		{ "neoverse-n1", 8, 16 },     { "neoverse-n2", 8, 16 },
		{ "neoverse-v1", 16, 32 },    { "neoverse-v2", 16, 32 },
		{ "a64fx", 32, 64 },	      { "thunderx2", 8, 16 },
	};
	double dp, sp;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(theory_flop_per_cycle(want[i].uarch, &dp, &sp), 0);
		assert_near(dp, want[i].dp, 0);
		assert_near(sp, want[i].sp, 0);
	}
	assert_int_equal(theory_flop_per_cycle("westmere", &dp, &sp), -ENOENT);
	assert_int_equal(theory_flop_per_cycle(NULL, &dp, &sp), -ENOENT);
}

static void test_model_keys(void **state)
{
	(void)state;
	/* kernel intel-family.h / AMD family-model ranges */
	assert_string_equal(cpu_id_microarchitecture("GenuineIntel", 6, 143), "sapphirerapids");
	assert_string_equal(cpu_id_microarchitecture("GenuineIntel", 6, 106), "icelake-server");
	assert_string_equal(cpu_id_microarchitecture("GenuineIntel", 6, 63), "haswell-server");
	assert_string_equal(cpu_id_microarchitecture("AuthenticAMD", 25, 0x11), "zen4"); /* Genoa */
	assert_string_equal(cpu_id_microarchitecture("AuthenticAMD", 25, 0x01), "zen3"); /* Milan */
	assert_string_equal(cpu_id_microarchitecture("AuthenticAMD", 26, 0x02), "zen5"); /* Turin */
	assert_string_equal(cpu_id_microarchitecture("AuthenticAMD", 23, 0x60), "zen2"); /* Renoir */
	assert_string_equal(cpu_id_microarchitecture("AuthenticAMD", 25, 0x44), "zen3"); /* Rembrandt */
	assert_string_equal(cpu_id_microarchitecture("AuthenticAMD", 25, 0xa0), "zen4"); /* Bergamo */
	assert_null(cpu_id_microarchitecture("AuthenticAMD", 26, 0x24)); /* Strix: 256-bit, not in */
	assert_string_equal(cpu_id_microarchitecture("ARM", 0x41, 0xd0c), "neoverse-n1");
	assert_string_equal(cpu_id_microarchitecture("ARM", 0x41, 0xd40), "neoverse-v1");
	assert_string_equal(cpu_id_microarchitecture("Fujitsu", 0x46, 0x001), "a64fx");
	assert_null(cpu_id_microarchitecture("GenuineIntel", 6, 140)); /* Tiger Lake client */
	assert_null(cpu_id_microarchitecture("HygonGenuine", 24, 1));
	assert_null(cpu_id_microarchitecture(NULL, 6, 85));
}

static void test_not_cpuinfo(void **state)
{
	struct cpu_id id;
	char reason[64];
	double dp, sp;

	(void)state;
	assert_int_equal(cpu_id_parse("", &id), -EINVAL);
	assert_int_equal(cpu_id_parse("MemTotal: 1 kB\n", &id), -EINVAL);
	assert_int_equal(cpu_id_parse(NULL, &id), -EINVAL);
	parse("this-machine-amd-epyc-zen3.cpuinfo", &id);
	assert_int_equal(theory_flops(&id, 0, 2, &dp, &sp, reason, sizeof(reason)), -EINVAL);
	assert_int_equal(theory_flops(&id, 2e9, 0, &dp, &sp, reason, sizeof(reason)), -EINVAL);
}

static void test_rated_hz_sources(void **state)
{
	char dir[PATH_MAX], reason[256];
	struct cpu_id id;
	double hz;

	(void)state;
	assert_int_equal(make_tmpdir(dir, sizeof(dir), "cpufreq"), 0);
	parse("intel-xeon-gold-6126-skylake-sp.cpuinfo", &id);
	/* no cpufreq under dir: the model name's @ 2.60GHz */
	assert_int_equal(theory_rated_hz(&id, dir, &hz, reason, sizeof(reason)), 0);
	assert_near(hz, 2.6e9, 1);
	assert_non_null(strstr(reason, "model name"));
	/* cpufreq says 3.7 GHz (kHz in sysfs): it wins */
	assert_int_equal(mkdir(path_in(dir, "cpu0"), 0700), 0);
	assert_int_equal(mkdir(path_in(dir, "cpu0/cpufreq"), 0700), 0);
	assert_int_equal(write_file(path_in(dir, "cpu0/cpufreq/cpuinfo_max_freq"), "3700000\n"), 0);
	assert_int_equal(theory_rated_hz(&id, dir, &hz, reason, sizeof(reason)), 0);
	assert_near(hz, 3.7e9, 1);
	assert_non_null(strstr(reason, "cpuinfo_max_freq"));
	remove_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zen1_epyc_7451),
		cmocka_unit_test(test_zen2_epyc_7302p),
		cmocka_unit_test(test_zen3_this_machine),
		cmocka_unit_test(test_skylake_sp_gold_6126),
		cmocka_unit_test(test_cascadelake_8259cl),
		cmocka_unit_test(test_neoverse_n2_cobalt),
		cmocka_unit_test(test_unknown_processors_get_nothing),
		cmocka_unit_test(test_table_rows),
		cmocka_unit_test(test_model_keys),
		cmocka_unit_test(test_not_cpuinfo),
		cmocka_unit_test(test_rated_hz_sources),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
