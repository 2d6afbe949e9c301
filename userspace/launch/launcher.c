/* launcher — see launcher.h for the contract. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/launch/launcher.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum launcher_kind {
	LAUNCHER_NONE,
	LAUNCHER_MPI,  /* Open MPI, PRRTE and MPICH hydra: one merged table */
	LAUNCHER_SRUN, /* getopt_long, as Slurm parses it */
};

struct launcher_name {
	const char *name;
	enum launcher_kind kind;
};

static const struct launcher_name launcher_names[] = {
    {"mpirun", LAUNCHER_MPI},	       {"mpiexec", LAUNCHER_MPI},
    {"mpiexec.hydra", LAUNCHER_MPI},   {"mpiexec.mpich", LAUNCHER_MPI},
    {"mpirun.mpich", LAUNCHER_MPI},    {"mpirun.openmpi", LAUNCHER_MPI},
    {"mpiexec.openmpi", LAUNCHER_MPI}, {"orterun", LAUNCHER_MPI},
    {"prterun", LAUNCHER_MPI},	       {"srun", LAUNCHER_SRUN},
};

/* processes of a job that are not the application */
static const char *const launcher_helpers[] = {
    "prte", "prted", "orted", "hydra_pmi_proxy", "slurmstepd",
};

/*
 * Options of mpirun/mpiexec (Open MPI 4/5, PRRTE, MPICH hydra), written
 * without their dashes since these launchers accept -opt and --opt alike.
 * The two families agree on the names they share, so one table serves
 * both: whichever program "mpirun" turns out to be, a value is skipped.
 * Entries with no value are listed where a wrong guess would hurt or a
 * joined-number reading (-np4) must not catch them.
 */
struct mpi_option {
	const char *name;
	int values; /* separate words the option consumes */
	int world;  /* declares the number of ranks */
};

static const struct mpi_option mpi_options[] = {
    /* number of ranks: Open MPI's -c is an alias of -np */
    {"n", 1, 1},
    {"np", 1, 1},
    {"c", 1, 1},
    /* Open MPI / PRRTE */
    {"H", 1, 0},
    {"host", 1, 0},
    {"hostfile", 1, 0},
    {"machinefile", 1, 0},
    {"default-hostfile", 1, 0},
    {"map-by", 1, 0},
    {"rank-by", 1, 0},
    {"bind-to", 1, 0},
    {"x", 1, 0},
    {"mca", 2, 0},
    {"gmca", 2, 0},
    {"pmixmca", 2, 0},
    {"prtemca", 2, 0},
    {"tune", 1, 0},
    {"wdir", 1, 0},
    {"wd", 1, 0},
    {"prefix", 1, 0},
    {"N", 1, 0},
    {"npernode", 1, 0},
    {"npersocket", 1, 0},
    {"output-filename", 1, 0},
    {"am", 1, 0},
    {"app", 1, 0},
    {"path", 1, 0},
    {"preload-files", 1, 0},
    {"cpus-per-proc", 1, 0},
    {"cpus-per-rank", 1, 0},
    {"rankfile", 1, 0},
    {"rf", 1, 0},
    {"cpu-set", 1, 0},
    {"cpu-list", 1, 0},
    {"launch-agent", 1, 0},
    {"output", 1, 0},
    {"display", 1, 0},
    {"timeout", 1, 0},
    {"stdin", 1, 0},
    {"xterm", 1, 0},
    {"tmpdir", 1, 0},
    {"personality", 1, 0},
    {"ompi-server", 1, 0},
    {"hnp", 1, 0},
    {"report-uri", 1, 0},
    {"report-bindings", 0, 0},
    {"oversubscribe", 0, 0},
    {"allow-run-as-root", 0, 0},
    {"display-map", 0, 0},
    {"display-allocation", 0, 0},
    {"tag-output", 0, 0},
    {"timestamp-output", 0, 0},
    {"merge-stderr-to-stdout", 0, 0},
    {"s", 0, 0},
    {"preload-binary", 0, 0},
    {"pernode", 0, 0},
    {"noprefix", 0, 0},
    {"nolocal", 0, 0},
    {"use-hwthread-cpus", 0, 0},
    {"enable-recovery", 0, 0},
    {"q", 0, 0},
    {"quiet", 0, 0},
    {"v", 0, 0},
    {"verbose", 0, 0},
    /* MPICH hydra */
    {"f", 1, 0},
    {"hosts", 1, 0},
    {"ppn", 1, 0},
    {"genv", 2, 0},
    {"env", 2, 0},
    {"genvlist", 1, 0},
    {"envlist", 1, 0},
    {"genvall", 0, 0},
    {"genvnone", 0, 0},
    {"envall", 0, 0},
    {"envnone", 0, 0},
    {"launcher", 1, 0},
    {"launcher-exec", 1, 0},
    {"bootstrap", 1, 0},
    {"bootstrap-exec", 1, 0},
    {"iface", 1, 0},
    {"localhost", 1, 0},
    {"configfile", 1, 0},
    {"rmk", 1, 0},
    {"demux", 1, 0},
    {"binding", 1, 0},
    {"outfile-pattern", 1, 0},
    {"errfile-pattern", 1, 0},
    {"gpus-per-proc", 1, 0},
    {"l", 0, 0},
    {"prepend-rank", 0, 0},
    {"profile", 0, 0},
};

