/* node_service_job — the Slurm job Runs of the node service: attach and
 * detach (any user; the Aggregator decides from a munge credential whose
 * job it is), job-prolog and job-epilog (root: the Slurm Prolog and
 * Epilog). See node_service.h for the requests and their answers.
 *
 * An attach Run is a Run of its connection, as a run-start Run is
 * (run-end, run-interrupt, the connection closing); it also ends at a
 * detach or when its Aggregator CLOSEs it (the job ended), and its client
 * is then told unasked (a "run-end" it did not request). A prolog Run
 * belongs to no connection: the job-epilog of its job ends it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/node_service_internal.h"
#include "userspace/aggregator/run_manifest.h" /* run_iso_time */
#include "userspace/config/config.h"
#include "userspace/control/control.h"
#include "userspace/log/log.h"
#include "userspace/wire/wire.h"

#define NS_ATTACH_TIMEOUT_MS 10000
/* llvm-symbolizer's budget at the end of an attach Run (a detach, the
 * job's end): the attach's "symbolizer_budget_ms", else this */
#define NS_ATTACH_BUDGET_MS 60000
#define NS_ATTACH_BUDGET_MAX_MS (3600 * 1000)
/* attaches waiting for the Aggregator at once: of one user, and of all
 * users together (root: any): users cannot take every outstanding Control
 * of the Agent, root keeps the rest */
#define NS_ATTACH_STARTING_MAX 2
#define NS_ATTACH_USERS_MAX (AGENT_CONTROL_REQUESTS_MAX - 16)
#define JOB_ID_MAX 4294967293u /* Slurm's NO_VAL and INFINITE above */
#define CREDENTIAL_MAX 8192
#define CLUSTER_SHOWN_MAX 40
#define HOSTLIST_MAX 65536

/* v an integer in [min, max]: 1 and *out */
static int in_range(const json_t *v, json_int_t min, json_int_t max, json_int_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return 0;
	*out = json_integer_value(v);
	return 1;
}

/* req's "job_id": 0 and *job, or -EINVAL (answered) */
static int job_of(struct node_service *ns, struct ns_client *c, const json_t *req,
		  const char *request, uint32_t *job)
{
	json_int_t v;

	if (in_range(json_object_get(req, "job_id"), 1, JOB_ID_MAX, &v)) {
		*job = (uint32_t)v;
		return 0;
	}
	ns_reply(ns, c, request, control_error_reply(-EINVAL, "%s needs \"job_id\", a Slurm job "
						     "id (1 to %u)", request, JOB_ID_MAX));
	return -EINVAL;
}

/* the optional fields every job request may carry: 0, or -EINVAL with err */
static int check_optional(const json_t *req, char *err, size_t errlen)
{
	const json_t *f = json_object_get(req, "frequency"), *n = json_object_get(req, "name");
	const char *sym = json_string_value(json_object_get(req, "symbolizer"));
	json_int_t v;

	if (f && !json_is_null(f) &&
	    !in_range(f, CONFIG_MIN_SAMPLING_FREQUENCY, CONFIG_MAX_SAMPLING_FREQUENCY, &v))
		snprintf(err, errlen, "\"frequency\" is null or %d to %d samples per second",
			 CONFIG_MIN_SAMPLING_FREQUENCY, CONFIG_MAX_SAMPLING_FREQUENCY);
	else if (n && !json_is_null(n) &&
		 (!json_is_string(n) || !json_string_length(n) || json_string_length(n) > 255))
		snprintf(err, errlen, "\"name\" is null or a name of 1 to 255 bytes");
	else if (json_object_get(req, "symbolizer") && (!sym || (sym[0] && sym[0] != '/')))
		snprintf(err, errlen, "\"symbolizer\" is an absolute path or \"\"");
	else if (json_object_get(req, "effective_configuration") &&
		 !json_is_object(json_object_get(req, "effective_configuration")))
		snprintf(err, errlen, "\"effective_configuration\" is an object");
	else
		return 0;
	return -EINVAL;
}

/* The run facts of a job Run, as run_facts_json() gives a run-start's:
 * named N or "job-J", the command that made it, this node the origin. */
