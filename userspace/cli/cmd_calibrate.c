/* cmd_calibrate — `nunatak calibrate [--force] [--json] [--rows FILE] [--
 * MPI_LAUNCHER ARGS]`: the Machine's Ceilings, from the Machine profile
 * cache when this Machine (hardware + allocation shape) was calibrated with
 * the current kernels, else measured (calibration.h) and cached. A
 * measurement appends one calibration row per timed repetition of a CPU
 * kernel (calibration_rows.h) to the Machine's rows file
 * (machine_cache_open_rows) and to --rows FILE; the ping-pong gives none
 * (its time is latency and bandwidth, not a roofline leg). One line per Ceiling
 * on stdout (name, value, unit, Quality, reason), or with --json one
 * object {machine, cached, calibrated (the cached profile's time, else
 * null), ceilings:[{name, value, unit, quality, reason, source}]};
 * progress on stderr. Exit 0; 125 when a Ceiling it set out to
 * measure could not be, when the cache cannot be written, or on bad usage.
 */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "userspace/calibration/calibration.h"
#include "userspace/calibration/calibration_rows.h"
#include "userspace/cli/cli.h"
#include "userspace/launch/launch.h"
#include "userspace/machine/machine.h"
#include "userspace/machine/machine_cache.h"

static struct {
	int force, json;
	const char *rows; /* --rows FILE, NULL */
	char **launcher;
	int nlauncher;
} env;

static const char doc[] =
	"Measure the Machine's Ceilings and cache them: dram_bandwidth (a triad on\n"
	"arrays well beyond the last-level cache), flops_dp and flops_sp (FMA kernels\n"
	"on the widest SIMD), built here with -O3 -march=native, run with the threads\n"
	"this allocation may use, 5 repetitions of 300 ms: a Ceiling is the best one.\n"
	"With an MPI launcher, a ping-pong between two ranks measures network_latency\n"
	"and network_bandwidth. A polluted measurement (a spread over 10 %, a loaded\n"
	"Machine, a scalar build, above 1.25 x the theoretical peak) is `estimated`,\n"
	"with the reason. Once cached, `nunatak run` embeds them in every Run.\n"
	"\v"
	"The cache: $XDG_CACHE_HOME/nunatak/machines/ (else ~/.cache/nunatak/\n"
	"machines/), one profile per hardware and allocation shape. Each measurement\n"
	"also appends one calibration row per timed kernel repetition to\n"
	"<identity>.rows.tsv there (and to --rows FILE): `nunatak fit` reads them.\n"
	"\n"
	"EXAMPLES:\n"
	"  nunatak calibrate\n"
	"  nunatak calibrate --force --json\n"
	"  nunatak calibrate --force --rows cal.tsv && nunatak fit cal.tsv\n"
	"  nunatak calibrate -- mpirun -n 2\n"
	"  nunatak calibrate -- mpiexec.mpich -n 2";

