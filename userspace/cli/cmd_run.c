/* cmd_run — `nunatak run [opts] -- CMD ARGS...`: profile CMD and every
 * descendant, write the Run, print its summary, exit with CMD's code.
 *
 * The observing is the node service's (node_service.h): the local
 * nunatakd through its control socket, or, without one or when it
 * refuses, a node service in a thread of this process (run_backend.h).
 * This file is the order of things: the Run token (NUNATAK_RUN=<token> in
 * the application's environment only, forwarded by Open MPI through
 * OMPI_MCA_mca_base_env_list), the gated child (launch.h), run-start with
 * its pid, the release, the wait (run_observe.h), run-end with its exit
 * code, the linger and the symbolizer's budget, and the summary read from
 * the Run on disk. The application runs exactly once, whatever fails
 * around it: a missing capability is a Degradation announced before
 * launch, never a refusal.
 *
 * Every wait is bounded: run-start (START_TIMEOUT_MS), run-end (the
 * linger, the symbolizer's budget and FINALIZE_EXTRA_MS). A failure
 * before launch exits 125 with its cause (the gated child is killed, the
 * Run directory removed); after launch nunatak exits with the
 * application's code whatever fails. Signals: see run_signals.h; once the
 * application has ended, a first stop signal (Ctrl-C) ends the linger and
 * the finalize's llvm-symbolizer (run-interrupt), a second one gives up.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "report/summary_format.h"
#include "userspace/agent/agent.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/run_backend.h"
#include "userspace/aggregator/provenance.h"
#include "userspace/aggregator/run_dir.h"
#include "userspace/cli/run_facts.h"
#include "userspace/aggregator/run_manifest.h" /* run_iso_time */
#include "userspace/cli/run_observe.h"
#include "userspace/cli/run_options.h"
#include "userspace/cli/run_report.h"
#include "userspace/cli/run_token.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/config/config.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/launcher.h"
#include "userspace/launch/run_signals.h"
#include "userspace/log/clock.h"
#include "userspace/log/json_text.h"
#include "userspace/log/log.h"

#define START_TIMEOUT_MS (AGENT_START_TIMEOUT_MS + 3000)
#define FINALIZE_EXTRA_MS 120000 /* run-end beyond the linger and the symbolizer's budget */
#define FINALIZE_GRACE_MS 3000	 /* after a stop: the finalize ends without llvm-symbolizer */
#define NODES_WAIT_MS 5000	 /* the Aggregator's wait for other nodes (node_service) */

/* One `nunatak run`, phase by phase. */
struct run {
	struct config cfg;
	char exe[PATH_MAX], run_dir[PATH_MAX], target[PATH_MAX], symbolizer[PATH_MAX];
	char runs_dir[PATH_MAX], node[256], start[32], token[33], run_id[33];
	const char *name;
	struct launcher_split split;
	struct run_backend b;
	json_t *degradations; /* the CLI's own, given in run-start */
	struct launch l;
	int signal_fd;
	int exit_code;	 /* the application's, once it ran */
	int stop_signo;	 /* a stop signal before launch */
	int interrupted; /* run-interrupt was sent */
	int finalized;
};

/* the application behind any launcher and wrappers: "app", never "mpirun" */
static const char *default_name(const struct launcher_split *split)
{
	return launcher_target_name(run_env.ncmd, run_env.cmd, split);
}

/* runs_dir as the node service needs it: absolute (its working directory
 * is not ours) and text a message can carry. 0 or the exit code. */
