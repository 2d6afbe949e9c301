/* cmd_status — `nunatak status [--json]`: what the local node service
 * says of itself (its Agent: node, version, incarnation, active Targets)
 * and of each Aggregator it publishes to (the Agents they know, the Runs
 * in progress, their Batch counters). Another user's Runs are left out by
 * the service unless the caller is root. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "userspace/cli/cli.h"
#include "userspace/config/config.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"
#include "userspace/launch/launch.h"

#define STATUS_TIMEOUT_MS 5000

static struct {
	int json;
} env;

static const char doc[] =
	"Show the local node service (nunatakd): its Agent and the Targets it\n"
	"observes, and each aggregator's Agents, Runs in progress and Batch counters,\n"
	"and the Slurm jobs being profiled (job id, owner, mode: attach or prolog,\n"
	"since, nodes). Only your own Runs are shown, unless you are root.\n"
	"\v"
	"The socket: NUNATAK_AGENT_SOCKET, else the site file's [service].agent_socket,\n"
	"else " CONTROL_SOCKET_DEFAULT ".\n"
	"\n"
	"EXAMPLES:\n"
	"  nunatak status\n"
	"  nunatak status --json | python3 -m json.tool\n"
	"  NUNATAK_AGENT_SOCKET=/tmp/svc/agent.sock nunatak status";

static const struct argp_option options[] = {
	{ "json", 'j', NULL, 0, "Print the status as one JSON object on stdout", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'j':
		env.json = 1;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static json_int_t num(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "?";
}

/* an incarnation: hex text, or a number */
static const char *incarnation(const json_t *o, char *buf, size_t len)
{
	const json_t *v = json_object_get(o, "incarnation");

	if (json_is_string(v))
		return json_string_value(v);
	snprintf(buf, len, "%llx", (unsigned long long)json_integer_value(v));
	return buf;
}

static void print_agent(const json_t *agent)
{
	const json_t *targets = json_object_get(agent, "targets"), *t;
	char inc[32];
	size_t i;

	printf("agent: node %s, incarnation %s, %s on %lld CPUs, %zu active Target%s\n",
	       str(agent, "node"), incarnation(agent, inc, sizeof(inc)),
	       json_is_true(json_object_get(agent, "sampling")) ? "sampling" : "not sampling",
	       (long long)num(agent, "cpus"), json_array_size(targets),
	       json_array_size(targets) == 1 ? "" : "s");
	json_array_foreach(targets, i, t)
		printf("  Run %s (uid %lld, %s): %lld processes, batches %lld sent, %lld acked, "
		       "%lld queued, %lld spooled, %lld dropped; %lld samples sent\n",
		       str(t, "run_id"), (long long)num(t, "uid"), str(t, "state"),
		       (long long)num(t, "processes"), (long long)num(t, "batches_sent"),
		       (long long)num(t, "acked"), (long long)num(t, "queued"),
		       (long long)num(t, "spooled"), (long long)num(t, "dropped"),
		       (long long)num(t, "samples_sent"));
}

static void print_aggregator(const json_t *agg)
{
	const json_t *c = json_object_get(agg, "counters"), *x;
	char inc[32];
	size_t i;

	if (json_object_get(agg, "error")) {
		printf("aggregator %s: %s\n", str(agg, "endpoint"), str(agg, "error"));
		return;
	}
	printf("aggregator %s (nunatak %s)\n", str(agg, "endpoint"), str(agg, "version"));
	json_array_foreach(json_object_get(agg, "agents"), i, x)
		printf("  agent %s (nunatak %s, incarnation %s): last contact %lld s ago, %lld "
		       "active Targets\n",
		       str(x, "node"), str(x, "version"), incarnation(x, inc, sizeof(inc)),
		       (long long)num(x, "last_contact_s"), (long long)num(x, "active_targets"));
	json_array_foreach(json_object_get(agg, "runs"), i, x)
		printf("  Run in progress %s (uid %lld): %lld batches, %lld samples, in %s\n",
		       str(x, "run_id"), (long long)num(x, "owner_uid"), (long long)num(x, "batches"),
		       (long long)num(x, "samples"), str(x, "run_dir"));
	if (c)
		printf("  batches: %lld received, %lld stored, %lld duplicates, %lld refused; %lld "
		       "agents refused\n",
		       (long long)num(c, "received"), (long long)num(c, "stored"),
		       (long long)num(c, "duplicates"), (long long)num(c, "refused"),
		       (long long)num(c, "agents_refused"));
}

