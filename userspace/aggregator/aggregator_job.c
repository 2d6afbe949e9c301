/* aggregator_job — see aggregator_job.h: what job Runs are, the prolog
 * job Runs' START join and Epilogs, their watch and deadlines, STATUS and
 * state file fields. ATTACH and the worker's works: aggregator_attach.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "userspace/aggregator/aggregator_job.h"
#include "userspace/aggregator/run_manifest.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/slurm/slurm_job.h"

void agg_job_free(struct agg_job *job)
{
	if (!job)
		return;
	slurm_job_nodes_free(job->nodes, job->n_nodes);
	free(job->epilog);
	free(job->work_dir);
	free(job);
}

struct agg_run *agg_job_run_of(struct aggregator *agg, uint32_t id)
{
	struct agg_run *r;

	for (r = agg->runs; r; r = r->next)
		if (r->job && r->job->id == id)
			return r;
	return NULL;
}

int agg_job_node_index(const struct agg_job *job, const char *node)
{
	size_t i;

	for (i = 0; job && node && i < job->n_nodes; i++)
		if (!strcmp(job->nodes[i], node))
			return (int)i;
	return -1;
}

/* a job id of a JSON value: 1..UINT32_MAX, 0 otherwise */
static uint32_t job_id_of(const json_t *v)
{
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > (json_int_t)UINT32_MAX)
		return 0;
	return (uint32_t)json_integer_value(v);
}

int agg_job_from_start(struct aggregator *agg, const json_t *spec, const char *origin,
		       struct agg_job **out, char *why, size_t whylen)
{
	json_t *j = json_object_get(spec, "job");
	const char *hostlist = json_string_value(json_object_get(j, "nodes"));
	const char *mode = json_string_value(json_object_get(j, "mode"));
	uint32_t id = job_id_of(json_object_get(j, "id"));
	struct agg_run *other;
	struct agg_job *job;
	int err;

	*out = NULL;
	if (!id || !hostlist || (mode && strcmp(mode, "prolog"))) {
		snprintf(why, whylen,
			 "malformed START: its \"job\" needs \"id\" (1..%" PRIu32 "), \"nodes\" (a "
			 "Slurm hostlist) and \"mode\": \"prolog\"",
			 UINT32_MAX);
		agg->refused++;
		return -EINVAL;
	}
	other = agg_job_run_of(agg, id);
	if (other) {
		snprintf(why, whylen, "job %" PRIu32 " is profiled already: run '%s' (in '%s')", id,
			 other->run_id, other->run_dir);
		return -EBUSY;
	}
	job = calloc(1, sizeof(*job));
	if (!job || !(job->work_dir = strdup(""))) {
		free(job);
		snprintf(why, whylen, "START of job %" PRIu32 ": out of memory", id);
		return -ENOMEM;
	}
	job->id = id;
	job->mode = AGG_JOB_PROLOG;
	job->since = time(NULL);
	err = slurm_job_hostlist_expand(hostlist, &job->nodes, &job->n_nodes);
	if (!err && !(job->epilog = calloc(job->n_nodes ? job->n_nodes : 1, 1)))
		err = -ENOMEM;
	if (err) {
		snprintf(why, whylen, "START of job %" PRIu32 ": its nodes '%.200s' %s", id,
			 hostlist, err == -ENOMEM ? "need more memory" : "are no Slurm hostlist");
		agg->refused += err == -EINVAL;
	} else if (agg_job_node_index(job, origin) < 0) {
		snprintf(why, whylen,
			 "START of job %" PRIu32
			 " from node '%.64s' refused: that node is not one of "
			 "the job's (%.200s)",
			 id, origin ? origin : "", hostlist);
		err = -EPERM;
		agg->refused++;
	}
	if (err) {
		agg_job_free(job);
		return err;
	}
	*out = job;
	return 0;
}

