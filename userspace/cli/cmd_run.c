/* cmd_run — `nunatak run [opts] -- CMD ARGS...`: profile CMD and every
 * descendant, write the Run, print its summary, exit with CMD's code.
 *
 * Embedded mode: the Aggregator runs in a thread of this process and the
 * Agent in the main thread; they speak only the wire protocol over
 * inproc://, as they would across a cluster. The application runs exactly
 * once, whatever fails around it: a missing capability is a Degradation
 * announced before launch, never a refusal.
 *
 * Every wait is bounded: START and its Ack (START_TIMEOUT_MS), the
 * Batches (agent.h), the lingering processes (--linger), llvm-symbolizer
 * (--symbolizer-budget) and FINALIZE. A failure before launch exits 125
 * with its cause and removes the Run directory; after launch nunatak
 * exits with the application's code whatever fails. Signals: see
 * run_signals.h; once the application has ended, a stop signal (Ctrl-C)
 * ends the wait for lingering processes and the finalize at once.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include <zmq.h>

#include "userspace/agent/agent.h"
#include "userspace/aggregator/aggregator.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/control.h"
#include "userspace/cli/provenance.h"
#include "userspace/cli/run_dir.h"
#include "userspace/cli/run_observe.h"
#include "userspace/cli/run_signals.h"
#include "userspace/config/config.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/launcher.h"
#include "userspace/launch/tool.h"
#include "userspace/log/log.h"
#include "userspace/machine/machine.h"
#include "userspace/wire/wire.h"

#define START_TIMEOUT_MS 5000	   /* START makes a directory and two files */
#define FINALIZE_EXTRA_MS 120000   /* FINALIZE beyond the symbolizer's budget */
#define FINALIZE_GRACE_MS 3000	   /* after a stop: the finalize ends without llvm-symbolizer */
#define JOIN_TIMEOUT_MS 2000	   /* the Aggregator thread, once told to stop */
#define LINGER_DEFAULT_MS 5000
#define SYMBOLIZER_BUDGET_DEFAULT_MS 60000

static struct run_env {
	const char *name;
	const char *output;
	long frequency; /* 0: from the configuration */
	int linger_ms;
	int symbolizer_budget_ms;
	int json;
	int strict;
	int verbose;
	int mpi_events;
	char **cmd;
	int ncmd;
} env;

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
	"Signals: INT, TERM, HUP, QUIT, USR1, USR2 and WINCH are passed on to CMD (not\n"
	"twice when the terminal sent them to CMD too). Once CMD has ended, Ctrl-C stops\n"
	"nunatak's remaining work at once: the Run says it was interrupted.\n"
	"\v"
	"EXAMPLES:\n"
	"  nunatak run -- ./solver input.dat      profile a program\n"
	"  nunatak run --name baseline -- make    name the Run\n"
	"  nunatak run -F 99 -o /scratch/runs -- ./a.out\n"
	"  nunatak run --json -- ./app > out.json JSON result on stdout after the app's\n"
	"  nunatak run -- mpirun -n 8 ./solver    hotspots and MPI time of every rank\n"
	"  nunatak run -e -- srun -n 4 ./app      each MPI call as an Event as well\n"
	"  nunatak run --linger 30 -- ./start-daemon  observe what it leaves running 30 s more\n"
	"\n"
	"Configuration: /etc/nunatak.toml, then the first nunatak.toml found walking up\n"
	"from the current directory, then these options (keys: name, runs_dir,\n"
	"[sampling] frequency, [tools] llvm-symbolizer).";