/*
 * A getopt_long-style command line: short options cluster (-ln4), a short
 * option taking a value takes the rest of its word or the next word, long
 * options take a value as --opt=value or, when listed, as the next word.
 */
struct getopt_spec {
	const char *short_value;       /* letters taking a value */
	const char *const *long_value; /* long names taking a value, NULL-ended */
	char world_short;	       /* letter declaring the number of ranks */
	const char *world_long;	       /* long name declaring it */
	const char *no_command_short;  /* letters after which no command follows in argv */
	const char *const *no_command_long;
};

static const char *const srun_long_value[] = {
    "ntasks",
    "nodes",
    "cpus-per-task",
    "partition",
    "time",
    "job-name",
    "mpi",
    "cpu-bind",
    "mem",
    "gres",
    "output",
    "error",
    "input",
    "account",
    "nodelist",
    "exclude",
    "constraint",
    "qos",
    "chdir",
    "distribution",
    "gpus",
    "gpus-per-task",
    "gpus-per-node",
    "ntasks-per-node",
    "ntasks-per-socket",
    "ntasks-per-core",
    "mem-per-cpu",
    "mem-per-gpu",
    "mem-bind",
    "dependency",
    "reservation",
    "export",
    "cpu-freq",
    "threads-per-core",
    "cores-per-socket",
    "sockets-per-node",
    "licenses",
    "clusters",
    "core-spec",
    "wait",
    "kill-on-bad-exit",
    "het-group",
    "overlap-force",
    "switches",
    "begin",
    "deadline",
    "comment",
    "mail-type",
    "mail-user",
    "network",
    "nice",
    "profile",
    "propagate",
    "prolog",
    "epilog",
    "task-prolog",
    "task-epilog",
    "signal",
    "slurmd-debug",
    "tmp",
    "uid",
    "gid",
    "container",
    "multi-prog-file",
    "relative",
    "resv-ports",
    "time-min",
    "wckey",
    "hint",
    NULL,
};

static const struct getopt_spec srun_spec = {
    .short_value = "ABcCdDeGiJLmMnNopqStTwWx",
    .long_value = srun_long_value,
    .world_short = 'n',
    .world_long = "ntasks",
};

enum wrapper_tail {
	TAIL_NONE,     /* the command follows the options */
	TAIL_MASK,     /* taskset: one CPU mask or list, then the command */
	TAIL_PRIORITY, /* chrt: an optional numeric priority, then the command */
	TAIL_NICE,     /* nice: legacy "-N" adjustments before the options */
	TAIL_ENV,      /* env: "-" alone is an option (-i) */
};

struct wrapper {
	const char *name;
	struct getopt_spec spec;
	enum wrapper_tail tail;
};

static const char *const env_long[] = {"unset", "chdir", "split-string", NULL};
static const char *const env_split[] = {"split-string", NULL};
static const char *const numactl_long[] = {
    "physcpubind",    "cpunodebind",	     "membind", "interleave", "preferred",
    "preferred-many", "weighted-interleave", NULL,
};
static const char *const taskset_pid[] = {"pid", NULL};
static const char *const time_long[] = {"format", "output", NULL};
static const char *const nice_long[] = {"adjustment", NULL};
static const char *const stdbuf_long[] = {"input", "output", "error", NULL};
static const char *const chrt_long[] = {"sched-runtime", "sched-period", "sched-deadline", NULL};
static const char *const ionice_long[] = {"class", "classdata", "pid", "pgid", "uid", NULL};
static const char *const ionice_pid[] = {"pid", "pgid", "uid", NULL};