void agg_job_bind(struct agg_run *r, struct agg_job *job)
{
	struct agg_node *n;

	r->job = job;
	if (!job)
		return;
	job->next_watch_ms = clock_monotonic_ms() + AGG_JOB_WATCH_MS;
	if (job->mode == AGG_JOB_PROLOG && (n = agg_run_node(r, r->origin)))
		n->joined = 1;
}

/* the node a Control speaks for: Control.node, else what json names */
static const char *control_node(const Nunatak__Wire__Control *c, const json_t *spec)
{
	if (c->node && c->node[0])
		return c->node;
	return json_string_value(json_object_get(json_object_get(spec, "run"), "node"));
}

int agg_job_start_join(struct aggregator *agg, const struct agg_peer *from, struct agg_run *r,
		       const Nunatak__Wire__Control *c, const json_t *spec)
{
	json_t *owner = json_object_get(spec, "owner");
	const char *node = control_node(c, spec);
	struct agg_node *n;
	char why[768];

	if (agg_node_claim(agg, from, node, "START", why, sizeof(why)))
		goto refused;
	if (r->job->mode != AGG_JOB_PROLOG ||
	    job_id_of(json_object_get(json_object_get(spec, "job"), "id")) != r->job->id ||
	    json_integer_value(json_object_get(owner, "uid")) != (json_int_t)r->uid ||
	    json_integer_value(json_object_get(owner, "gid")) != (json_int_t)r->gid) {
		snprintf(why, sizeof(why),
			 "run '%s' is already being collected (in '%s') for job %" PRIu32
			 " of uid %u: this START names another job or owner",
			 r->run_id, r->run_dir, r->job->id, (unsigned)r->uid);
		return agg_reply_error(agg, from, EEXIST, r->run_id, why);
	}
	if (agg_job_node_index(r->job, node) < 0) {
		snprintf(why, sizeof(why),
			 "START of run '%s' from node '%.64s' refused: it is not a node of job "
			 "%" PRIu32,
			 r->run_id, node ? node : "", r->job->id);
		goto refused;
	}
	if (r->state != RUN_COLLECTING) {
		snprintf(why, sizeof(why),
			 "START of run '%s' from node '%.64s' came after the Run was closed (its "
			 "Epilogs came): it is being finalized in '%s'",
			 r->run_id, node, r->run_dir);
		return agg_reply_error(agg, from, ESTALE, r->run_id, why);
	}
	n = agg_run_node(r, node);
	if (!n)
		return agg_reply_error(agg, from, ENOMEM, r->run_id, "START: out of memory");
	if (!n->joined)
		pr_info("run '%s': node '%s' joined (job %" PRIu32 ")", r->run_id, node,
			r->job->id);
	n->joined = 1;
	return agg_reply_start_ack(agg, from, r);
refused:
	agg->refused++;
	return agg_reply_error(agg, from, EPERM, r->run_id, why);
}

/* the job nodes whose Epilog did not come, as a JSON array */
static json_t *pending_nodes(const struct agg_job *job)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < job->n_nodes; i++)
		if (!job->epilog[i])
			json_array_append_new(a, json_string(job->nodes[i]));
	return a;
}

static int reply_json(struct aggregator *agg, const struct agg_peer *to, const char *run_id,
		      json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	int err;

	json_decref(j);
	if (!text)
		return agg_reply_error(agg, to, ENOMEM, run_id, "out of memory");
	err = agg_reply_ack(agg, to, run_id, "", 0, 0, 0, text);
	free(text);
	return err;
}

