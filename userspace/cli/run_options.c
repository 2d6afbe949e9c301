/* run_options — see run_options.h. */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/sample.h"
#include "userspace/cli/run_options.h"

#define LINGER_DEFAULT_MS 5000
#define SYMBOLIZER_BUDGET_DEFAULT_MS 60000

struct run_env run_env;



static const char doc[] =
	"Profile CMD and every process it starts, write a Run and print its summary.\n"
	"\n"
	"CMD runs exactly once, with stdin, stdout and stderr untouched; nunatak exits\n"
	"with CMD's exit code (127 not found, 126 not executable, 125 nunatak failed\n"
	"before launch or bad usage, 128+N a signal N stopped nunatak before launch,\n"
	"121 with --strict when a Degradation occurred; 125 also when CMD exited 0 but\n"
	"the --json result could not be written). The Run is written to\n"
	"RUNS_DIR/NAME-YYYYMMDD-HHMMSS/ (manifest.json, pivot.sqlite).\n"
	"\n"
	"Signals: INT, TERM, HUP, QUIT, USR1, USR2, WINCH and the other signals that\n"
	"would end nunatak (ALRM, PROF, XCPU, the real-time ones...) are passed on to\n"
	"CMD (not twice when the terminal sent them to CMD too); nunatak never dies of\n"
	"one while CMD runs. Once CMD has ended, Ctrl-C stops nunatak's remaining work\n"
	"at once: the Run says it was interrupted. A signal sent to the whole process\n"
	"group (kill -TERM -PGID, timeout without --foreground, scancel) reaches CMD\n"
	"twice, directly and passed on: signal nunatak's pid alone to deliver it once.\n"
	"\n"
	"Where nunatakd runs (its socket: NUNATAK_AGENT_SOCKET, else the site's\n"
	"[service] agent_socket, else /run/nunatak/agent.sock), it observes CMD\n"
	"for any user and writes the Run as them; without it (or when it refuses)\n"
	"nunatak observes in-process: as root, or with the bpf-denied Degradation.\n"
	"\v"
	"EXAMPLES:\n"
	"  nunatak run -- ./solver input.dat      profile a program\n"
	"  nunatak run --name baseline -- make    name the Run\n"
	"  nunatak run -F 99 -o /scratch/runs -- ./a.out\n"
	"  nunatak run --json -- ./app > out.json the app's output, then its result\n"
	"  nunatak run -- mpirun -n 8 ./solver    hotspots and MPI time of every rank\n"
	"  nunatak run -e -- srun -n 4 ./app      each MPI call as an Event as well\n"
	"  nunatak run --mpi-exact -- mpirun -n 2 ./pingpong  every MPI call probed\n"
	"  nunatak run --linger 30 -- ./start.sh  observe what it leaves running, 30 s\n"
	"  nunatak run --source-map /build=$HOME/src -- ./app  sources built elsewhere\n"
	"  nunatak run --no-source -- ./app       no line of code in the Run\n"
	"  nunatak run --component 'Pair*::compute' --step Verlet::run -- ./lmp\n"
	"                                         those functions' costs per time step\n"
	"\n"
	"Configuration: /etc/nunatak.toml, then the first nunatak.toml found walking up\n"
	"from the current directory, then these options (keys: name, runs_dir,\n"
	"[sampling] frequency, [tools] llvm-symbolizer, [source] embed, [source_map]).";

enum {
	OPT_LINGER = 0x100,
	OPT_SYMBOLIZER_BUDGET,
	OPT_UNWINDER,
	OPT_NO_SOURCE,
	OPT_SOURCE_MAP,
	OPT_COMPONENT,
	OPT_STEP,
	OPT_MPI_BUDGET,
	OPT_MPI_EXACT,
};

static const struct argp_option options[] = {
	{ "name", 'n', "NAME", 0, "Run name (default: config `name`, else the command's name)", 0 },
	{ "output", 'o', "DIR", 0, "Runs directory (default: config `runs_dir`, else .nunatak)", 0 },
	{ "frequency", 'F', "HZ", 0, "Samples per second per CPU (default 997)", 0 },
	{ "linger", OPT_LINGER, "S", 0,
	  "Observe processes CMD leaves running up to S seconds after it ends (default 5; 0: "
	  "stop when CMD ends); those still alive are named in the Run",
	  0 },
	{ "symbolizer-budget", OPT_SYMBOLIZER_BUDGET, "S", 0,
	  "At most S seconds of llvm-symbolizer for the Run (default 60); addresses it did not "
	  "name keep their ELF names",
	  0 },
	{ "unwinder", OPT_UNWINDER, "HOW", 0,
	  "How call paths are walked: 'tables' (default: the modules' unwind tables, right "
	  "without frame pointers) or 'frame-pointers' (cheaper, wrong where code has none)",
	  0 },
	{ "json", 'j', NULL, 0, "Print the result as one JSON object on stdout", 0 },
	{ "strict", 's', NULL, 0, "Exit 121 when a Degradation occurred", 0 },
	{ "mpi-events", 'e', NULL, 0, "Also record every MPI call as an Event (bounded)", 0 },
	{ "mpi-budget", OPT_MPI_BUDGET, "PCT", 0,
	  "The MPI probes may cost each rank at most PCT % of its time (default: config [mpi] "
	  "budget, else 2); a rank whose "
	  "every call would cost more is probed in sampled windows, its call counts, bytes and "
	  "MPI time then estimates with their error",
	  0 },
	{ "mpi-exact", OPT_MPI_EXACT, NULL, 0,
	  "Probe every MPI call, whatever it costs (each ~10-20 us on a VM; the Run says what it "
	  "cost)",
	  0 },
	{ "no-source", OPT_NO_SOURCE, NULL, 0,
	  "Embed no line of source code in the Run (config [source] embed = false)", 0 },
	{ "source-map", OPT_SOURCE_MAP, "OLD=NEW", 0,
	  "Look for a source file the debug information places under OLD under NEW "
	  "(repeatable, tried in order before config [source_map])",
	  0 },
	{ "component", OPT_COMPONENT, "PATTERN", 0,
	  "Measure the calls of the functions PATTERN names (a demangled name, with or without "
	  "its parameters, or a glob over it) in the program and its libraries: wall and CPU "
	  "time, faults, context switches, peak RSS increase, per Step (repeatable; see "
	  "`nunatak components`)",
	  0 },
	{ "step", OPT_STEP, "FUNC", 0,
	  "Each call of FUNC is one Step (a time step, an event; Step 0 is the warm-up); "
	  "without it the whole run is one Step",
	  0 },
	{ "verbose", 'v', NULL, 0, "Say more about what nunatak does", 0 },
	{},
};

