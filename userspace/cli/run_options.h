/* run_options — the command line of `nunatak run`: every option in one
 * struct run_env with its default, numbers range-checked, and a bad value
 * refused naming the option and why (exit 125, as --help says).
 */
#ifndef NUNATAK_CLI_RUN_OPTIONS_H
#define NUNATAK_CLI_RUN_OPTIONS_H

#define RUN_MAX_SOURCE_MAP 16
#define RUN_MAX_COMPONENTS 64 /* as many as run-start carries: AGENT_MAX_COMPONENTS */

struct run_env {
	const char *name;
	const char *output;
	long frequency;		  /* 0: from the configuration */
	int linger_ms;		  /* --linger, default 5 s */
	int symbolizer_budget_ms; /* --symbolizer-budget, default 60 s */
	int json;
	int strict;
	int verbose;
	int mpi_events;
	double mpi_budget; /* --mpi-budget as a share; 0: the default (2 %) */
	int mpi_exact;	   /* --mpi-exact: every MPI call probed */
	int unwinder; /* enum sample_unwinder: --unwinder */
	int no_source;					/* --no-source */
	const char *source_map[RUN_MAX_SOURCE_MAP];	/* --source-map OLD=NEW, in order */
	int n_source_map;
	const char *components[RUN_MAX_COMPONENTS]; /* --component PATTERN, in order */
	int n_components;
	const char *step; /* --step FUNC; NULL: the whole run is one Step */
	char **cmd; /* the application's command line, cmd[0..ncmd) */
	int ncmd;
};

extern struct run_env run_env;

/* Parses argv (after "run") into run_env. 0, or -EINVAL once argp has
 * said what was wrong. */
int run_options_parse(int argc, char **argv);

#endif