int agg_job_epilog(struct aggregator *agg, const struct agg_peer *from, struct agg_run *r,
		   const Nunatak__Wire__Control *c, json_t *fin)
{
	struct agg_job *job = r->job;
	int i = agg_job_node_index(job, c->node);
	json_t *pending;
	char why[512];

	if (i < 0) {
		json_decref(fin);
		snprintf(why, sizeof(why),
			 "FINALIZE of run '%s' refused: node '%.64s' is not a node of job %" PRIu32,
			 r->run_id, c->node ? c->node : "", job->id);
		agg->refused++;
		return agg_reply_error(agg, from, EPERM, r->run_id, why);
	}
	if (!job->epilog[i])
		pr_info("run '%s': the Epilog of node '%s' came (job %" PRIu32 ")", r->run_id,
			c->node, job->id);
	job->epilog[i] = 1;
	if (agg->open_dir_fd >= 0)
		agg_state_write(agg, r); /* a restart still knows whose Epilog came */
	pending = pending_nodes(job);
	if (r->state != RUN_COLLECTING && !json_array_size(pending) && !r->requester.len) {
		/* the last Epilog came after the deadline: answered once finalized */
		json_decref(pending);
		json_decref(fin);
		r->requester = *from;
		return 0;
	}
	if (r->state != RUN_COLLECTING || json_array_size(pending)) {
		/* more nodes to come (or the finalize is under way): acked now;
		 * the latest Epilog's facts (exit code, end) are the Run's */
		if (r->state == RUN_COLLECTING) {
			json_decref(r->finalize);
			r->finalize = fin;
		} else {
			json_decref(fin);
			fin = NULL;
		}
		if (fin && !job->epilog_deadline_ms) {
			job->epilog_deadline_ms =
			    clock_monotonic_ms() + agg_json_int_in(fin, "nodes_wait_ms", 0,
								   AGG_NODES_WAIT_MAX_MS,
								   AGG_NODES_WAIT_DEFAULT_MS);
			snprintf(job->missing_why, sizeof(job->missing_why),
				 "within %lld ms of the first Epilog",
				 job->epilog_deadline_ms - clock_monotonic_ms());
		}
		return reply_json(agg, from, r->run_id,
				  json_pack("{s:s, s:o}", "run_dir", r->run_dir, "pending_nodes",
					    pending ? pending : json_array()));
	}
	json_decref(pending);
	/* the last one: answered once finalized */
	json_decref(r->finalize);
	r->finalize = NULL;
	agg_finalize_begin(agg, r, from, fin);
	return 0;
}

/* a prolog job Run whose nodes did not all report: finalized now, with
 * nobody to answer (every Epilog was acked) */
static void finalize_missing(struct aggregator *agg, struct agg_run *r)
{
	json_t *fin = r->finalize;
	char end[32];

	r->finalize = NULL;
	if (!fin) {
		run_iso_time(end, sizeof(end));
		fin = json_pack("{s:n, s:s, s:i}", "exit_code", "end", end, "nodes_wait_ms", 0);
	}
	json_object_set_new(fin, "nodes_wait_ms", json_integer(0));
	pr_warn("run '%s': finalized without %s of job %" PRIu32 " (%s)", r->run_id,
		r->job->abandoned ? "the end asked by its origin" : "the Epilog of every node",
		r->job->id, r->job->missing_why);
	agg_finalize_begin(agg, r, NULL, fin);
}

static void min_timeout(int *timeout, long long at, long long now)
{
	long long ms = at > now ? at - now : 0;

	if (*timeout < 0 || ms < *timeout)
		*timeout = (int)(ms > 3600000 ? 3600000 : ms);
}

/* an attach job Run whose job ended: CLOSE again now and then (the origin
 * may have missed it), finalized when its origin never ends it */
static void attach_tick(struct aggregator *agg, struct agg_run *r, long long now, int *timeout)
{
	struct agg_job *j = r->job;

	if (!j->close_sent_ms || !j->ended_ms)
		return;
	if (now - j->ended_ms >= agg->job_ended_grace_ms) {
		j->abandoned = 1;
		snprintf(j->missing_why, sizeof(j->missing_why), "%.3g s after the job ended",
			 agg->job_ended_grace_ms / 1e3);
		finalize_missing(agg, r);
		return;
	}
	if (now - j->close_sent_ms >= AGG_JOB_CLOSE_AGAIN_MS)
		agg_job_send_close(agg, r);
	min_timeout(timeout, j->close_sent_ms + AGG_JOB_CLOSE_AGAIN_MS, now);
	min_timeout(timeout, j->ended_ms + agg->job_ended_grace_ms, now);
}

