/* test_calibration — the parts of calibration that decide (userspace/
 * calibration/): the kernels' output parsing, each pollution rule alone
 * and together (the Ceiling is the best repetition, never the mean, and a
 * polluted one is downgraded, never discarded), the last-level cache of a
 * fixture sysfs tree, and the embedded kernels really built and run here
 * in their private directory.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
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
#include "userspace/calibration/cache_size.h"
#include "userspace/calibration/calibration.h"
#include "userspace/calibration/calibration_rows.h"
#include "userspace/calibration/kernel_build.h"
#include "userspace/calibration/kernel_output.h"
#include "userspace/calibration/pollution.h"

#define LINE                                                                                       \
	"nunatak-calibration kernel=fma_dp rep=3 threads=2 simd=avx2-fma seconds=0.300052 "       \
	"value=8.818318e+10 unit=flop/s\n"

static void test_line_parse(void **state)
{
	struct kernel_rep r;

	(void)state;
	assert_int_equal(kernel_line_parse(LINE, &r), 1);
	assert_string_equal(r.kernel, "fma_dp");
	assert_string_equal(r.unit, "flop/s");
	assert_string_equal(r.simd, "avx2-fma");
	assert_int_equal(r.rep, 3);
	assert_int_equal(r.threads, 2);
	assert_near(r.seconds, 0.300052, 1e-9);
	assert_near(r.value, 8.818318e10, 1);
	/* any order, unknown fields ignored, simd and threads optional */
	assert_int_equal(kernel_line_parse("nunatak-calibration unit=s value=5e-7 later=1 rep=1 "
					   "seconds=0.002 kernel=network_latency bytes=8",
					   &r),
			 1);
	assert_string_equal(r.kernel, "network_latency");
	assert_string_equal(r.simd, "");
	assert_int_equal(r.threads, 0);
	assert_near(r.value, 5e-7, 1e-15);
	/* not a repetition line */
	assert_int_equal(kernel_line_parse("[node:1234] mpirun noise\n", &r), 0);
	assert_int_equal(kernel_line_parse("nunatak-calibration-check kernel=triad sum=1", &r), 0);
}

