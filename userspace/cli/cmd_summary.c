/* cmd_summary — `nunatak summary [RUN] [--json]`: the terminal summary of
 * a Run read back from disk (userspace/cli/run_read.h), or its JSON twin on
 * stdout. Also the one place that prints a summary for `nunatak run`. */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <sqlite3.h>

#include "report/run_model.h"
#include "report/summary.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/run_read.h"
#include "userspace/aggregator/run_dir.h"
#include "userspace/config/config.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/run_signals.h"
#include "userspace/launch/tool.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

static struct summary_env {
	struct run_where where;
	int json;
} env;

static const char doc[] =
	"Print the summary of a Run again, from its directory.\n"
	"\n"
	"RUN is a Run directory, a directory name under the runs directory, or a\n"
	"runs directory (its most recent Run); without it, the most recent Run in\n"
	"the runs directory.\n"
	"\v"
	"EXAMPLES:\n"
	"  nunatak summary                           the most recent Run\n"
	"  nunatak summary .nunatak/solver-20261130-101500\n"
	"  nunatak summary /scratch/runs              the most recent Run there\n"
	"  nunatak summary --json | jq '.hotspots[0]'";

static const struct argp_option options[] = {
	{ "json", 'j', NULL, 0, "Print one JSON object on stdout instead of text", 0 },
	{ "output", 'o', "DIR", 0, "The same as --runs-dir DIR", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'j':
		env.json = 1;
		break;
	case 'o':
		env.where.runs_dir = arg;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.where;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int count_degradation(const char *name, const char *message, const char *remedy, void *ctx)
{
	(void)name;
	(void)message;
	(void)remedy;
	(*(int *)ctx)++;
	return 0;
}

/* A Run still written: what it holds so far. Its hotspots are derived
 * when it is finalized, so the full summary would say "no samples". */
static void summary_print_live(FILE *out, struct pivot *p)
{
	sqlite3_stmt *stmt = NULL;
	long long batches = -1, samples = -1;

	if (sqlite3_prepare_v2(pivot_sqlite(p),
			       "SELECT (SELECT count(*) FROM batches),"
			       " (SELECT coalesce(sum(sample_count), 0) FROM samples)",
			       -1, &stmt, NULL) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW) {
		batches = sqlite3_column_int64(stmt, 0);
		samples = sqlite3_column_int64(stmt, 1);
	}
	sqlite3_finalize(stmt);
	if (batches < 0) {
		fprintf(out, "nunatak: the Run cannot be read while it is written: %s\n",
			sqlite3_errmsg(pivot_sqlite(p)));
		return;
	}
	fprintf(out, "nunatak: %lld Batches (%lld samples) stored so far; its hotspots, "
		     "Measurements and Degradations are computed when it is finalized: "
		     "'nunatak summary' shows them then\n", batches, samples);
}

/* the JSON summary on json_out: 0, or -errno said */
static int summary_print_json(FILE *json_out, const char *run_dir, const json_t *manifest,
			      const struct run_model *m, void *extra_json, int live)
{
	char why[128];
	json_t *j;
	int e;

	errno = 0;
	j = summary_json(m);
	if (!j) {
		e = errno ? errno : ENOMEM;
		fprintf(stderr, "nunatak: cannot build the JSON summary of '%s': %s\n", run_dir,
			errno_text(e, why, sizeof(why)));
		return -e;
	}
	if (extra_json)
		json_object_update(j, extra_json);
	else
		json_object_set_new(j, "run", json_string(run_dir));
	json_object_set(j, "manifest_run", json_object_get(manifest, "run"));
	/* a Run still written: its Measurements are derived when finalized */
	json_object_set_new(j, "being_written", json_boolean(live));
	json_dumpf(j, json_out, JSON_INDENT(2));
	fputc('\n', json_out);
	fflush(json_out);
	json_decref(j);
	return 0;
}

/* 1 when the Run has Degradations or is not finalized (said), else 0 */
static int summary_status(const char *run_dir, const json_t *manifest, struct pivot *p,
			  int live)
{
	int degradations = 0;

	pivot_for_each_degradation(p, count_degradation, &degradations);
	if (!manifest_finalized(manifest) && !live) {
		/* its finalize failed (e.g. the disk is full): what it lacks is
		 * not known, so the summary cannot say "none" */
		fprintf(stderr, "nunatak: '%s' is not finalized: names, Measurements and "
				"Degradations may be missing; 'nunatak summary %s' finalizes it "
				"once its nunatak has stopped and there is room\n", run_dir, run_dir);
		return 1;
	}
	return degradations ? 1 : 0;
}

int summary_show(const char *run_dir, FILE *text_out, FILE *json_out, void *extra_json,
		 const char *symbolizer, char *report_path, size_t report_path_len)
{
	struct run_model m;
	struct run_read r;
	char why[128];
	int ret;

	ret = run_read_open(&r, run_dir, symbolizer);
	if (ret)
		return ret;
	if (report_path)
		report_path[0] = '\0';
	ret = run_model_build(&m, r.p, r.manifest, report_path ? RUN_MODEL_COMPONENTS : 0);
	if (ret) {
		fprintf(stderr, "nunatak: cannot analyse '%s': %s\n", r.path,
			errno_text(ret, why, sizeof(why)));
		goto out;
	}
	if (text_out && r.live)
		summary_print_live(text_out, r.p);
	else if (text_out)
		summary_print(text_out, &m);
	ret = json_out ? summary_print_json(json_out, run_dir, r.manifest, &m, extra_json, r.live)
		       : 0;
	if (!ret)
		ret = summary_status(run_dir, r.manifest, r.p, r.live);
	/* the page of a Run still written would be a partial one */
	if (report_path && !r.live &&
	    cli_report_write(&r, run_dir, &m, report_path, report_path_len, NULL))
		report_path[0] = '\0';
	run_model_release(&m);
out:
	run_read_close(&r);
	return ret;
}

int cli_resolve_symbolizer(const char *name, char *path, size_t pathlen, const char **dname,
			   char *message, size_t messagelen, const char **remedy)
{
	char why[PATH_MAX + 512];
	int e;

	e = tool_resolve_trusted(name, path, pathlen, why, sizeof(why));
	if (!e)
		return 0;
	path[0] = '\0';
	if (e == -EPERM) {
		*dname = "symbolizer-untrusted";
		*remedy = "give tools.llvm-symbolizer a program only root (or you) can write, e.g. "
			  "/usr/bin/llvm-symbolizer";
		snprintf(message, messagelen, "%s: names will come from ELF symbols only", why);
		return e;
	}
	*dname = "symbolizer-missing";
	*remedy = "apt-get install llvm, or set tools.llvm-symbolizer in nunatak.toml";
	if (e == -ENOENT)
		snprintf(message, messagelen, "'%s' not found: names will come from ELF symbols only",
			 name);
	else
		snprintf(message, messagelen, "%s: names will come from ELF symbols only", why);
	return e;
}

int cli_load_config(struct config *cfg)
{
	const char *site = getenv("NUNATAK_SITE_CONFIG");
	char err[1024];

	if (config_load(cfg, site ? site : "/etc/nunatak.toml", NULL, err, sizeof(err))) {
		fprintf(stderr, "nunatak: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

int cmd_summary(int argc, char **argv)
{
	static const struct argp_child children[] = {{&run_where_argp, 0, NULL, 0}, {}};
	static const struct argp argp = {options, parse_arg, "[RUN]", doc, children, NULL, NULL};
	char run_dir[PATH_MAX];
	struct symbolizer_budget budget;
	struct run_signal sig;
	struct config cfg;
	int ret, signal_fd;

	memset(&env, 0, sizeof(env));
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	ret = run_read_locate(&cfg, env.where.runs_dir, env.where.run, run_dir, sizeof(run_dir));
	if (ret)
		return ret;
	/* Ctrl-C while a killed Run is finalized stops llvm-symbolizer (its
	 * own process group: the terminal's signal does not reach it) and
	 * ends the finalize at once, the Run saying so */
	signal_fd = run_signals_open();
	symbolizer_budget_init(&budget, 0, SYMBOLIZER_TOTAL_MS, signal_fd);
	symbolizer_budget_bind(&budget);
	ret = summary_show(run_dir, env.json ? NULL : stderr, env.json ? stdout : NULL, NULL,
			   cfg.llvm_symbolizer, NULL, 0);
	symbolizer_budget_bind(NULL);
	config_release(&cfg);
	if (signal_fd >= 0 && run_signals_read(signal_fd, &sig) == 1) {
		fprintf(stderr, "nunatak: stopped by signal %d (%s)\n", sig.signo,
			strsignal(sig.signo));
		close(signal_fd);
		return 128 + sig.signo;
	}
	if (signal_fd >= 0)
		close(signal_fd);
	if (ret < 0)
		return 1;
	if (!env.json)
		fprintf(stderr, "Run: %s\n", run_dir);
	return 0;
}