int agg_job_tick(struct aggregator *agg)
{
	long long now = clock_monotonic_ms();
	struct agg_run *r, *next;
	struct agg_job *j;
	int timeout = -1;

	for (r = agg->runs; r; r = next) {
		next = r->next;
		j = r->job;
		if (!j || r->state != RUN_COLLECTING)
			continue;
		if (!j->watching && now >= j->next_watch_ms &&
		    agg_job_watch_submit(agg, r) == -EAGAIN)
			j->next_watch_ms = now + AGG_JOB_WATCH_MS;
		if (!j->watching)
			min_timeout(&timeout, j->next_watch_ms, now);
		if (j->auto_failed)
			continue;
		if (j->mode == AGG_JOB_ATTACH) {
			attach_tick(agg, r, now, &timeout);
			continue;
		}
		if (j->epilog_deadline_ms && now >= j->epilog_deadline_ms) {
			finalize_missing(agg, r);
			continue;
		}
		if (j->ended_ms && now - j->ended_ms >= agg->job_ended_grace_ms) {
			snprintf(j->missing_why, sizeof(j->missing_why),
				 "%.3g s after the job ended", agg->job_ended_grace_ms / 1e3);
			finalize_missing(agg, r);
			continue;
		}
		if (j->epilog_deadline_ms)
			min_timeout(&timeout, j->epilog_deadline_ms, now);
		if (j->ended_ms)
			min_timeout(&timeout, j->ended_ms + agg->job_ended_grace_ms, now);
	}
	return timeout;
}

void agg_job_degrade(struct agg_run *r)
{
	struct agg_job *job = r->job;
	char nodes[1024] = "", message[1400];
	size_t i, len = 0, missing = 0;

	if (job && job->abandoned) {
		snprintf(message, sizeof(message),
			 "node %s, where job %" PRIu32
			 " was attached to, never ended the Run (%s): "
			 "what it measured after its last stored Batch is missing",
			 r->origin, job->id, job->missing_why);
		pivot_add_degradation(r->pivot, "nodes-missing", message,
				      "check nunatakd on that node (is it running? its log says "
				      "why)");
		return;
	}
	if (!job || job->mode != AGG_JOB_PROLOG)
		return;
	for (i = 0; i < job->n_nodes; i++) {
		if (job->epilog[i])
			continue;
		missing++;
		if (len < sizeof(nodes))
			len += (size_t)snprintf(nodes + len, sizeof(nodes) - len, "%s%s",
						len ? ", " : "", job->nodes[i]);
	}
	if (!missing)
		return;
	snprintf(message, sizeof(message),
		 "%zu of the %zu nodes of job %" PRIu32 " never reported its end (no Epilog %s): "
		 "%s; what they measured after their last stored Batch is missing",
		 missing, job->n_nodes, job->id,
		 job->missing_why[0] ? job->missing_why : "by the end of the Run", nodes);
	pivot_add_degradation(r->pivot, "nodes-missing", message,
			      "check nunatakd and the Epilog on those nodes (slurmd's log says "
			      "whether the Epilog ran); profile the job again for a complete Run");
}

static json_t *nodes_json(const struct agg_job *job)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < job->n_nodes; i++)
		json_array_append_new(a, json_string(job->nodes[i]));
	return a ? a : json_array();
}

json_t *agg_job_status_json(const struct agg_run *r)
{
	const struct agg_job *job = r->job;
	char since[32];
	struct tm tm;

	if (!job)
		return json_null();
	gmtime_r(&job->since, &tm);
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:I, s:s, s:I, s:s, s:o, s:s}", "id", (json_int_t)job->id, "mode",
			 job->mode == AGG_JOB_ATTACH ? "attach" : "prolog", "uid",
			 (json_int_t)r->uid, "user", job->user, "nodes", nodes_json(job), "since",
			 since);
}

int agg_job_opens_to(const struct agg_run *r, const char *node)
{
	if (!strcmp(node, r->origin))
		return 0;
	if (r->token[0])
		return 1;
	return r->job && r->job->mode == AGG_JOB_ATTACH && agg_job_node_index(r->job, node) >= 0;
}

