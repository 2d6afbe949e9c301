/* cmd_job_hook — `nunatak job-prolog` and `nunatak job-epilog`: what
 * deploy/slurm's Prolog and Epilog scripts run (root, from slurmd) for a
 * job asked to be profiled at submission (`--nunatak[=FREQ]`, the SPANK
 * plugin, sets SPANK_NUNATAK; NUNATAK_PROFILE=1 reaches here as
 * SPANK_NUNATAK_PROFILE=1). job-prolog starts the job's prolog Run on this
 * node (node_service.h: job-prolog), job-epilog ends it (job-epilog: the
 * last node's Epilog finalizes the Run).
 *
 * The profiler must never fail a job nor drain a node: these ALWAYS exit
 * 0, whatever fails (said in one line on stderr), every wait is bounded
 * (job-prolog gives up HOOK_PROLOG_MS after it started, job-epilog
 * HOOK_EPILOG_MS: the scripts' timeout(1) is the last resort), and a job
 * nobody asked to profile is left alone silently, the socket untouched.
 *
 * Where the node service is, with no custom environment in a Prolog: the
 * socket is NUNATAK_AGENT_SOCKET, else [service].agent_socket of the site
 * file, else CONTROL_SOCKET_DEFAULT. The site file is --config FILE, else
 * NUNATAK_SITE_CONFIG, else CONFIG_SITE_PATH, read as nunatakd reads it
 * (config_load_daemon: obeyed only when root owns it and no one else may
 * write it or its directories; refused, it is said and the defaults used).
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>

#include "userspace/cli/cli.h"
#include "userspace/config/config.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"
#include "userspace/log/clock.h"

#define HOOK_PROLOG_MS 4500
#define HOOK_EPILOG_MS 24000
#define HOOK_FREQUENCY_MAX 10000

struct hook {
	const char *what; /* "job-prolog" */
	const char *config;
	long long deadline_ms;
	unsigned long job;
	char note[1200]; /* said after the outcome: the site file refused, ... */
	struct config cfg;
};

static struct hook *hook_parsing;

static const char hook_doc[] =
	"For deploy/slurm's Prolog (job-prolog) and Epilog (job-epilog) scripts,\n"
	"run as root by slurmd: start, and end, the profiling of a job submitted\n"
	"with --nunatak (SPANK_NUNATAK set) or NUNATAK_PROFILE=1\n"
	"(SPANK_NUNATAK_PROFILE=1). They read Slurm's environment (SLURM_JOB_ID,\n"
	"SLURM_JOB_UID, SLURM_JOB_GID, SLURM_JOB_WORK_DIR, SLURM_NODELIST,\n"
	"SLURM_CLUSTER_NAME, SLURM_JOB_EXIT_CODE2), always exit 0 (the profiler\n"
	"never fails a job nor drains a node), give up after 4.5 s (job-prolog) or\n"
	"24 s (job-epilog), and say what they did in one line on stderr. A job not\n"
	"asked for is left alone, silently.\n"
	"\v"
	"The node service's socket: NUNATAK_AGENT_SOCKET, else [service].agent_socket\n"
	"of the site file, else " CONTROL_SOCKET_DEFAULT ". The site file: --config\n"
	"FILE, else NUNATAK_SITE_CONFIG, else " CONFIG_SITE_PATH ", obeyed only when\n"
	"root owns it and no one else can write it (else said, and not used).\n"
	"\n"
	"EXAMPLES (what deploy/slurm/prolog and epilog run):\n"
	"  timeout -k 1 6 nunatak job-prolog\n"
	"  timeout -k 1 28 nunatak job-epilog --config /etc/nunatak.toml";

static const struct argp_option hook_options[] = {
	{ "config", 'c', "FILE", 0, "The site file (default: NUNATAK_SITE_CONFIG, else "
	  CONFIG_SITE_PATH ")", 0 },
	{},
};

static error_t parse_hook(int key, char *arg, struct argp_state *state)
{
	(void)state;
	if (key == 'c')
		hook_parsing->config = arg;
	else if (key == ARGP_KEY_ARG)
		snprintf(hook_parsing->note, sizeof(hook_parsing->note),
			 " (argument '%.64s' ignored)", arg);
	else
		return ARGP_ERR_UNKNOWN;
	return 0;
}

/* text into out as one log line's: a byte that is not printable ASCII
 * (a newline a job's environment or working directory carries, ...) and
 * the backslash written \xNN, so no one forges a line of the log */
static void printable(const char *text, char *out, size_t len)
{
	size_t n = 0;

	for (; *text && n + 5 < len; text++) {
		unsigned char ch = (unsigned char)*text;

		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			out[n++] = (char)ch;
		else
			n += (size_t)snprintf(out + n, len - n, "\\x%02x", ch);
	}
	out[n] = '\0';
}

