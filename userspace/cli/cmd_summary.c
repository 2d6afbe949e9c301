/* cmd_summary — `nunatak summary [RUN] [--json]`: the terminal summary of
 * a Run read back from disk, or its JSON twin on stdout. Also the one
 * place that prints a summary for `nunatak run`. */
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

#include "analysis/diagnose.h"
#include "report/summary.h"
#include "userspace/aggregator/finalize.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/cli/cli.h"
#include "userspace/aggregator/run_dir.h"
#include "userspace/config/config.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/run_signals.h"
#include "userspace/launch/tool.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

static struct summary_env {
	const char *run;
	const char *output;
	int json;
} env;

static const char doc[] =
	"Print the summary of a Run again, from its directory.\n"
	"\n"
	"RUN is a Run directory, or a directory name under the runs directory;\n"
	"without it, the most recent Run there.\n"
	"\v"
	"EXAMPLES:\n"
	"  nunatak summary                           the most recent Run\n"
	"  nunatak summary .nunatak/solver-20261130-101500\n"
	"  nunatak summary --json | jq '.hotspots[0]'";

static const struct argp_option options[] = {
	{ "json", 'j', NULL, 0, "Print one JSON object on stdout instead of text", 0 },
	{ "output", 'o', "DIR", 0, "Runs directory to look in (default: config `runs_dir`)", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'j':
		env.json = 1;
		break;
	case 'o':
		env.output = arg;
		break;
	case ARGP_KEY_ARG:
		if (env.run)
			argp_error(state, "one Run at a time: '%s' and '%s'", env.run, arg);
		env.run = arg;
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

/* The Aggregator stopped before the end (nunatak was killed): what was
 * stored is kept, attributed and derived now, and the Run says so; written
 * under dirfd, the Run directory, locked. */
static struct pivot *finalize_interrupted(int dirfd, const char *run_dir, const char *path,
					  json_t *manifest, const char *symbolizer)
{
	struct pivot *p = pivot__open_at(dirfd, PIVOT_FILE, 0, path);
	char trusted[PATH_MAX], why[PATH_MAX + 600];
	const char *dname, *remedy;
	int err;

	if (!p)
		return NULL;
	fprintf(stderr, "nunatak: '%s' was never finalized (nunatak was killed, or its "
			"finalize was stopped): finalizing it now\n", run_dir);
	/* as `nunatak run` does: only a program no other user can change */
	err = 0;
	if (cli_resolve_symbolizer(symbolizer, trusted, sizeof(trusted), &dname, why, sizeof(why),
				   &remedy)) {
		fprintf(stderr, "nunatak: %s\n", why);
		err = pivot_add_degradation(p, dname, why, remedy);
	}
	err = err ?: pivot_add_degradation(p, "run-interrupted",
					   "nunatak stopped before the Run was finalized (it was "
					   "killed, or its finalize was stopped): the Run holds what "
					   "was published until then, and no exit code",
					   "keep nunatak running until it prints the summary");
	err = err ?: finalize_run(p, dirfd, manifest, trusted);
	pivot__free(p);
	if (!err) /* the killed Aggregator's room for the end: the end is now */
		unlinkat(dirfd, RUN_STORAGE_RESERVE_FILE, 0);
	if (err) {
		errno = -err;
		return NULL;
	}
	return pivot__open_at(dirfd, PIVOT_FILE, 1, path);
}

/* A finalized Run whose pivot was left in WAL mode (a reader held it at
 * the end, or an older nunatak wrote it) is sealed now: plain files. */
static struct pivot *seal_finalized(int dirfd, const char *path, struct pivot *p)
{
	struct pivot *rw;

	if (pivot_is_sealed(p) != 0)
		return p;
	pivot__free(p); /* the one connection: leaving WAL mode needs it */
	rw = pivot__open_at(dirfd, PIVOT_FILE, 0, path);
	if (rw)
		pivot_seal(rw); /* on failure (logged) the Run is read as it is */
	pivot__free(rw);
	return pivot__open_at(dirfd, PIVOT_FILE, 1, path);
}

/* 1 when `nunatak summary` may write the Run (finalize or seal it): its
 * writer is gone (lock, what run_dir_lock() answered, is 0: dirfd holds
 * the lock) and it is a private
 * Run of ours (root never writes into a directory another user can
 * change). Otherwise 0, saying on stderr why a Run never finalized is read
 * as it is. */
static int summary_may_write(const char *run_dir, const json_t *manifest, int lock, int dirfd)
{
	char why[128];
	struct stat st;

	if (lock == -EWOULDBLOCK) {
		fprintf(stderr, "nunatak: '%s' is still being written (its nunatak is running): "
				"this is what it holds so far, not final\n", run_dir);
		return 0;
	}
	if (lock) {
		fprintf(stderr, "nunatak: cannot lock '%s' to tell whether it is still being "
				"written (%s): read as it is\n", run_dir,
			errno_text(lock, why, sizeof(why)));
		return 0;
	}
	if (fstat(dirfd, &st) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		if (!manifest_finalized(manifest))
			fprintf(stderr, "nunatak: '%s' was never finalized, but it is not a private "
					"(0700) Run of yours: read as it is, not finalized\n", run_dir);
		return 0;
	}
	return 1;
}

/* The Run's pivot opened read-only under *read_fd (a descriptor of the
 * Run directory, for the caller to close: SQLite opens no path longer than
 * 512 characters, a Run's may be up to PATH_MAX); NULL + errno, said. */
static struct pivot *summary_open_pivot(const char *run_dir, const char *path, int *read_fd)
{
	char why[128];
	struct pivot *p;
	int e;

	*read_fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	p = *read_fd < 0 ? NULL : pivot__open_at(*read_fd, PIVOT_FILE, 1, path);
	if (!p) {
		e = errno;
		fprintf(stderr, "nunatak: cannot read '%s': %s\n", path,
			e == EPROTONOSUPPORT ? "written by a newer nunatak: upgrade nunatak"
			: e == EBADMSG	     ? "not a nunatak pivot (corrupt, or not SQLite)"
					     : errno_text(e, why, sizeof(why)));
		errno = e;
	}
	return p;
}

/* With a symbolizer (summary may write), a Run never finalized is
 * finalized now and a finalized one left in WAL mode sealed, under the
 * lock dirfd holds. The pivot to read (p or its replacement), or NULL +
 * errno, said. */
static struct pivot *summary_finish_run(const char *run_dir, const char *path, json_t *manifest,
					const char *symbolizer, struct pivot *p, int lock, int dirfd)
{
	char why[128];
	int e;

	if (!symbolizer || !summary_may_write(run_dir, manifest, lock, dirfd))
		return p;
	if (manifest_finalized(manifest)) {
		p = seal_finalized(dirfd, path, p);
	} else {
		pivot__free(p);
		p = finalize_interrupted(dirfd, run_dir, path, manifest, symbolizer);
	}
	if (!p) {
		e = errno;
		fprintf(stderr, "nunatak: cannot finalize '%s': %s\n", run_dir,
			errno_text(e, why, sizeof(why)));
		errno = e;
	}
	return p;
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
			      struct diagnosis *d, struct pivot *p, void *extra_json, int live)
{
	char why[128];
	json_t *j;
	int e;

	errno = 0;
	j = summary_json(d, p);
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
		 const char *symbolizer)
{
	char path[PATH_MAX], err[1024], why[128];
	struct diagnosis *d = NULL;
	struct pivot *p;
	json_t *manifest;
	int ret, dirfd = -1, read_fd = -1, lock, live;

	manifest = manifest_read(run_dir, err, sizeof(err));
	if (!manifest) {
		ret = -errno;
		fprintf(stderr, "nunatak: %s\n", err);
		return ret;
	}
	snprintf(path, sizeof(path), "%s/" PIVOT_FILE, run_dir);
	p = summary_open_pivot(run_dir, path, &read_fd);
	/* asked once: may this summary write the Run, is it still written */
	lock = p ? run_dir_lock(run_dir, &dirfd) : -EBADF;
	live = lock == -EWOULDBLOCK;
	if (p)
		p = summary_finish_run(run_dir, path, manifest, symbolizer, p, lock, dirfd);
	if (!p) {
		ret = -errno;
		goto out;
	}
	d = diagnosis__new(p);
	if (!d) {
		ret = -errno;
		fprintf(stderr, "nunatak: cannot analyse '%s': %s\n", path,
			errno_text(ret, why, sizeof(why)));
		goto out;
	}
	if (text_out && live)
		summary_print_live(text_out, p);
	else if (text_out)
		summary_print(text_out, d, p);
	ret = json_out ? summary_print_json(json_out, run_dir, manifest, d, p, extra_json, live)
		       : 0;
	if (!ret)
		ret = summary_status(run_dir, manifest, p, live);
out:
	diagnosis__free(d);
	pivot__free(p);
	if (dirfd >= 0)
		close(dirfd); /* the lock */
	if (read_fd >= 0)
		close(read_fd);
	json_decref(manifest);
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
	static const struct argp argp = { options, parse_arg, "[RUN]", doc, NULL, NULL, NULL };
	char run_dir[PATH_MAX], err[1024];
	struct symbolizer_budget budget;
	struct run_signal sig;
	struct config cfg;
	int ret, signal_fd;

	memset(&env, 0, sizeof(env));
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	config_init(&cfg);
	if (cli_load_config(&cfg)) {
		config_release(&cfg);
		return EXIT_NUNATAK_FAILED;
	}
	if (env.output)
		config_set_runs_dir(&cfg, env.output);
	ret = run_dir_find(cfg.runs_dir, env.run, run_dir, sizeof(run_dir), err, sizeof(err));
	if (ret) {
		config_release(&cfg);
		fprintf(stderr, "nunatak: %s\n", err);
		return 1;
	}
	/* Ctrl-C while a killed Run is finalized stops llvm-symbolizer (its
	 * own process group: the terminal's signal does not reach it) and
	 * ends the finalize at once, the Run saying so */
	signal_fd = run_signals_open();
	symbolizer_budget_init(&budget, 0, SYMBOLIZER_TOTAL_MS, signal_fd);
	symbolizer_budget_bind(&budget);
	ret = summary_show(run_dir, env.json ? NULL : stderr, env.json ? stdout : NULL, NULL,
			   cfg.llvm_symbolizer);
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
