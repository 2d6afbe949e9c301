/* calibration_cpu — dram_bandwidth, flops_dp and flops_sp (calibration.h):
 * the plan (threads, CPUs, array size, peaks, load), the builds, the runs. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/calibration/cache_size.h"
#include "userspace/calibration/calibration.h"
#include "userspace/calibration/kernel_build.h"
#include "userspace/log/clock.h"
#include "userspace/machine/allocation.h"
#include "userspace/machine/machine.h"

#define SYSFS_CPU "/sys/devices/system/cpu"
#define OUTPUT_BYTES 16384
#define MIB (1LL << 20)

struct cpu_plan {
	int threads;
	int cpus[CPU_SETSIZE];
	char cpulist[4096];
	double load1;
	long long array_bytes;
	char array_reason[256]; /* why the arrays are not what they should be; "" */
	double peak_dp, peak_sp;
	int native;	/* -march=native accepted */
	char built[512]; /* "" built, else why not */
};

static void plan_threads(struct cpu_plan *p, struct allocation *a)
{
	int cpu, n = 0;
	size_t used = 0;

	if (allocation_read(a)) { /* at least the CPU we run on */
		CPU_ZERO(&a->mask);
		CPU_SET(sched_getcpu() > 0 ? sched_getcpu() : 0, &a->mask);
		a->visible_cores = 1;
		a->cpu_quota = NAN;
		a->memory_limit_bytes = -1;
	}
	p->threads = allocation_threads(a);
	for (cpu = 0; cpu < CPU_SETSIZE && n < p->threads; cpu++) {
		if (!CPU_ISSET(cpu, &a->mask))
			continue;
		p->cpus[n++] = cpu;
		used += (size_t)snprintf(p->cpulist + used, sizeof(p->cpulist) - used, "%s%d",
					 n > 1 ? "," : "", cpu);
		if (used >= sizeof(p->cpulist))
			break;
	}
	p->threads = n;
}

/* arrays >= 4 x LLC and >= 256 MiB, within half the memory we may use */
static void plan_arrays(struct cpu_plan *p, const struct allocation *a)
{
	long long llc = 0, cap = -1, pages = sysconf(_SC_AVPHYS_PAGES);
	long long want = CALIBRATION_TRIAD_MIN_BYTES;

	if (llc_bytes(SYSFS_CPU, p->cpus, p->threads, &llc))
		snprintf(p->array_reason, sizeof(p->array_reason),
			 "the last-level cache size is unknown: arrays of %lld MiB may not be "
			 "beyond it", want / MIB);
	else if (CALIBRATION_TRIAD_LLC_FACTOR * llc > want)
		want = CALIBRATION_TRIAD_LLC_FACTOR * llc;
	if (pages > 0)
		cap = pages * sysconf(_SC_PAGESIZE) / 2;
	if (a->memory_limit_bytes > 0 && (cap < 0 || a->memory_limit_bytes / 2 < cap))
		cap = a->memory_limit_bytes / 2;
	p->array_bytes = want;
	if (cap > 0 && cap < want) {
		p->array_bytes = cap;
		snprintf(p->array_reason, sizeof(p->array_reason),
			 "arrays of %lld MiB only (half the memory this allocation may use), not "
			 "the %lld MiB wanted", cap / MIB, want / MIB);
	}
}

/* the theoretical peaks of machine.h: one rule for calibration and Runs */
static void plan_peaks(struct cpu_plan *p, const json_t *machine)
{
	char reason[256];

	if (!machine || machine_theory_flops(machine, &p->peak_dp, &p->peak_sp, reason,
					     sizeof(reason)))
		p->peak_dp = p->peak_sp = NAN;
}

/* writes the sources, builds triad and fma at -march=native, else without */
static int build(struct kernel_workdir *wd, struct cpu_plan *p)
{
	static const char *const native[] = { "-std=gnu11", "-O3", "-march=native", "-pthread",
					       NULL };
	static const char *const plain[] = { "-std=gnu11", "-O3", "-pthread", NULL };
	char compiler[PATH_MAX], err[400];
	int ret;

	ret = kernel_compiler_find(compiler, sizeof(compiler), err, sizeof(err));
	if (ret) {
		snprintf(p->built, sizeof(p->built), "no C compiler to build the kernels: %s", err);
		return ret;
	}
	ret = kernel_workdir_write(wd, &kernel_source_common);
	ret = ret ? ret : kernel_workdir_write(wd, &kernel_source_triad);
	ret = ret ? ret : kernel_workdir_write(wd, &kernel_source_fma);
	if (ret) {
		snprintf(p->built, sizeof(p->built), "cannot write the kernels in '%s': %s",
			 kernel_workdir_path(wd), strerror(-ret));
		return ret;
	}
	p->native = 1;
	ret = kernel_compile(wd, compiler, NULL, native, "triad.c", "triad", err, sizeof(err));
	if (ret == -ENOEXEC) {
		p->native = 0;
		ret = kernel_compile(wd, compiler, NULL, plain, "triad.c", "triad", err, sizeof(err));
	}
	ret = ret ? ret
		  : kernel_compile(wd, compiler, NULL, p->native ? native : plain, "fma.c", "fma", err,
				   sizeof(err));
	if (ret)
		snprintf(p->built, sizeof(p->built), "the kernels could not be built by '%s': %s",
			 compiler, err);
	return ret;
}