/* the Aggregators' Runs of a Slurm job: [{job_id, user, uid, nodes, since,
 * mode, run_id, aggregator}] */
static json_t *jobs_of(const json_t *reply)
{
	const json_t *agg, *run, *job;
	json_t *jobs = json_array();
	size_t i, j;

	json_array_foreach(json_object_get(reply, "aggregators"), i, agg)
		json_array_foreach(json_object_get(agg, "runs"), j, run) {
			job = json_object_get(run, "job");
			if (!json_is_object(job))
				continue;
			json_array_append_new(jobs, json_pack(
				"{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "job_id",
				json_object_get(job, "id"), "user", json_object_get(job, "user"), "uid",
				json_object_get(job, "uid"), "nodes", json_object_get(job, "nodes"),
				"since", json_object_get(job, "since"), "mode",
				json_object_get(job, "mode"), "run_id", json_object_get(run, "run_id"),
				"aggregator", json_object_get(agg, "endpoint")));
		}
	return jobs;
}

static void print_jobs(const json_t *jobs)
{
	const json_t *j, *n;
	size_t i, k;

	printf("Jobs being profiled:%s\n", json_array_size(jobs) ? "" : " none");
	if (json_array_size(jobs))
		printf("  %-10s %-16s %-7s %-21s %s\n", "JOB", "OWNER", "MODE", "SINCE", "NODES");
	json_array_foreach(jobs, i, j) {
		char owner[64];

		snprintf(owner, sizeof(owner), "%s", json_string_value(json_object_get(j, "user")) ?:
			 "?");
		if (!json_string_value(json_object_get(j, "user")))
			snprintf(owner, sizeof(owner), "uid %lld", (long long)num(j, "uid"));
		printf("  %-10lld %-16s %-7s %-21s ", (long long)num(j, "job_id"), owner,
		       str(j, "mode"), str(j, "since"));
		json_array_foreach(json_object_get(j, "nodes"), k, n)
			printf("%s%s", k ? "," : "", json_string_value(n) ?: "?");
		printf("\n");
	}
}

static int show(json_t *reply, const char *path)
{
	const json_t *agg;
	size_t i;

	json_object_del(reply, "ok");
	json_object_del(reply, "reply");
	json_object_set_new(reply, "jobs", jobs_of(reply));
	if (env.json) {
		json_object_set_new(reply, "socket", json_string(path));
		if (json_dumpf(reply, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF ||
		    fflush(stdout)) {
			fprintf(stderr, "nunatak: cannot write the status to stdout: %s\n",
				strerror(errno));
			return 1;
		}
		return 0;
	}
	printf("node service at %s\n", path);
	print_agent(json_object_get(reply, "agent"));
	json_array_foreach(json_object_get(reply, "aggregators"), i, agg)
		print_aggregator(agg);
	print_jobs(json_object_get(reply, "jobs"));
	return fflush(stdout) ? 1 : 0;
}

/* the status from the service at path: 0 and *reply, or 1 (said) */
static int ask_status(const char *path, json_t **reply)
{
	char err[1024];
	int e = control_ask_status(path, STATUS_TIMEOUT_MS, reply, err, sizeof(err));

	if (e == -ENOENT || e == -ECONNREFUSED) {
		fprintf(stderr, "nunatak: no node service runs here (%s%s%s): start nunatakd as "
				"root to profile through it; `nunatak run` profiles in-process "
				"without it\n",
			e == -ENOENT ? "no socket at '" : err, e == -ENOENT ? path : "",
			e == -ENOENT ? "'" : "");
		return 1;
	}
	if (e == -EPERM) {
		fprintf(stderr, "nunatak: %s\n", err);
		return 1;
	}
	if (e) {
		fprintf(stderr, "nunatak: the node service at '%s' gave no status: %s\n", path, err);
		return 1;
	}
	return 0;
}

int cmd_status(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, NULL, doc, NULL, NULL, NULL };
	json_t *reply = NULL;
	const char *path;
	struct config cfg;
	int rc;

	memset(&env, 0, sizeof(env));
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_NUNATAK_FAILED;
	config_init(&cfg);
	if (cli_load_config(&cfg)) {
		config_release(&cfg);
		return EXIT_NUNATAK_FAILED;
	}
	path = control_socket_path(cfg.service.agent_socket);
	rc = ask_status(path, &reply);
	if (!rc)
		rc = show(reply, path);
	json_decref(reply);
	config_release(&cfg);
	return rc;
}