static const struct argp_option options[] = {
	{ "force", 'f', NULL, 0, "Measure again even when the cache holds this Machine", 0 },
	{ "json", 'j', NULL, 0, "Print {machine, cached, ceilings} as one JSON object on stdout",
	  0 },
	{ "rows", 'r', "FILE", 0,
	  "Append the calibration rows of what is measured to FILE too (created 0600)", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	switch (key) {
	case 'f':
		env.force = 1;
		break;
	case 'j':
		env.json = 1;
		break;
	case 'r':
		env.rows = arg;
		break;
	case ARGP_KEY_ARG:
		/* the launcher and everything after it */
		env.launcher = &state->argv[state->next - 1];
		env.nlauncher = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* the index of Ceiling @name in @ceilings, or -1 */
static int find_index(const json_t *ceilings, const char *name)
{
	const json_t *c = machine_ceiling_find(ceilings, name), *at;
	size_t i;

	json_array_foreach(ceilings, i, at)
		if (at == c)
			return (int)i;
	return -1;
}

static json_t *find_ceiling(const json_t *ceilings, const char *name)
{
	return (json_t *)machine_ceiling_find(ceilings, name);
}

static int is_unavailable(const json_t *c)
{
	return !c || !strcmp(json_string_value(json_object_get(c, "quality")) ?: "", "unavailable");
}

/* both network Ceilings measured by a calibration */
static int network_measured(const json_t *ceilings)
{
	static const char *const names[] = { "network_latency", "network_bandwidth" };
	size_t i;

	for (i = 0; i < 2; i++) {
		const json_t *c = find_ceiling(ceilings, names[i]);

		if (is_unavailable(c) ||
		    strcmp(json_string_value(json_object_get(c, "source")) ?: "", "calibration"))
			return 0;
	}
	return 1;
}

/* A measured Ceiling replaces the one of @fill; one that could not be
 * measured keeps @fill's (the theory's estimate), its own reason added. */
static int merge_one(json_t *fill, json_t *measured)
{
	const char *name = json_string_value(json_object_get(measured, "name"));
	const char *why = json_string_value(json_object_get(measured, "reason"));
	int i = find_index(fill, name);
	json_t *old = i < 0 ? NULL : json_array_get(fill, (size_t)i);
	char reason[1024];

	if (i < 0)
		return json_array_append(fill, measured) ? -ENOMEM : 0;
	if (!is_unavailable(measured) || is_unavailable(old))
		return json_array_set(fill, (size_t)i, measured) ? -ENOMEM : 0;
	snprintf(reason, sizeof(reason), "%s; not measured: %s",
		 json_string_value(json_object_get(old, "reason")) ?: "", why ? why : "");
	return json_object_set_new(old, "reason", json_string(reason)) ? -ENOMEM : 0;
}

/* machine_ceilings() (cache, theory) with @measured over it */
static json_t *merge(const json_t *machine, json_t *measured)
{
	json_t *fill = machine_ceilings(machine), *c;
	size_t i;

	json_array_foreach(measured, i, c)
		if (!fill || merge_one(fill, c)) {
			json_decref(fill);
			return NULL;
		}
	c = find_ceiling(fill, "network_latency");
	if (c && is_unavailable(c) && !env.launcher)
		json_object_set_new(c, "reason", json_string(CALIBRATION_NO_LAUNCHER));
	c = find_ceiling(fill, "network_bandwidth");
	if (c && is_unavailable(c) && !env.launcher)
		json_object_set_new(c, "reason", json_string(CALIBRATION_NO_LAUNCHER));
	return fill;
}

/* 89.4 Gflop/s, 19.2 GB/s, 0.50 us */
static const char *human(const json_t *c, char *buf, size_t len)
{
	static const char *const big[] = { "", "k", "M", "G", "T", "P", "E" };
	const char *unit = json_string_value(json_object_get(c, "unit")) ?: "";
	double v = json_number_value(json_object_get(c, "value"));
	size_t i = 0;

	if (!json_is_number(json_object_get(c, "value")))
		return "-";
	if (!strcmp(unit, "s")) {
		if (v < 1e-6)
			snprintf(buf, len, "%.1f ns", v * 1e9);
		else if (v < 1e-3)
			snprintf(buf, len, "%.2f us", v * 1e6);
		else
			snprintf(buf, len, "%.3g s", v);
		return buf;
	}
	for (; v >= 1000 && i + 1 < sizeof(big) / sizeof(big[0]); i++)
		v /= 1000;
	snprintf(buf, len, "%.1f %s%s", v, big[i], unit);
	return buf;
}

static int print_text(const json_t *ceilings, int cached, const char *calibrated)
{
	char value[64];
	json_t *c;
	size_t i;

	if (cached)
		printf("Ceilings of this Machine (cached, calibrated %s; --force measures again):\n",
		       calibrated ? calibrated : "at an unknown time");
	else
		printf("Ceilings of this Machine:\n");
	json_array_foreach(ceilings, i, c) {
		const char *reason = json_string_value(json_object_get(c, "reason"));

		printf("  %-18s %14s  %-11s%s%s\n",
		       json_string_value(json_object_get(c, "name")) ?: "?",
		       human(c, value, sizeof(value)),
		       json_string_value(json_object_get(c, "quality")) ?: "?", reason ? " " : "",
		       reason ? reason : "");
	}
	return fflush(stdout) ? -errno : 0;
}

/* calibrated: the cached profile's time, NULL when measured now */
static int print_json(json_t *machine, const json_t *ceilings, int cached, const char *calibrated)
{
	json_t *doc = json_pack("{s:O, s:b, s:o, s:O}", "machine", machine, "cached", cached,
				"calibrated", calibrated ? json_string(calibrated) : json_null(),
				"ceilings", ceilings);
	int ret = 0;

	if (!doc)
		return -ENOMEM;
	if (json_dumpf(doc, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF ||
	    fflush(stdout))
		ret = -EIO;
	json_decref(doc);
	return ret;
}

/* says each Ceiling of @measured that could not be measured; how many */
static int say_unmeasured(const json_t *measured)
{
	json_t *c;
	size_t i;
	int n = 0;

	json_array_foreach(measured, i, c)
		if (is_unavailable(c) && ++n)
			fprintf(stderr, "nunatak: calibrate: %s: %s\n",
				json_string_value(json_object_get(c, "name")) ?: "?",
				json_string_value(json_object_get(c, "reason")) ?: "?");
	return n;
}

/* Appends @rows to the Machine's rows file and to --rows: 0, or 1 when
 * one could not be written (said) */
static int append_rows(const char *identity, const struct calibration_rows *rows)
{
	char shown[4096] = "";
	int fd, ret, failed = 0, i;

	for (i = 0; rows->n && i < (env.rows ? 2 : 1); i++) {
		if (i == 0)
			fd = machine_cache_open_rows(identity, shown, sizeof(shown));
		else
			fd = calibration_rows_open(env.rows);
		ret = fd < 0 ? fd : calibration_rows_append_fd(fd, i ? env.rows : shown, rows->rows,
							       rows->n);
		if (fd >= 0)
			close(fd);
		if (ret)
			fprintf(stderr, "nunatak: calibrate: cannot append the calibration rows to "
					"'%s': %s\n",
				i ? env.rows : shown, strerror(-ret));
		failed |= !!ret;
	}
	return failed;
}

/* Measures (the CPU Ceilings unless @network_only; the network ones when
 * a launcher was given), merges over the cache and theory, caches the
 * result when anything was measured. *failed: something asked for could
 * not be measured or cached. NULL + errno (ENOMEM). */
static json_t *measure(const json_t *machine, const char *identity, int network_only, int *failed)
{
	struct calibration_options o = CALIBRATION_OPTIONS_DEFAULT;
	struct calibration_rows rows = { 0 };
	json_t *measured = json_array(), *ceilings = NULL;
	json_t *before = machine_ceilings(machine); /* the model of the rows */
	int ret = 0, unmeasured;

	o.progress = stderr;
	o.rows = &rows;
	o.backend = identity;
	o.ceilings_before = before;
	if (!measured || !before) {
		json_decref(measured);
		json_decref(before);
		errno = ENOMEM;
		return NULL;
	}
	if (!network_only)
		ret = calibration_measure_cpu(&o, machine, measured);
	if (!ret && env.launcher)
		ret = calibration_measure_network(&o, env.nlauncher, env.launcher, measured);
	if (!ret)
		ceilings = merge(machine, measured);
	json_decref(before);
	if (!ceilings) {
		json_decref(measured);
		calibration_rows_release(&rows);
		errno = ENOMEM;
		return NULL;
	}
	unmeasured = say_unmeasured(measured);
	*failed = unmeasured > 0 || append_rows(identity, &rows);
	calibration_rows_release(&rows);
	if ((size_t)unmeasured < json_array_size(measured)) {
		ret = machine_cache_store(identity, ceilings);
		if (ret) {
			fprintf(stderr, "nunatak: calibrate: cannot cache the Machine profile: %s\n",
				strerror(-ret));
			*failed = 1;
		}
	}
	json_decref(measured);
	return ceilings;
}

int cmd_calibrate(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[-- MPI_LAUNCHER [ARGS...]]", doc,
					  NULL, NULL, NULL };
	json_t *machine = NULL, *profile = NULL, *ceilings = NULL;
	const char *calibrated = NULL;
	char *identity = NULL;
	int ret, cached = 0, failed = 0, network_only = 0, status = EXIT_NUNATAK_FAILED;

	memset(&env, 0, sizeof(env));
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	machine = machine_describe();
	identity = machine ? machine_identity(machine) : NULL;
	if (!identity) {
		fprintf(stderr, "nunatak: calibrate: cannot describe this Machine: %s\n",
			strerror(errno));
		goto cleanup;
	}
	ret = env.force ? -ENOENT : machine_cache_load(identity, &profile);
	if (ret && ret != -ENOENT)
		fprintf(stderr, "nunatak: calibrate: the cached Machine profile cannot be used (%s): "
				"measuring again\n", strerror(-ret));
	if (!ret) {
		cached = 1;
		calibrated = json_string_value(json_object_get(profile, "calibrated"));
		ceilings = json_incref(json_object_get(profile, "ceilings"));
		/* a launcher given now, and the network not measured here */
		network_only = env.launcher && !network_measured(ceilings);
	}
	if (cached && env.rows)
		fprintf(stderr, "nunatak: calibrate: nothing measured, no row appended to '%s': the "
				"Ceilings are cached; --force measures again\n",
			env.rows);
	if (cached && env.launcher && !network_only)
		fprintf(stderr, "nunatak: calibrate: the network Ceilings are cached; --force measures "
				"them again\n");
	if (!cached || network_only) {
		json_decref(ceilings);
		cached = 0;
		ceilings = measure(machine, identity, network_only, &failed);
		if (!ceilings) {
			fprintf(stderr, "nunatak: calibrate: %s\n", strerror(errno));
			goto cleanup;
		}
	}
	ret = env.json ? print_json(machine, ceilings, cached, calibrated)
		       : print_text(ceilings, cached, calibrated);
	if (ret)
		fprintf(stderr, "nunatak: calibrate: cannot write the Ceilings: %s\n", strerror(-ret));
	status = ret || failed ? EXIT_NUNATAK_FAILED : 0;
cleanup:
	json_decref(ceilings);
	json_decref(profile);
	json_decref(machine);
	free(identity);
	return status;
}
