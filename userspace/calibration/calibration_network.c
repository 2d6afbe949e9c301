/* calibration_network — network_latency and network_bandwidth
 * (calibration.h): the ping-pong built with the launcher's own mpicc and
 * run under the launcher, as the user gave it. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/calibration/calibration.h"
#include "userspace/calibration/kernel_build.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/tool.h"

#define OUTPUT_BYTES 65536
#define MAX_LAUNCHER_ARGS 256

/* The mpicc of the launcher's MPI: beside the launcher as found in PATH
 * (before links are resolved: /usr/bin/mpirun.mpich and /usr/bin/mpirun
 * both lead to files elsewhere), with the launcher's suffix first
 * (mpiexec.mpich: mpicc.mpich), then plain mpicc there, then mpicc in PATH.
 * 0 with @path (trusted, links resolved) and @name (what to call it: a
 * compiler wrapper such as Open MPI's opal_wrapper knows what it is from
 * its argv[0]), else -errno with @err. */
static int find_mpicc(const char *launcher, char *path, size_t len, char *name, size_t namelen,
		      char *err, size_t errlen)
{
	char found[PATH_MAX], dir[PATH_MAX], base[NAME_MAX + 1];
	const char *suffix;
	int ret;

	ret = launch_resolve(launcher, found, sizeof(found));
	if (ret) {
		snprintf(err, errlen, "the launcher '%s': %s", launcher, strerror(-ret));
		return ret;
	}
	snprintf(dir, sizeof(dir), "%s", found);
	snprintf(base, sizeof(base), "%s", basename(found));
	suffix = strchr(base, '.');
	if (suffix) {
		snprintf(name, namelen, "%s/mpicc%s", dirname(dir), suffix);
		if (!tool_resolve_trusted(name, path, len, err, errlen))
			return 0;
		snprintf(dir, sizeof(dir), "%s", found);
	}
	snprintf(name, namelen, "%s/mpicc", dirname(dir));
	if (!tool_resolve_trusted(name, path, len, err, errlen))
		return 0;
	snprintf(name, namelen, "mpicc");
	ret = tool_resolve_trusted(name, path, len, err, errlen);
	if (ret)
		snprintf(err + strlen(err), errlen - strlen(err),
			 " (no mpicc beside '%s' nor in PATH)", found);
	return ret;
}

/* builds the ping-pong in @wd; 0, or -errno with @err */
static int build(struct kernel_workdir *wd, const char *launcher, char *err, size_t errlen)
{
	static const char *const flags[] = { "-O2", NULL };
	char mpicc[PATH_MAX], name[PATH_MAX + 16], why[400];
	int ret;

	ret = find_mpicc(launcher, mpicc, sizeof(mpicc), name, sizeof(name), why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "no mpicc to build the ping-pong: %s", why);
		return ret;
	}
	ret = kernel_workdir_write(wd, &kernel_source_pingpong);
	if (ret) {
		snprintf(err, errlen, "cannot write the ping-pong: %s", strerror(-ret));
		return ret;
	}
	ret = kernel_compile(wd, mpicc, name, flags, "pingpong.c", "pingpong", why, sizeof(why));
	if (ret)
		snprintf(err, errlen, "the ping-pong could not be built by '%s': %s", name, why);
	return ret;
}

/* runs `launcher args... pingpong REPS`; 0 or -errno (output kept) */
static int run(const struct calibration_options *o, struct kernel_workdir *wd, int argc,
	       char *const argv[], char *out, size_t outlen, char *err, size_t errlen)
{
	char launcher[PATH_MAX], bin[PATH_MAX], reps[16], why[400];
	char *args[MAX_LAUNCHER_ARGS + 3];
	int i, ret;

	if (argc > MAX_LAUNCHER_ARGS) {
		snprintf(err, errlen, "more than %d launcher arguments", MAX_LAUNCHER_ARGS);
		return -E2BIG;
	}
	ret = tool_resolve_trusted(argv[0], launcher, sizeof(launcher), why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "the launcher cannot be used: %s", why);
		return ret;
	}
	if (kernel_workdir_file(wd, "pingpong", bin, sizeof(bin)))
		return -ENAMETOOLONG;
	snprintf(reps, sizeof(reps), "%d", o->reps);
	for (i = 0; i < argc; i++)
		args[i] = argv[i];
	args[argc] = bin;
	args[argc + 1] = reps;
	args[argc + 2] = NULL;
	if (o->progress) {
		fprintf(o->progress,
			"nunatak: calibrate: network_latency, network_bandwidth: ping-pong under '%s', "
			"%d repetitions\n",
			argv[0], o->reps);
		fflush(o->progress);
	}
	return calibration_run(launcher, args, CALIBRATION_MPI_TIMEOUT_MS, out, outlen, err, errlen);
}

int calibration_measure_network(const struct calibration_options *o, int argc, char *const argv[],
				json_t *ceilings)
{
	/* the two ranks that ping-pong compete with the load as threads do */
	struct calibration_facts latency = { .reps_wanted = o->reps,
					     .lower_is_better = 1,
					     .load1 = calibration_load_average(),
					     .threads = 2,
					     .peak = NAN };
	struct calibration_facts bandwidth = latency;
	struct kernel_workdir *wd;
	char err[600] = "", none[700], *out = calloc(1, OUTPUT_BYTES);
	int ret;

	if (!out)
		return -ENOMEM;
	bandwidth.lower_is_better = 0;
	wd = kernel_workdir__new();
	if (!wd)
		snprintf(err, sizeof(err), "cannot make a directory to build the ping-pong: %s",
			 strerror(errno));
	else if (argc < 1 || !argv[0])
		snprintf(err, sizeof(err), "no launcher");
	else if (!build(wd, argv[0], err, sizeof(err)))
		run(o, wd, argc, argv, out, OUTPUT_BYTES, err, sizeof(err));
	snprintf(none, sizeof(none), "not measured: %s", err[0] ? err : "the ping-pong said nothing");
	ret = calibration_append(ceilings, "network_latency", "s", "network_latency", out, &latency,
				 none);
	ret = ret ? ret
		  : calibration_append(ceilings, "network_bandwidth", "B/s", "network_bandwidth",
				       out, &bandwidth, none);
	kernel_workdir__free(wd);
	free(out);
	return ret;
}