char *agg_job_open_json(const struct agg_run *r)
{
	json_t *j;
	char *text;

	if (r->job)
		j = json_pack("{s:I, s:{s:I, s:I}, s:I, s:b}", "job_id", (json_int_t)r->job->id,
			      "owner", "uid", (json_int_t)r->uid, "gid", (json_int_t)r->gid,
			      "frequency", (json_int_t)r->frequency, "mpi_events", r->mpi_events);
	else
		j = json_pack("{s:s, s:{s:I, s:I}, s:I, s:b}", "token", r->token, "owner", "uid",
			      (json_int_t)r->uid, "gid", (json_int_t)r->gid, "frequency",
			      (json_int_t)r->frequency, "mpi_events", r->mpi_events);
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return text;
}

json_t *agg_job_state_json(const struct agg_run *r)
{
	const struct agg_job *job = r->job;
	json_t *epilog;
	size_t i;

	if (!job)
		return NULL;
	epilog = json_array();
	for (i = 0; epilog && i < job->n_nodes; i++)
		if (job->epilog[i])
			json_array_append_new(epilog, json_string(job->nodes[i]));
	return json_pack("{s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:I}", "id", (json_int_t)job->id,
			 "mode", job->mode == AGG_JOB_ATTACH ? "attach" : "prolog", "user",
			 job->user, "name", job->name, "work_dir", job->work_dir, "nodes",
			 nodes_json(job), "epilog", epilog ? epilog : json_array(), "since",
			 (json_int_t)job->since);
}

/* the nodes of a state's job into job (and their Epilogs); 0 or -errno */
static int state_nodes(struct agg_job *job, const json_t *j)
{
	json_t *nodes = json_object_get(j, "nodes"), *v;
	size_t i, n = json_array_size(nodes);
	int k;

	job->nodes = calloc(n ? n : 1, sizeof(*job->nodes));
	job->epilog = calloc(n ? n : 1, 1);
	if (!job->nodes || !job->epilog)
		return -ENOMEM;
	json_array_foreach(nodes, i, v)
	{
		if (!json_is_string(v) ||
		    !(job->nodes[job->n_nodes] = strdup(json_string_value(v))))
			return json_is_string(v) ? -ENOMEM : -EINVAL;
		job->n_nodes++;
	}
	json_array_foreach(json_object_get(j, "epilog"), i,
			   v) if ((k = agg_job_node_index(job, json_string_value(v))) >= 0)
	    job->epilog[k] = 1;
	return 0;
}

int agg_job_from_state(struct agg_run *r, const json_t *state)
{
	json_t *j = json_object_get(state, "job");
	const char *mode = json_string_value(json_object_get(j, "mode"));
	struct agg_job *job;
	struct agg_node *n;
	size_t i;
	int err;

	if (!j)
		return 0;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->id = job_id_of(json_object_get(j, "id"));
	job->mode = mode && !strcmp(mode, "attach") ? AGG_JOB_ATTACH : AGG_JOB_PROLOG;
	snprintf(job->user, sizeof(job->user), "%s",
		 json_string_value(json_object_get(j, "user")) ?: "");
	snprintf(job->name, sizeof(job->name), "%s",
		 json_string_value(json_object_get(j, "name")) ?: "");
	job->since = (time_t)json_integer_value(json_object_get(j, "since"));
	job->work_dir = strdup(json_string_value(json_object_get(j, "work_dir")) ?: "");
	err = !job->id ? -EINVAL : !job->work_dir ? -ENOMEM : state_nodes(job, j);
	if (err) {
		agg_job_free(job);
		return err;
	}
	agg_job_bind(r, job);
	/* the nodes of a resumed prolog job Run: their Batches are taken */
	for (i = 0; job->mode == AGG_JOB_PROLOG && i < job->n_nodes; i++)
		if ((n = agg_run_node(r, job->nodes[i])))
			n->joined = 1;
	return 0;
}
