/* cmd_export — `nunatak export [RUN] --format pprof|folded|speedscope|
 * chrome-trace [-o FILE [--force]]`: a Run in an interchange format, on
 * stdout or into FILE. What each format holds is said by its writer:
 * report/export_pprof.h, export_folded.h, export_speedscope.h,
 * export_chrome_trace.h.
 *
 * FILE is created under a descriptor of its directory, O_EXCL|O_NOFOLLOW,
 * 0600 (nunatak runs as root: a link planted at FILE is never followed);
 * an existing FILE is refused unless --force, which writes a new file
 * beside it and renames it over FILE, so a link there is replaced, never
 * followed. A failed export leaves no file behind. pprof (gzip, binary) is
 * not written to a terminal. Exit: 0, 1 when the export failed, 125 for
 * bad usage (pprof to a terminal included). */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/export_chrome_trace.h"
#include "report/export_folded.h"
#include "report/export_pprof.h"
#include "report/export_speedscope.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/aggregator/run_dir.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/run_read.h"
#include "userspace/launch/launch.h"
#include "userspace/log/log.h"

/* Each writes the Run to out and says on stderr what it wrote (to where);
 * 0 or the writer's -errno (said by the caller). */
static int write_folded(struct run_read *r, FILE *out, const char *where)
{
	struct export_folded_stats st;
	int err = export_folded(r->p, out, &st);

	if (!err && st.counter)
		fprintf(stderr,
			"nunatak: %" PRIu64 " folded stacks, %" PRIu64 " %s samples (%" PRIu64
			" on truncated stacks) written to %s\n",
			st.lines, st.samples, st.counter, st.truncated, where);
	return err ?: st.counter ? 0 : 1;
}

static int write_pprof(struct run_read *r, FILE *out, const char *where)
{
	struct export_pprof_stats st;
	int err = export_pprof(r->p, r->manifest, out, &st);

	if (!err && st.counter)
		fprintf(stderr,
			"nunatak: pprof profile: %" PRIu64 " %s samples in %" PRIu64
			" samples of stacks per thread, %" PRIu64 " locations, %" PRIu64
			" functions, %" PRIu64 " mappings; %" PRIu64
			" bytes (gzip) written to %s\n",
			st.samples, st.counter, st.records, st.locations, st.functions, st.mappings,
			st.bytes, where);
	return err ?: st.counter ? 0 : 1;
}

static int write_speedscope(struct run_read *r, FILE *out, const char *where)
{
	struct export_speedscope_stats st;
	int err = export_speedscope(r->p, r->manifest, out, &st);

	if (!err && st.counter)
		fprintf(stderr,
			"nunatak: speedscope: %" PRIu64 " profiles, %" PRIu64 " frames, %" PRIu64
			" %s samples written to %s\n",
			st.profiles, st.frames, st.samples, st.counter, where);
	return err ?: st.counter ? 0 : 1;
}

static int write_chrome_trace(struct run_read *r, FILE *out, const char *where)
{
	struct export_chrome_trace_stats st;
	int err = export_chrome_trace(r->p, r->manifest, out, &st);

	if (!err && st.reason)
		fprintf(stderr,
			"nunatak: chrome trace without MPI Events (%s): %" PRIu64
			" threads named, written to %s\n",
			st.reason, st.loci, where);
	else if (!err)
		fprintf(stderr,
			"nunatak: chrome trace: %" PRIu64 " MPI Events on %" PRIu64
			" threads written to %s\n",
			st.events, st.loci, where);
	return err;
}

/* binary: refused on a terminal */
static const struct format {
	const char *name;
	int (*write)(struct run_read *r, FILE *out, const char *where);
	int binary, needs_samples;
} formats[] = {
    {"pprof", write_pprof, 1, 1},
    {"folded", write_folded, 0, 1},
    {"speedscope", write_speedscope, 0, 1},
    {"chrome-trace", write_chrome_trace, 0, 0},
};
#define N_FORMATS (sizeof(formats) / sizeof(formats[0]))

static struct export_env {
	struct run_where where;
	const struct format *format;
	const char *output;
	int force;
} env;

enum { OPT_FORCE = 0x100 };

