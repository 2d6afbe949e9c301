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
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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
#include "userspace/aggregator/run_dir.h"
#include "userspace/aggregator/run_manifest.h" /* run_iso_time */
#include "userspace/cli/run_observe.h"
#include "userspace/cli/run_options.h"
#include "userspace/launch/run_signals.h"
#include "userspace/config/config.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/launcher.h"
#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"
#include "userspace/log/json_text.h"
#include "userspace/log/log.h"
#include "userspace/wire/wire.h"

#define START_TIMEOUT_MS 5000	   /* START makes a directory and two files */
#define FINALIZE_EXTRA_MS 120000   /* FINALIZE beyond the symbolizer's budget */
#define FINALIZE_GRACE_MS 3000	   /* after a stop: the finalize ends without llvm-symbolizer */
#define JOIN_TIMEOUT_MS 2000	   /* the Aggregator thread, once told to stop */

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

/* the application behind any launcher and wrappers: "app", never "mpirun" */
static const char *default_name(const struct launcher_split *split)
{
	return launcher_target_name(run_env.ncmd, run_env.cmd, split);
}

/* One `nunatak run`, phase by phase. */
struct run {
	struct config cfg;
	char exe[PATH_MAX], run_dir[PATH_MAX], target[PATH_MAX], symbolizer[PATH_MAX];
	char node[256], start[32], endpoint[64], run_id[33];
	const char *name;
	struct launcher_split split;
	void *zctx;
	struct aggregator *agg;
	pthread_t thread;
	int thread_started, thread_stuck;
	struct agent *agent;
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
	if ((run_env.name && config_set_name(&r->cfg, run_env.name)) ||
	    (run_env.output && config_set_runs_dir(&r->cfg, run_env.output)) ||
	    (run_env.frequency && config_set_sampling_frequency(&r->cfg, run_env.frequency))) {
		fprintf(stderr, "nunatak: cannot apply the options: %s\n", strerror(ENOMEM));
		return EXIT_NUNATAK_FAILED;
	}
	e = launch_resolve(run_env.cmd[0], r->exe, sizeof(r->exe));
	if (e) {
		fprintf(stderr, "nunatak: '%s': %s\n", run_env.cmd[0],
			e == -EACCES ? "not executable" : "command not found");
		return e == -EACCES ? EXIT_NOT_EXECUTABLE : EXIT_NOT_FOUND;
	}
	launcher_split(run_env.ncmd, run_env.cmd, &r->split);
	r->name = r->cfg.name ? r->cfg.name : default_name(&r->split);
	gethostname(r->node, sizeof(r->node) - 1);
	return 0;
}

/* The Aggregator: a ROUTER on inproc://, served by a thread. */
static int run_start_aggregator(struct run *r)
{
	void *router;
	int e;

	r->zctx = zmq_ctx_new();
	snprintf(r->endpoint, sizeof(r->endpoint), "inproc://nunatak-aggregator-%d", (int)getpid());
	router = r->zctx ? zmq_socket(r->zctx, ZMQ_ROUTER) : NULL;
	if (!router || zmq_bind(router, r->endpoint)) {
		fprintf(stderr,
			"nunatak: cannot start the aggregator: its socket '%s': %s; the application "
			"was not run: free memory or descriptors (ulimit -n) and run it again\n",
			r->endpoint, zmq_strerror(zmq_errno()));
		if (router)
			zmq_close(router);
		return -EIO;
	}
	r->agg = aggregator__new(router);
	if (!r->agg) {
		fprintf(stderr,
			"nunatak: cannot start the aggregator for '%s': %s; the application was "
			"not run: free memory and run it again\n",
			r->run_dir, strerror(errno));
		zmq_close(router);
		return -ENOMEM;
	}
	e = pthread_create(&r->thread, NULL, aggregator_thread, r->agg);
	if (e) {
		fprintf(stderr,
			"nunatak: cannot start the aggregator thread for '%s': %s; the application "
			"was not run: raise the process limit (ulimit -u) or free memory and run it "
			"again\n",
			r->run_dir, strerror(e));
		return -e;
	}
	r->thread_started = 1;
	return 0;
}