struct cpu_kernel {
	const char *ceiling, *unit, *kernel, *binary, *mode; /* mode: "dp", "sp", NULL */
};

static const struct cpu_kernel kernels[] = {
	{ "dram_bandwidth", "B/s", "triad", "triad", NULL },
	{ "flops_dp", "flop/s", "fma_dp", "fma", "dp" },
	{ "flops_sp", "flop/s", "fma_sp", "fma", "sp" },
};

static void progress(const struct calibration_options *o, const struct cpu_plan *p,
		     const struct cpu_kernel *k)
{
	if (!o->progress)
		return;
	fprintf(o->progress, "nunatak: calibrate: %s: %s kernel, %d thread%s on CPU %s, %d x %d ms",
		k->ceiling, k->kernel, p->threads, p->threads == 1 ? "" : "s", p->cpulist, o->reps,
		o->rep_ms);
	if (!k->mode)
		fprintf(o->progress, ", arrays of %lld MiB", p->array_bytes / MIB);
	fprintf(o->progress, "\n");
	fflush(o->progress);
}

/* runs one kernel within the budget's deadline and appends its Ceiling */
static int run_kernel(const struct calibration_options *o, struct kernel_workdir *wd,
		      const struct cpu_plan *p, const struct cpu_kernel *k, long long deadline_ms,
		      json_t *ceilings)
{
	char bin[PATH_MAX], threads[16], bytes[32], reps[16], ms[16], err[400], none[512];
	char out[OUTPUT_BYTES];
	char *triad_argv[] = { bin, threads, (char *)p->cpulist, bytes, reps, ms, NULL };
	char *fma_argv[] = { bin, (char *)k->mode, threads, (char *)p->cpulist, reps, ms, NULL };
	struct calibration_facts facts = {
		.reps_wanted = o->reps,
		.load1 = p->load1,
		.threads = p->threads,
		.check_simd = 1,
		.native = p->native,
		.peak = !k->mode ? NAN : !strcmp(k->mode, "dp") ? p->peak_dp : p->peak_sp,
		.downgrade = !k->mode && p->array_reason[0] ? p->array_reason : NULL,
	};
	long long left = deadline_ms - clock_monotonic_ms();
	int ret;

	if (kernel_workdir_file(wd, k->binary, bin, sizeof(bin)))
		return calibration_unavailable(ceilings, k->ceiling, k->unit, "path too long");
	if (left <= 0)
		return calibration_unavailable(ceilings, k->ceiling, k->unit,
					       "not measured: the calibration budget ran out");
	snprintf(threads, sizeof(threads), "%d", p->threads);
	snprintf(bytes, sizeof(bytes), "%lld", p->array_bytes);
	snprintf(reps, sizeof(reps), "%d", o->reps);
	snprintf(ms, sizeof(ms), "%d", o->rep_ms);
	progress(o, p, k);
	ret = calibration_run(bin, k->mode ? fma_argv : triad_argv, (int)left, out, sizeof(out),
			      err, sizeof(err));
	snprintf(none, sizeof(none), "the %s kernel gave no repetition%s%s", k->kernel,
		 ret ? ": " : "", ret ? err : "");
	return calibration_append(ceilings, k->ceiling, k->unit, k->kernel, out, &facts, none);
}

int calibration_measure_cpu(const struct calibration_options *o, const json_t *machine,
			    json_t *ceilings)
{
	struct kernel_workdir *wd = NULL;
	struct allocation a;
	struct cpu_plan *p = calloc(1, sizeof(*p));
	long long deadline_ms;
	size_t i;
	int ret = 0;

	if (!p)
		return -ENOMEM;
	p->load1 = calibration_load_average(); /* before anything of ours runs */
	plan_threads(p, &a);
	plan_arrays(p, &a);
	plan_peaks(p, machine);
	wd = kernel_workdir__new();
	if (!wd)
		snprintf(p->built, sizeof(p->built), "cannot make a directory to build the kernels: %s",
			 strerror(errno));
	else
		build(wd, p);
	deadline_ms = clock_monotonic_ms() + o->budget_ms;
	for (i = 0; !ret && i < sizeof(kernels) / sizeof(kernels[0]); i++)
		ret = p->built[0] ? calibration_unavailable(ceilings, kernels[i].ceiling,
							    kernels[i].unit, p->built)
				  : run_kernel(o, wd, p, &kernels[i], deadline_ms, ceilings);
	kernel_workdir__free(wd);
	free(p);
	return ret;
}
