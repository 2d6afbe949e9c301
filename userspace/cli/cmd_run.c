/* cmd_run — `nunatak run [opts] -- CMD ARGS...`: profile CMD and every
 * descendant, write the Run, print its summary, exit with CMD's code.
 *
 * Embedded mode: the Aggregator runs in a thread of this process and the
 * Agent in the main thread; they speak only the wire protocol over
 * inproc://, as they would across a cluster. The application runs exactly
 * once, whatever fails around it: a missing capability is a Degradation
 * announced before launch, never a refusal.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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
#include "userspace/config/config.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/launcher.h"
#include "userspace/log/log.h"
#include "userspace/machine/machine.h"
#include "userspace/wire/wire.h"

#define PUBLISH_INTERVAL_MS 1000
#define CONTROL_TIMEOUT_MS 600000 /* finalize symbolizes: allow minutes */

static struct run_env {
	const char *name;
	const char *output;
	long frequency; /* 0: from the configuration */
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
	"before launch, 121 with --strict when a Degradation occurred). The Run is\n"
	"written to RUNS_DIR/NAME-YYYYMMDD-HHMMSS/ (manifest.json, pivot.sqlite).\n"
	"\v"
	"EXAMPLES:\n"
	"  nunatak run -- ./solver input.dat      profile a program\n"
	"  nunatak run --name baseline -- make    name the Run\n"
	"  nunatak run -F 99 -o /scratch/runs -- ./a.out\n"
	"  nunatak run --json -- ./app > out.json JSON result on stdout after the app's\n"
	"  nunatak run -- mpirun -n 8 ./solver    hotspots and MPI time of every rank\n"
	"  nunatak run -e -- srun -n 4 ./app      each MPI call as an Event as well\n"
	"\n"
	"Configuration: /etc/nunatak.toml, then the first nunatak.toml found walking up\n"
	"from the current directory, then these options (keys: name, runs_dir,\n"
	"[sampling] frequency, [tools] llvm-symbolizer).";

static const struct argp_option options[] = {
	{ "name", 'n', "NAME", 0, "Run name (default: config `name`, else the command's name)", 0 },
	{ "output", 'o', "DIR", 0, "Runs directory (default: config `runs_dir`, else .nunatak)", 0 },
	{ "frequency", 'F', "HZ", 0, "Samples per second per CPU (default 997)", 0 },
	{ "json", 'j', NULL, 0, "Print the result as one JSON object on stdout", 0 },
	{ "strict", 's', NULL, 0, "Exit 121 when a Degradation occurred", 0 },
	{ "mpi-events", 'e', NULL, 0, "Also record every MPI call as an Event (bounded)", 0 },
	{ "verbose", 'v', NULL, 0, "Say more about what nunatak does", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char *end;

	switch (key) {
	case 'n':
		env.name = arg;
		break;
	case 'o':
		env.output = arg;
		break;
	case 'F':
		errno = 0;
		env.frequency = strtol(arg, &end, 10);
		if (errno || *end || env.frequency < 1 || env.frequency > 100000)
			argp_error(state, "invalid --frequency '%s': an integer from 1 to 100000", arg);
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

static pid_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* Runs the application under the Agent until it exits; returns its wait
 * status. Publishes a Batch every interval and a last one at the end. */
static int run_observed(struct agent *agent, struct launch *l, int *status)
{
	struct timespec next, now;
	int pidfd, err = 0, exited = 0;

	pidfd = syscall(SYS_pidfd_open, l->pid, 0);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!exited) {
		struct pollfd fds[2] = {
			{ .fd = pidfd, .events = POLLIN },
			{ .fd = agent_fd(agent), .events = POLLIN },
		};
		long wait_ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		wait_ms = (next.tv_sec - now.tv_sec) * 1000 + (next.tv_nsec - now.tv_nsec) / 1000000;
		if (wait_ms <= 0) {
			err = agent_publish(agent);
			if (err)
				pr_warn("publishing a batch failed: %s", strerror(-err));
			next.tv_sec = now.tv_sec + PUBLISH_INTERVAL_MS / 1000;
			next.tv_nsec = now.tv_nsec;
			continue;
		}
		if (pidfd < 0) { /* no pidfd: poll waitpid */
			if (waitpid(l->pid, status, WNOHANG) == l->pid)
				break;
			wait_ms = wait_ms > 20 ? 20 : wait_ms;
		}
		if (poll(fds, 2, (int)wait_ms) < 0 && errno != EINTR)
			break;
		if (fds[1].revents & POLLIN)
			agent_process_events(agent);
		if (pidfd >= 0 && (fds[0].revents & POLLIN)) {
			while (waitpid(l->pid, status, 0) < 0 && errno == EINTR)
				;
			exited = 1;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	err = agent_publish(agent);
	if (err)
		pr_warn("publishing the last batch failed: %s", strerror(-err));
	return err;
}

/* the application behind any launcher and wrappers: "app", never "mpirun" */
static const char *default_name(const struct launcher_split *split)
{
	return launcher_target_name(env.ncmd, env.cmd, split);
}

int cmd_run(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[--] CMD [ARGS...]", doc, NULL, NULL, NULL };
	char err[1024] = "", exe[PATH_MAX], run_dir[PATH_MAX], node[256] = "localhost";
	char start[32], end[32], endpoint[64], result[128], target[PATH_MAX];
	struct aggregator *agg = NULL;
	struct agent *agent = NULL;
	struct launch l = { .pid = -1, .gate_fd = -1, .error_fd = -1 };
	struct config cfg;
	struct agent_opts ao;
	struct launcher_split split;
	struct timespec app_end, written;
	struct stat run_st; /* the Run directory made: the Aggregator checks it is the one */
	struct seed_job sj;
	pthread_t seed_thread;
	int seed_started;
	pthread_t thread;
	int thread_started = 0, status = 0, exit_code = EXIT_NUNATAK_FAILED, e;
	void *zctx = NULL, *router = NULL;
	const char *name;
	json_t *seed = NULL;
	char *spec_text = NULL;

	memset(&env, 0, sizeof(env));
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	if (env.verbose)
		log_set_level(LOG_INFO);
	log_route_libbpf();

	config_init(&cfg);
	if (cli_load_config(&cfg))
		goto out_config;
	if ((env.name && config_set_name(&cfg, env.name)) ||
	    (env.output && config_set_runs_dir(&cfg, env.output)) ||
	    (env.frequency && config_set_sampling_frequency(&cfg, env.frequency))) {
		fprintf(stderr, "nunatak: invalid option value\n");
		goto out_config;
	}

	e = launch_resolve(env.cmd[0], exe, sizeof(exe));
	if (e) {
		fprintf(stderr, "nunatak: '%s': %s\n", env.cmd[0],
			e == -EACCES ? "not executable" : "command not found");
		exit_code = e == -EACCES ? EXIT_NOT_EXECUTABLE : EXIT_NOT_FOUND;
		goto out_config;
	}
	launcher_split(env.ncmd, env.cmd, &split);
	name = cfg.name ? cfg.name : default_name(&split);
	gethostname(node, sizeof(node) - 1);
	e = run_dir_create(cfg.runs_dir, name, time(NULL), run_dir, sizeof(run_dir), &run_st,
			   err, sizeof(err));
	if (e) {
		fprintf(stderr, "nunatak: %s\n", err);
		goto out_config;
	}

	/* the Aggregator: a ROUTER on inproc://, served by a thread */
	zctx = zmq_ctx_new();
	snprintf(endpoint, sizeof(endpoint), "inproc://nunatak-aggregator-%d", (int)getpid());
	router = zctx ? zmq_socket(zctx, ZMQ_ROUTER) : NULL;
	if (!router || zmq_bind(router, endpoint)) {
		fprintf(stderr, "nunatak: cannot start the aggregator: %s\n", zmq_strerror(zmq_errno()));
		goto out;
	}
	agg = aggregator__new(router);
	if (!agg)
		goto out;
	router = NULL;
	if (pthread_create(&thread, NULL, aggregator_thread, agg))
		goto out;
	thread_started = 1;

	/* the manifest's first version (its provenance asks llvm-symbolizer
	 * for its version: ~0.1 s) is built while the BPF programs load */
	iso_time(start, sizeof(start));
	sj = (struct seed_job){ .name = name, .cfg = &cfg, .start = start, .node = node,
				.split = &split };
	seed_started = !pthread_create(&seed_thread, NULL, seed_job_run, &sj);
	if (!seed_started)
		seed_job_run(&sj);

	/* the Agent: every missing capability is announced below */
	ao = (struct agent_opts){ .run_id = strrchr(run_dir, '/') + 1, .node = node,
				  .endpoint = endpoint, .zmq_ctx = zctx,
				  .frequency = cfg.sampling_frequency, .ack_timeout_ms = 60000,
				  .mpi_events = env.mpi_events };
	if (split.target_index >= 0 &&
	    !launch_resolve(env.cmd[split.target_index], target, sizeof(target)))
		ao.target_exe = target;
	agent = agent__new(&ao);
	if (seed_started)
		pthread_join(seed_thread, NULL);
	seed = sj.seed;
	if (!agent) {
		fprintf(stderr, "nunatak: cannot start the agent: %s\n", strerror(errno));
		goto out;
	}
	{
		json_t *spec = json_pack("{s:s, s:I, s:I, s:s, s:O}", "run_dir", run_dir,
					 "run_dir_dev", (json_int_t)run_st.st_dev, "run_dir_ino",
					 (json_int_t)run_st.st_ino, "symbolizer",
					 cfg.llvm_symbolizer, "manifest", seed);

		spec_text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
		json_decref(spec);
	}
	if (!spec_text ||
	    control_send(zctx, endpoint, NUNATAK__WIRE__CONTROL__ACTION__START,
			 strrchr(run_dir, '/') + 1, spec_text, CONTROL_TIMEOUT_MS, err, sizeof(err))) {
		fprintf(stderr, "nunatak: cannot start the Run: %s\n", err[0] ? err : "out of memory");
		goto out;
	}
	if (launch_resolve(cfg.llvm_symbolizer, err, sizeof(err))) {
		snprintf(err, sizeof(err), "'%s' not found: names will come from ELF symbols only",
			 cfg.llvm_symbolizer);
		agent_add_degradation(agent, "symbolizer-missing", err,
				      "apt-get install llvm, or set tools.llvm-symbolizer in nunatak.toml");
	}
	agent_for_each_degradation(agent, announce, NULL);
	if (env.verbose && agent_sampling(agent))
		pr_info("sampling %s at %ld Hz on %d CPUs into %s", exe, cfg.sampling_frequency,
			agent_cpus(agent), run_dir);

	/* the application, exactly once */
	e = launch_prepare(&l, exe, env.cmd);
	if (e) {
		fprintf(stderr, "nunatak: cannot start '%s': %s\n", env.cmd[0], strerror(-e));
		goto out;
	}
	child_pid = l.pid;
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTERM, forward_signal);
	signal(SIGHUP, forward_signal);
	e = agent_follow(agent, l.pid);
	if (e)
		pr_warn("cannot follow '%s': %s", env.cmd[0], strerror(-e));
	e = launch_release(&l);
	if (e)
		fprintf(stderr, "nunatak: '%s': %s\n", exe, strerror(-e));
	run_observed(agent, &l, &status);
	exit_code = launch_exit_code(status);
	iso_time(end, sizeof(end));
	clock_gettime(CLOCK_MONOTONIC, &app_end);

	snprintf(result, sizeof(result), "{\"exit_code\": %d, \"end\": \"%s\"}", exit_code, end);
	if (control_send(zctx, endpoint, NUNATAK__WIRE__CONTROL__ACTION__FINALIZE,
			 strrchr(run_dir, '/') + 1, result, CONTROL_TIMEOUT_MS, err, sizeof(err)))
		fprintf(stderr, "nunatak: the Run was not finalized: %s\n", err);
	clock_gettime(CLOCK_MONOTONIC, &written);
	pr_info("Run written %.0f ms after the application exited",
		(written.tv_sec - app_end.tv_sec) * 1e3 + (written.tv_nsec - app_end.tv_nsec) / 1e6);
out:
	agent__free(agent);
	if (thread_started)
		pthread_join(thread, NULL);
	aggregator__free(agg);
	if (router)
		zmq_close(router);
	if (zctx)
		zmq_ctx_term(zctx);
	free(spec_text);
	json_decref(seed);
	if (l.pid > 0) {
		json_t *extra = json_pack("{s:s, s:s, s:i}", "run", run_dir, "name", name,
					  "exit_code", exit_code);

		if (summary_show(run_dir, stderr, env.json ? stdout : NULL, extra, NULL) == 1 &&
		    env.strict)
			exit_code = EXIT_STRICT_DEGRADED;
		json_decref(extra);
		fprintf(stderr, "Run: %s\n", run_dir);
	}
out_config:
	config_release(&cfg);
	return exit_code;
}