/* The Agent. */
static int run_start_agent(struct run *r)
{
	struct agent_opts ao = { .run_id = r->run_id, .node = r->node, .endpoint = r->endpoint,
				 .zmq_ctx = r->zctx, .frequency = r->cfg.sampling_frequency,
				 .mpi_events = run_env.mpi_events }; /* Acks: the default bound */

	run_iso_time(r->start, sizeof(r->start));
	if (r->split.target_index >= 0 &&
	    !launch_resolve(run_env.cmd[r->split.target_index], r->target, sizeof(r->target)))
		ao.target_exe = r->target;
	r->agent = agent__new(&ao);
	if (!r->agent) {
		fprintf(stderr,
			"nunatak: cannot start the agent for '%s': %s; the application was not "
			"run: free memory and run it again (-v says more)\n",
			r->run_dir, strerror(errno));
		return -ENOMEM;
	}
	return 0;
}

/* The symbolizer the Aggregator will run: a trusted absolute path, or ""
 * (none may run: names from ELF symbols, a Degradation says why). */
static void run_resolve_symbolizer(struct run *r)
{
	char message[PATH_MAX + 600];
	const char *name, *remedy;

	if (cli_resolve_symbolizer(r->cfg.llvm_symbolizer, r->symbolizer, sizeof(r->symbolizer),
				   &name, message, sizeof(message), &remedy))
		agent_add_degradation(r->agent, name, message, remedy);
}

/* the command line, each word escaped as json_text does: argv[0] of a
 * program whose file name is not UTF-8 is kept, not dropped */
static json_t *command_json(int ncmd, char *const cmd[])
{
	json_t *command = json_array();
	int i;

	for (i = 0; command && i < ncmd; i++)
		if (json_array_append_new(command, json_text(cmd[i]))) {
			json_decref(command);
			command = NULL;
		}
	return command;
}

/* START (issue 7's contract): the facts of the Run; the Aggregator makes
 * its directory under runs_dir (absolute) as the owner and answers with
 * it. TODO(svc): moves to the node service's run-start. */
