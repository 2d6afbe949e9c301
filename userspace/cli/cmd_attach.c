/* cmd_attach — `nunatak attach JOBID` and `nunatak detach JOBID`: profile
 * a Slurm job that runs already, on every node of it, without restarting
 * it, and end that early.
 *
 * attach: the user's identity goes as a munge credential of payload
 * "nunatak attach job=J" (munge_cred.h), made here and checked by the
 * Aggregator, which asks Slurm whose job J is (the owner or root may
 * attach); the request goes only through the root node service's socket
 * (control_client.h: no in-process fallback, the job's other nodes are
 * reached through the Aggregator). Once attached it waits for the end:
 * --duration, Ctrl-C (a second one stops llvm-symbolizer, a third gives
 * up), a detach, or the job's end; the Run is then finalized and its
 * summary printed as `nunatak run` prints it (run_report.h).
 *
 * Exit: 0 attached and finalized; 1 refused (not the caller's job, no such
 * job running, profiled already); 125 usage, no node service, no munge
 * credential, no answer, Run not finalized.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "report/summary_format.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/run_options.h"
#include "userspace/cli/run_report.h"
#include "userspace/config/config.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/run_signals.h"
#include "userspace/log/clock.h"
#include "userspace/slurm/munge_cred.h"

#define ATTACH_TIMEOUT_MS 15000	   /* the node service's ATTACH waits 10 s */
#define END_TIMEOUT_MS 150000	   /* the symbolizer's budget, the nodes, the writing */
#define INTERRUPT_GRACE_MS 15000   /* after a second Ctrl-C */
#define DETACH_TIMEOUT_MS 150000
#define SYMBOLIZER_BUDGET_MS 60000 /* as `nunatak run`'s default */
#define CREDENTIAL_TTL_S 60
#define DURATION_MAX_S (366L * 24 * 3600)

static struct {
	unsigned long job;
	long duration_s, frequency;
	const char *name;
	int json;
} opt;

static const char attach_doc[] =
	"Profile a running Slurm job by its job id, on every node of it, without\n"
	"restarting it: its processes now, and those of later job steps as they\n"
	"start. Only the job's owner or root may. Ends after --duration, at Ctrl-C,\n"
	"at `nunatak detach JOBID` (on this node), or when the job ends; the Run is\n"
	"then finalized in the job owner's runs directory (by default\n"
	"<job working directory>/.nunatak/, theirs, mode 0700) and its summary\n"
	"printed.\n"
	"\v"
	"Needs nunatakd (root) on this node. Its socket: NUNATAK_AGENT_SOCKET, else\n"
	"the site file's [service].agent_socket, else " CONTROL_SOCKET_DEFAULT ".\n"
	"Your identity goes as a munge credential; munged's socket:\n"
	"NUNATAK_MUNGE_SOCKET, else [service].munge_socket, else\n"
	MUNGE_CRED_DEFAULT_SOCKET ".\n"
	"\n"
	"Exit status: 0 profiled; 1 refused (not your job, no such job running,\n"
	"profiled already, too many attaches under way); 125 bad usage, no node\n"
	"service or munged, no answer from the aggregator.\n"
	"\n"
	"EXAMPLES:\n"
	"  nunatak attach 12345 --duration 30   30 s of job 12345, then its summary\n"
	"  nunatak attach 12345 --json >r.json  until Ctrl-C or the job's end\n"
	"  nunatak detach 12345                 (another shell) ends it early";

static const struct argp_option attach_options[] = {
	{ "duration", 'd', "S", 0, "End after S seconds (default: at Ctrl-C, detach or the job's "
	  "end)", 0 },
	{ "frequency", 'F', "HZ", 0, "Samples per second per CPU asked (the node services' "
	  "configuration decides)", 0 },
	{ "name", 'n', "NAME", 0, "The Run's name (default: job-JOBID)", 0 },
	{ "json", 'j', NULL, 0, "Print the summary as one JSON object on stdout", 0 },
	{},
};

/* "12345": 0 and *job; -EINVAL */
static int parse_job(const char *arg, unsigned long *job)
{
	char *end;

	errno = 0;
	*job = strtoul(arg, &end, 10);
	return arg[0] < '0' || arg[0] > '9' || *end || errno || !*job || *job > 4294967293UL
		       ? -EINVAL : 0;
}

