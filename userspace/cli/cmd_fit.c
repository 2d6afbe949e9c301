/* cmd_fit — `nunatak fit ROWS.tsv... [--margin M] [--format FORMAT]`: the
 * tightest roofline envelope the calibration rows of the files
 * (calibration_rows.h: nunatak's and OCANNL's autotuner's) demonstrate, per
 * backend (analysis/envelope_fit.h), printed (report/fit_report.h) as a
 * block a nunatak.toml takes ([ceilings], config.h), as the autotuner's own
 * model_peak_* lines, or as JSON (--json: --format json). Exit 0; 125 on
 * bad usage; 1 when a file cannot be read or holds a malformed line
 * (file:line: reason on stderr, nothing fitted).
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

enum fit_format { FORMAT_TOML, FORMAT_OCANNL, FORMAT_JSON };

static const char *const format_names[] = { "toml", "ocannl", "json" };

static struct {
	double margin;
	enum fit_format format;
	int format_given, json;
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
	"from OCANNL's autotuner (the same TSV, one row per timed candidate). The\n"
	"output is a [ceilings] block to paste into nunatak.toml: the Runs of this\n"
	"Machine then carry those Ceilings, `measured`, the fit named as their reason.\n"
	"\v"
	"Columns, tab-separated: backend digest routine label measured_ms model_ms\n"
	"kernels flops bytes flops_approx bytes_approx opaque (the older 11 without\n"
	"routine are read too); flags true/false (or 0/1); '#' lines and blank lines\n"
	"are comments.\n"
	"\n"
	"FORMAT: toml (default) the [ceilings] block for nunatak.toml; ocannl the\n"
	"autotuner's own report, model_peak_flops= and model_peak_memory_bandwidth=\n"
	"with its '#' lines, each constant the fit x (1 + 2e-6) in 7 digits\n"
	"truncated; json {fits: [...]} with every digit, not bumped.\n"
	"\n"
	"EXAMPLES:\n"
	"  nunatak fit ~/.cache/nunatak/machines/*.rows.tsv\n"
	"  nunatak calibrate --rows cal.tsv && nunatak fit cal.tsv --margin 1.05\n"
	"  nunatak fit autotuner-calib.tsv --format ocannl\n"
	"  nunatak fit tuner-a.tsv tuner-b.tsv --format json";

static const struct argp_option options[] = {
	{ "margin", 'm', "M", 0, "Multiply the fitted constants by M >= 1 (headroom); default 1",
	  0 },
	{ "format", 'f', "FORMAT", 0,
	  "Print as toml (a [ceilings] block, default), ocannl (the autotuner's model_peak_* "
	  "lines) or json ({fits: [...]})",
	  0 },
	{ "json", 'j', NULL, 0, "The same as --format json", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char *end;
	int i;

	switch (key) {
	case 'm':
		errno = 0;
		env.margin = strtod(arg, &end);
		if (errno || end == arg || *end || !(env.margin >= 1) || !isfinite(env.margin))
			argp_error(state, "--margin '%s': give a number >= 1", arg);
		break;
	case 'f':
		for (i = 0; i < 3 && strcmp(arg, format_names[i]); i++)
			;
		if (i == 3)
			argp_error(state, "--format '%s': give toml, ocannl or json", arg);
		env.format = (enum fit_format)i;
		env.format_given = 1;
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
		if (env.json && env.format_given && env.format != FORMAT_JSON)
			argp_error(state, "--json and --format %s disagree: give one",
				   format_names[env.format]);
		if (env.json)
			env.format = FORMAT_JSON;
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

	if (env.format == FORMAT_TOML)
		return fit_report_text(stdout, in);
	if (env.format == FORMAT_OCANNL)
		return fit_report_ocannl(stdout, in);
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