static const char doc[] =
    "Write a Run in an interchange format, for the tools people already use.\n"
    "\n"
    "RUN is a Run directory, a directory name under the runs directory, or a\n"
    "runs directory (its most recent Run); without it, the most recent Run.\n"
    "Samples are those of cpu-clock (cycles when only cycles were sampled), on\n"
    "every process and thread, in or out of the kernel: they add up to the Run's.\n"
    "A frame without a function name is MODULE+0xOFFSET; kernel frames are the\n"
    "kernel's functions (module [kernel]); a stack the sampler could not walk to\n"
    "its root starts with [truncated].\n"
    "\n"
    "--format pprof: the profile.proto of pprof, gzip-compressed (go tool pprof,\n"
    "Grafana, Parca, Pyroscope). Values: samples/count and cpu/nanoseconds; one\n"
    "sample per call stack and thread, labelled rank, pid, tid, thread, node; one\n"
    "mapping per module with its build-id and path. Binary: not written to a\n"
    "terminal.\n"
    "--format folded: one line per distinct call stack, its functions from the\n"
    "root to the sampled one separated by ';', a space and its number of samples\n"
    "(flamegraph.pl, inferno, speedscope). In names ';' becomes ':', control\n"
    "characters '?'.\n"
    "--format speedscope: speedscope's JSON file format, one sampled profile per\n"
    "MPI rank (per process and thread for the others), weights in samples.\n"
    "--format chrome-trace: the Trace Event JSON of Perfetto and chrome://tracing:\n"
    "the MPI Events of a Run made with --mpi-events as duration events, one\n"
    "process per rank, one track per thread, times in microseconds from the\n"
    "earliest Event; without Events, an instant event saying why.\n"
    "\v"
    "EXAMPLES:\n"
    "  nunatak export --format folded > run.folded         the most recent Run\n"
    "  nunatak export /scratch/runs -f folded | flamegraph.pl > solver.svg\n"
    "  nunatak export -f pprof -o solver.pb.gz && go tool pprof -top solver.pb.gz\n"
    "  nunatak export .nunatak/solver-20261130-101500 -f speedscope -o solver.json\n"
    "  nunatak export -f chrome-trace -o mpi.json   open it in ui.perfetto.dev\n"
    "  nunatak export -f folded -o run.folded --force      replace run.folded";

static const struct argp_option options[] = {
    {"format", 'f', "FORMAT", 0,
     "Format to write (required): pprof, folded, speedscope, chrome-trace", 0},
    {"output", 'o', "FILE", 0, "Write to FILE (created 0600, never overwritten) instead of stdout",
     0},
    {"force", OPT_FORCE, NULL, 0, "Replace FILE when it exists", 0},
    {},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	size_t i;

	switch (key) {
	case 'f':
		for (env.format = NULL, i = 0; i < N_FORMATS; i++)
			if (!strcmp(arg, formats[i].name))
				env.format = &formats[i];
		if (!env.format)
			argp_error(
			    state,
			    "unknown format '%s': the formats are: pprof, folded, speedscope, "
			    "chrome-trace",
			    arg);
		break;
	case 'o':
		if (!arg[0])
			argp_error(state, "--output needs a file name");
		env.output = arg;
		break;
	case OPT_FORCE:
		env.force = 1;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.where;
		break;
	case ARGP_KEY_END:
		if (!env.format)
			argp_error(state, "--format is required: --format "
					  "pprof|folded|speedscope|chrome-trace");
		if (env.force && !env.output)
			argp_error(state, "--force replaces the file of --output: give -o FILE");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The output file, written under dirfd: FILE itself (new), or with
 * --force a new temporary name beside it (tmp) renamed over FILE at the
 * end. */
struct output {
	int dirfd;
	char base[NAME_MAX + 1], tmp[NAME_MAX + 1];
	FILE *f;
};

/* 0, or -errno said */
static int output_open(struct output *o, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], why[128];
	int fd = -1, e;

	o->dirfd = -1;
	o->f = NULL;
	o->tmp[0] = '\0';
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	if (snprintf(o->base, sizeof(o->base), "%s", slash ? slash + 1 : path) >=
		(int)sizeof(o->base) ||
	    !o->base[0] || !strcmp(o->base, ".") || !strcmp(o->base, "..")) {
		fprintf(stderr, "nunatak: cannot write '%s': not a file name; give -o DIR/FILE\n",
			path);
		return -EINVAL;
	}
	o->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->dirfd < 0) {
		e = -errno;
		fprintf(stderr, "nunatak: cannot write '%s': its directory '%s': %s\n", path, dir,
			errno_text(e, why, sizeof(why)));
		return e;
	}
	if (env.force)
		snprintf(o->tmp, sizeof(o->tmp), ".%.200s.%d.tmp", o->base, (int)getpid());
	fd = openat(o->dirfd, o->tmp[0] ? o->tmp : o->base,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && fchmod(fd, 0600) == 0 && (o->f = fdopen(fd, "w")))
		return 0;
	e = -errno;
	if (fd >= 0) {
		close(fd);
		unlinkat(o->dirfd, o->tmp[0] ? o->tmp : o->base, 0);
	}
	if (e == -EEXIST && !o->tmp[0])
		fprintf(stderr,
			"nunatak: '%s' exists: not overwritten; give another -o FILE, or "
			"--force to replace it\n",
			path);
	else
		fprintf(stderr, "nunatak: cannot create '%s': %s\n", path,
			errno_text(e, why, sizeof(why)));
	close(o->dirfd);
	o->dirfd = -1;
	return e;
}