static const struct wrapper wrappers[] = {
    {"env",
     {.short_value = "uCS",
      .long_value = env_long,
      .no_command_short = "S",
      .no_command_long = env_split},
     TAIL_ENV},
    {"numactl", {.short_value = "CNmipP", .long_value = numactl_long}, TAIL_NONE},
    {"taskset", {.no_command_short = "p", .no_command_long = taskset_pid}, TAIL_MASK},
    {"time", {.short_value = "fo", .long_value = time_long}, TAIL_NONE},
    {"nice", {.short_value = "n", .long_value = nice_long}, TAIL_NICE},
    {"stdbuf", {.short_value = "ioe", .long_value = stdbuf_long}, TAIL_NONE},
    {"chrt",
     {.short_value = "TPD",
      .long_value = chrt_long,
      .no_command_short = "p",
      .no_command_long = taskset_pid},
     TAIL_PRIORITY},
    {"ionice",
     {.short_value = "cnpPu",
      .long_value = ionice_long,
      .no_command_short = "pPu",
      .no_command_long = ionice_pid},
     TAIL_NONE},
    {"nohup", {0}, TAIL_NONE},
    {"setsid", {0}, TAIL_NONE},
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int in_list(const char *const *list, const char *s, size_t len)
{
	for (; list && *list; list++)
		if (strlen(*list) == len && !strncmp(*list, s, len))
			return 1;
	return 0;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* a declared rank count: decimal digits only, >= 1; -1 otherwise */
static long parse_count(const char *s)
{
	char *end;
	long v;

	if (!s || !all_digits(s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1)
		return -1;
	return v;
}

/* NAME=VAL with NAME a shell identifier */
static int is_assignment(const char *s)
{
	const char *p = s;

	if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
		return 0;
	for (p++; *p && *p != '='; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	return *p == '=';
}

static enum launcher_kind launcher_kind_of(const char *base)
{
	for (size_t k = 0; k < ARRAY_SIZE(launcher_names); k++)
		if (!strcmp(base, launcher_names[k].name))
			return launcher_names[k].kind;
	return LAUNCHER_NONE;
}

static const struct wrapper *wrapper_of(const char *base)
{
	for (size_t k = 0; k < ARRAY_SIZE(wrappers); k++)
		if (!strcmp(base, wrappers[k].name))
			return &wrappers[k];
	return NULL;
}

static const struct mpi_option *mpi_option_find(const char *name, size_t len)
{
	for (size_t k = 0; k < ARRAY_SIZE(mpi_options); k++)
		if (strlen(mpi_options[k].name) == len && !strncmp(mpi_options[k].name, name, len))
			return &mpi_options[k];
	return NULL;
}

/*
 * Skips mpirun/mpiexec options from argv[i]; returns the index of the first
 * word that is not an option (argc when none). *world gets the declared
 * count, or stays untouched.
 */
static int skip_mpi_options(int argc, char *const argv[], int i, long *world)
{
	while (i < argc) {
		const char *w = argv[i], *body, *eq;
		const struct mpi_option *opt;

		if (w[0] != '-' || !w[1])
			return i;
		if (!strcmp(w, "--"))
			return i + 1;
		body = w + 1 + (w[1] == '-');
		eq = strchr(body, '=');
		if (eq) { /* --opt=value, -np=4 */
			opt = mpi_option_find(body, eq - body);
			if (opt && opt->world)
				*world = parse_count(eq + 1);
			i += 1 + (opt && opt->values > 1 ? opt->values - 1 : 0);
			continue;
		}
		opt = mpi_option_find(body, strlen(body));
		if (opt) {
			if (opt->world)
				*world = i + 1 < argc ? parse_count(argv[i + 1]) : -1;
			i += 1 + opt->values;
			continue;
		}
		/* -n4, -np4: a known option name glued to a number */
		for (size_t k = 0; k < ARRAY_SIZE(mpi_options); k++) {
			size_t len = strlen(mpi_options[k].name);

			if (mpi_options[k].values == 1 &&
			    !strncmp(body, mpi_options[k].name, len) && all_digits(body + len)) {
				if (mpi_options[k].world)
					*world = parse_count(body + len);
				break;
			}
		}
		/* unknown options are taken to have no value */
		i++;
	}
	return argc;
}

/*
 * Skips getopt_long-style options from argv[i] as spec describes; returns
 * the index of the first operand (argc when none). *no_command is set when
 * an option says argv holds no command (env -S, taskset -p).
 */
static int skip_getopt_options(int argc, char *const argv[], int i, const struct getopt_spec *spec,
			       long *world, int *no_command)
{
	while (i < argc) {
		const char *w = argv[i];

		if (w[0] != '-' || !w[1])
			return i;
		if (!strcmp(w, "--"))
			return i + 1;
		if (w[1] == '-') {
			const char *name = w + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			int takes = !eq && in_list(spec->long_value, name, len);
			const char *value =
			    eq ? eq + 1 : (takes && i + 1 < argc ? argv[i + 1] : NULL);

			if (spec->world_long && strlen(spec->world_long) == len &&
			    !strncmp(spec->world_long, name, len))
				*world = parse_count(value);
			if (in_list(spec->no_command_long, name, len))
				*no_command = 1;
			i += 1 + takes;
			continue;
		}
		/* a cluster of short options: -ln4, -pdebug, -c */
		for (const char *p = w + 1; *p; p++) {
			if (spec->no_command_short && strchr(spec->no_command_short, *p))
				*no_command = 1;
			if (!spec->short_value || !strchr(spec->short_value, *p))
				continue;
			if (p[1]) { /* value glued: -n4 */
				if (*p == spec->world_short)
					*world = parse_count(p + 1);
			} else { /* value in the next word */
				if (*p == spec->world_short)
					*world = i + 1 < argc ? parse_count(argv[i + 1]) : -1;
				i++;
			}
			break;
		}
		i++;
	}
	return argc;
}

/* index of the word after wrapper argv[i] and everything it owns */
static int skip_wrapper(int argc, char *const argv[], int i, const struct wrapper *wr,
			int *no_command)
{
	long unused = -1;

	i++;
	if (wr->tail == TAIL_NICE) /* nice -10, nice --5 */
		while (i < argc && argv[i][0] == '-' &&
		       all_digits(argv[i] + 1 + (argv[i][1] == '-' || argv[i][1] == '+')))
			i++;
	for (;;) {
		i = skip_getopt_options(argc, argv, i, &wr->spec, &unused, no_command);
		/* env: a lone "-" means -i, options may follow it */
		if (wr->tail == TAIL_ENV && i < argc && !strcmp(argv[i], "-")) {
			i++;
			continue;
		}
		break;
	}
	if (*no_command || i >= argc)
		return i;
	if (wr->tail == TAIL_MASK)
		i++;
	else if (wr->tail == TAIL_PRIORITY && all_digits(argv[i]))
		i++;
	return i;
}

/*
 * MPMD: `mpirun -n 2 a : -n 3 b` declares 5 ranks. Counts the contexts
 * after the first program; -1 as soon as one does not declare its count.
 */
static long mpmd_world(int argc, char *const argv[], int target, enum launcher_kind kind,
		       long first)
{
	long total = first;

	for (int i = target + 1; i < argc && total > 0; i++) {
		long n = -1;
		int unused = 0;

		if (strcmp(argv[i], ":"))
			continue;
		if (kind == LAUNCHER_SRUN)
			skip_getopt_options(argc, argv, i + 1, &srun_spec, &n, &unused);
		else
			skip_mpi_options(argc, argv, i + 1, &n);
		if (n < 1 || total > LONG_MAX - n)
			return -1;
		total += n;
	}
	return total;
}

int launcher_split(int argc, char *const argv[], struct launcher_split *out)
{
	enum launcher_kind world_kind = LAUNCHER_NONE;
	int i = 0, no_command = 0;

	if (argc < 1 || !argv || !out)
		return -EINVAL;
	out->launcher_index = -1;
	out->target_index = -1;
	out->world_size = -1;
	out->launcher[0] = '\0';

	for (int k = 0; k < argc; k++) /* a NULL ends the command line */
		if (!argv[k]) {
			argc = k;
			break;
		}

	while (i < argc) {
		const char *base = base_name(argv[i]);
		const struct wrapper *wr;
		enum launcher_kind kind;

		if (is_assignment(argv[i])) {
			i++;
			continue;
		}
		wr = wrapper_of(base);
		if (wr) {
			i = skip_wrapper(argc, argv, i, wr, &no_command);
			if (no_command)
				return 0;
			continue;
		}
		kind = launcher_kind_of(base);
		if (kind != LAUNCHER_NONE) {
			long world = -1;

			if (out->launcher_index < 0) {
				out->launcher_index = i;
				snprintf(out->launcher, sizeof(out->launcher), "%s", base);
			}
			if (kind == LAUNCHER_SRUN)
				i = skip_getopt_options(argc, argv, i + 1, &srun_spec, &world,
							&no_command);
			else
				i = skip_mpi_options(argc, argv, i + 1, &world);
			if (out->world_size < 0 && world > 0) {
				out->world_size = world;
				world_kind = kind;
			}
			continue;
		}
		out->target_index = i;
		break;
	}
	if (out->target_index >= 0 && world_kind != LAUNCHER_NONE)
		out->world_size =
		    mpmd_world(argc, argv, out->target_index, world_kind, out->world_size);
	return 0;
}

const char *launcher_target_name(int argc, char *const argv[], const struct launcher_split *s)
{
	if (argc < 1 || !argv || !argv[0])
		return "";
	if (s && s->target_index >= 0 && s->target_index < argc && argv[s->target_index])
		return base_name(argv[s->target_index]);
	return base_name(argv[0]);
}

int launcher_is_launcher_process(const char *name)
{
	const char *base;

	if (!name)
		return 0;
	base = base_name(name);
	if (launcher_kind_of(base) != LAUNCHER_NONE)
		return 1;
	for (size_t k = 0; k < ARRAY_SIZE(launcher_helpers); k++)
		if (!strcmp(base, launcher_helpers[k]))
			return 1;
	return 0;
}