static json_t *job_facts(struct node_service *ns, const json_t *req, uint32_t job,
			 const char *how)
{
	const json_t *eff = json_object_get(req, "effective_configuration");
	const char *name = json_string_value(json_object_get(req, "name"));
	char created[32], id[16], dflt[24];

	run_iso_time(created, sizeof(created));
	snprintf(id, sizeof(id), "%u", (unsigned)job);
	snprintf(dflt, sizeof(dflt), "job-%u", (unsigned)job);
	return json_pack("{s:s, s:s, s:[s,s,s], s:n, s:n, s:n, s:n, s:s, s:I, s:o}", "name",
			 name ? name : dflt, "created", created, "command", "nunatak", how, id,
			 "exit_code", "launcher", "target", "world_size", "node", ns->node,
			 "job_id", (json_int_t)job, "effective_configuration",
			 json_is_object(eff) ? json_deep_copy(eff)
			 : ns->cfg ? config_effective_json(ns->cfg) : json_object());
}

/* The frequency of a job Run: the node service's, whatever was asked (the
 * Agent samples every Target at its configuration's frequency), so that
 * the Run records what it was sampled at */
static json_t *frequency_of(const struct node_service *ns)
{
	return json_integer(ns->frequency);
}

static const char *symbolizer_of(const json_t *req)
{
	return json_string_value(json_object_get(req, "symbolizer")) ?: "";
}

/* ATTACH's json (design8 section 3), with "peer_uid": the uid of the
 * connection (SO_PEERCRED), which munge's uid must be (a credential
 * another user got hold of is refused) */
static char *attach_json(struct ns_run *r, const json_t *req)
{
	json_t *doc = json_pack("{s:I, s:I, s:O, s:O, s:o, s:o, s:s, s:b}", "job_id",
				(json_int_t)r->job_id, "peer_uid", (json_int_t)r->attacher,
				"credential",
				json_object_get(req, "credential"), "name",
				json_object_get(req, "name") ?: json_null(), "frequency",
				frequency_of(r->ns), "run", job_facts(r->ns, req, r->job_id, "attach"),
				"symbolizer", symbolizer_of(req), "mpi_events",
				json_is_true(json_object_get(req, "mpi_events")));
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	return text;
}

/* the asked frequency of req (0: none) */
static long asked_of(const json_t *req)
{
	const json_t *f = json_object_get(req, "frequency");

	return json_is_integer(f) ? (long)json_integer_value(f) : 0;
}

/* A job Run asked for another frequency than the one every Target of this
 * node is sampled at: said in the Run (frequency-fixed) */
static void frequency_degradation(struct ns_run *r)
{
	char message[256];

	if (!r->asked_hz || r->asked_hz == r->ns->frequency)
		return;
	snprintf(message, sizeof(message), "asked %ld Hz; the nunatak service on %s samples every "
		 "Target at %ld Hz", r->asked_hz, r->ns->node, r->ns->frequency);
	agent_target_add_degradation(r->ns->agent, r->run_id, "frequency-fixed", message,
				     "set [sampling] frequency in the site's nunatak.toml for "
				     "nunatakd, or profile with `nunatak run` where no node service "
				     "runs");
}

/* the ask and the truth of a reply: "frequency" (this node's), "frequency_asked" */
static json_t *frequency_fields(const struct ns_run *r)
{
	return json_pack("{s:I, s:o}", "frequency", (json_int_t)r->ns->frequency,
			 "frequency_asked", r->asked_hz ? json_integer(r->asked_hz) : json_null());
}

/* why the Agent did not take job J's processes (agent_target_start's e) */
static void job_target_error(char *err, size_t len, uint32_t job, int e)
{
	snprintf(err, len, "the agent cannot take job %u's processes: %s", (unsigned)job,
		 e == -EEXIST ? "another Run of the job is profiling it on this node already"
		 : e == -ENOSPC ? "too many jobs are profiled on this node" : strerror(-e));
}

/* the Aggregator CLOSEd a job Target (its job ended): its Run ends */
static void on_closed(void *ctx, const char *run_id, const char *json)
{
	struct node_service *ns = ctx;
	json_t *doc = json ? json_loads(json, 0, NULL) : NULL;
	const char *why = json_string_value(json_object_get(doc, "why"));
	struct ns_run *r;

	for (r = ns->runs; r && strcmp(r->run_id, run_id); r = r->next)
		;
	if (r && (r->state == NS_RUN_ACTIVE || r->state == NS_RUN_LINGER)) {
		r->ended_by = why && !strcmp(why, "job-ended") ? "job-ended" : "closed";
		if (!ns->quiet)
			pr_info("Run %s of job %u: closed by its aggregator (%s)", r->run_id,
				(unsigned)r->job_id, why ? why : "no reason given");
		ns_run_finish(r);
	}
	json_decref(doc);
}