enum { OPT_LINGER = 0x100, OPT_SYMBOLIZER_BUDGET };

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
	{ "json", 'j', NULL, 0, "Print the result as one JSON object on stdout", 0 },
	{ "strict", 's', NULL, 0, "Exit 121 when a Degradation occurred", 0 },
	{ "mpi-events", 'e', NULL, 0, "Also record every MPI call as an Event (bounded)", 0 },
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
		env.name = arg;
		break;
	case 'o':
		if (!arg[0])
			argp_error(state, "invalid --output '': an empty path; give the directory of "
					  "the Runs (e.g. -o runs), or leave -o out");
		env.output = arg;
		break;
	case 'F':
		errno = 0;
		env.frequency = strtol(arg, &end, 10);
		if (errno || end == arg || *end || env.frequency < 1 || env.frequency > 100000)
			argp_error(state, "invalid --frequency '%s': an integer from 1 to 100000", arg);
		break;
	case OPT_LINGER:
		env.linger_ms = parse_seconds(state, "linger", arg, 0);
		break;
	case OPT_SYMBOLIZER_BUDGET:
		env.symbolizer_budget_ms = parse_seconds(state, "symbolizer-budget", arg, 0.001);
		break;
	case 'j':
		env.json = 1;
		break;
	case 's':
		env.strict = 1;
		break;
	case 'v':
		env.verbose = 1;
		break;
	case 'e':
		env.mpi_events = 1;
		break;
	case ARGP_KEY_ARG:
		/* the command and everything after it belong to the application */
		env.cmd = &state->argv[state->next - 1];
		env.ncmd = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!env.cmd)
			argp_error(state, "no command to profile: nunatak run [OPTIONS] -- CMD [ARGS...]");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void *aggregator_thread(void *arg)
{
	struct aggregator *agg = arg;

	aggregator_serve(agg, 1);
	return NULL;
}

static int announce(const char *name, const char *message, const char *remedy, void *ctx)
{
	(void)ctx;
	fprintf(stderr, "nunatak: degradation %s: %s\n         remedy: %s\n", name, message, remedy);
	return 0;
}

static void iso_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *manifest_seed(const char *name, const struct config *cfg, const char *start,
			     const char *node)
{
	json_t *command = json_array();
	int i;

	for (i = 0; command && i < env.ncmd; i++)
		json_array_append_new(command, json_string(env.cmd[i]));
	return json_pack("{s:{s:s, s:i, s:s}, s:{s:s, s:s, s:o, s:n}, s:o, s:[s], s:o,"
			 " s:[{s:i, s:n, s:s, s:n, s:[{s:s, s:s}]}], s:[]}",
			 "format", "name", "nunatak-run", "schema", 1, "generated_by",
			 "nunatak " NUNATAK_VERSION,
			 "run", "name", name, "created", start, "command", command, "exit_code",
			 "machine", machine_snapshot(),
			 "nodes", node,
			 "provenance", provenance_json(cfg),
			 "passes", "index", 0, "exit_code", "start", start, "end", "collectors",
			 "tool", "nunatak-bpf-sampling", "version", NUNATAK_VERSION,
			 "degradations");
}

struct seed_job {
	const char *name, *start, *node;
	const struct config *cfg;
	const struct launcher_split *split;
	json_t *seed; /* out */
};

static void *seed_job_run(void *arg)
{
	struct seed_job *sj = arg;
	json_t *run;

	sj->seed = manifest_seed(sj->name, sj->cfg, sj->start, sj->node);
	run = json_object_get(sj->seed, "run");
	if (!run)
		return NULL;
	json_object_set_new(run, "launcher",
			    sj->split->launcher[0] ? json_string(sj->split->launcher) : json_null());
	json_object_set_new(run, "target",
			    sj->split->target_index >= 0
				    ? json_string(env.cmd[sj->split->target_index])
				    : json_null());
	json_object_set_new(run, "world_size",
			    sj->split->world_size > 0 ? json_integer(sj->split->world_size)
						      : json_null());
	return NULL;
}


/* the application behind any launcher and wrappers: "app", never "mpirun" */
static const char *default_name(const struct launcher_split *split)
{
	return launcher_target_name(env.ncmd, env.cmd, split);
}