static json_t *run_start_json(struct run *r)
{
	char cwd[PATH_MAX], runs_dir[2 * PATH_MAX];
	const struct launcher_split *split = &r->split;

	if (r->cfg.runs_dir[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(runs_dir, sizeof(runs_dir), "%s", r->cfg.runs_dir);
	else
		snprintf(runs_dir, sizeof(runs_dir), "%s/%s", cwd, r->cfg.runs_dir);
	return json_pack(
	    "{s:{s:o, s:s, s:o, s:s, s:n, s:o, s:o, s:o, s:o}, s:s, s:{s:I, s:I}, s:s, s:I, s:b}",
	    "run", "name", json_text(r->name), "created", r->start, "command",
	    command_json(run_env.ncmd, run_env.cmd), "node", r->node, "job_id",
	    "effective_configuration", config_effective_json(&r->cfg), "launcher",
	    split->launcher[0] ? json_text(split->launcher) : json_null(), "target",
	    split->target_index >= 0 ? json_text(run_env.cmd[split->target_index]) : json_null(),
	    "world_size", split->world_size > 0 ? json_integer(split->world_size) : json_null(),
	    "runs_dir", runs_dir, "owner", "uid", (json_int_t)geteuid(), "gid",
	    (json_int_t)getegid(), "symbolizer", r->symbolizer, "frequency",
	    (json_int_t)r->cfg.sampling_frequency, "mpi_events", run_env.mpi_events);
}

/* the Run directory as the user named its runs directory (relative stays
 * relative): runs_dir/<the base name the Aggregator gave> */
static void run_dir_shown(struct run *r, const char *made)
{
	const char *base = strrchr(made, '/');
	size_t len = strlen(r->cfg.runs_dir);

	while (len > 1 && r->cfg.runs_dir[len - 1] == '/')
		len--;
	snprintf(r->run_dir, sizeof(r->run_dir), "%.*s/%s", (int)len, r->cfg.runs_dir,
		 base ? base + 1 : made);
}

/* START: the Run's directory, pivot and first manifest; bounded. */
static int run_send_start(struct run *r)
{
	char err[2 * PATH_MAX + 256] = "", *text, *answer = NULL;
	json_t *spec = run_start_json(r), *ack;
	const char *made;
	int e;

	text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
	json_decref(spec);
	e = text ? control_send_answer(r->zctx, r->endpoint, NUNATAK__WIRE__CONTROL__ACTION__START,
				       r->run_id, text, START_TIMEOUT_MS, NULL, &answer, err,
				       sizeof(err))
		 : -ENOMEM;
	free(text);
	ack = answer ? json_loads(answer, 0, NULL) : NULL;
	free(answer);
	made = json_string_value(json_object_get(ack, "run_dir"));
	if (!e && made)
		run_dir_shown(r, made);
	else if (!e)
		e = -EPROTO;
	json_decref(ack);
	if (e)
		fprintf(stderr, "nunatak: cannot start the Run: %s\n", err[0] ? err : strerror(-e));
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

/* 32 lowercase hex digits of getrandom (buf: 33 bytes). 0 or -errno. */
static int getrandom_hex(char *buf, size_t len)
{
	unsigned char bytes[16];
	size_t i;

	if (len < 2 * sizeof(bytes) + 1)
		return -EINVAL;
	if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes))
		return -errno;
	for (i = 0; i < sizeof(bytes); i++)
		snprintf(buf + 2 * i, 3, "%02x", bytes[i]);
	return 0;
}

/* Everything before the application: 0, or nunatak's exit code. */
static int run_prepare(struct run *r)
{
	int e;

	e = run_configure(r);
	if (e)
		return e;
	if (!json_text_is_clean(r->cfg.runs_dir, strlen(r->cfg.runs_dir))) {
		/* its path travels in the START message and the manifest */
		char *shown = json_text_escape(r->cfg.runs_dir, strlen(r->cfg.runs_dir), NULL);

		fprintf(stderr, "nunatak: the runs directory '%s' is not UTF-8 text, which a Run "
				"cannot record: choose another with -o DIR\n",
			shown ? shown : "?");
		free(shown);
		return EXIT_NUNATAK_FAILED;
	}
	e = getrandom_hex(r->run_id, sizeof(r->run_id));
	if (e) {
		fprintf(stderr, "nunatak: cannot make a Run id: %s\n", strerror(-e));
		return EXIT_NUNATAK_FAILED;
	}
	if (run_start_aggregator(r) || run_start_agent(r))
		return EXIT_NUNATAK_FAILED;
	run_resolve_symbolizer(r);
	if (run_send_start(r))
		return EXIT_NUNATAK_FAILED;
	agent_for_each_degradation(r->agent, announce, NULL);
	if (run_env.verbose && agent_sampling(r->agent))
		pr_info("sampling %s at %ld Hz on %d CPUs into %s", r->exe,
			r->cfg.sampling_frequency, agent_cpus(r->agent), r->run_dir);
	return run_stopped_before_launch(r);
}

/* The application, exactly once, observed to its end (and its lingering
 * processes). 0 once it ran (r->exit_code is its code), or -errno. */
static int run_application(struct run *r)
{
	struct run_observe ro = { .agent = r->agent, .signal_fd = r->signal_fd,
				  .linger_ms = run_env.linger_ms };
	int e;

	e = launch_prepare(&r->l, r->exe, run_env.cmd);
	if (e) {
		fprintf(stderr, "nunatak: cannot start '%s': %s\n", run_env.cmd[0], strerror(-e));
		return e;
	}
	e = agent_follow(r->agent, r->l.pid);
	if (e) {
		char message[PATH_MAX + 128];

		snprintf(message, sizeof(message), "'%s' (pid %d) could not be followed: %s: the "
			 "Run has no samples of it", run_env.cmd[0], (int)r->l.pid, strerror(-e));
		pr_warn("%s", message);
		agent_add_degradation(r->agent, "target-not-followed", message,
				      "run nunatak -v to see why; a runs path much shorter than "
				      "PATH_MAX avoids /proc lines too long to read");
	}
	e = launch_release(&r->l);
	if (e)
		fprintf(stderr, "nunatak: '%s': %s\n", r->exe, strerror(-e));
	ro.pid = r->l.pid;
	e = run_observe(&ro);
	if (e) {
		/* cannot happen but for a bug: the application's code is unknown */
		fprintf(stderr, "nunatak: cannot wait for '%s': %s\n", run_env.cmd[0], strerror(-e));
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
	w->deadline_ms = clock_monotonic_ms() + FINALIZE_GRACE_MS;
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
	int budget_ms = run_env.symbolizer_budget_ms, e;
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
	if (r->thread_stuck)
		return; /* run_abandon() says it */
	aggregator__free(r->agg);
	if (r->zctx)
		zmq_ctx_term(r->zctx);
	r->agg = NULL;
	r->zctx = NULL;
}

/* A stuck Aggregator thread may be inside SQLite, writing the Run: the
 * Run is neither discarded nor summarized, and the process ends at once,
 * without the exit handlers that would free what the thread uses. */
static void __attribute__((noreturn)) run_abandon(const struct run *r, int exit_code)
{
	fprintf(stderr,
		"nunatak: the Run was left unfinished: its aggregator did not stop within %d ms "
		"of being told; 'nunatak summary %s' finishes it\n",
		JOIN_TIMEOUT_MS, r->run_dir);
	fflush(stdout);
	fflush(stderr);
	_exit(exit_code);
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
	int exit_code = r->exit_code, shown;

	if (!r->finalized && r->interrupted) {
		fprintf(stderr, "Run: %s\n", r->run_dir);
		return exit_code;
	}
	if (run_env.json && !(json_out = open_memstream(&doc, &len)))
		fprintf(stderr, "nunatak: no --json result: %s\n", strerror(errno));
	/* names from argv or the file system: not always UTF-8 (json_text) */
	extra = json_pack("{s:o, s:o, s:i}", "run", json_text(r->run_dir), "name",
			  json_text(r->name), "exit_code", r->exit_code);
	shown = summary_show(r->run_dir, stderr, json_out, extra, NULL);
	if (shown == 1 && run_env.strict)
		exit_code = EXIT_STRICT_DEGRADED;
	json_decref(extra);
	fprintf(stderr, "Run: %s\n", r->run_dir);
	if (run_env.json && (shown < 0 || !json_out)) {
		/* no document is a failed --json write, as a failed write is */
		fprintf(stderr,
			"nunatak: no --json result on stdout: the summary of '%s' could not be "
			"made (said above); 'nunatak summary --json %s' retries it\n",
			r->run_dir, r->run_dir);
		if (json_out)
			fclose(json_out);
		free(doc);
		return exit_code ? exit_code : EXIT_NUNATAK_FAILED;
	}
	if (json_out && !fclose(json_out))
		exit_code = run_write_json(doc, len, exit_code);
	free(doc);
	return exit_code;
}

int cmd_run(int argc, char **argv)
{
	struct run r = { .l = { .pid = -1, .gate_fd = -1, .error_fd = -1 }, .node = "localhost" };
	struct timespec app_end, written;
	char end[32];
	int exit_code;

	if (run_options_parse(argc, argv))
		return EXIT_NUNATAK_FAILED;
	if (run_env.verbose)
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
		if (r.thread_stuck)
			run_abandon(&r, exit_code);
		if (r.run_dir[0] && run_dir_discard(r.run_dir))
			fprintf(stderr, "Run (incomplete): %s\n", r.run_dir);
		goto out;
	}
	run_iso_time(end, sizeof(end));
	clock_gettime(CLOCK_MONOTONIC, &app_end);
	run_finalize(&r, end);
	clock_gettime(CLOCK_MONOTONIC, &written);
	pr_info("Run written %.0f ms after the application exited",
		(written.tv_sec - app_end.tv_sec) * 1e3 + (written.tv_nsec - app_end.tv_nsec) / 1e6);
	run_teardown(&r);
	if (r.thread_stuck)
		run_abandon(&r, r.exit_code);
	exit_code = run_report(&r);
out:
	config_release(&r.cfg);
	close(r.signal_fd);
	return exit_code;
}