/* the Ack of ATTACH: the job Target takes the job's processes here */
static int attach_target(struct ns_run *r, const json_t *ack, char *err, size_t errlen)
{
	const json_t *owner = json_object_get(ack, "owner");
	char route[16];
	json_int_t uid, gid;
	struct agent_target_opts o = { .run_id = r->run_id, .job_id = r->job_id,
				       .route_key = route, .closed = on_closed,
				       .closed_ctx = r->ns };
	int e;

	if (!in_range(json_object_get(owner, "uid"), 0, UINT32_MAX - 1, &uid) ||
	    !in_range(json_object_get(owner, "gid"), 0, UINT32_MAX - 1, &gid)) {
		snprintf(err, errlen, "the aggregator's answer to ATTACH names no owner");
		return -EPROTO;
	}
	snprintf(route, sizeof(route), "%u", (unsigned)r->job_id);
	r->uid = o.uid = (uid_t)uid;
	r->gid = o.gid = (gid_t)gid;
	e = agent_target_start(r->ns->agent, &o, NULL, NULL);
	if (e)
		job_target_error(err, errlen, r->job_id, e);
	else
		frequency_degradation(r);
	return e;
}

static void on_attached(void *ctx, int err, const char *json)
{
	struct ns_run *r = ctx;
	struct node_service *ns = r->ns;
	json_t *ack = !err && json ? json_loads(json, 0, NULL) : NULL;
	char why[512];

	if (err < 0) {
		ns_reply(ns, r->client, CONTROL_ATTACH, control_error_reply(err, "%s",
			 ns_answer_why(err, json, "the aggregator did not answer the attach within "
				       "10 s: is it running and reachable ('nunatak status' shows it)?")));
		ns_run_free(r);
		return;
	}
	err = attach_target(r, ack, why, sizeof(why));
	if (err) {
		pr_warn("Run %s of job %u: %s", r->run_id, (unsigned)r->job_id, why);
		ns_reply(ns, r->client, CONTROL_ATTACH, control_error_reply(err, "%s", why));
		json_decref(ack);
		ns_run_free(r);
		return;
	}
	ns_run_take_run_dir(r, ack);
	/* what this node samples at: its configuration's, whatever was asked */
	r->info = json_pack("{s:O?, s:O?}", "owner", json_object_get(ack, "owner"), "job",
			    json_object_get(ack, "job"));
	json_object_update_missing_new(r->info, frequency_fields(r));
	json_decref(ack);
	r->state = NS_RUN_ACTIVE;
	if (!ns->quiet)
		pr_info("Run %s of job %u (uid %u attached) started in '%s'", r->run_id,
			(unsigned)r->job_id, (unsigned)r->attacher, r->run_dir);
	if (!r->client || r->interrupted) { /* gone, or a stop, while it started */
		r->interrupted = 1;
		ns_run_finish(r);
		return;
	}
	ns_reply(ns, r->client, CONTROL_ATTACH,
		 control_ok_reply(json_pack("{s:s, s:s, s:O?, s:O?, s:O?, s:O?}", "run_id",
					    r->run_id, "run_dir", r->run_dir, "owner",
					    json_object_get(r->info, "owner"), "job",
					    json_object_get(r->info, "job"), "frequency",
					    json_object_get(r->info, "frequency"), "frequency_asked",
					    json_object_get(r->info, "frequency_asked"))));
}

/* attach's own fields: 0, or -EINVAL with err */
static int check_attach(const json_t *req, char *err, size_t errlen)
{
	const json_t *cred = json_object_get(req, "credential");

	if (!json_is_string(cred) || !json_string_length(cred) ||
	    json_string_length(cred) > CREDENTIAL_MAX) {
		snprintf(err, errlen, "attach needs \"credential\", a munge credential of payload "
			 "\"nunatak attach job=J\" (at most %d bytes)", CREDENTIAL_MAX);
		return -EINVAL;
	}
	return check_optional(req, err, errlen);
}

/* attaches not answered by the Aggregator yet: of uid, and of every user
 * but root (uid 0 counts these) */