/* seconds with a fraction, from min_s to 86400, as milliseconds */
static int parse_seconds(struct argp_state *state, const char *opt, const char *arg, double min_s)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(s) || s < min_s || s > 86400)
		argp_error(state, "invalid --%s '%s': seconds, %s to 86400", opt, arg,
			   min_s > 0 ? "more than 0" : "from 0");
	return (int)(s * 1000 + 0.5);
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char *end;

	switch (key) {
	case 'n':
		if (!arg[0] || !strcmp(arg, ".") || !strcmp(arg, ".."))
			argp_error(state, "invalid --name '%s': %s", arg,
				   arg[0] ? "not a name for a Run" : "empty; give a name or leave "
								     "--name out");
		run_env.name = arg;
		break;
	case 'o':
		if (!arg[0])
			argp_error(state, "invalid --output '': an empty path; give the directory of "
					  "the Runs (e.g. -o runs), or leave -o out");
		run_env.output = arg;
		break;
	case 'F':
		errno = 0;
		run_env.frequency = strtol(arg, &end, 10);
		if (errno || end == arg || *end || run_env.frequency < 1 || run_env.frequency > 100000)
			argp_error(state, "invalid --frequency '%s': an integer from 1 to 100000", arg);
		break;
	case OPT_LINGER:
		run_env.linger_ms = parse_seconds(state, "linger", arg, 0);
		break;
	case OPT_SYMBOLIZER_BUDGET:
		run_env.symbolizer_budget_ms = parse_seconds(state, "symbolizer-budget", arg, 0.001);
		break;
	case OPT_UNWINDER:
		if (!strcmp(arg, "tables"))
			run_env.unwinder = SAMPLE_UNWINDER_TABLES;
		else if (!strcmp(arg, "frame-pointers"))
			run_env.unwinder = SAMPLE_UNWINDER_FRAME_POINTERS;
		else
			argp_error(state, "invalid --unwinder '%s': 'tables' or 'frame-pointers'", arg);
		break;
	case 'j':
		run_env.json = 1;
		break;
	case 's':
		run_env.strict = 1;
		break;
	case 'v':
		run_env.verbose = 1;
		break;
	case OPT_NO_SOURCE:
		run_env.no_source = 1;
		break;
	case OPT_SOURCE_MAP:
		if (!strchr(arg, '=') || arg[0] == '=' || !strchr(arg, '=')[1])
			argp_error(state, "invalid --source-map '%s': give OLD=NEW, both paths", arg);
		if (run_env.n_source_map >= RUN_MAX_SOURCE_MAP)
			argp_error(state, "too many --source-map: at most %d", RUN_MAX_SOURCE_MAP);
		run_env.source_map[run_env.n_source_map++] = arg;
		break;
	case 'e':
		run_env.mpi_events = 1;
		break;
	case OPT_MPI_BUDGET: {
		double pct;

		errno = 0;
		pct = strtod(arg, &end);
		if (!errno && end != arg && *end == '%')
			end++;
		if (errno || end == arg || *end || !isfinite(pct) || !(pct > 0) || pct >= 100)
			argp_error(state, "invalid --mpi-budget '%s': a percentage, more than 0 and "
					  "less than 100 (e.g. 2%%)", arg);
		if (run_env.mpi_exact)
			argp_error(state, "--mpi-budget and --mpi-exact: give one");
		run_env.mpi_budget = pct / 100;
		break;
	}
	case OPT_MPI_EXACT:
		if (run_env.mpi_budget > 0)
			argp_error(state, "--mpi-budget and --mpi-exact: give one");
		run_env.mpi_exact = 1;
		break;
	case OPT_COMPONENT:
		if (!arg[0])
			argp_error(state, "invalid --component '': give a function name or a glob");
		if (run_env.n_components >= RUN_MAX_COMPONENTS)
			argp_error(state, "too many --component: at most %d", RUN_MAX_COMPONENTS);
		run_env.components[run_env.n_components++] = arg;
		break;
	case OPT_STEP:
		if (!arg[0])
			argp_error(state, "invalid --step '': give the name of the function whose "
					  "every call is one Step");
		run_env.step = arg;
		break;
	case ARGP_KEY_ARG:
		/* the command and everything after it belong to the application */
		run_env.cmd = &state->argv[state->next - 1];
		run_env.ncmd = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!run_env.cmd)
			argp_error(state, "no command to profile: nunatak run [OPTIONS] -- CMD [ARGS...]");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}
int run_options_parse(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[--] CMD [ARGS...]", doc, NULL, NULL, NULL };

	memset(&run_env, 0, sizeof(run_env));
	run_env.linger_ms = LINGER_DEFAULT_MS;
	run_env.symbolizer_budget_ms = SYMBOLIZER_BUDGET_DEFAULT_MS;
	return argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, NULL) ? -EINVAL : 0;
}