static error_t parse_attach(int key, char *arg, struct argp_state *state)
{
	char *end;

	switch (key) {
	case 'd':
		errno = 0;
		opt.duration_s = strtol(arg, &end, 10);
		if (errno || *end || opt.duration_s < 1 || opt.duration_s > DURATION_MAX_S)
			argp_error(state, "invalid --duration '%s': whole seconds, 1 to %ld", arg,
				   DURATION_MAX_S);
		break;
	case 'F':
		errno = 0;
		opt.frequency = strtol(arg, &end, 10);
		if (errno || *end || opt.frequency < CONFIG_MIN_SAMPLING_FREQUENCY ||
		    opt.frequency > CONFIG_MAX_SAMPLING_FREQUENCY)
			argp_error(state, "invalid -F '%s': samples per second, %d to %d", arg,
				   CONFIG_MIN_SAMPLING_FREQUENCY, CONFIG_MAX_SAMPLING_FREQUENCY);
		break;
	case 'n':
		if (!arg[0] || strlen(arg) > 255)
			argp_error(state, "invalid --name: 1 to 255 characters");
		opt.name = arg;
		break;
	case 'j':
		opt.json = 1;
		break;
	case ARGP_KEY_ARG:
		if (state->arg_num > 0)
			argp_error(state, "unexpected argument '%s': one JOBID", arg);
		if (parse_job(arg, &opt.job))
			argp_error(state, "invalid JOBID '%s': a Slurm job id (digits, as squeue "
				   "shows it)", arg);
		break;
	case ARGP_KEY_END:
		if (!opt.job)
			argp_error(state, "which job? give its JOBID (squeue --me shows yours)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* One `nunatak attach`. */
struct attach {
	struct config cfg;
	const char *socket;
	int fd, signal_fd;
	char run_id[65], run_dir[PATH_MAX];
	json_t *job; /* the Ack's job, with "owner" */
	char ended_by[32];
	int stops;	 /* stop signals taken */
	int ending;	 /* run-end sent */
	int interrupted; /* run-interrupt sent */
};

/* The exit status of an attach the service or its Aggregator answered no
 * to: 1, a refusal (not the caller's job, not running, profiled already,
 * too many under way, a bad credential), or 125 when the service could not
 * give an answer (no Aggregator, stopping, out of memory) */
static int refused_code(int e)
{
	return e == -ETIMEDOUT || e == -EHOSTUNREACH || e == -ESHUTDOWN || e == -ENOMEM ||
		       e == -EPROTO || e == -EIO || e == -ECONNREFUSED
		       ? EXIT_NUNATAK_FAILED : 1;
}

/* The connection to the root node service: 0, or 125 (said). */
static int connect_service(const char *socket, int *fd, const char *what)
{
	char err[1024];
	int e = control_connect(socket, fd, err, sizeof(err));

	if (!e)
		return 0;
	if (e == -ENOENT || e == -ECONNREFUSED)
		fprintf(stderr, "nunatak: no node service at '%s' (%s): `nunatak %s` needs nunatakd "
				"running as root on this node: start it (systemctl start nunatakd), "
				"or point NUNATAK_AGENT_SOCKET at its socket\n",
			socket, e == -ENOENT ? "no socket there" : "nobody listens", what);
	else
		fprintf(stderr, "nunatak: %s\n", err);
	return EXIT_NUNATAK_FAILED;
}

/* munged's socket for the CLI: NUNATAK_MUNGE_SOCKET, else [service]'s */
static const char *munge_socket(const struct config *cfg)
{
	const char *env = getenv("NUNATAK_MUNGE_SOCKET");

	return env && env[0] ? env : cfg->service.munge_socket;
}

/* the attach request: NULL (said) when it cannot be made */
static json_t *attach_request(struct attach *a)
{
	char payload[64], sym[PATH_MAX], message[PATH_MAX + 600], err[1024];
	const char *dname, *remedy, *sock = munge_socket(&a->cfg);
	char *cred = NULL;
	json_t *req;
	int e;

	snprintf(payload, sizeof(payload), "nunatak attach job=%lu", opt.job);
	e = munge_cred_make(sock, payload, CREDENTIAL_TTL_S, &cred, err, sizeof(err));
	if (e) {
		fprintf(stderr, "nunatak: cannot prove who you are to the aggregator: %s\n", err);
		return NULL;
	}
	if (cli_resolve_symbolizer(a->cfg.llvm_symbolizer, sym, sizeof(sym), &dname, message,
				   sizeof(message), &remedy))
		summary_print_degradation(stderr, "nunatak: ", 9, dname, NULL, message, remedy);
	req = json_pack("{s:s, s:I, s:s, s:o, s:o, s:s, s:o, s:i}", "request", CONTROL_ATTACH,
			"job_id", (json_int_t)opt.job, "credential", cred, "frequency",
			opt.frequency ? json_integer(opt.frequency) : json_null(), "name",
			opt.name ? json_string(opt.name) : json_null(), "symbolizer", sym,
			"effective_configuration", config_effective_json(&a->cfg),
			"symbolizer_budget_ms", SYMBOLIZER_BUDGET_MS);
	free(cred);
	if (!req)
		fprintf(stderr, "nunatak: %s\n", strerror(ENOMEM));
	return req;
}

/* Ctrl-C before the attach is answered: give up */
static int on_signal_give_up(struct control_wait *w)
{
	struct attach *a = w->ctx;
	struct run_signal s;
	int stop = 0;

	while (run_signals_read(a->signal_fd, &s) == 1)
		stop |= run_signal_stops(s.signo);
	return stop;
}

/* "alice", "vm1,vm2" of the Ack's job */
static void print_attached(const struct attach *a)
{
	const json_t *owner = json_object_get(a->job, "owner"), *n;
	char nodes[512] = "";
	size_t i, len = 0;

	json_array_foreach(json_object_get(a->job, "nodes"), i, n) {
		if (len + 2 >= sizeof(nodes) - 8) {
			snprintf(nodes + len, sizeof(nodes) - len, ",...");
			break;
		}
		len += snprintf(nodes + len, sizeof(nodes) - len, "%s%s", i ? "," : "",
				json_string_value(n) ?: "?");
	}
	fprintf(stderr, "nunatak: attached to job %lu (owner %s, nodes %s); Run: %s\n", opt.job,
		json_string_value(json_object_get(owner, "user")) ?: "?", nodes[0] ? nodes : "?",
		a->run_dir);
}

/* attach asked and answered: 0, or the exit code (said) */
static int attach_start(struct attach *a)
{
	struct control_wait w = { .fd = a->signal_fd, .on_fd = on_signal_give_up, .ctx = a };
	json_t *req = attach_request(a), *reply = NULL;
	json_int_t hz;
	char err[1024];
	int e;

	if (!req)
		return EXIT_NUNATAK_FAILED;
	e = control_request(a->fd, req, &reply, ATTACH_TIMEOUT_MS, &w, err, sizeof(err));
	json_decref(req);
	if (e) {
		fprintf(stderr, "nunatak: no attach to job %lu: %s\n", opt.job,
			e == -EINTR ? "interrupted" : err);
		return e == -EINTR ? 130 : EXIT_NUNATAK_FAILED;
	}
	e = control_reply_status(reply, err, sizeof(err));
	if (e) {
		fprintf(stderr, "nunatak: cannot attach to job %lu: %s\n", opt.job, err);
		json_decref(reply);
		return refused_code(e);
	}
	snprintf(a->run_id, sizeof(a->run_id), "%s",
		 json_string_value(json_object_get(reply, "run_id")) ?: "");
	snprintf(a->run_dir, sizeof(a->run_dir), "%s",
		 json_string_value(json_object_get(reply, "run_dir")) ?: "");
	a->job = json_deep_copy(json_object_get(reply, "job")) ?: json_object();
	json_object_set(a->job, "owner", json_object_get(reply, "owner") ?: json_null());
	print_attached(a);
	hz = json_integer_value(json_object_get(reply, "frequency"));
	if (opt.frequency && hz && hz != opt.frequency)
		fprintf(stderr, "nunatak: this node samples at %lld Hz, not at the %ld Hz asked: the "
				"node services' configuration decides\n", (long long)hz, opt.frequency);
	json_decref(reply);
	return 0;
}

static int send_simple(struct attach *a, const char *request)
{
	json_t *req = json_pack("{s:s, s:s, s:n, s:i, s:i}", "request", request, "run_id",
				a->run_id, "exit_code", "linger_ms", 0, "symbolizer_budget_ms",
				SYMBOLIZER_BUDGET_MS);
	int e = req ? control_send_msg(a->fd, req, CONTROL_SEND_TIMEOUT_MS) : -ENOMEM;

	json_decref(req);
	return e;
}

/* the end asked of the service: run-end (ended_by why) */
static int attach_end(struct attach *a, const char *why, struct control_wait *w)
{
	if (a->ending)
		return 0;
	a->ending = 1;
	snprintf(a->ended_by, sizeof(a->ended_by), "%s", why);
	w->deadline_ms = clock_monotonic_ms() + END_TIMEOUT_MS;
	return send_simple(a, CONTROL_RUN_END);
}

/* stop signals while attached: the end, then no symbolizer, then give up */
static int on_signal_attached(struct control_wait *w)
{
	struct attach *a = w->ctx;
	struct run_signal s;

	while (run_signals_read(a->signal_fd, &s) == 1) {
		if (!run_signal_stops(s.signo))
			continue;
		if (++a->stops == 1) {
			fprintf(stderr, "nunatak: %s: ending the attach (Ctrl-C again stops the "
					"symbolizer)\n", strsignal(s.signo));
			if (attach_end(a, "interrupt", w))
				return 1;
		} else if (a->stops == 2) {
			fprintf(stderr, "nunatak: %s: finalizing without llvm-symbolizer\n",
				strsignal(s.signo));
			a->interrupted = 1;
			w->deadline_ms = clock_monotonic_ms() + INTERRUPT_GRACE_MS;
			if (send_simple(a, CONTROL_RUN_INTERRUPT))
				return 1;
		} else {
			return 1;
		}
	}
	return 0;
}

/* Waits for the Run's end: 0 finalized, or -errno (said) */
static int attach_wait(struct attach *a)
{
	struct control_wait w = { .fd = a->signal_fd, .on_fd = on_signal_attached, .ctx = a };
	long long until = opt.duration_s ? clock_monotonic_ms() + opt.duration_s * 1000 : 0;
	char err[1024];
	json_t *msg;
	int e;

	for (;;) {
		long long now = clock_monotonic_ms();
		long long to = a->ending ? w.deadline_ms - now : until ? until - now : 3600 * 1000;
		const char *name;

		msg = NULL;
		e = control_await(a->fd, &msg, to > 0 ? (int)to : 0, &w, err, sizeof(err));
		if (e == -ETIMEDOUT && !a->ending) {
			if (until && attach_end(a, "duration", &w))
				return -EPIPE;
			continue;
		}
		if (e)
			break;
		name = json_string_value(json_object_get(msg, "reply"));
		if (name && !strcmp(name, CONTROL_RUN_END))
			break;
		json_decref(msg); /* run-interrupt's answer */
	}
	if (!e)
		e = control_reply_status(msg, err, sizeof(err));
	if (!e) {
		const char *by = json_string_value(json_object_get(msg, "ended_by"));
		const char *dir = json_string_value(json_object_get(msg, "run_dir"));

		/* the service's word unless the end was ours (run-end) */
		if (by && (strcmp(by, "run-end") || !a->ended_by[0]))
			snprintf(a->ended_by, sizeof(a->ended_by), "%s", by);
		if (dir && dir[0])
			snprintf(a->run_dir, sizeof(a->run_dir), "%s", dir);
	} else {
		fprintf(stderr, "nunatak: the Run of job %lu was not finalized: %s; 'nunatak summary "
				"%s' finishes it\n", opt.job,
			e == -EINTR ? "given up" : e == -ECONNRESET ? "the node service went away"
			: err, a->run_dir);
	}
	json_decref(msg);
	return e;
}

/* the summary, as `nunatak run` prints it, with the job's facts */
static int attach_report(struct attach *a)
{
	json_t *extra = json_pack("{s:s, s:O, s:s, s:n}", "run_dir", a->run_dir, "job", a->job,
				  "ended_by", a->ended_by[0] ? a->ended_by : "?", "exit_code");
	char name[32];
	int rc;

	snprintf(name, sizeof(name), "job-%lu", opt.job);
	run_env.json = opt.json;
	rc = run_report(&(struct run_result){ .run_dir = a->run_dir, .name = opt.name ?: name,
					      .finalized = 1, .interrupted = a->interrupted,
					      .extra = extra });
	json_decref(extra);
	return rc;
}

int cmd_attach(int argc, char **argv)
{
	static const struct argp argp = { attach_options, parse_attach, "JOBID", attach_doc,
					  NULL, NULL, NULL };
	struct attach a = { .fd = -1, .signal_fd = -1 };
	int rc = EXIT_NUNATAK_FAILED;

	memset(&opt, 0, sizeof(opt));
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	a.signal_fd = run_signals_open();
	if (a.signal_fd < 0) {
		fprintf(stderr, "nunatak: cannot set up signals: %s\n", strerror(-a.signal_fd));
		return EXIT_NUNATAK_FAILED;
	}
	config_init(&a.cfg);
	if (cli_load_config(&a.cfg))
		goto out;
	if ((opt.name && config_set_name(&a.cfg, opt.name)) ||
	    (opt.frequency && config_set_sampling_frequency(&a.cfg, opt.frequency)))
		goto out;
	a.socket = control_socket_path(a.cfg.service.agent_socket);
	rc = connect_service(a.socket, &a.fd, "attach");
	if (!rc)
		rc = attach_start(&a);
	if (!rc)
		rc = attach_wait(&a) ? EXIT_NUNATAK_FAILED : attach_report(&a);
out:
	if (a.fd >= 0)
		close(a.fd);
	json_decref(a.job);
	config_release(&a.cfg);
	close(a.signal_fd);
	return rc;
}

static const char detach_doc[] =
	"End the `nunatak attach JOBID` running on this node early: its Run is\n"
	"finalized and the attach prints its summary. Allowed to the job's owner,\n"
	"the user who attached, and root. Run it on the node where the attach runs.\n"
	"\v"
	"Exit status: 0 detached; 1 no attach of that job on this node, or not\n"
	"yours; 125 bad usage, no node service.\n"
	"\n"
	"EXAMPLES:\n"
	"  nunatak detach 12345\n"
	"  nunatak detach 12345 --json   {\"job_id\": 12345, \"run_dir\": ...} on stdout";

static const struct argp_option detach_options[] = {
	{ "json", 'j', NULL, 0, "Print {\"job_id\", \"run_dir\"} on stdout", 0 },
	{},
};

static error_t parse_detach(int key, char *arg, struct argp_state *state)
{
	return key == 'd' || key == 'F' || key == 'n' ? ARGP_ERR_UNKNOWN
						      : parse_attach(key, arg, state);
}

int cmd_detach(int argc, char **argv)
{
	static const struct argp argp = { detach_options, parse_detach, "JOBID", detach_doc,
					  NULL, NULL, NULL };
	json_t *req, *reply = NULL;
	struct config cfg;
	char err[1024];
	int fd = -1, rc, e;

	memset(&opt, 0, sizeof(opt));
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	config_init(&cfg);
	rc = cli_load_config(&cfg) ? EXIT_NUNATAK_FAILED
	     : connect_service(control_socket_path(cfg.service.agent_socket), &fd, "detach");
	if (rc)
		goto out;
	req = json_pack("{s:s, s:I}", "request", CONTROL_DETACH, "job_id", (json_int_t)opt.job);
	e = req ? control_request(fd, req, &reply, DETACH_TIMEOUT_MS, NULL, err, sizeof(err))
		: -ENOMEM;
	json_decref(req);
	if (!e)
		e = control_reply_status(reply, err, sizeof(err));
	if (e) {
		fprintf(stderr, "nunatak: cannot detach from job %lu: %s\n", opt.job,
			e == -ENOMEM ? strerror(ENOMEM) : err);
		rc = e == -ENOENT || e == -EPERM || e == -EALREADY || e == -EBUSY
			     ? 1 : EXIT_NUNATAK_FAILED;
		goto out;
	}
	fprintf(stderr, "nunatak: detached from job %lu; Run: %s\n", opt.job,
		json_string_value(json_object_get(reply, "run_dir")) ?: "?");
	if (opt.json) {
		json_t *doc = json_pack("{s:I, s:O?}", "job_id", (json_int_t)opt.job, "run_dir",
					json_object_get(reply, "run_dir"));

		if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF ||
		    fflush(stdout))
			rc = EXIT_NUNATAK_FAILED;
		json_decref(doc);
	}
out:
	json_decref(reply);
	if (fd >= 0)
		close(fd);
	config_release(&cfg);
	return rc;
}