static int attaches_starting(const struct node_service *ns, uid_t uid)
{
	const struct ns_run *r;
	int n = 0;

	for (r = ns->runs; r; r = r->next)
		n += r->kind == NS_RUN_ATTACH && r->state == NS_RUN_STARTING &&
		     (uid ? r->attacher == uid : r->attacher != 0);
	return n;
}

/* the attach of job J that is granted (its Aggregator said yes), else NULL */
static struct ns_run *granted_attach(struct node_service *ns, uint32_t job)
{
	struct ns_run *r;

	for (r = ns->runs; r; r = r->next)
		if (r->kind == NS_RUN_ATTACH && r->job_id == job && r->state != NS_RUN_STARTING)
			return r;
	return NULL;
}

/* whether c may ask for job J's attach now: 0, or -EAGAIN / -EBUSY with err.
 * Only what c may know is told: an attach not granted yet, or another
 * user's, is never named to them (the Aggregator decides those). */
static int attach_admission(struct node_service *ns, const struct ns_client *c, uint32_t job,
			    char *err, size_t len)
{
	uid_t uid = c->peer.uid;
	struct ns_run *r;

	if (uid && attaches_starting(ns, uid) >= NS_ATTACH_STARTING_MAX) {
		snprintf(err, len, "you have %d attaches waiting for the aggregator already: try "
			 "again once they are answered", NS_ATTACH_STARTING_MAX);
		return -EAGAIN;
	}
	if (uid && attaches_starting(ns, 0) >= NS_ATTACH_USERS_MAX) {
		snprintf(err, len, "%d attaches of users are under way on this node (the aggregator "
			 "has not answered them yet): try again in a few seconds", NS_ATTACH_USERS_MAX);
		return -EAGAIN;
	}
	for (r = ns->runs; r; r = r->next)
		if (r->kind == NS_RUN_ATTACH && r->job_id == job && r->state == NS_RUN_STARTING &&
		    r->attacher == uid) {
			snprintf(err, len, "your attach of job %u is under way already", (unsigned)job);
			return -EBUSY;
		}
	r = granted_attach(ns, job);
	if (r && (!uid || uid == r->uid || uid == r->attacher)) {
		snprintf(err, len, "job %u is being profiled through this node already (Run %s, "
			 "attached by uid %u): 'nunatak detach %u' ends it", (unsigned)job, r->run_id,
			 (unsigned)r->attacher, (unsigned)job);
		return -EBUSY;
	}
	return 0;
}

int ns_attach(struct node_service *ns, struct ns_client *c, json_t *req)
{
	char err[512], route[16];
	json_int_t v;
	struct ns_run *r;
	uint32_t job;
	char *text;
	int e;

	if ((e = job_of(ns, c, req, CONTROL_ATTACH, &job)))
		return e;
	e = check_attach(req, err, sizeof(err));
	if (!e)
		e = attach_admission(ns, c, job, err, sizeof(err));
	if (e) {
		ns_reply(ns, c, CONTROL_ATTACH, control_error_reply(e, "%s", err));
		return e;
	}
	if (!(r = ns_run_new(ns, c))) {
		ns_reply(ns, c, CONTROL_ATTACH, NULL);
		return -ENOMEM;
	}
	r->kind = NS_RUN_ATTACH;
	r->job_id = job;
	r->asked_hz = asked_of(req);
	r->attacher = c->peer.uid;
	r->symbolizer_budget_ms = in_range(json_object_get(req, "symbolizer_budget_ms"), 0,
					   NS_ATTACH_BUDGET_MAX_MS, &v) ? (int)v
					   : NS_ATTACH_BUDGET_MS;
	snprintf(route, sizeof(route), "%u", (unsigned)job);
	text = attach_json(r, req);
	e = text ? agent_control_request(ns->agent, NUNATAK__WIRE__CONTROL__ACTION__ATTACH,
					 r->run_id, route, text, NS_ATTACH_TIMEOUT_MS, on_attached, r)
		 : -ENOMEM;
	free(text);
	if (e) {
		ns_reply(ns, c, CONTROL_ATTACH, control_error_reply(e, "the agent cannot send the "
				"attach: %s", e == -EBUSY ? "too many requests are waiting for the "
				"aggregator on this node: try again in a few seconds" : strerror(-e)));
		ns_run_free(r);
	}
	return e;
}