/* One `nunatak run`, phase by phase. */
struct run {
	struct config cfg;
	char exe[PATH_MAX], run_dir[PATH_MAX], target[PATH_MAX], symbolizer[PATH_MAX];
	char node[256], start[32], endpoint[64];
	const char *name, *run_id;
	struct stat run_st; /* the Run directory made: the Aggregator checks it is the one */
	struct launcher_split split;
	void *zctx;
	struct aggregator *agg;
	pthread_t thread;
	int thread_started, thread_stuck;
	struct agent *agent;
	json_t *seed;
	struct launch l;
	int signal_fd;
	int exit_code;	 /* the application's, once it ran */
	int stop_signo;	 /* a stop signal after the application ended */
	int interrupted; /* the finalize was stopped */
	int finalized;
};

/* Options over the configuration, the command resolved. 0, or the exit
 * code (a message was printed). */
static int run_configure(struct run *r)
{
	int e;

	if (cli_load_config(&r->cfg))
		return EXIT_NUNATAK_FAILED;
	if ((env.name && config_set_name(&r->cfg, env.name)) ||
	    (env.output && config_set_runs_dir(&r->cfg, env.output)) ||
	    (env.frequency && config_set_sampling_frequency(&r->cfg, env.frequency))) {
		fprintf(stderr, "nunatak: cannot apply the options: %s\n", strerror(ENOMEM));
		return EXIT_NUNATAK_FAILED;
	}
	e = launch_resolve(env.cmd[0], r->exe, sizeof(r->exe));
	if (e) {
		fprintf(stderr, "nunatak: '%s': %s\n", env.cmd[0],
			e == -EACCES ? "not executable" : "command not found");
		return e == -EACCES ? EXIT_NOT_EXECUTABLE : EXIT_NOT_FOUND;
	}
	launcher_split(env.ncmd, env.cmd, &r->split);
	r->name = r->cfg.name ? r->cfg.name : default_name(&r->split);
	gethostname(r->node, sizeof(r->node) - 1);
	return 0;
}

/* The Aggregator: a ROUTER on inproc://, served by a thread. */
static int run_start_aggregator(struct run *r)
{
	void *router;

	r->zctx = zmq_ctx_new();
	snprintf(r->endpoint, sizeof(r->endpoint), "inproc://nunatak-aggregator-%d", (int)getpid());
	router = r->zctx ? zmq_socket(r->zctx, ZMQ_ROUTER) : NULL;
	if (!router || zmq_bind(router, r->endpoint)) {
		fprintf(stderr, "nunatak: cannot start the aggregator: %s\n", zmq_strerror(zmq_errno()));
		if (router)
			zmq_close(router);
		return -EIO;
	}
	r->agg = aggregator__new(router);
	if (!r->agg) {
		fprintf(stderr, "nunatak: cannot start the aggregator: %s\n", strerror(errno));
		zmq_close(router);
		return -ENOMEM;
	}
	if (pthread_create(&r->thread, NULL, aggregator_thread, r->agg)) {
		fprintf(stderr, "nunatak: cannot start the aggregator thread\n");
		return -EAGAIN;
	}
	r->thread_started = 1;
	return 0;
}

/* The Agent, while the manifest's first version is built (machine,
 * provenance: ~0.1 s) in a thread. */
static int run_start_agent(struct run *r)
{
	struct seed_job sj = { .name = r->name, .cfg = &r->cfg, .start = r->start, .node = r->node,
			       .split = &r->split };
	struct agent_opts ao = { .run_id = r->run_id, .node = r->node, .endpoint = r->endpoint,
				 .zmq_ctx = r->zctx, .frequency = r->cfg.sampling_frequency,
				 .ack_timeout_ms = 60000, .mpi_events = env.mpi_events };
	pthread_t seed_thread;
	int seed_started;

	iso_time(r->start, sizeof(r->start));
	seed_started = !pthread_create(&seed_thread, NULL, seed_job_run, &sj);
	if (!seed_started)
		seed_job_run(&sj);
	if (r->split.target_index >= 0 &&
	    !launch_resolve(env.cmd[r->split.target_index], r->target, sizeof(r->target)))
		ao.target_exe = r->target;
	r->agent = agent__new(&ao);
	if (seed_started)
		pthread_join(seed_thread, NULL);
	r->seed = sj.seed;
	if (!r->agent) {
		fprintf(stderr, "nunatak: cannot start the agent: %s\n", strerror(errno));
		return -ENOMEM;
	}
	return 0;
}