static void test_line_malformed(void **state)
{
	static const char *const bad[] = {
		/* a required field missing */
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 unit=B/s",
		"nunatak-calibration rep=1 seconds=0.3 value=1e10 unit=B/s",
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=1e10",
		/* values that are not numbers, or not believable */
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=fast unit=B/s",
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=1e10x unit=B/s",
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=0 unit=B/s",
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=-4e9 unit=B/s",
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=inf unit=B/s",
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=nan unit=B/s",
		"nunatak-calibration kernel=triad rep=0 seconds=0.3 value=1e10 unit=B/s",
		"nunatak-calibration kernel=triad rep=1.5 seconds=0.3 value=1e10 unit=B/s",
		"nunatak-calibration kernel=triad rep=1 seconds=0 value=1e10 unit=B/s",
		/* a count beyond a long long (fuzz_kernel_output found it converted) */
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=1e10 unit=B/s ns=4e209",
		/* not KEY=VALUE, empty values, too long a name */
		"nunatak-calibration kernel=triad rep=1 seconds=0.3 value=1e10 unit=B/s garbage",
		"nunatak-calibration kernel= rep=1 seconds=0.3 value=1e10 unit=B/s",
		"nunatak-calibration =x kernel=triad rep=1 seconds=0.3 value=1e10 unit=B/s",
		"nunatak-calibration kernel=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa rep=1 seconds=0.3 "
		"value=1e10 unit=B/s",
	};
	struct kernel_rep r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (kernel_line_parse(bad[i], &r) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
}

static void test_output_parse(void **state)
{
	const char *text = "Warning: Permanently added 'node2' to the list of known hosts.\n" LINE
			   "nunatak-calibration kernel=fma_sp rep=1 seconds=0.3 value=1.7e11 "
			   "unit=flop/s\n"
			   "nunatak-calibration kernel=fma_dp rep=4 seconds=0.3 value=oops "
			   "unit=flop/s\n"
			   "nunatak-calibration kernel=fma_dp rep=5 seconds=0.3 value=8.9e10 "
			   "unit=flop/s"; /* no final newline: killed mid-way */
	struct kernel_rep reps[4];
	int malformed = -1;

	(void)state;
	assert_int_equal(kernel_output_parse(text, "fma_dp", reps, 4, &malformed), 2);
	assert_int_equal(malformed, 1);
	assert_int_equal(reps[0].rep, 3);
	assert_int_equal(reps[1].rep, 5);
	assert_near(reps[1].value, 8.9e10, 1);
	assert_int_equal(kernel_output_parse(text, "fma_sp", reps, 4, NULL), 1);
	assert_int_equal(kernel_output_parse(text, "triad", reps, 4, NULL), 0);
	assert_int_equal(kernel_output_parse("", "triad", reps, 4, &malformed), 0);
	assert_int_equal(malformed, 0);
	/* never more than room */
	assert_int_equal(kernel_output_parse(LINE LINE LINE, "fma_dp", reps, 2, NULL), 2);
}

static void test_best_not_mean(void **state)
{
	const double v[] = { 1.0e10, 1.9e10, 1.2e10, 1.5e10 };

	(void)state;
	assert_near(reps_best(v, 4, 0), 1.9e10, 0); /* a rate: the maximum */
	assert_near(reps_best(v, 4, 1), 1.0e10, 0); /* a latency: the minimum */
	assert_near(reps_best(v, 1, 0), 1.0e10, 0);
	assert_true(isnan(reps_best(v, 0, 0)));
}

static void test_rule_spread(void **state)
{
	const double tight[] = { 100, 95, 91 }, loose[] = { 100, 95, 89 }, one[] = { 5 };
	char reason[256] = "";

	(void)state;
	assert_int_equal(pollution_spread(tight, 3, 0, reason, sizeof(reason)), 0);
	assert_string_equal(reason, "");
	assert_int_equal(pollution_spread(one, 1, 0, reason, sizeof(reason)), 0);
	assert_int_equal(pollution_spread(loose, 3, 0, reason, sizeof(reason)), 1);
	assert_non_null(strstr(reason, "spread over 11.0 %"));
	/* a latency's spread is relative to its best, the minimum: 11/100 */
	reason[0] = '\0';
	assert_int_equal(pollution_spread((const double[]){ 1.00, 1.11 }, 2, 1, reason,
					  sizeof(reason)),
			 1);
	assert_int_equal(pollution_spread((const double[]){ 1.00, 1.09 }, 2, 1, reason,
					  sizeof(reason)),
			 0);
}

static void test_rule_load(void **state)
{
	char reason[256] = "";

	(void)state;
	assert_int_equal(pollution_load(1.0, 2, reason, sizeof(reason)), 0); /* exactly half */
	assert_int_equal(pollution_load(NAN, 2, reason, sizeof(reason)), 0);
	assert_string_equal(reason, "");
	assert_int_equal(pollution_load(1.01, 2, reason, sizeof(reason)), 1);
	assert_non_null(strstr(reason, "load average was 1.01"));
	assert_non_null(strstr(reason, "half the 2 threads"));
	assert_int_equal(pollution_load(0.6, 1, reason, sizeof(reason)), 1);
}

static void test_rule_scalar(void **state)
{
	char reason[256] = "";

	(void)state;
	assert_int_equal(pollution_scalar(1, "avx2-fma", reason, sizeof(reason)), 0);
	assert_int_equal(pollution_scalar(1, "neon", reason, sizeof(reason)), 0);
	assert_string_equal(reason, "");
	assert_int_equal(pollution_scalar(0, "sse2", reason, sizeof(reason)), 1);
	assert_string_equal(reason,
			    "a scalar build: the compiler refused -march=native (the kernel used sse2)");
	reason[0] = '\0';
	assert_int_equal(pollution_scalar(1, "scalar", reason, sizeof(reason)), 1);
	assert_non_null(strstr(reason, "a scalar build: the kernel reports no SIMD"));
	assert_int_equal(pollution_scalar(1, "", reason, sizeof(reason)), 1);
	reason[0] = '\0';
	assert_int_equal(pollution_scalar(1, "neon-not-sve", reason, sizeof(reason)), 1);
	assert_string_equal(reason, "a build narrower than the Machine's SIMD (neon-not-sve)");
}

static void test_rule_peak(void **state)
{
	char reason[256] = "";

	(void)state;
	assert_int_equal(pollution_above_peak(1.25e11, 1e11, reason, sizeof(reason)), 0);
	assert_int_equal(pollution_above_peak(5e10, NAN, reason, sizeof(reason)), 0);
	assert_string_equal(reason, "");
	assert_int_equal(pollution_above_peak(1.26e11, 1e11, reason, sizeof(reason)), 1);
	assert_non_null(strstr(reason, "above 1.25 x the theoretical peak"));
}

static void test_rule_reps(void **state)
{
	char reason[256] = "";

	(void)state;
	assert_int_equal(pollution_reps(5, 5, reason, sizeof(reason)), 0);
	assert_int_equal(pollution_reps(3, 5, reason, sizeof(reason)), 1);
	assert_string_equal(reason, "3 of 5 repetitions within the budget");
}

static struct calibration_facts clean_facts(const double *v, int n)
{
	return (struct calibration_facts){ .values = v,
					   .n = n,
					   .reps_wanted = n,
					   .load1 = 0.1,
					   .threads = 2,
					   .check_simd = 1,
					   .native = 1,
					   .simd = "avx2-fma",
					   .peak = 1e11 };
}

static void test_judge(void **state)
{
	const double v[] = { 8.8e10, 8.9e10, 8.5e10, 8.7e10, 8.6e10 };
	const double polluted[] = { 6.3e10, 8.9e10, 7.0e10 };
	struct calibration_facts f = clean_facts(v, 5);
	struct ceiling_verdict out;

	(void)state;
	pollution_judge(&f, "none", &out);
	assert_string_equal(out.quality, "measured");
	assert_string_equal(out.reason, "");
	assert_near(out.value, 8.9e10, 0);

	/* polluted: downgraded with every reason, the value kept (the max) */
	f = clean_facts(polluted, 3);
	f.reps_wanted = 5;
	f.load1 = 1.7;
	f.peak = 5e10;
	f.downgrade = "arrays too small";
	pollution_judge(&f, "none", &out);
	assert_string_equal(out.quality, "estimated");
	assert_near(out.value, 8.9e10, 0);
	assert_non_null(strstr(out.reason, "3 of 5 repetitions"));
	assert_non_null(strstr(out.reason, "; the repetitions spread over 29.2 %"));
	assert_non_null(strstr(out.reason, "; the load average was 1.70"));
	assert_non_null(strstr(out.reason, "above 1.25 x the theoretical peak"));
	assert_non_null(strstr(out.reason, "; arrays too small"));

	/* a network kernel: SIMD not judged */
	f = clean_facts(v, 5);
	f.check_simd = 0;
	f.simd = NULL;
	pollution_judge(&f, "none", &out);
	assert_string_equal(out.quality, "measured");

	/* nothing measured: unavailable, the caller's reason, no value */
	f = clean_facts(v, 0);
	pollution_judge(&f, "the compiler failed", &out);
	assert_string_equal(out.quality, "unavailable");
	assert_string_equal(out.reason, "the compiler failed");
	assert_true(isnan(out.value));
}

/* the output of a kernel into a Ceiling object: JSON shape and values */
static void test_append(void **state)
{
	const char *out = LINE "nunatak-calibration kernel=fma_dp rep=4 threads=2 simd=avx2-fma "
			       "seconds=0.3 value=8.9e10 unit=flop/s\n";
	struct calibration_facts f = clean_facts(NULL, 0);
	json_t *ceilings = json_array(), *c;

	(void)state;
	f.reps_wanted = 2;
	f.simd = NULL; /* from the kernel's lines */
	assert_int_equal(calibration_append(ceilings, "flops_dp", "flop/s", "fma_dp", out, &f, "x"),
			 0);
	assert_int_equal(calibration_append(ceilings, "flops_sp", "flop/s", "fma_sp", out, &f,
					    "the fma_sp kernel gave no repetition"),
			 0);
	c = json_array_get(ceilings, 0);
	assert_string_equal(json_string_value(json_object_get(c, "name")), "flops_dp");
	assert_near(json_real_value(json_object_get(c, "value")), 8.9e10, 1);
	assert_string_equal(json_string_value(json_object_get(c, "quality")), "measured");
	assert_true(json_is_null(json_object_get(c, "reason")));
	assert_string_equal(json_string_value(json_object_get(c, "source")), "calibration");
	c = json_array_get(ceilings, 1);
	assert_true(json_is_null(json_object_get(c, "value")));
	assert_string_equal(json_string_value(json_object_get(c, "quality")), "unavailable");
	assert_string_equal(json_string_value(json_object_get(c, "reason")),
			    "the fma_sp kernel gave no repetition");
	assert_true(json_is_null(json_object_get(c, "source"))); /* nothing measured it */
	json_decref(ceilings);
}

static int mkfile(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX], dir[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	if (run_cmd("mkdir -p '%s'", dir))
		return -1;
	return write_file(path, text);
}

/* cpu0/cpu1 share an L3, cpu2 has its own: 2 instances */
static void test_llc(void **state)
{
	char root[PATH_MAX];
	int cpus[] = { 0, 1, 2 }, i;
	long long bytes = 0;

	(void)state;
	assert_int_equal(make_tmpdir(root, sizeof(root), "llc"), 0);
	for (i = 0; i < 3; i++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "cpu%d/cache/index0/level", i);
		assert_int_equal(mkfile(root, rel, "1\n"), 0);
		snprintf(rel, sizeof(rel), "cpu%d/cache/index0/size", i);
		assert_int_equal(mkfile(root, rel, "32K\n"), 0);
		snprintf(rel, sizeof(rel), "cpu%d/cache/index0/shared_cpu_list", i);
		assert_int_equal(mkfile(root, rel, i == 0 ? "0\n" : i == 1 ? "1\n" : "2\n"), 0);
		snprintf(rel, sizeof(rel), "cpu%d/cache/index3/level", i);
		assert_int_equal(mkfile(root, rel, "3\n"), 0);
		snprintf(rel, sizeof(rel), "cpu%d/cache/index3/size", i);
		assert_int_equal(mkfile(root, rel, i < 2 ? "32768K\n" : "16M\n"), 0);
		snprintf(rel, sizeof(rel), "cpu%d/cache/index3/shared_cpu_list", i);
		assert_int_equal(mkfile(root, rel, i < 2 ? "0-1\n" : "2-3\n"), 0);
	}
	assert_int_equal(llc_bytes(root, cpus, 2, &bytes), 0);
	assert_int_equal(bytes, 32LL << 20); /* shared: counted once */
	assert_int_equal(llc_bytes(root, cpus, 3, &bytes), 0);
	assert_int_equal(bytes, 48LL << 20);
	cpus[0] = 7; /* a CPU without a description */
	assert_int_equal(llc_bytes(root, cpus, 1, &bytes), -ENOENT);
	assert_int_equal(llc_bytes(root, cpus, 0, &bytes), -EINVAL);
	remove_tree(root);
}

