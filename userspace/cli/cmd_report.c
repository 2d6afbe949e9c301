/* cmd_report — `nunatak report [RUN] [--no-source] [--json] [--runs-dir
 * DIR]`: the HTML report of a Run made again from its pivot (the payload
 * and the Diagnostics recomputed, never stored), written into the Run
 * directory (report/report_html.h). Also cli_report_write(), the one
 * place that writes a page, which `nunatak run` uses too. Exit: 0; 1 when
 * the Run cannot be read, analysed or written (said on stderr); 125 for
 * bad usage. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "report/payload.h"
#include "report/report_html.h"
#include "report/run_model.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/run_read.h"
#include "userspace/launch/launch.h"
#include "userspace/log/json_text.h"
#include "userspace/log/log.h"

static struct report_env {
	struct run_where where;
	int json, no_source;
} env;

enum { OPT_NO_SOURCE = 0x100 };

static const char doc[] =
	"Write the HTML report of a Run again, from its directory: one file that opens\n"
	"offline in any browser (no network request), with the summary, the hotspots\n"
	"and their source lines, the ranks and MPI, the flame graph, the MPI timeline\n"
	"and the Component costs. `nunatak run` writes it at the end of each Run.\n"
	"\n"
	"RUN is a Run directory, a directory name under the runs directory, or a\n"
	"runs directory (its most recent Run); without it, the most recent Run.\n"
	"The page is RUN/report.html (RUN/report-no-source.html with --no-source,\n"
	"which holds no line of the program's source: give that one away).\n"
	"\v"
	"EXAMPLES:\n"
	"  nunatak report                          the most recent Run\n"
	"  nunatak report .nunatak/solver-20261130-101500\n"
	"  nunatak report --no-source              a page without source code to share\n"
	"  nunatak report --json | jq .report\n"
	"  xdg-open \"$(nunatak report --json | jq -r .report)\"";

static const struct argp_option options[] = {
	{"no-source", OPT_NO_SOURCE, NULL, 0,
	 "Write report-no-source.html: no line of source code in it", 0},
	{"json", 'j', NULL, 0,
	 "Print {report, bytes, schema, no_source} as JSON on stdout", 0},
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	switch (key) {
	case 'j':
		env.json = 1;
		break;
	case OPT_NO_SOURCE:
		env.no_source = 1;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.where;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int cli_report_write(const struct run_read *r, const char *run_dir, struct run_model *m,
		     char *path, size_t path_len, struct report_html_stats *st)
{
	const char *name = m->no_source ? REPORT_HTML_NO_SOURCE_NAME : REPORT_HTML_NAME;
	char why[128];
	int err;

	m->run_dir = run_dir;
	err = report_html_write(r->read_fd, name, m, m->no_source ? PAYLOAD_NO_SOURCE : 0, st);
	if (err) {
		fprintf(stderr, "nunatak: warning: cannot write %s in '%s': %s\n", name, run_dir,
			errno_text(err, why, sizeof(why)));
		return err;
	}
	if ((size_t)snprintf(path, path_len, "%s/%s", run_dir, name) >= path_len)
		return -ENAMETOOLONG;
	return 0;
}

static int report_print_json(const char *path, const struct report_html_stats *st)
{
	json_t *j = json_pack("{s:o, s:I, s:i, s:b}", "report", json_text(path), "bytes",
			      (json_int_t)st->bytes, "schema", PAYLOAD_SCHEMA, "no_source",
			      env.no_source);

	if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF ||
	    fflush(stdout)) {
		json_decref(j);
		fprintf(stderr, "nunatak: cannot write the --json result: %s\n",
			strerror(errno ? errno : ENOMEM));
		return 1;
	}
	json_decref(j);
	return 0;
}

/* the page of the open Run r: 0, or 1 said */
static int report_run(struct run_read *r, const char *run_dir)
{
	struct report_html_stats st = {0};
	char path[PATH_MAX + 64], why[128];
	struct run_model m;
	int err;

	err = run_model_build(&m, r->p, r->manifest,
			      RUN_MODEL_COMPONENTS | (env.no_source ? RUN_MODEL_NO_SOURCE : 0));
	if (err) {
		fprintf(stderr, "nunatak: cannot analyse '%s': %s\n", run_dir,
			errno_text(err, why, sizeof(why)));
		return 1;
	}
	err = cli_report_write(r, run_dir, &m, path, sizeof(path), &st);
	run_model_release(&m);
	if (err)
		return 1;
	fprintf(stderr, "Report: %s\n", path);
	return env.json ? report_print_json(path, &st) : 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct argp_child children[] = {{&run_where_argp, 0, NULL, 0}, {}};
	static const struct argp argp = {options, parse_arg, "[RUN]", doc, children, NULL, NULL};
	char run_dir[PATH_MAX];
	struct run_read r;
	int ret;

	memset(&env, 0, sizeof(env));
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	ret = run_where_locate(&env.where, run_dir, sizeof(run_dir));
	if (ret)
		return ret;
	/* no symbolizer: a Run never finalized is read as it is (said) */
	if (run_read_open(&r, run_dir, NULL))
		return 1;
	if (r.live) {
		fprintf(stderr,
			"nunatak: '%s' is still being written: its report is made when it "
			"ends ('nunatak report %s' then)\n",
			run_dir, run_dir);
		run_read_close(&r);
		return 1;
	}
	if (!manifest_finalized(r.manifest))
		fprintf(stderr,
			"nunatak: '%s' was never finalized: its names and Measurements may be "
			"missing; 'nunatak summary %s' finalizes it\n",
			run_dir, run_dir);
	ret = report_run(&r, run_dir);
	run_read_close(&r);
	return ret;
}