/* "the attach of job J is uid U's" */
static int may_detach(const struct ns_client *c, const struct ns_run *r, char *err, size_t len)
{
	if (c->peer.uid == 0 || c->peer.uid == r->attacher ||
	    (r->state != NS_RUN_STARTING && c->peer.uid == r->uid))
		return 0;
	snprintf(err, len, "the attach of job %u was made by uid %u: only they, the job's owner "
		 "or root may detach it", (unsigned)r->job_id, (unsigned)r->attacher);
	return -EPERM;
}

int ns_detach(struct node_service *ns, struct ns_client *c, json_t *req)
{
	struct ns_run *r;
	char err[512];
	uint32_t job;
	int e;

	if ((e = job_of(ns, c, req, CONTROL_DETACH, &job)))
		return e;
	r = granted_attach(ns, job);
	for (struct ns_run *x = ns->runs; !r && x; x = x->next)
		if (x->kind == NS_RUN_ATTACH && x->job_id == job && x->attacher == c->peer.uid)
			r = x; /* the caller's own, still starting */
	if (!r) {
		snprintf(err, sizeof(err), "no attach of job %u on this node (%s): run 'nunatak "
			 "detach %u' on the node where 'nunatak attach %u' runs", (unsigned)job,
			 ns->node, (unsigned)job, (unsigned)job);
		e = -ENOENT;
	} else if (!(e = may_detach(c, r, err, sizeof(err)))) {
		if (r->state == NS_RUN_STARTING || r->waiter) {
			snprintf(err, sizeof(err), "the attach of job %u is %s: try again in a "
				 "moment", (unsigned)job, r->waiter ? "being detached already"
				 : "still starting");
			e = r->waiter ? -EALREADY : -EBUSY;
		}
	}
	if (e) {
		ns_reply(ns, c, CONTROL_DETACH, control_error_reply(e, "%s", err));
		return e;
	}
	r->waiter = c;
	r->waiter_request = CONTROL_DETACH;
	if (r->state != NS_RUN_ENDING) {
		r->ended_by = "detach";
		ns_run_finish(r); /* may answer and free r */
	}
	return 0;
}

/* a job Run's end told: its client (attach: "run-end") and its waiter */
void ns_job_ended(struct ns_run *r, int err, const char *json)
{
	struct node_service *ns = r->ns;
	json_t *ack = err >= 0 && json ? json_loads(json, 0, NULL) : NULL, *reply;
	const json_t *pending = json_object_get(ack, "pending_nodes");

	ns_run_take_run_dir(r, ack);
	if (!ns->quiet)
		pr_info("Run %s of job %u %s", r->run_id, (unsigned)r->job_id,
			err < 0 ? "not finalized" : json_array_size(pending) ? "done on this node"
			: "finalized");
	if (r->kind == NS_RUN_ATTACH) {
		reply = err < 0 ? control_error_reply(err, "the Run of job %u was not finalized: %s",
					(unsigned)r->job_id, ns_answer_why(err, json,
					"the aggregator did not answer in time"))
			: control_ok_reply(json_pack("{s:s, s:s, s:b, s:[], s:O?}", "run_dir",
				r->run_dir, "ended_by", r->ended_by ?: "run-end", "interrupted",
				r->interrupted, "outlived", "job", json_object_get(r->info, "job")));
		(r->end_asked ? ns_reply : ns_notify)(ns, r->client, CONTROL_RUN_END, reply);
	}
	if (r->waiter) {
		reply = err < 0 ? control_error_reply(err, "the Run of job %u was not finalized: %s",
					(unsigned)r->job_id, ns_answer_why(err, json, NULL))
			: control_ok_reply(json_pack("{s:s, s:o, s:b}", "run_dir", r->run_dir,
				"pending_nodes", pending ? json_deep_copy(pending) : json_array(),
				"finalized", !json_array_size(pending)));
		ns_reply(ns, r->waiter, r->waiter_request, reply);
	}
	json_decref(ack);
	ns_run_free(r);
}