static int run_runs_dir(struct run *r)
{
	const char *dir = r->cfg.runs_dir;
	char cwd[PATH_MAX];

	if (!json_text_is_clean(dir, strlen(dir))) {
		char *shown = json_text_escape(dir, strlen(dir), NULL);

		fprintf(stderr, "nunatak: the runs directory '%s' is not UTF-8 text, which a Run "
				"cannot record: choose another with -o DIR\n",
			shown ? shown : "?");
		free(shown);
		return EXIT_NUNATAK_FAILED;
	}
	if (strlen(dir) >= sizeof(r->runs_dir)) {
		fprintf(stderr, "nunatak: invalid runs directory '%.200s...': its path is too long "
				"(over %zu characters); the application was not run: choose a "
				"shorter one with -o DIR\n",
			dir, sizeof(r->runs_dir) - 1);
		return EXIT_NUNATAK_FAILED;
	}
	if (dir[0] == '/') {
		snprintf(r->runs_dir, sizeof(r->runs_dir), "%s", dir);
		return 0;
	}
	errno = 0;
	if (!getcwd(cwd, sizeof(cwd)) ||
	    snprintf(r->runs_dir, sizeof(r->runs_dir), "%s/%s", cwd, dir) >= (int)sizeof(r->runs_dir)) {
		fprintf(stderr, "nunatak: the runs directory '%.200s' cannot be named from /: %s; "
				"the application was not run: choose a shorter one with -o DIR\n",
			dir, errno == ERANGE || !errno ? "its path is too long" : strerror(errno));
		return EXIT_NUNATAK_FAILED;
	}
	if (!json_text_is_clean(r->runs_dir, strlen(r->runs_dir))) {
		fprintf(stderr, "nunatak: the current directory is not UTF-8 text, which a Run "
				"cannot record: give the runs directory from / with -o DIR\n");
		return EXIT_NUNATAK_FAILED;
	}
	return 0;
}

/* Options over the configuration, the command resolved. 0, or the exit
 * code (a message was printed). */