/* the one line, and the exit status: always 0 */
static int __attribute__((format(printf, 2, 3))) say(struct hook *h, const char *fmt, ...)
{
	char line[2048], all[2 * 2048], shown[4 * 2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (h->job)
		snprintf(all, sizeof(all), "job %lu: %s%s", h->job, line, h->note);
	else
		snprintf(all, sizeof(all), "%s%s", line, h->note);
	printable(all, shown, sizeof(shown));
	fprintf(stderr, "nunatak %s: %s\n", h->what, shown);
	return 0;
}

/* an unsigned decimal environment variable: 1 and *v */
static int env_number(const char *name, unsigned long max, unsigned long *v)
{
	const char *s = getenv(name);
	char *end;

	if (!s || s[0] < '0' || s[0] > '9')
		return 0;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return !*end && !errno && *v <= max;
}

/* 1 when the job asked to be profiled */
static int asked(void)
{
	const char *n = getenv("SPANK_NUNATAK"), *p = getenv("SPANK_NUNATAK_PROFILE");

	return (n && n[0]) || (p && !strcmp(p, "1"));
}

/* Parses argv, reads the site file: 0, or 1 when nothing is to be done */
static int hook_begin(struct hook *h, int argc, char **argv, int bound_ms)
{
	static const struct argp argp = { hook_options, parse_hook, NULL, hook_doc, NULL, NULL,
					  NULL };
	char err[1024];
	int help = 0;

	h->deadline_ms = clock_monotonic_ms() + bound_ms;
	hook_parsing = h;
	config_init(&h->cfg);
	for (int i = 1; i < argc; i++)
		help |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-?") ||
			!strcmp(argv[i], "--usage");
	if (argp_parse(&argp, argc, argv, ARGP_NO_EXIT, NULL, NULL) || help)
		return 1;
	if (!asked())
		return 1;
	if (!env_number("SLURM_JOB_ID", 4294967293UL, &h->job) || !h->job) {
		say(h, "no SLURM_JOB_ID: not run by Slurm's %s? nothing done",
		    strcmp(h->what, "job-prolog") ? "Epilog" : "Prolog");
		return 1;
	}
	if (geteuid() != 0) {
		say(h, "not profiled: must run as root (from Slurm's Prolog and Epilog)");
		return 1;
	}
	if (!h->config)
		h->config = getenv("NUNATAK_SITE_CONFIG");
	if (h->config && !h->config[0])
		h->config = NULL;
	if (config_load_daemon(&h->cfg, h->config, err, sizeof(err))) {
		config_release(&h->cfg);
		config_init(&h->cfg);
		snprintf(h->note, sizeof(h->note), " (site file not used: %s)", err);
	}
	return 0;
}

/* req (taken; NULL: -ENOMEM) asked, its answer awaited within the bound:
 * 0 and *reply (the caller's) when granted; -errno with err: not answered,
 * or refused (*reply then holds the refusal, the caller's too) */
static int hook_ask(struct hook *h, json_t *req, json_t **reply, char *err, size_t errlen)
{
	const char *path = control_socket_path(h->cfg.service.agent_socket);
	long long left;
	char why[1024];
	int fd, e;

	if (!req) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	e = control_connect(path, &fd, why, sizeof(why));
	if (e) {
		snprintf(err, errlen, "no nunatakd at '%s' (%s)", path,
			 e == -ENOENT ? "no socket there" : e == -ECONNREFUSED ? "nobody listens"
			 : why);
		json_decref(req);
		return e;
	}
	left = h->deadline_ms - clock_monotonic_ms();
	e = control_request(fd, req, reply, left > 0 ? (int)left : 1, NULL, why, sizeof(why));
	close(fd);
	json_decref(req);
	if (e)
		snprintf(err, errlen, "%s", e == -ETIMEDOUT ? "nunatakd did not answer in time" : why);
	else
		e = control_reply_status(*reply, err, errlen);
	return e;
}

/* SPANK_NUNATAK's frequency, or null (the node service's): "default" (the
 * plugin's --nunatak without =FREQ) silently, anything else not 1..10000
 * with a note */
static json_t *hook_frequency(struct hook *h)
{
	const char *s = getenv("SPANK_NUNATAK");
	unsigned long hz;

	if (!s || !s[0] || !strcmp(s, "default")) /* --nunatak without =FREQ */
		return json_null();
	if (env_number("SPANK_NUNATAK", HOOK_FREQUENCY_MAX, &hz) && hz >= 1)
		return json_integer((json_int_t)hz);
	snprintf(h->note + strlen(h->note), sizeof(h->note) - strlen(h->note),
		 " (SPANK_NUNATAK='%.16s' is not a frequency of 1..%d: the default used)", s,
		 HOOK_FREQUENCY_MAX);
	return json_null();
}

static json_t *prolog_request(struct hook *h, char *err, size_t errlen)
{
	const char *dir = getenv("SLURM_JOB_WORK_DIR"), *nodes = getenv("SLURM_NODELIST");
	const char *cluster = getenv("SLURM_CLUSTER_NAME");
	char sym[PATH_MAX], message[PATH_MAX + 600];
	const char *dname, *remedy;
	unsigned long uid, gid;

	if (!env_number("SLURM_JOB_UID", 4294967294UL, &uid) ||
	    !env_number("SLURM_JOB_GID", 4294967294UL, &gid) || !dir || dir[0] != '/' ||
	    !nodes || !nodes[0]) {
		snprintf(err, errlen, "Slurm's environment lacks SLURM_JOB_UID, SLURM_JOB_GID, "
			 "SLURM_JOB_WORK_DIR or SLURM_NODELIST");
		return NULL;
	}
	if (cli_resolve_symbolizer(h->cfg.llvm_symbolizer, sym, sizeof(sym), &dname, message,
				   sizeof(message), &remedy))
		sym[0] = '\0'; /* names from ELF symbols */
	return json_pack("{s:s, s:I, s:I, s:I, s:s, s:s, s:s, s:o, s:s}", "request",
			 CONTROL_JOB_PROLOG, "job_id", (json_int_t)h->job, "uid", (json_int_t)uid,
			 "gid", (json_int_t)gid, "work_dir", dir, "nodes", nodes, "cluster",
			 cluster ? cluster : "", "frequency", hook_frequency(h), "symbolizer", sym);
}

int cmd_job_prolog(int argc, char **argv)
{
	struct hook h = { .what = "job-prolog" };
	json_t *req, *reply = NULL;
	char err[1024];
	int e;

	if (hook_begin(&h, argc, argv, HOOK_PROLOG_MS))
		goto out;
	req = prolog_request(&h, err, sizeof(err));
	if (!req) {
		say(&h, "not profiled: %s", err);
		goto out;
	}
	e = hook_ask(&h, req, &reply, err, sizeof(err));
	if (e)
		say(&h, "not profiled: %s", err);
	else
		say(&h, "profiling at %lld Hz, Run %s (owner uid %s)",
		    (long long)json_integer_value(json_object_get(reply, "frequency")),
		    json_string_value(json_object_get(reply, "run_dir")) ?: "?",
		    getenv("SLURM_JOB_UID"));
out:
	json_decref(reply);
	config_release(&h.cfg);
	return 0;
}

/* the job's exit code: SLURM_JOB_EXIT_CODE2 "<exit>:<signal>", else the
 * wait status of SLURM_JOB_EXIT_CODE; null unknown */
static json_t *job_exit_code(void)
{
	const char *two = getenv("SLURM_JOB_EXIT_CODE2");
	unsigned long status;
	unsigned code, sig;

	if (two && sscanf(two, "%u:%u", &code, &sig) == 2 && code < 256 && sig < 128)
		return json_integer(sig ? 128 + sig : code);
	if (env_number("SLURM_JOB_EXIT_CODE", 65535, &status))
		return json_integer(WIFSIGNALED((int)status) ? 128 + WTERMSIG((int)status)
								: WEXITSTATUS((int)status));
	return json_null();
}

/* "n2,n3" of the nodes whose Epilog has not come */
static void pending_text(const json_t *pending, char *buf, size_t len)
{
	size_t i, n = 0;
	json_t *p;

	buf[0] = '\0';
	json_array_foreach(pending, i, p) {
		if (n + 8 >= len) {
			snprintf(buf + n, len - n, ",...");
			return;
		}
		n += snprintf(buf + n, len - n, "%s%s", i ? "," : "", json_string_value(p) ?: "?");
	}
}

int cmd_job_epilog(int argc, char **argv)
{
	struct hook h = { .what = "job-epilog" };
	const char *cluster = getenv("SLURM_CLUSTER_NAME");
	json_t *req, *reply = NULL;
	char err[1024], nodes[512];
	const char *dir;
	int e;

	if (hook_begin(&h, argc, argv, HOOK_EPILOG_MS))
		goto out;
	req = json_pack("{s:s, s:I, s:s, s:o}", "request", CONTROL_JOB_EPILOG, "job_id",
			(json_int_t)h.job, "cluster", cluster ? cluster : "", "exit_code",
			job_exit_code());
	e = hook_ask(&h, req, &reply, err, sizeof(err));
	dir = json_string_value(json_object_get(reply, "run_dir")) ?: "?";
	pending_text(json_object_get(reply, "pending_nodes"), nodes, sizeof(nodes));
	if (e)
		say(&h, "not finalized: %s", err);
	else if (json_is_true(json_object_get(reply, "none")))
		say(&h, "no Run of this job on this node");
	else if (nodes[0])
		say(&h, "Run %s: this node is done; waiting for node(s) %s", dir, nodes);
	else
		say(&h, "Run %s finalized", dir);
out:
	json_decref(reply);
	config_release(&h.cfg);
	return 0;
}
