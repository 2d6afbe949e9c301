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
#include "userspace/calibration/kernel_sources.h"
#include "userspace/log/clock.h"
#include "userspace/machine/allocation.h"
#include "userspace/machine/machine.h"

#define SYSFS_CPU "/sys/devices/system/cpu"
#define OUTPUT_BYTES 16384
#define MIB (1LL << 20)

struct cpu_plan {
	int threads;
	int cpus[CPU_SETSIZE];
	char cpulist[8192];
	double load1;
	long long array_bytes;
	char array_reason[256]; /* why the arrays are not what they should be; "" */
	double peak_dp, peak_sp;
	int native;	/* -march=native accepted */
	char built[512]; /* "" built, else why not */
	char digest_triad[17], digest_fma[17]; /* of the calibration rows */
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

/* arrays >= 4 x LLC and >= 256 MiB, within half the memory we may use (the
 * Machine's, or the cgroup limit) */
static void plan_arrays(struct cpu_plan *p, const struct allocation *a)
{
	long long llc = 0, cap = -1, pages = sysconf(_SC_PHYS_PAGES);
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
	calibration_kernel_digest(kernel_source_triad.text, p->native ? native : plain,
				  p->digest_triad);
	calibration_kernel_digest(kernel_source_fma.text, p->native ? native : plain,
				  p->digest_fma);
	if (ret)
		snprintf(p->built, sizeof(p->built), "the kernels could not be built by '%s': %s",
			 compiler, err);
	return ret;
}

struct cpu_kernel {
	const char *ceiling, *unit, *kernel, *binary, *mode; /* mode: "dp", "sp", NULL */
	const char *flops_ceiling; /* the roof of its FLOP, for its rows' model_ms */
	/* its rows are opaque: single-precision FLOP would lift the envelope's
	 * peak_flops (the Ceiling flops_dp) to the SP peak; kept on record,
	 * excluded from fits */
	int opaque_rows;
};

static const struct cpu_kernel kernels[] = {
	{ "dram_bandwidth", "B/s", "triad", "triad", NULL, "flops_dp", 0 },
	{ "flops_dp", "flop/s", "fma_dp", "fma", "dp", "flops_dp", 0 },
	{ "flops_sp", "flop/s", "fma_sp", "fma", "sp", "flops_sp", 1 },
};

static void progress(const struct calibration_options *o, const struct cpu_plan *p,
		     const struct cpu_kernel *k)
{
	if (!o->progress)
		return;
	fprintf(o->progress,
		"nunatak: calibrate: %s: %s kernel, %d thread%s on CPU %s, %d x %d ms (interleaved)",
		k->ceiling, k->kernel, p->threads, p->threads == 1 ? "" : "s", p->cpulist, o->reps,
		o->rep_ms);
	if (!k->mode)
		fprintf(o->progress, ", arrays of %lld MiB", p->array_bytes / MIB);
	fprintf(o->progress, "\n");
	fflush(o->progress);
}

/* what one kernel gathered over the rounds */
struct kernel_runs {
	char out[OUTPUT_BYTES]; /* every repetition's line */
	size_t used;
	char err[400]; /* the last failure, "" */
};

/* one repetition of one kernel within the budget's deadline, its line
 * appended to r->out; 0, or -errno with r->err set */
static int run_once(const struct calibration_options *o, struct kernel_workdir *wd,
		    const struct cpu_plan *p, const struct cpu_kernel *k, int rep,
		    long long deadline_ms, struct kernel_runs *r)
{
	char bin[PATH_MAX], threads[16], bytes[32], ms[16], step[64];
	char *triad_argv[] = { bin, threads, (char *)p->cpulist, bytes, "1", ms, NULL };
	char *fma_argv[] = { bin, (char *)k->mode, threads, (char *)p->cpulist, "1", ms, NULL };
	long long left = deadline_ms - clock_monotonic_ms();
	int ret;

	if (kernel_workdir_file(wd, k->binary, bin, sizeof(bin))) {
		snprintf(r->err, sizeof(r->err), "path too long");
		return -ENAMETOOLONG;
	}
	if (left <= 0) {
		snprintf(r->err, sizeof(r->err), "the calibration budget ran out");
		return -ETIME;
	}
	snprintf(threads, sizeof(threads), "%d", p->threads);
	snprintf(bytes, sizeof(bytes), "%lld", p->array_bytes);
	snprintf(ms, sizeof(ms), "%d", o->rep_ms);
	snprintf(step, sizeof(step), "run-%s-%d", k->kernel, rep); /* files are O_EXCL */
	ret = calibration_run(wd, bin, k->mode ? fma_argv : triad_argv, step, (int)left,
			      r->out + r->used, sizeof(r->out) - r->used, r->err, sizeof(r->err));
	r->used += strlen(r->out + r->used);
	return ret;
}

/* judges what kernel k gathered and appends its Ceiling */
static int append_kernel(const struct calibration_options *o, const struct cpu_plan *p,
			 const struct cpu_kernel *k, const struct kernel_runs *r, json_t *ceilings)
{
	struct calibration_facts facts = {
		.reps_wanted = o->reps,
		.load1 = p->load1,
		.threads = p->threads,
		.check_simd = 1,
		.native = p->native,
		.peak = !k->mode ? NAN : !strcmp(k->mode, "dp") ? p->peak_dp : p->peak_sp,
		.downgrade = !k->mode && p->array_reason[0] ? p->array_reason : NULL,
	};
	char none[512], label[64];
	int ret;

	snprintf(none, sizeof(none), "the %s kernel gave no repetition%s%s", k->kernel,
		 r->err[0] ? ": " : "", r->err);
	ret = calibration_append(ceilings, k->ceiling, k->unit, k->kernel, r->out, &facts, none);
	if (k->mode)
		snprintf(label, sizeof(label), "threads=%d", p->threads);
	else
		snprintf(label, sizeof(label), "threads=%d n=%lld", p->threads, p->array_bytes / 24);
	return ret ? ret
		   : calibration_kernel_rows(o, k->kernel, k->flops_ceiling,
					     k->mode ? p->digest_fma : p->digest_triad, label,
					     k->opaque_rows, r->out);
}

#define N_KERNELS (sizeof(kernels) / sizeof(kernels[0]))

/* The repetitions of the kernels interleaved (triad, dp, sp, triad, ...):
 * a disturbance of a few seconds (another tenant of the host, a burst of
 * the Machine's own work) spoils one repetition of each kernel, not every
 * repetition of one, so the best repetition stays clean and the spread
 * rule sees the disturbance. A kernel that failed is not run again. */
static int run_kernels(const struct calibration_options *o, struct kernel_workdir *wd,
		       const struct cpu_plan *p, json_t *ceilings)
{
	struct kernel_runs *runs = calloc(N_KERNELS, sizeof(*runs));
	long long deadline_ms = clock_monotonic_ms() + o->budget_ms;
	int rep, ret = 0, failed[N_KERNELS] = { 0 };
	size_t i;

	if (!runs)
		return -ENOMEM;
	for (i = 0; i < N_KERNELS; i++)
		progress(o, p, &kernels[i]);
	for (rep = 0; rep < o->reps; rep++)
		for (i = 0; i < N_KERNELS; i++)
			if (!failed[i])
				failed[i] = !!run_once(o, wd, p, &kernels[i], rep, deadline_ms,
							     &runs[i]);
	for (i = 0; !ret && i < N_KERNELS; i++)
		ret = append_kernel(o, p, &kernels[i], &runs[i], ceilings);
	free(runs);
	return ret;
}

int calibration_measure_cpu(const struct calibration_options *o, const json_t *machine,
			    json_t *ceilings)
{
	struct kernel_workdir *wd = NULL;
	struct allocation a;
	struct cpu_plan *p = calloc(1, sizeof(*p));
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
	if (!p->built[0])
		ret = run_kernels(o, wd, p, ceilings);
	for (i = 0; !ret && p->built[0] && i < N_KERNELS; i++)
		ret = calibration_unavailable(ceilings, kernels[i].ceiling, kernels[i].unit,
					      p->built);
	kernel_workdir__free(wd);
	free(p);
	return ret;
}
