/* cmd_fit — `nunatak fit ROWS.tsv... [--margin M] [--json]`: the tightest
 * roofline envelope the calibration rows of the files (calibration_rows.h)
 * demonstrate, per backend (analysis/envelope_fit.h), printed as a block a
 * nunatak.toml takes ([ceilings], config.h) or as JSON (report/
 * fit_report.h). Exit 0; 125 on bad usage; 1 when a file cannot be read or
 * holds a malformed line (file:line: reason on stderr, nothing fitted).
 */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/envelope_fit.h"
#include "report/fit_report.h"
#include "userspace/calibration/calibration_rows.h"
#include "userspace/cli/cli.h"
#include "userspace/launch/launch.h"

static struct {
	double margin;
	int json;
	char **files;
	int nfiles;
} env;

static const char doc[] =
	"Fit the tightest roofline envelope (peak FLOP/s, peak memory bandwidth) under\n"
	"which the bound of every calibration row holds: each leg is the best rate\n"
	"achieved by a non-opaque row whose count for it is exact; rows of several\n"
	"kernels run in sequence raise both legs by the smallest fission slack that\n"
	"makes flops/peak_flops + bytes/peak_bw <= time hold on each of them. Rows\n"
	"come from `nunatak calibrate` (the Machine's rows file, or --rows FILE) or\n"
	"any tool writing the same TSV (one row per timed candidate). The output is a\n"
	"[ceilings] block to paste into nunatak.toml: the Runs of this Machine then\n"
	"carry those Ceilings, `measured`, the fit named as their reason.\n"
	"\v"
	"Columns, tab-separated: backend digest routine label measured_ms model_ms\n"
	"kernels flops bytes flops_approx bytes_approx opaque (the older 11 without\n"
	"routine are read too); '#' lines and blank lines are comments.\n"
	"\n"
	"EXAMPLES:\n"
	"  nunatak fit ~/.cache/nunatak/machines/*.rows.tsv\n"
	"  nunatak calibrate --rows cal.tsv && nunatak fit cal.tsv --margin 1.05\n"
	"  nunatak fit tuner-a.tsv tuner-b.tsv --json";

static const struct argp_option options[] = {
	{ "margin", 'm', "M", 0, "Multiply the fitted constants by M >= 1 (headroom); default 1",
	  0 },
	{ "json", 'j', NULL, 0, "Print {fits: [...]} as one JSON object on stdout", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char *end;

	switch (key) {
	case 'm':
		errno = 0;
		env.margin = strtod(arg, &end);
		if (errno || end == arg || *end || !(env.margin >= 1) || !isfinite(env.margin))
			argp_error(state, "--margin '%s': give a number >= 1", arg);
		break;
	case 'j':
		env.json = 1;
		break;
	case ARGP_KEY_ARGS: /* every file, options anywhere */
		env.files = &state->argv[state->next];
		env.nfiles = state->argc - state->next;
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!env.nfiles)
			argp_error(state, "give at least one rows file");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int print(const struct fit_report_input *in)
{
	json_t *doc;
	int ret = 0;

	if (!env.json)
		return fit_report_text(stdout, in);
	doc = fit_report_json(in);
	if (!doc)
		return -ENOMEM;
	if (json_dumpf(doc, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF || fflush(stdout))
		ret = -EIO;
	json_decref(doc);
	return ret;
}

int cmd_fit(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "ROWS.tsv...", doc, NULL, NULL, NULL };
	struct calibration_rows set = { 0 };
	struct envelope_fit *fits = NULL;
	struct fit_report_input in = { 0 };
	char err[1024], date[16];
	time_t now = time(NULL);
	struct tm tm;
	int i, ret = 0, status = 1;

	memset(&env, 0, sizeof(env));
	env.margin = 1;
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	for (i = 0; !ret && i < env.nfiles; i++) {
		ret = calibration_rows_read_file(env.files[i], &set, err, sizeof(err));
		if (ret)
			fprintf(stderr, "nunatak: fit: %s\n",
				ret == -ENOMEM ? strerror(ENOMEM) : err);
	}
	if (ret)
		goto cleanup;
	ret = envelope_fit(set.rows, set.n, &fits, &in.nfits);
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%d", &tm);
	in = (struct fit_report_input){ set.rows, fits,	   in.nfits, (const char *const *)env.files,
					 (size_t)env.nfiles, env.margin, date };
	ret = ret ? ret : print(&in);
	if (ret)
		fprintf(stderr, "nunatak: fit: cannot print the fit: %s\n", strerror(-ret));
	status = ret ? 1 : 0;
cleanup:
	free(fits);
	calibration_rows_release(&set);
	return status;
}