static int run_configure(struct run *r)
{
	int e;

	if (cli_load_config(&r->cfg))
		return EXIT_NUNATAK_FAILED;
	if ((run_env.name && config_set_name(&r->cfg, run_env.name)) ||
	    (run_env.output && config_set_runs_dir(&r->cfg, run_env.output)) ||
	    (run_env.frequency && config_set_sampling_frequency(&r->cfg, run_env.frequency)) ||
	    (run_env.no_source && config_set_source_embed(&r->cfg, 0)) ||
	    (run_env.mpi_budget > 0 && config_set_mpi_budget(&r->cfg, 100 * run_env.mpi_budget)) ||
	    (run_env.n_source_map &&
	     config_add_source_map(&r->cfg, run_env.source_map, (size_t)run_env.n_source_map)) ||
	    config_use_ceilings(&r->cfg)) {
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
	if (r->split.target_index >= 0 &&
	    launch_resolve(run_env.cmd[r->split.target_index], r->target, sizeof(r->target)))
		r->target[0] = '\0';
	gethostname(r->node, sizeof(r->node) - 1);
	return run_runs_dir(r);
}

/* The symbolizer the Aggregator will run: a trusted absolute path, or ""
 * (none may run: names from ELF symbols, a Degradation says why). */
static void run_resolve_symbolizer(struct run *r)
{
	char message[PATH_MAX + 600];
	const char *name, *remedy;

	if (cli_resolve_symbolizer(r->cfg.llvm_symbolizer, r->symbolizer, sizeof(r->symbolizer),
				   &name, message, sizeof(message), &remedy))
		json_array_append_new(r->degradations,
				      json_pack("{s:s, s:o, s:s}", "name", name, "message",
						json_text(message), "remedy", remedy));
	if (!json_text_is_clean(r->symbolizer, strlen(r->symbolizer)))
		r->symbolizer[0] = '\0';
	/* for the Aggregator of this process; a service's has its own */
	if (symbolizer_set_debug_dirs((const char *const *)r->cfg.debug_dirs, r->cfg.n_debug_dirs,
				      message, sizeof(message)) &&
	    message[0])
		json_array_append_new(
		    r->degradations,
		    json_pack("{s:s, s:o, s:s}", "name", "debug-dir-untrusted", "message",
			      json_text(message), "remedy",
			      "give [tools] debug_dirs only directories that you or root own and no "
			      "one else may write"));
}

/* The gated child, with the Run's token in its environment. 0 or the
 * exit code. */
static int run_fork_application(struct run *r)
{
	int e = run_token_launch(r->token, &r->l, r->exe, run_env.cmd);

	if (e) {
		fprintf(stderr, "nunatak: cannot start '%s': %s\n", run_env.cmd[0], strerror(-e));
		return EXIT_NUNATAK_FAILED;
	}
	return 0;
}

/* The gated child never runs: killed at its gate. */
static void run_kill_application(struct run *r)
{
	int status;

	if (r->l.pid <= 0)
		return;
	kill(r->l.pid, SIGKILL);
	while (waitpid(r->l.pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r->l.gate_fd >= 0)
		close(r->l.gate_fd);
	if (r->l.error_fd >= 0)
		close(r->l.error_fd);
	r->l.pid = -1;
	r->l.gate_fd = r->l.error_fd = -1;
}

/* signals while run-start is answered: a stop is kept for after it */
static int on_start_signal(struct control_wait *w)
{
	struct run *r = w->ctx;
	struct run_signal s;

	while (run_signals_read(r->signal_fd, &s) == 1)
		if (run_signal_stops(s.signo) && !r->stop_signo)
			r->stop_signo = s.signo;
	return 0;
}

/* Waits for the reply to `request` on the connection: replies to other
 * requests (run-interrupt's) are passed over. */
static int run_await(struct run *r, const char *request, json_t **reply, int timeout_ms,
		     struct control_wait *w, char *err, size_t errlen)
{
	long long deadline = clock_monotonic_ms() + timeout_ms;
	int e;

	for (;;) {
		long long left = deadline - clock_monotonic_ms();
		const char *name;

		e = control_await(r->b.fd, reply, left > 0 ? (int)left : 0, w, err, errlen);
		if (e)
			return e;
		name = json_string_value(json_object_get(*reply, "reply"));
		if (!name || !strcmp(name, request))
			return 0;
		json_decref(*reply);
		*reply = NULL;
	}
}

/* run-start on the backend's connection: 0 and *reply (ok or not), or
 * -errno (err says why: no answer, the service gone) */
static int run_send_start(struct run *r, json_t **reply, char *err, size_t errlen)
{
	struct control_wait w = { .fd = r->signal_fd, .on_fd = on_start_signal, .ctx = r };
	json_t *req;
	int e;

	json_t *facts = run_facts_json(r->name, run_env.ncmd, run_env.cmd, &r->split, &r->cfg,
				       r->start, r->node);

	if (facts && run_facts_add_components(facts, run_env.components, run_env.n_components,
					      run_env.step)) {
		json_decref(facts);
		facts = NULL;
	}
	req = json_pack("{s:s, s:o, s:s, s:s, s:o, s:s, s:i, s:b, s:O}", "request",
			CONTROL_RUN_START, "run", facts,
			"runs_dir", r->runs_dir, "symbolizer", r->symbolizer, "target_exe",
			/* a path that is not UTF-8 cannot travel: no MPI probing by name */
			(r->target[0] ? json_string(r->target) : NULL) ?: json_null(), "token",
			r->token, "pid",
			(int)r->l.pid, "mpi_events", run_env.mpi_events, "degradations",
			r->degradations);
	if (req && (run_env.n_components || run_env.step) &&
	    json_object_set(req, "components",
			    json_object_get(json_object_get(json_object_get(
						facts, "effective_configuration"), "components"),
					    "value"))) {
		json_decref(req);
		req = NULL;
	}
	/* --mpi-budget, else the configuration's when a file set it (else
	 * the node service's own configuration decides) */
	if (req && !run_env.mpi_exact && r->cfg.source[CONFIG_MPI_BUDGET] &&
	    json_object_set_new(req, "mpi_budget", json_real(r->cfg.mpi_budget_pct / 100))) {
		json_decref(req);
		req = NULL;
	}
	if (req && run_env.mpi_exact && json_object_set_new(req, "mpi_exact", json_true())) {
		json_decref(req);
		req = NULL;
	}
	if (req && run_env.step && json_object_set_new(req, "step", json_string(run_env.step))) {
		json_decref(req);
		req = NULL;
	}
	if (!req) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	e = control_send_msg(r->b.fd, req, CONTROL_SEND_TIMEOUT_MS);
	json_decref(req);
	if (e) {
		snprintf(err, errlen, "cannot ask the node service: %s", strerror(-e));
		return e;
	}
	return run_await(r, CONTROL_RUN_START, reply, START_TIMEOUT_MS, &w, err, errlen);
}

static int announce(const json_t *degradations)
{
	size_t i;
	json_t *d;

	json_array_foreach(degradations, i, d)
		summary_print_degradation(stderr, "nunatak: ", 9,
					  json_string_value(json_object_get(d, "name")) ?: "?", NULL,
					  json_string_value(json_object_get(d, "message")) ?: "",
					  json_string_value(json_object_get(d, "remedy")) ?: "");
	return 0;
}

/* The Run's directory as the user named its runs directory (relative
 * stays relative, as `Run: DIR` always said): the node service names it
 * from /, under r->runs_dir. */
static void run_set_dir(struct run *r, const char *dir)
{
	size_t n = strlen(r->runs_dir);

	if (!dir || !dir[0])
		return;
	if (r->cfg.runs_dir[0] != '/' && !strncmp(dir, r->runs_dir, n) && dir[n] == '/')
		snprintf(r->run_dir, sizeof(r->run_dir), "%s%s", r->cfg.runs_dir, dir + n);
	else
		snprintf(r->run_dir, sizeof(r->run_dir), "%s", dir);
}

/* The Run started: its id and directory; what is missing said. */
static void run_started(struct run *r, const json_t *reply)
{
	json_int_t hz = json_integer_value(json_object_get(reply, "frequency"));

	snprintf(r->run_id, sizeof(r->run_id), "%s",
		 json_string_value(json_object_get(reply, "run_id")) ?: "");
	run_set_dir(r, json_string_value(json_object_get(reply, "run_dir")));
	announce(r->degradations);
	announce(json_object_get(reply, "degradations"));
	if (!r->b.embedded && hz && hz != r->cfg.sampling_frequency)
		fprintf(stderr, "nunatak: the node service samples at %lld Hz, not at the %ld Hz "
				"asked: its configuration decides\n",
			(long long)hz, r->cfg.sampling_frequency);
	if (run_env.verbose && json_is_true(json_object_get(reply, "sampling")))
		pr_info("sampling %s at %lld Hz on %lld CPUs into %s%s", r->exe, (long long)hz,
			(long long)json_integer_value(json_object_get(reply, "cpus")), r->run_dir,
			r->b.embedded ? "" : " (through the node service)");
}

/* The Run on a node service: the daemon's, else (none, or it refused) the
 * embedded one. 0, or the exit code (said). */
static int run_start(struct run *r, int daemon)
{
	char err[2 * PATH_MAX + 512] = "";
	json_t *reply = NULL;
	int e;

	if (daemon) {
		e = run_send_start(r, &reply, err, sizeof(err));
		if (!e)
			e = control_reply_status(reply, err, sizeof(err));
		if (!e)
			goto started;
		fprintf(stderr, "nunatak: the node service at '%s' did not take the Run: %s; "
				"observing in-process instead\n", r->b.socket_path, err);
		json_decref(reply);
		reply = NULL;
		run_backend_close(&r->b);
	}
	if (run_backend_embedded(&r->b, &r->cfg, r->node, run_env.unwinder))
		return EXIT_NUNATAK_FAILED;
	e = run_send_start(r, &reply, err, sizeof(err));
	if (!e)
		e = control_reply_status(reply, err, sizeof(err));
	if (e) {
		fprintf(stderr, "nunatak: cannot start the Run in '%s': %s\n", r->runs_dir, err);
		json_decref(reply);
		return EXIT_NUNATAK_FAILED;
	}
started:
	run_started(r, reply);
	json_decref(reply);
	return 0;
}

/* A stop signal that came before the application started: 128+N, else 0. */
static int run_stopped_before_launch(struct run *r)
{
	struct run_signal s;

	while (!r->stop_signo && run_signals_read(r->signal_fd, &s) == 1)
		if (run_signal_stops(s.signo))
			r->stop_signo = s.signo;
	if (!r->stop_signo)
		return 0;
	fprintf(stderr, "nunatak: %s before the application started: it was not run\n",
		strsignal(r->stop_signo));
	return 128 + r->stop_signo;
}

/* Everything before the application: 0, or nunatak's exit code (the
 * gated child killed). */
static int run_prepare(struct run *r)
{
	int e, daemon;

	e = run_configure(r);
	if (e)
		return e;
	run_resolve_symbolizer(r);
	e = run_token_new(r->token);
	if (e) {
		fprintf(stderr, "nunatak: cannot make the Run's token: %s\n", strerror(-e));
		return EXIT_NUNATAK_FAILED;
	}
	run_iso_time(r->start, sizeof(r->start));
	daemon = !run_backend_daemon(&r->b, r->cfg.service.agent_socket);
	if (daemon && run_env.unwinder)
		fprintf(stderr, "nunatak: --unwinder is not for the node service (nunatakd): it walks "
				"Stacks with unwind tables\n");
	e = run_fork_application(r);
	/* in-process, the Run's START asks the symbolizer's version: asked
	 * now, while the BPF programs load, not while the application waits;
	 * after the fork, so that the gated child holds no end of its pipe
	 * (its EOF would wait for the release, which waits for START) */
	if (!e && !daemon)
		provenance_prefetch(r->symbolizer);
	if (!e)
		e = run_start(r, daemon);
	if (!e)
		e = run_stopped_before_launch(r);
	if (e)
		run_kill_application(r);
	return e;
}

/* The application, exactly once, observed to its end. 0 once it ran
 * (r->exit_code is its code), or -errno. */
static int run_application(struct run *r)
{
	struct run_observe ro = { .signal_fd = r->signal_fd, .pid = r->l.pid };
	int e;

	e = launch_release(&r->l);
	if (e)
		fprintf(stderr, "nunatak: '%s': %s\n", r->exe, strerror(-e));
	e = run_observe(&ro);
	if (e) {
		/* cannot happen but for a bug: the application's code is unknown */
		fprintf(stderr, "nunatak: cannot wait for '%s': %s\n", run_env.cmd[0], strerror(-e));
		r->exit_code = EXIT_NUNATAK_FAILED;
		return 0;
	}
	r->exit_code = launch_exit_code(ro.status);
	return 0;
}

/* The signalfd during run-end: a first stop signal ends the linger and
 * the symbolizer (run-interrupt) and leaves the finalize a short grace; a
 * second one gives up at once. */
static int on_end_signal(struct control_wait *w)
{
	struct run *r = w->ctx;
	struct run_signal s;
	json_t *req;

	while (run_signals_read(r->signal_fd, &s) == 1) {
		if (!run_signal_stops(s.signo))
			continue;
		if (r->interrupted)
			return 1;
		fprintf(stderr, "nunatak: %s: stopping the finalize (names from ELF symbols only)\n",
			strsignal(s.signo));
		req = json_pack("{s:s, s:s}", "request", CONTROL_RUN_INTERRUPT, "run_id", r->run_id);
		if (!req || control_send_msg(r->b.fd, req, CONTROL_SEND_TIMEOUT_MS)) {
			json_decref(req);
			return 1;
		}
		json_decref(req);
		r->interrupted = 1;
		w->deadline_ms = clock_monotonic_ms() + FINALIZE_GRACE_MS + NODES_WAIT_MS;
	}
	return 0;
}

/* run-end: the linger, the last Batch, FINALIZE; 0 once finalized */
static int run_end(struct run *r, int discard, const char *end)
{
	struct control_wait w = { .fd = r->signal_fd, .on_fd = on_end_signal, .ctx = r };
	int timeout_ms = run_env.linger_ms + run_env.symbolizer_budget_ms + NODES_WAIT_MS +
			 FINALIZE_EXTRA_MS, e;
	char err[1024] = "";
	json_t *req, *reply = NULL;
	const char *dir;

	req = json_pack("{s:s, s:s, s:o, s:s, s:i, s:i, s:b}", "request", CONTROL_RUN_END,
			"run_id", r->run_id, "exit_code",
			discard ? json_null() : json_integer(r->exit_code), "end", end, "linger_ms",
			discard ? 0 : run_env.linger_ms, "symbolizer_budget_ms",
			run_env.symbolizer_budget_ms, "discard", discard);
	e = req ? control_send_msg(r->b.fd, req, CONTROL_SEND_TIMEOUT_MS) : -ENOMEM;
	json_decref(req);
	if (e)
		snprintf(err, sizeof(err), "cannot ask the node service: %s", strerror(-e));
	else
		e = run_await(r, CONTROL_RUN_END, &reply, timeout_ms, discard ? NULL : &w, err,
			      sizeof(err));
	if (!e)
		e = control_reply_status(reply, err, sizeof(err));
	dir = json_string_value(json_object_get(reply, "run_dir"));
	if (!e)
		run_set_dir(r, dir);
	json_decref(reply);
	if (!e) {
		r->finalized = 1;
		return 0;
	}
	if (discard)
		return e;
	if (r->interrupted)
		fprintf(stderr, "nunatak: the finalize was stopped: the Run is left interrupted; "
				"'nunatak summary %s' finishes it\n", r->run_dir);
	else
		fprintf(stderr, "nunatak: the Run was not finalized: %s\n", err);
	return e;
}

/* A stuck node service thread may be inside SQLite, writing the Run: the
 * Run is neither discarded nor summarized, and the process ends at once,
 * without the exit handlers that would free what the thread uses. */
static void __attribute__((noreturn)) run_abandon(const struct run *r, int exit_code)
{
	fprintf(stderr,
		"nunatak: the Run was left unfinished: its node service did not stop in time; "
		"'nunatak summary %s' finishes it\n", r->run_dir);
	fflush(stdout);
	fflush(stderr);
	_exit(exit_code);
}

/* The application never ran, but the Run was started: removed. */
static void run_discard(struct run *r)
{
	char end[32];
	int e;

	run_iso_time(end, sizeof(end));
	if (run_end(r, 1, end) || !r->run_dir[0]) {
		if (r->run_dir[0])
			fprintf(stderr, "Run (incomplete): %s\n", r->run_dir);
		return;
	}
	/* the Aggregator may have removed it already ("discard" in FINALIZE) */
	e = run_dir_discard(r->run_dir);
	if (e && e != -ENOENT)
		fprintf(stderr, "Run (incomplete): %s\n", r->run_dir);
}

int cmd_run(int argc, char **argv)
{
	struct run r = { .l = { .pid = -1, .gate_fd = -1, .error_fd = -1 }, .node = "localhost",
			 .b = RUN_BACKEND_INIT };
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
	r.degradations = json_array();
	exit_code = r.degradations ? run_prepare(&r) : EXIT_NUNATAK_FAILED;
	if (exit_code) { /* the application did not run */
		if (r.run_id[0])
			run_discard(&r);
		run_backend_close(&r.b);
		if (r.b.thread_stuck)
			run_abandon(&r, exit_code);
		goto out;
	}
	run_application(&r);
	run_iso_time(end, sizeof(end));
	clock_gettime(CLOCK_MONOTONIC, &app_end);
	run_end(&r, 0, end);
	clock_gettime(CLOCK_MONOTONIC, &written);
	pr_info("Run written %.0f ms after the application exited",
		(written.tv_sec - app_end.tv_sec) * 1e3 + (written.tv_nsec - app_end.tv_nsec) / 1e6);
	run_backend_close(&r.b);
	if (r.b.thread_stuck)
		run_abandon(&r, r.exit_code);
	exit_code = run_report(&(struct run_result){ .run_dir = r.run_dir, .name = r.name,
						     .exit_code = r.exit_code,
						     .finalized = r.finalized,
						     .interrupted = r.interrupted });
out:
	json_decref(r.degradations);
	config_release(&r.cfg);
	close(r.signal_fd);
	return exit_code;
}