/* closes o: kept (renamed over FILE with --force) when ok, else removed.
 * 0 or -errno, said. */
static int output_close(struct output *o, const char *path, int ok)
{
	char why[128];
	int e = 0;

	if (!o->f)
		return 0;
	if (fclose(o->f) && ok) {
		e = -errno;
		fprintf(stderr, "nunatak: cannot write '%s': %s\n", path,
			errno_text(e, why, sizeof(why)));
	}
	o->f = NULL;
	if (!e && ok && o->tmp[0] && renameat(o->dirfd, o->tmp, o->dirfd, o->base)) {
		e = -errno;
		fprintf(stderr, "nunatak: cannot replace '%s': %s\n", path,
			errno_text(e, why, sizeof(why)));
	}
	if (e || !ok)
		unlinkat(o->dirfd, o->tmp[0] ? o->tmp : o->base, 0);
	close(o->dirfd);
	o->dirfd = -1;
	return e;
}

/* the export of the Run in run_dir to out (path: its name, NULL for
 * stdout): 0 or -errno, said */
static int export_run(const char *run_dir, FILE *out, const char *path)
{
	struct run_read r;
	char why[128];
	int err;

	/* no symbolizer: a Run never finalized is read as it is (summary
	 * finalizes it), a finalized one left in WAL mode is sealed */
	err = run_read_open(&r, run_dir, NULL);
	if (err)
		return err;
	if (r.live)
		fprintf(stderr,
			"nunatak: '%s' is still being written: this is what it holds so far\n",
			run_dir);
	else if (!manifest_finalized(r.manifest))
		fprintf(stderr,
			"nunatak: '%s' was never finalized: frames may be unnamed; "
			"'nunatak summary %s' finalizes it\n",
			run_dir, run_dir);
	errno = 0;
	err = env.format->write(&r, out, path ? path : "stdout");
	if (err < 0)
		fprintf(stderr, "nunatak: cannot export '%s'%s%s: %s\n", run_dir,
			path ? " to " : "", path ? path : "", errno_text(err, why, sizeof(why)));
	else if (err) /* written, but empty */
		fprintf(stderr, "nunatak: '%s' holds no sample: nothing to export\n", run_dir);
	run_read_close(&r);
	return err < 0 ? err : 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct argp_child children[] = {{&run_where_argp, 0, NULL, 0}, {}};
	static const struct argp argp = {options, parse_arg, "[RUN]", doc, children, NULL, NULL};
	char run_dir[PATH_MAX];
	struct output o = {.dirfd = -1};
	int ret;

	memset(&env, 0, sizeof(env));
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	ret = run_where_locate(&env.where, run_dir, sizeof(run_dir));
	if (ret)
		return ret;
	if (env.format->binary && !env.output && isatty(STDOUT_FILENO)) {
		fprintf(stderr,
			"nunatak: --format %s is binary: not written to a terminal; give -o "
			"FILE or redirect stdout\n",
			env.format->name);
		return EXIT_NUNATAK_FAILED;
	}
	if (env.output && output_open(&o, env.output))
		return 1;
	ret = export_run(run_dir, o.f ? o.f : stdout, env.output);
	if (env.output)
		ret = output_close(&o, env.output, !ret) ?: ret;
	return ret ? 1 : 0;
}