/* the embedded kernels, built and run here as calibration does */
static void test_build_and_run(void **state)
{
	static const char *const flags[] = { "-std=gnu11", "-O3", "-march=native", "-pthread",
					     NULL };
	static const struct kernel_source broken = { "broken.c", "int main( { return 0; }\n" };
	struct kernel_workdir *wd;
	struct kernel_rep reps[4];
	char compiler[PATH_MAX], err[512], bin[PATH_MAX], dir[PATH_MAX], cpu[16], out[4096];
	char *fma_argv[] = { bin, "dp", "1", cpu, "2", "50", NULL };
	char *triad_argv[] = { bin, "1", cpu, "25165824", "2", "50", NULL };
	struct stat st;
	int n;

	(void)state;
	SKIP_UNLESS(!kernel_compiler_find(compiler, sizeof(compiler), err, sizeof(err)),
		    "no trusted C compiler (cc, gcc, clang) to build the kernels");
	snprintf(cpu, sizeof(cpu), "%d", sched_getcpu() > 0 ? sched_getcpu() : 0);
	wd = kernel_workdir__new();
	assert_non_null(wd);
	snprintf(dir, sizeof(dir), "%s", kernel_workdir_path(wd));
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(kernel_workdir_write(wd, &kernel_source_common), 0);
	assert_int_equal(kernel_workdir_write(wd, &kernel_source_fma), 0);
	assert_int_equal(kernel_workdir_write(wd, &kernel_source_triad), 0);
	assert_int_equal(kernel_workdir_write(wd, &kernel_source_fma), -EEXIST); /* O_EXCL */
	assert_int_equal(stat(path_in(dir, "fma.c"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	assert_int_equal(kernel_compile(wd, compiler, NULL, flags, "fma.c", "fma", err, sizeof(err)), 0);
	assert_int_equal(kernel_workdir_file(wd, "fma", bin, sizeof(bin)), 0);
	assert_int_equal(calibration_run(wd, bin, fma_argv, "run-fma", 20000, out, sizeof(out), err, sizeof(err)),
			 0);
	n = kernel_output_parse(out, "fma_dp", reps, 4, NULL);
	if (n != 2)
		fail_msg("fma printed: %s", out);
	assert_true(reps[1].value > 1e8); /* any core of the last decade */
	assert_int_equal(reps[1].threads, 1);
	assert_true(reps[1].seconds >= 0.05 && reps[1].seconds < 5);
	/* the exact counts of the calibration rows: whole FLOP of 12 chains x
	 * 4096 iterations x 2, no bytes, the rate they imply the one printed */
	assert_true(reps[1].ns > 0 && reps[1].ns / 1e9 - reps[1].seconds < 1e-6);
	assert_true(reps[1].flops > 0 && (long long)reps[1].flops % (2 * 12 * 4096) == 0 && (double)(long long)reps[1].flops == reps[1].flops);
	assert_true(reps[1].bytes == 0);
	assert_near(reps[1].flops / (reps[1].ns / 1e9) / reps[1].value, 1, 1e-5);
#if defined(__x86_64__) || defined(__aarch64__)
	assert_string_not_equal(reps[1].simd, "scalar");
#endif

	assert_int_equal(kernel_compile(wd, compiler, NULL, flags, "triad.c", "triad", err, sizeof(err)),
			 0);
	assert_int_equal(kernel_workdir_file(wd, "triad", bin, sizeof(bin)), 0);
	assert_int_equal(
		calibration_run(wd, bin, triad_argv, "run-triad", 20000, out, sizeof(out), err, sizeof(err)), 0);
	if (kernel_output_parse(out, "triad", reps, 4, NULL) != 2)
		fail_msg("triad printed: %s", out);
	assert_true(reps[0].value > 1e8);
	assert_string_equal(reps[0].unit, "B/s");
	/* 24 B and 2 FLOP per element, the rate the one printed */
	assert_true(reps[0].bytes > 0 && reps[0].bytes == 12 * reps[0].flops);
	assert_true((long long)reps[0].flops % 2 == 0 && (double)(long long)reps[0].flops == reps[0].flops);
	assert_near(reps[0].bytes / (reps[0].ns / 1e9) / reps[0].value, 1, 1e-5);
	/* their rows: exact counts, the time to the ns, the bound under the
	 * Ceilings before (1e10 flop/s, 1e10 B/s: bytes / 1e10 s) */
	{
		struct calibration_rows set = { 0 };
		json_t *before = json_pack("[{s:s, s:f}, {s:s, s:f}]", "name", "flops_dp", "value",
					   1e10, "name", "dram_bandwidth", "value", 1e10);
		struct calibration_options o = CALIBRATION_OPTIONS_DEFAULT;

		o.rows = &set;
		o.backend = "m1";
		o.ceilings_before = before;
		assert_int_equal(calibration_kernel_rows(&o, "triad", "flops_dp", "d1", "threads=1",
							 0, out),
				 0);
		assert_int_equal(set.n, 2);
		assert_string_equal(set.rows[1].label, "threads=1 rep=2");
		assert_string_equal(set.rows[1].routine, "triad");
		assert_string_equal(set.rows[1].backend, "m1");
		assert_true(set.rows[1].bytes == reps[1].bytes && set.rows[1].flops == reps[1].flops);
		assert_true(set.rows[1].measured_ms == reps[1].ns / 1e6);
		assert_near(set.rows[1].model_ms, reps[1].bytes / 1e7, 1e-9);
		assert_false(set.rows[1].flops_approx || set.rows[1].bytes_approx);
		calibration_rows_release(&set);
		/* no dram_bandwidth before: no model */
		json_array_remove(before, 1);
		assert_int_equal(calibration_kernel_rows(&o, "triad", "flops_dp", "d1", "t", 1, out),
				 0);
		assert_true(isnan(set.rows[0].model_ms) && set.rows[0].opaque);
		calibration_rows_release(&set);
		json_decref(before);
	}
	/* the budget runs out: killed, the repetitions done still count, said */
	{
		char *slow_argv[] = { bin, "1", cpu, "25165824", "5", "300", NULL };
		struct calibration_facts f = { .reps_wanted = 5, .load1 = NAN, .threads = 1,
					       .check_simd = 1, .native = 1, .peak = NAN };
		json_t *ceilings = json_array(), *c;

		assert_int_equal(calibration_run(wd, bin, slow_argv, "run-slow", 1000, out, sizeof(out), err,
						 sizeof(err)),
				 -ETIMEDOUT);
		assert_non_null(strstr(err, "did not end within"));
		n = kernel_output_parse(out, "triad", reps, 4, NULL);
		if (n > 3) /* 5 x 300 ms cannot fit in 1 s */
			fail_msg("%d repetitions in 1 s: %s", n, out);
		assert_int_equal(calibration_append(ceilings, "dram_bandwidth", "B/s", "triad", out,
						    &f, "none"),
				 0);
		c = json_array_get(ceilings, 0);
		/* on a very busy machine not even one repetition fits */
		assert_string_equal(json_string_value(json_object_get(c, "quality")),
				    n ? "estimated" : "unavailable");
		assert_non_null(strstr(json_string_value(json_object_get(c, "reason")),
				       n ? "of 5 repetitions within the budget" : "none"));
		json_decref(ceilings);
	}
	/* a bad argument: exits non-zero, said as such */
	triad_argv[1] = "0";
	assert_int_equal(
		calibration_run(wd, bin, triad_argv, "run-triad", 20000, out, sizeof(out), err, sizeof(err)),
		-ENOEXEC);
	assert_non_null(strstr(err, "exited with status 2: bad argument '0' (1..1024)"));

	/* a compiler error: -ENOEXEC with the compiler's message */
	assert_int_equal(kernel_workdir_write(wd, &broken), 0);
	assert_int_equal(kernel_compile(wd, compiler, NULL, flags, "broken.c", "broken", err,
					sizeof(err)),
			 -ENOEXEC);
	assert_non_null(strstr(err, "error"));

	kernel_workdir__free(wd);
	assert_int_equal(lstat(dir, &st), -1); /* removed with everything in it */
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_parse),   cmocka_unit_test(test_line_malformed),
		cmocka_unit_test(test_output_parse), cmocka_unit_test(test_best_not_mean),
		cmocka_unit_test(test_rule_spread),  cmocka_unit_test(test_rule_load),
		cmocka_unit_test(test_rule_scalar),  cmocka_unit_test(test_rule_peak),
		cmocka_unit_test(test_rule_reps),    cmocka_unit_test(test_judge),
		cmocka_unit_test(test_append),	     cmocka_unit_test(test_llc),
		cmocka_unit_test(test_build_and_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