/* The symbolizer the Aggregator will run: a trusted absolute path, or ""
 * (none may run: names from ELF symbols, a Degradation says why). */
static void run_resolve_symbolizer(struct run *r)
{
	char why[1024], message[1200];
	int e;

	e = tool_resolve_trusted(r->cfg.llvm_symbolizer, r->symbolizer, sizeof(r->symbolizer), why,
				 sizeof(why));
	if (!e)
		return;
	r->symbolizer[0] = '\0';
	if (e == -EPERM) {
		snprintf(message, sizeof(message), "%s: names will come from ELF symbols only", why);
		agent_add_degradation(r->agent, "symbolizer-untrusted", message,
				      "give tools.llvm-symbolizer a program only root (or you) can "
				      "write, e.g. /usr/bin/llvm-symbolizer");
		return;
	}
	snprintf(message, sizeof(message), "'%s' not found: names will come from ELF symbols only",
		 r->cfg.llvm_symbolizer);
	agent_add_degradation(r->agent, "symbolizer-missing", message,
			      "apt-get install llvm, or set tools.llvm-symbolizer in nunatak.toml");
}

/* START: the Run's directory, pivot and first manifest; bounded. */
static int run_send_start(struct run *r)
{
	char err[2 * PATH_MAX + 256] = "";
	json_t *spec;
	char *text;
	int e;

	spec = json_pack("{s:s, s:I, s:I, s:s, s:O}", "run_dir", r->run_dir, "run_dir_dev",
			 (json_int_t)r->run_st.st_dev, "run_dir_ino", (json_int_t)r->run_st.st_ino,
			 "symbolizer", r->symbolizer, "manifest", r->seed);
	text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
	json_decref(spec);
	e = text ? control_send(r->zctx, r->endpoint, NUNATAK__WIRE__CONTROL__ACTION__START,
				r->run_id, text, START_TIMEOUT_MS, NULL, err, sizeof(err))
		 : -ENOMEM;
	free(text);
	if (e)
		fprintf(stderr, "nunatak: cannot start the Run in '%s': %s\n", r->run_dir,
			err[0] ? err : strerror(-e));
	return e;
}

/* A stop signal that came before the application started: 128+N, else 0. */
static int run_stopped_before_launch(struct run *r)
{
	struct run_signal s;

	while (run_signals_read(r->signal_fd, &s) == 1) {
		if (!run_signal_stops(s.signo))
			continue;
		fprintf(stderr, "nunatak: %s before the application started: it was not run\n",
			strsignal(s.signo));
		return 128 + s.signo;
	}
	return 0;
}

/* Everything before the application: 0, or nunatak's exit code. */
static int run_prepare(struct run *r)
{
	char err[2 * PATH_MAX + 256] = ""; /* room for a path of PATH_MAX and more */
	int e;

	e = run_configure(r);
	if (e)
		return e;
	e = run_dir_create(r->cfg.runs_dir, r->name, time(NULL), r->run_dir, sizeof(r->run_dir),
			   &r->run_st, err, sizeof(err));
	if (e) {
		fprintf(stderr, "nunatak: %s\n", err);
		r->run_dir[0] = '\0';
		return EXIT_NUNATAK_FAILED;
	}
	r->run_id = strrchr(r->run_dir, '/') + 1;
	if (run_start_aggregator(r) || run_start_agent(r))
		return EXIT_NUNATAK_FAILED;
	run_resolve_symbolizer(r);
	if (run_send_start(r))
		return EXIT_NUNATAK_FAILED;
	agent_for_each_degradation(r->agent, announce, NULL);
	if (env.verbose && agent_sampling(r->agent))
		pr_info("sampling %s at %ld Hz on %d CPUs into %s", r->exe,
			r->cfg.sampling_frequency, agent_cpus(r->agent), r->run_dir);
	return run_stopped_before_launch(r);
}

