/* cmd_components — `nunatak components [RUN] [--json] [--metric M]
 * [--inclusive] [--keep-warm-up]`: what each Component of a Run cost per
 * Step (analysis/components.h), as text on stdout or one JSON object.
 * The Run is found and opened read-only as `nunatak summary` does
 * (run_read.h). Exit: 0; 1 when the Run holds no Component or cannot be
 * read or analysed (said on stderr); 125 for bad usage. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "analysis/components.h"
#include "analysis/components_run.h"
#include "report/components_report.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/run_read.h"
#include "userspace/launch/launch.h"
#include "userspace/log/log.h"

static struct components_env {
	struct run_where where;
	const struct component_metric *metric;
	int json, inclusive, keep_warm_up;
} env;

enum { OPT_INCLUSIVE = 0x100, OPT_KEEP_WARM_UP };

static const char doc[] =
    "What each Component (a function named by `nunatak run --component`) cost per\n"
    "Step (each call of the `--step` function), from a Run's directory.\n"
    "\n"
    "RUN is a Run directory, a directory name under the runs directory, or a\n"
    "runs directory (its most recent Run); without it, the most recent Run.\n"
    "\n"
    "Per Component: its parent (the enclosing Component seen at run time), its\n"
    "calls, its total over the Steps left, per Step (every Step counted, so they\n"
    "add up across Components) and per Step it ran in, its coverage, each Step's\n"
    "value, and the setup (before the first Step) and teardown (after the last)\n"
    "phases. Self costs by default (outside the Components nested in it);\n"
    "--inclusive adds the nested ones. Step 0 is the warm-up: left out unless\n"
    "--keep-warm-up. Where a Component did not run there is no value (null,\n"
    "'-'), never 0. The probe cost per call is shown beside the costs: it is\n"
    "inside them, never subtracted.\n"
    "\v"
    "METRICS: wall_s (default), cpu_s, minor_page_faults, major_page_faults,\n"
    "voluntary_context_switches, involuntary_context_switches,\n"
    "peak_rss_increase_mb (MB = 2^20 bytes, inclusive of nested calls),\n"
    "instructions, cycles (where a PMU exists).\n"
    "\n"
    "EXAMPLES:\n"
    "  nunatak run --component assemble --component solve --step timestep -- ./app\n"
    "  nunatak components                            the most recent Run\n"
    "  nunatak components --metric cpu_s --inclusive\n"
    "  nunatak components .nunatak/app-20261130-101500 --json | jq '.components[0]'";

static const struct argp_option options[] = {
    {"json", 'j', NULL, 0, "Print one JSON object on stdout instead of text", 0},
    {"metric", 'm', "M", 0, "The cost to show (see METRICS; default wall_s)", 0},
    {"inclusive", OPT_INCLUSIVE, NULL, 0, "Inclusive costs: the nested Components added", 0},
    {"keep-warm-up", OPT_KEEP_WARM_UP, NULL, 0, "Count Step 0 (the warm-up) in the totals", 0},
    {},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'j':
		env.json = 1;
		break;
	case 'm':
		env.metric = component_metric_find(arg);
		if (!env.metric)
			argp_error(state, "unknown metric '%s': the metrics are: %s", arg,
				   component_metric_names());
		break;
	case OPT_INCLUSIVE:
		env.inclusive = 1;
		break;
	case OPT_KEEP_WARM_UP:
		env.keep_warm_up = 1;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.where;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* the report of the open Run r: 0, or 1 said */
static int components_report(struct run_read *r, const char *run_dir)
{
	struct component_options opt = {env.metric, env.inclusive, env.keep_warm_up};
	struct component_table *t = NULL;
	struct components_run *run;
	char why[512];
	json_t *j;
	int ret = 1;

	run = components_run__load(r->p);
	if (!run) {
		fprintf(stderr, "nunatak: cannot read the Component costs of '%s': %s\n", run_dir,
			errno_text(-errno, why, sizeof(why)));
		return 1;
	}
	if (!run->in.n_components) {
		fprintf(stderr,
			"nunatak: '%s' holds no Component: give them to the run, e.g. 'nunatak "
			"run --component solve --step timestep -- ./app'\n",
			run_dir);
		goto out;
	}
	t = component_table__new(&run->in, &opt, why, sizeof(why));
	if (!t) {
		fprintf(stderr, "nunatak: cannot analyse the Component costs of '%s': %s\n",
			run_dir, why[0] ? why : strerror(errno));
		goto out;
	}
	if (!env.json) {
		components_print_text(stdout, t, run);
		ret = 0;
		goto out;
	}
	j = components_json(t, run);
	if (j) {
		json_object_set_new(j, "run", json_string(run_dir));
		json_dumpf(j, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(j);
		ret = 0;
	} else {
		fprintf(stderr, "nunatak: cannot build the JSON of '%s': out of memory\n", run_dir);
	}
out:
	component_table__free(t);
	components_run__free(run);
	return ret;
}

int cmd_components(int argc, char **argv)
{
	static const struct argp_child children[] = {{&run_where_argp, 0, NULL, 0}, {}};
	static const struct argp argp = {options, parse_arg, "[RUN]", doc, children, NULL, NULL};
	char run_dir[PATH_MAX];
	struct run_read r;
	int ret;

	memset(&env, 0, sizeof(env));
	env.metric = component_metric_find("wall_s");
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	ret = run_where_locate(&env.where, run_dir, sizeof(run_dir));
	if (ret)
		return ret;
	/* no symbolizer: the Component rows need no names; a Run never
	 * finalized is read as it is */
	if (run_read_open(&r, run_dir, NULL))
		return 1;
	if (r.live)
		fprintf(stderr,
			"nunatak: '%s' is still being written: these are the costs it "
			"holds so far\n",
			run_dir);
	else if (!manifest_finalized(r.manifest))
		fprintf(stderr,
			"nunatak: '%s' was never finalized: its last costs may be "
			"missing; 'nunatak summary %s' finalizes it\n",
			run_dir, run_dir);
	ret = components_report(&r, run_dir);
	run_read_close(&r);
	if (!ret && !env.json)
		fprintf(stderr, "Run: %s\n", run_dir);
	return ret;
}
