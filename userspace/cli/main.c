/* main — `nunatak COMMAND ...`: dispatches to the subcommands. */
#include <argp.h>
#include <stdio.h>
#include <string.h>

#include "userspace/cli/cli.h"
#include "userspace/launch/launch.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
} commands[] = {
	{ "run", cmd_run, "profile a command and everything it starts, write a Run" },
	{ "summary", cmd_summary, "print the summary of a Run again" },
	{ "export", cmd_export, "write a Run for other tools: pprof, folded, speedscope, chrome-trace" },
	{ "components", cmd_components, "what each --component of a Run cost per --step" },
	{ "report", cmd_report, "write a Run's HTML report again (report.html, --no-source)" },
	{ "status", cmd_status, "show the local node service (nunatakd) and its aggregators" },
	{ "keygen", cmd_keygen, "make a CURVE key pair for the service (DIR NAME)" },
	{ "attach", cmd_attach, "profile a running Slurm job (JOBID) on all its nodes" },
	{ "detach", cmd_detach, "end a `nunatak attach JOBID` early" },
	{ "job-prolog", cmd_job_prolog, "for Slurm's Prolog: start profiling a --nunatak job" },
	{ "job-epilog", cmd_job_epilog, "for Slurm's Epilog: end profiling a --nunatak job" },
	{ "calibrate", cmd_calibrate, "measure this Machine's Ceilings (flops, bandwidth), cache them" },
	{ "fit", cmd_fit, "fit the tightest roofline envelope to calibration rows (ROWS.tsv...)" },
	{ "doctor", cmd_doctor, "check what nunatak can do here (and what CMD's binary offers)" },
};

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "usage: nunatak COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].what);
	fprintf(out, "\n'nunatak COMMAND --help' tells more.\n\n"
		     "examples:\n"
		     "  nunatak run -- ./solver input.dat\n"
		     "  nunatak summary --json\n"
		     "  nunatak report --no-source\n"
		     "  nunatak export --format folded -o run.folded\n"
		     "  nunatak status\n"
		     "  nunatak attach 12345 --duration 30\n");
}

int main(int argc, char **argv)
{
	size_t i;

	argp_err_exit_status = EXIT_NUNATAK_FAILED; /* bad usage: 125, as documented */
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_NUNATAK_FAILED : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("nunatak " NUNATAK_VERSION "\n");
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(argv[1], commands[i].name)) {
			/* argp names the program after argv[0] */
			char prog[64];

			snprintf(prog, sizeof(prog), "nunatak %s", commands[i].name);
			argv[1] = prog;
			return commands[i].fn(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "nunatak: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return EXIT_NUNATAK_FAILED;
}