/* The application, exactly once, observed to its end (and its lingering
 * processes). 0 once it ran (r->exit_code is its code), or -errno. */
static int run_application(struct run *r)
{
	struct run_observe ro = { .agent = r->agent, .signal_fd = r->signal_fd,
				  .linger_ms = env.linger_ms };
	int e;

	e = launch_prepare(&r->l, r->exe, env.cmd);
	if (e) {
		fprintf(stderr, "nunatak: cannot start '%s': %s\n", env.cmd[0], strerror(-e));
		return e;
	}
	e = agent_follow(r->agent, r->l.pid);
	if (e)
		pr_warn("cannot follow '%s': %s", env.cmd[0], strerror(-e));
	e = launch_release(&r->l);
	if (e)
		fprintf(stderr, "nunatak: '%s': %s\n", r->exe, strerror(-e));
	ro.pid = r->l.pid;
	e = run_observe(&ro);
	if (e) {
		/* cannot happen but for a bug: the application's code is unknown */
		fprintf(stderr, "nunatak: cannot wait for '%s': %s\n", env.cmd[0], strerror(-e));
		r->exit_code = EXIT_NUNATAK_FAILED;
		return 0;
	}
	r->exit_code = launch_exit_code(ro.status);
	r->stop_signo = ro.stop_signo;
	return 0;
}

static void run_interrupt_finalize(struct run *r, struct control_wait *w, int signo)
{
	fprintf(stderr, "nunatak: %s: stopping the finalize (names from ELF symbols only)\n",
		strsignal(signo));
	aggregator_interrupt(r->agg);
	r->interrupted = 1;
	w->deadline_ms = control_now_ms() + FINALIZE_GRACE_MS;
}

/* The signalfd during FINALIZE: a first stop signal interrupts the
 * symbolizer and leaves the finalize a short grace; a second one gives
 * up at once. */
static int on_finalize_signal(struct control_wait *w)
{
	struct run *r = w->ctx;
	struct run_signal s;

	while (run_signals_read(r->signal_fd, &s) == 1) {
		if (!run_signal_stops(s.signo))
			continue;
		if (r->interrupted)
			return 1;
		run_interrupt_finalize(r, w, s.signo);
	}
	return 0;
}

/* The last Batch, then FINALIZE (attribution, manifest). */
static void run_finalize(struct run *r, const char *end)
{
	struct control_wait w = { .fd = r->signal_fd, .on_fd = on_finalize_signal, .ctx = r };
	int budget_ms = env.symbolizer_budget_ms, e;
	char result[160], err[1024] = "";

	agent_finish(r->agent, 0);
	if (r->stop_signo)
		run_interrupt_finalize(r, &w, r->stop_signo);
	snprintf(result, sizeof(result),
		 "{\"exit_code\": %d, \"end\": \"%s\", \"symbolizer_budget_ms\": %d}", r->exit_code,
		 end, budget_ms);
	e = control_send(r->zctx, r->endpoint, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE, r->run_id,
			 result, budget_ms + FINALIZE_EXTRA_MS, &w, err, sizeof(err));
	if (!e) {
		r->finalized = 1;
		return;
	}
	if (r->interrupted)
		fprintf(stderr, "nunatak: the finalize was stopped: the Run is left interrupted; "
				"'nunatak summary %s' finishes it\n", r->run_dir);
	else
		fprintf(stderr, "nunatak: the Run was not finalized: %s\n", err);
}

/* Stops what runs, frees what can be: a thread that does not stop in
 * time is left to the process exit, with what it uses. */
static void run_teardown(struct run *r)
{
	struct timespec deadline;

	agent__free(r->agent);
	r->agent = NULL;
	if (r->thread_started) {
		aggregator_stop(r->agg);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += JOIN_TIMEOUT_MS / 1000;
		r->thread_stuck = pthread_timedjoin_np(r->thread, NULL, &deadline) != 0;
	}
	if (r->thread_stuck) {
		pr_warn("the aggregator did not stop within %d ms: left to the exit",
			JOIN_TIMEOUT_MS);
		return;
	}
	aggregator__free(r->agg);
	if (r->zctx)
		zmq_ctx_term(r->zctx);
	json_decref(r->seed);
	r->agg = NULL;
	r->zctx = NULL;
	r->seed = NULL;
}