/* "job-<cluster>-<J>", the cluster's name kept to [A-Za-z0-9_-] */
static void prolog_run_id(char *id, size_t len, const char *cluster, uint32_t job)
{
	char c[CLUSTER_SHOWN_MAX + 1];
	size_t i;

	for (i = 0; cluster && cluster[i] && i < CLUSTER_SHOWN_MAX; i++) {
		char ch = cluster[i];

		c[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		       (ch >= '0' && ch <= '9') || ch == '-' ? ch : '_';
	}
	c[i] = '\0';
	snprintf(id, len, "job-%s-%u", c[0] ? c : "slurm", (unsigned)job);
}

/* job-prolog's fields: 0, or -EINVAL / -EPERM with err */
static int check_prolog(const struct ns_client *c, const json_t *req, char *err, size_t errlen)
{
	const char *dir = json_string_value(json_object_get(req, "work_dir"));
	const json_t *nodes = json_object_get(req, "nodes");
	json_int_t v;

	if (c->peer.uid != 0) {
		snprintf(err, errlen, "job-prolog is the Slurm Prolog's (root) request: uid %u may "
			 "not make one", (unsigned)c->peer.uid);
		return -EPERM;
	}
	if (!in_range(json_object_get(req, "uid"), 0, UINT32_MAX - 1, &v) ||
	    !in_range(json_object_get(req, "gid"), 0, UINT32_MAX - 1, &v))
		snprintf(err, errlen, "job-prolog needs \"uid\" and \"gid\", the job owner's");
	else if (!dir || dir[0] != '/' || strlen(dir) > PATH_MAX - 64)
		snprintf(err, errlen, "job-prolog needs \"work_dir\", the job's working directory "
			 "(an absolute path)");
	else if (!json_is_string(nodes) || !json_string_length(nodes) ||
		 json_string_length(nodes) > HOSTLIST_MAX)
		snprintf(err, errlen, "job-prolog needs \"nodes\", the job's Slurm hostlist");
	else if (json_object_get(req, "cluster") &&
		 !json_is_string(json_object_get(req, "cluster")))
		snprintf(err, errlen, "job-prolog: \"cluster\" is the Slurm cluster's name");
	else
		return check_optional(req, err, errlen);
	return -EINVAL;
}

/* START of a prolog job Run (design8 section 3) */
static char *prolog_start_json(struct ns_run *r, const json_t *req)
{
	char runs_dir[PATH_MAX];
	json_t *doc;
	char *text;

	snprintf(runs_dir, sizeof(runs_dir), "%s/.nunatak",
		 json_string_value(json_object_get(req, "work_dir")));
	doc = json_pack("{s:o, s:s, s:b, s:{s:I, s:I}, s:s, s:o, s:b, s:{s:I, s:O, s:s}}", "run",
			job_facts(r->ns, req, r->job_id, "job-prolog"), "runs_dir", runs_dir,
			"runs_dir_create", 1, "owner", "uid", (json_int_t)r->uid, "gid",
			(json_int_t)r->gid, "symbolizer", symbolizer_of(req), "frequency",
			frequency_of(r->ns),
			"mpi_events", 0, "job", "id", (json_int_t)r->job_id, "nodes",
			json_object_get(req, "nodes"), "mode", "prolog");
	text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return text;
}

static void on_prolog_started(void *ctx, int err, const char *json)
{
	struct ns_run *r = ctx;
	struct node_service *ns = r->ns;
	json_t *reply;

	if (ns_run_started(r, r->waiter, CONTROL_JOB_PROLOG, err, json,
			   "the aggregator did not answer START within 5 s: is it running and "
			   "reachable ('nunatak status' shows it)?"))
		return;
	if (!ns->quiet)
		pr_info("Run %s of job %u (uid %u) started in '%s'", r->run_id, (unsigned)r->job_id,
			(unsigned)r->uid, r->run_dir);
	reply = json_pack("{s:s, s:s}", "run_id", r->run_id, "run_dir", r->run_dir);
	if (reply)
		json_object_update_new(reply, frequency_fields(r));
	ns_reply(ns, r->waiter, CONTROL_JOB_PROLOG, control_ok_reply(reply));
	r->waiter = NULL;
	if (r->interrupted) /* the service stops */
		ns_run_finish(r);
}

/* a second job-prolog of a job (a Prolog run again): the Run there is */
static int prolog_again(struct node_service *ns, struct ns_client *c, struct ns_run *r)
{
	if (r->state != NS_RUN_ACTIVE) {
		ns_reply(ns, c, CONTROL_JOB_PROLOG, control_error_reply(-EBUSY, "the Run of job %u "
			 "is %s on this node", (unsigned)r->job_id,
			 r->state == NS_RUN_STARTING ? "starting" : "ending"));
		return -EBUSY;
	}
	ns_reply(ns, c, CONTROL_JOB_PROLOG,
		 control_ok_reply(json_pack("{s:s, s:s, s:b}", "run_id", r->run_id, "run_dir",
					    r->run_dir, "already", 1)));
	return 0;
}

int ns_job_prolog(struct node_service *ns, struct ns_client *c, json_t *req)
{
	struct agent_target_opts o = { .route_key = NULL };
	char err[512], id[64], route[16];
	struct ns_run *r;
	uint32_t job;
	char *start;
	int e;

	if ((e = job_of(ns, c, req, CONTROL_JOB_PROLOG, &job)))
		return e;
	if ((e = check_prolog(c, req, err, sizeof(err)))) {
		ns_reply(ns, c, CONTROL_JOB_PROLOG, control_error_reply(e, "%s", err));
		return e;
	}
	prolog_run_id(id, sizeof(id), json_string_value(json_object_get(req, "cluster")), job);
	for (r = ns->runs; r && strcmp(r->run_id, id); r = r->next)
		;
	if (r)
		return prolog_again(ns, c, r);
	if (!(r = ns_run_new(ns, NULL))) {
		ns_reply(ns, c, CONTROL_JOB_PROLOG, NULL);
		return -ENOMEM;
	}
	snprintf(r->run_id, sizeof(r->run_id), "%s", id);
	snprintf(route, sizeof(route), "%u", (unsigned)job);
	r->kind = NS_RUN_PROLOG;
	r->job_id = o.job_id = job;
	r->asked_hz = asked_of(req);
	r->uid = o.uid = (uid_t)json_integer_value(json_object_get(req, "uid"));
	r->gid = o.gid = (gid_t)json_integer_value(json_object_get(req, "gid"));
	r->waiter = c;
	r->waiter_request = CONTROL_JOB_PROLOG;
	o.run_id = r->run_id;
	o.route_key = route;
	o.start_json = start = prolog_start_json(r, req);
	e = start ? agent_target_start(ns->agent, &o, on_prolog_started, r) : -ENOMEM;
	free(start);
	if (!e && agent_target_exists(ns->agent, id))
		frequency_degradation(r); /* r lives while its Target does */
	if (e) {
		job_target_error(err, sizeof(err), job, e);
		ns_reply(ns, c, CONTROL_JOB_PROLOG, control_error_reply(e, "%s", err));
		ns_run_free(r);
	}
	/* on_prolog_started() may have run already, and freed r */
	return e;
}

int ns_job_epilog(struct node_service *ns, struct ns_client *c, json_t *req)
{
	const json_t *code = json_object_get(req, "exit_code");
	struct ns_run *r;
	char id[64];
	uint32_t job;
	int e;

	if ((e = job_of(ns, c, req, CONTROL_JOB_EPILOG, &job)))
		return e;
	if (c->peer.uid != 0) {
		ns_reply(ns, c, CONTROL_JOB_EPILOG, control_error_reply(-EPERM, "job-epilog is the "
			 "Slurm Epilog's (root) request: uid %u may not make one",
			 (unsigned)c->peer.uid));
		return -EPERM;
	}
	prolog_run_id(id, sizeof(id), json_string_value(json_object_get(req, "cluster")), job);
	for (r = ns->runs; r && strcmp(r->run_id, id); r = r->next)
		;
	if (!r) {
		ns_reply(ns, c, CONTROL_JOB_EPILOG, control_ok_reply(json_pack("{s:b}", "none", 1)));
		return 0;
	}
	if (r->state != NS_RUN_ACTIVE || r->waiter) {
		e = r->state == NS_RUN_STARTING ? -EBUSY : -EALREADY;
		ns_reply(ns, c, CONTROL_JOB_EPILOG, control_error_reply(e, "the Run of job %u is "
			 "%s on this node", (unsigned)job, e == -EBUSY ? "still starting"
			 : "ending already"));
		return e;
	}
	json_decref(r->exit_code);
	r->exit_code = json_is_integer(code) ? json_incref((json_t *)code) : json_null();
	r->ended_by = "job-epilog";
	r->waiter = c;
	r->waiter_request = CONTROL_JOB_EPILOG;
	ns_run_finish(r); /* may answer and free r */
	return 0;
}
