/* calibration — measuring the Machine's Ceilings (GLOSSARY.md): the
 * kernels of kernels/ built here, in a private directory, with this
 * Machine's compiler (kernel_build.h), run with the threads this
 * allocation may use pinned to its affinity mask, REPS repetitions of
 * REP_MS each; a Ceiling is the best repetition, downgraded to `estimated`
 * by pollution (pollution.h), never discarded.
 *
 *   dram_bandwidth  B/s     triad (kernels/triad.c), arrays >= 4 x LLC and 256 MiB
 *   flops_dp        flop/s  fma dp (kernels/fma.c)
 *   flops_sp        flop/s  fma sp
 *   network_latency s       half a round trip of 8 B between two MPI ranks (min)
 *   network_bandwidth B/s   4 MiB messages between two MPI ranks (max)
 *
 * Every wait is bounded: the CPU kernels share one budget (budget_ms), each
 * compiler run KERNEL_BUILD_TIMEOUT_MS, the MPI run CALIBRATION_MPI_TIMEOUT_MS.
 * A Ceiling that could not be measured is still listed, `unavailable`
 * with the reason. Progress: one line per kernel on o->progress.
 *
 * Each Ceiling appended is {name, value|null, unit, quality, reason|null,
 * source: "calibration", or null when unavailable} (machine.h's shape).
 */
#ifndef NUNATAK_CALIBRATION_H
#define NUNATAK_CALIBRATION_H

#include <stdio.h>
#include <jansson.h>

#include "userspace/calibration/pollution.h"

#define CALIBRATION_REPS 5
#define CALIBRATION_REP_MS 300
#define CALIBRATION_BUDGET_MS 60000
#define CALIBRATION_MPI_TIMEOUT_MS 60000
#define CALIBRATION_TRIAD_MIN_BYTES (256LL << 20)
#define CALIBRATION_TRIAD_LLC_FACTOR 4

/* reason of the network Ceilings when no launcher was given */
#define CALIBRATION_NO_LAUNCHER "not measured: give an MPI launcher: nunatak calibrate -- mpirun -n 2"

struct calibration_rows;

struct calibration_options {
	int reps, rep_ms, budget_ms;
	FILE *progress; /* NULL: silent */
	/* calibration rows (calibration_rows.h), one per timed repetition of a
	 * CPU kernel, appended to *rows when not NULL: backend = @backend (the
	 * Machine identity), model_ms = the bound under @ceilings_before (the
	 * Ceilings in force before this calibration; NULL: none) */
	struct calibration_rows *rows;
	const char *backend;
	const json_t *ceilings_before;
};

#define CALIBRATION_OPTIONS_DEFAULT                                                               \
	{ CALIBRATION_REPS, CALIBRATION_REP_MS, CALIBRATION_BUDGET_MS, NULL, NULL, NULL, NULL }

/* Appends dram_bandwidth, flops_dp and flops_sp to @ceilings (an array).
 * @machine (machine_describe(), may be NULL) gives the theoretical peaks
 * (machine_theory_flops). The repetitions of the three kernels are
 * interleaved (one process per repetition: triad, dp, sp, triad, ...), so
 * a disturbance of a few seconds spoils one repetition of each rather
 * than all of one. 0, or -ENOMEM; a kernel that fails gives an unavailable
 * Ceiling. */
int calibration_measure_cpu(const struct calibration_options *o, const json_t *machine,
			    json_t *ceilings);

/* Builds the ping-pong with the mpicc beside the launcher argv[0] (its
 * directory, else PATH; trusted), runs `argv... PINGPONG REPS` and appends
 * network_latency and network_bandwidth. 0 or -ENOMEM, as above. */
int calibration_measure_network(const struct calibration_options *o, int argc, char *const argv[],
				json_t *ceilings);

/* --- shared by the two (calibration.c) --- */

/* the 1-minute load average (/proc/loadavg), NAN when unreadable */
double calibration_load_average(void);

/* the Ceiling object of a verdict; NULL + errno */
json_t *calibration_ceiling(const char *name, const char *unit, const struct ceiling_verdict *v);

/* An unavailable Ceiling appended with @reason: 0 or -ENOMEM */
int calibration_unavailable(json_t *ceilings, const char *name, const char *unit,
			    const char *reason);

/* kernel_workdir_run() of @path with @argv as step @name, then its stdout
 * into @out (NUL-terminated, kept whatever happened): its return, with
 * @err saying how it ended unless 0. */
struct kernel_workdir;
int calibration_run(struct kernel_workdir *wd, const char *path, char *const argv[],
		    const char *name, int timeout_ms, char *out, size_t outlen, char *err,
		    size_t errlen);

/* Judges the repetitions of @kernel found in @output and appends the
 * Ceiling @name: 0 or -ENOMEM. @facts gives everything but values/n;
 * @none is the reason when no repetition was read. */
int calibration_append(json_t *ceilings, const char *name, const char *unit, const char *kernel,
		       const char *output, const struct calibration_facts *facts, const char *none);

/* --- calibration_kernel_rows.c --- */

/* Appends to o->rows (nothing when NULL) one row per repetition of
 * @kernel in @output that says its exact counts (ns, flops, bytes):
 * routine @kernel, label "@label rep=R", @digest (the kernel's source and
 * build flags), kernels 1, counts exact, @opaque as given; model_ms the
 * roofline bound (envelope_bound_s) under o->ceilings_before's
 * @flops_ceiling and dram_bandwidth, empty when one the row needs is
 * unavailable. 0 or -ENOMEM. */
int calibration_kernel_rows(const struct calibration_options *o, const char *kernel,
			    const char *flops_ceiling, const char *digest, const char *label,
			    int opaque, const char *output);

/* The digest of a kernel build: the first 16 hex digits of the SHA-256 of
 * its sources (kernel_common.h then @source) and its compiler flags. */
void calibration_kernel_digest(const char *source, const char *const *flags, char out[17]);

#endif