/* stdout carries the --json document, written in one go from memory so
 * that a failed write says its own errno. A failure (not EPIPE: its
 * reader left on purpose) is said, and fails a Run whose application
 * succeeded. */
static int run_write_json(const char *doc, size_t len, int exit_code)
{
	size_t done = 0;
	int e = 0;

	while (done < len) {
		ssize_t n = write(STDOUT_FILENO, doc + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			break;
		}
		done += n;
	}
	if (!e && (fflush(stdout) || fclose(stdout)))
		e = errno;
	if (!e || e == EPIPE)
		return exit_code;
	fprintf(stderr, "nunatak: cannot write the --json result to stdout: %s\n", strerror(e));
	return exit_code ? exit_code : EXIT_NUNATAK_FAILED;
}

static int run_report(struct run *r)
{
	FILE *json_out = NULL;
	char *doc = NULL;
	size_t len = 0;
	json_t *extra;
	int exit_code = r->exit_code;

	if (!r->finalized && r->interrupted) {
		fprintf(stderr, "Run: %s\n", r->run_dir);
		return exit_code;
	}
	if (env.json && !(json_out = open_memstream(&doc, &len)))
		fprintf(stderr, "nunatak: no --json result: %s\n", strerror(errno));
	extra = json_pack("{s:s, s:s, s:i}", "run", r->run_dir, "name", r->name, "exit_code",
			  r->exit_code);
	if (summary_show(r->run_dir, stderr, json_out, extra, NULL) == 1 && env.strict)
		exit_code = EXIT_STRICT_DEGRADED;
	json_decref(extra);
	fprintf(stderr, "Run: %s\n", r->run_dir);
	if (json_out && !fclose(json_out))
		exit_code = run_write_json(doc, len, exit_code);
	free(doc);
	return exit_code;
}

int cmd_run(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[--] CMD [ARGS...]", doc, NULL, NULL, NULL };
	struct run r = { .l = { .pid = -1, .gate_fd = -1, .error_fd = -1 }, .node = "localhost" };
	struct timespec app_end, written;
	char end[32];
	int exit_code;

	memset(&env, 0, sizeof(env));
	env.linger_ms = LINGER_DEFAULT_MS;
	env.symbolizer_budget_ms = SYMBOLIZER_BUDGET_DEFAULT_MS;
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	if (env.verbose)
		log_set_level(LOG_INFO);
	log_route_libbpf();
	/* before any thread: see run_signals.h */
	r.signal_fd = run_signals_open();
	if (r.signal_fd < 0) {
		fprintf(stderr, "nunatak: cannot set up signals: %s\n", strerror(-r.signal_fd));
		return EXIT_NUNATAK_FAILED;
	}
	config_init(&r.cfg);
	exit_code = run_prepare(&r);
	if (!exit_code && run_application(&r))
		exit_code = EXIT_NUNATAK_FAILED;
	if (exit_code) { /* the application did not run */
		run_teardown(&r);
		if (r.run_dir[0] && run_dir_discard(r.run_dir))
			fprintf(stderr, "Run (incomplete): %s\n", r.run_dir);
		goto out;
	}
	iso_time(end, sizeof(end));
	clock_gettime(CLOCK_MONOTONIC, &app_end);
	run_finalize(&r, end);
	clock_gettime(CLOCK_MONOTONIC, &written);
	pr_info("Run written %.0f ms after the application exited",
		(written.tv_sec - app_end.tv_sec) * 1e3 + (written.tv_nsec - app_end.tv_nsec) / 1e6);
	run_teardown(&r);
	exit_code = run_report(&r);
out:
	config_release(&r.cfg);
	close(r.signal_fd);
	return exit_code;
}
