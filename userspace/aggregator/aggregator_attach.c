/* aggregator_attach — ATTACH (aggregator_job.h): the credential and the
 * job checked in the worker thread, then the attach job Run made on the
 * serving thread; and the watch of a job Run's job (a Slurm lookup in the
 * worker every AGG_JOB_WATCH_MS). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "userspace/aggregator/aggregator_job.h"
#include "userspace/aggregator/aggregator_worker.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/slurm/munge_cred.h"
#include "userspace/slurm/slurm_job.h"

#define RUNS_SUBDIR ".nunatak"
#define AGG_ATTACH_LOG_MS 10000

struct attach_work {
	struct agg_work w; /* first: the work is the attach_work */
	struct agg_peer from;
	char *run_id, *origin, *credential;
	uint32_t job_id;
	long long peer_uid; /* who asked the node service (SO_PEERCRED); -1: not said */
	json_t *spec;	    /* the ATTACH json; the worker does not touch it */
	/* what the worker found */
	int err;
	char why[1024];
	uid_t uid; /* munge's */
	gid_t gid;
	struct slurm_job job;
	int have_job;
};

struct watch_work {
	struct agg_work w;
	char *run_id;
	uint32_t job_id;
	uid_t uid;     /* the Run's owner */
	char user[64]; /* its name, when Slurm could not say */
	int err;
	char why[512];
	struct slurm_job job;
	int have_job;
};

/* an ATTACH refused: answered always, logged at most once per
 * AGG_ATTACH_LOG_MS (a user can send many: the log is not theirs to fill) */
static int refuse_attach(struct aggregator *agg, const struct agg_peer *to, int code,
			 const char *run_id, const char *why)
{
	long long now = clock_monotonic_ms();

	if (!agg->attach_logged_ms || now - agg->attach_logged_ms >= AGG_ATTACH_LOG_MS) {
		if (agg->attach_unlogged)
			pr_warn("%s (and %" PRIu64 " more ATTACH refusals in the last %d s, not "
				"logged)",
				why, agg->attach_unlogged, AGG_ATTACH_LOG_MS / 1000);
		else
			pr_warn("%s", why);
		agg->attach_logged_ms = now;
		agg->attach_unlogged = 0;
	} else {
		agg->attach_unlogged++;
		pr_debug("%s", why);
	}
	return agg_send_error(agg, to, code, run_id, why);
}

static void attach_free(struct agg_work *w)
{
	struct attach_work *a = (struct attach_work *)w;

	if (a->have_job)
		slurm_job_release(&a->job);
	free(a->run_id);
	free(a->origin);
	if (a->credential)
		explicit_bzero(a->credential, strlen(a->credential));
	free(a->credential);
	json_decref(a->spec);
	free(a);
}

/* the credential: whose it is (munge's word) */
static int attach_check_credential(struct attach_work *a, const struct agg_worker *wk)
{
	char expected[64], msg[512];
	int err;

	snprintf(expected, sizeof(expected), "nunatak attach job=%" PRIu32, a->job_id);
	err = munge_cred_check(agg_worker_munge_socket(wk), a->credential, expected, &a->uid,
			       &a->gid, msg, sizeof(msg));
	if (err == -EHOSTUNREACH)
		snprintf(a->why, sizeof(a->why),
			 "attach to job %" PRIu32 " refused: the Aggregator cannot check your "
			 "credential: %s",
			 a->job_id, msg);
	else if (err == -EPROTO)
		snprintf(a->why, sizeof(a->why),
			 "attach to job %" PRIu32
			 " refused: the credential is not one for this job "
			 "(%s); `nunatak attach %" PRIu32 "` makes the right one",
			 a->job_id, msg, a->job_id);
	else if (err)
		snprintf(a->why, sizeof(a->why),
			 "attach to job %" PRIu32
			 " refused: your munge credential was not accepted "
			 "(%s); run `nunatak attach %" PRIu32 "` again (a credential is good once, "
			 "for 60 s, on a cluster sharing one munge key)",
			 a->job_id, msg, a->job_id);
	return err == -EPROTO ? -EACCES : err;
}

/* the job, as Slurm says: running, and the caller's (or the caller is root) */
static int attach_check_job(struct attach_work *a, const struct agg_worker *wk)
{
	char msg[512];
	int err;

	err = slurm_job_lookup(agg_worker_slurm_conf(wk), a->job_id, &a->job, msg, sizeof(msg));
	if (err == -ENOENT) {
		snprintf(a->why, sizeof(a->why),
			 "attach refused: Slurm knows no job %" PRIu32
			 " (it ended long ago, or the "
			 "id is wrong: squeue -u $USER lists yours)",
			 a->job_id);
		return err;
	}
	if (err) {
		snprintf(a->why, sizeof(a->why),
			 "attach to job %" PRIu32 " failed: cannot ask Slurm about it: %s; try "
			 "again once slurmctld answers (scontrol ping)",
			 a->job_id, msg);
		return err;
	}
	a->have_job = 1;
	if (a->uid != 0 && a->uid != a->job.uid) {
		snprintf(a->why, sizeof(a->why),
			 "job %" PRIu32 " belongs to user '%s' (uid %u), not to you (uid %u): only "
			 "the job's owner or root may attach to it",
			 a->job_id, a->job.user, (unsigned)a->job.uid, (unsigned)a->uid);
		return -EPERM;
	}
	if (!a->job.running) {
		snprintf(a->why, sizeof(a->why),
			 "job %" PRIu32 " is %s, not running: only a running job can be attached "
			 "to%s",
			 a->job_id, a->job.state,
			 a->job.ended ? "" : " (attach once it runs; or submit it with --nunatak)");
		return a->job.ended ? -ENOENT : -EAGAIN;
	}
	return 0;
}

/* the uid the node service saw ask (its client's SO_PEERCRED): a
 * credential of another uid is not theirs to use (but root's may be) */
static int attach_check_peer(struct attach_work *a)
{
	if (a->peer_uid <= 0 || a->peer_uid == (long long)a->uid)
		return 0;
	snprintf(a->why, sizeof(a->why),
		 "attach to job %" PRIu32 " refused: the credential is uid %u's, the request came "
		 "from uid %lld; run `nunatak attach %" PRIu32 "` yourself",
		 a->job_id, (unsigned)a->uid, a->peer_uid, a->job_id);
	return -EPERM;
}

static void attach_run(struct agg_work *w, const struct agg_worker *wk)
{
	struct attach_work *a = (struct attach_work *)w;

	a->err = attach_check_credential(a, wk);
	if (!a->err)
		a->err = attach_check_peer(a);
	if (!a->err)
		a->err = attach_check_job(a, wk);
}

/* the attach job of what Slurm said */
static struct agg_job *attach_job(const struct attach_work *a)
{
	struct agg_job *job = calloc(1, sizeof(*job));
	size_t i;

	if (!job)
		return NULL;
	job->id = a->job_id;
	job->mode = AGG_JOB_ATTACH;
	job->since = time(NULL);
	job->origin_peer = a->from;
	job->seen = 1;
	snprintf(job->user, sizeof(job->user), "%s", a->job.user);
	snprintf(job->name, sizeof(job->name), "%s", a->job.name);
	job->work_dir = strdup(a->job.work_dir);
	job->nodes = calloc(a->job.n_nodes ? a->job.n_nodes : 1, sizeof(*job->nodes));
	job->epilog = calloc(a->job.n_nodes ? a->job.n_nodes : 1, 1);
	if (!job->work_dir || !job->nodes || !job->epilog) {
		agg_job_free(job);
		return NULL;
	}
	for (i = 0; i < a->job.n_nodes; i++) {
		if (!(job->nodes[i] = strdup(a->job.nodes[i]))) {
			agg_job_free(job);
			return NULL;
		}
		job->n_nodes++;
	}
	return job;
}

/* the START spec of the Run: the ATTACH's, with the job's owner and
 * runs directory (as Slurm says), NULL: out of memory */
static json_t *attach_spec(const struct attach_work *a)
{
	json_t *spec = json_deep_copy(a->spec);
	char runs_dir[PATH_MAX];

	if (!spec)
		return NULL;
	snprintf(runs_dir, sizeof(runs_dir), "%s/" RUNS_SUBDIR, a->job.work_dir);
	json_object_set_new(
	    spec, "owner",
	    json_pack("{s:I, s:I}", "uid", (json_int_t)a->job.uid, "gid", (json_int_t)a->job.gid));
	json_object_set_new(spec, "runs_dir", json_string(runs_dir));
	json_object_del(spec, "token");
	json_object_del(spec, "credential");
	json_object_del(spec, "peer_uid");
	return spec;
}

/* ATTACH's Ack {"run_id","run_dir","owner","job","frequency"} */
static int reply_attach_ack(struct aggregator *agg, const struct agg_peer *to,
			    const struct agg_run *r)
{
	const struct agg_job *job = r->job;
	json_t *nodes = json_array(), *j;
	char *text;
	size_t i;
	int err;

	for (i = 0; nodes && i < job->n_nodes; i++)
		json_array_append_new(nodes, json_string(job->nodes[i]));
	j = json_pack("{s:s, s:s, s:{s:I, s:I, s:s}, s:{s:I, s:s, s:o, s:s}}", "run_id", r->run_id,
		      "run_dir", r->run_dir, "owner", "uid", (json_int_t)r->uid, "gid",
		      (json_int_t)r->gid, "user", job->user, "job", "id", (json_int_t)job->id,
		      "name", job->name, "nodes", nodes ? nodes : json_array(), "work_dir",
		      job->work_dir);
	if (j)
		json_object_set_new(j, "frequency",
				    r->frequency > 0 ? json_integer(r->frequency) : json_null());
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return agg_reply_error(agg, to, ENOMEM, r->run_id, "ATTACH: out of memory");
	err = agg_reply_ack(agg, to, r->run_id, "", 0, 0, 0, text);
	free(text);
	return err;
}

/* on the serving thread: refused, or the Run made, acked and OPENed */
static void attach_done(struct aggregator *agg, struct agg_work *w)
{
	struct attach_work *a = (struct attach_work *)w;
	char why[2 * PATH_MAX + 256];
	struct agg_run *r = NULL;
	struct agg_job *job;
	json_t *spec;
	int err = a->err;

	if (err) {
		refuse_attach(agg, &a->from, -err, a->run_id, a->why);
		goto out;
	}
	if ((r = agg_job_run_of(agg, a->job_id)) || agg_run_find(agg, a->run_id)) {
		snprintf(why, sizeof(why),
			 "job %" PRIu32 " is profiled already: run '%s' (in '%s')", a->job_id,
			 r ? r->run_id : a->run_id, r ? r->run_dir : "?");
		refuse_attach(agg, &a->from, EBUSY, a->run_id, why);
		goto out;
	}
	spec = attach_spec(a);
	job = attach_job(a);
	err = spec && job
		  ? agg_run_create(agg, &a->from, a->run_id, a->origin, spec, &r, why, sizeof(why))
		  : -ENOMEM;
	if (err) {
		if (!spec || !job)
			snprintf(why, sizeof(why), "attach to job %" PRIu32 ": out of memory",
				 a->job_id);
		agg_job_free(job);
		json_decref(spec);
		refuse_attach(agg, &a->from, -err, a->run_id, why);
		goto out;
	}
	json_decref(spec);
	agg_job_bind(r, job);
	agg_run_register(agg, r);
	pr_info("run '%s': job %" PRIu32 " of '%s' (uid %u) attached from node '%s', in '%s'",
		r->run_id, job->id, job->user, (unsigned)r->uid, r->origin, r->run_dir);
	reply_attach_ack(agg, &a->from, r);
	agg_open_to_agents(agg, r);
out:
	attach_free(w);
}

/* the ATTACH's facts into a; -EINVAL with why */
static int attach_parse(struct attach_work *a, const Nunatak__Wire__Control *c, char *why,
			size_t whylen)
{
	json_t *spec = json_loads(c->json ? c->json : "", 0, NULL);
	json_t *id = json_object_get(spec, "job_id");
	const char *cred = json_string_value(json_object_get(spec, "credential"));
	const char *origin =
	    c->node && c->node[0]
		? c->node
		: json_string_value(json_object_get(json_object_get(spec, "run"), "node"));

	a->spec = spec;
	if (!agg_run_id_valid(c->run_id) || !json_is_integer(id) || json_integer_value(id) < 1 ||
	    json_integer_value(id) > (json_int_t)UINT32_MAX || !cred || !cred[0] ||
	    !json_is_object(json_object_get(spec, "run"))) {
		snprintf(why, whylen,
			 "malformed ATTACH: it needs a run id (1 to 64 of [A-Za-z0-9_-]), "
			 "\"job_id\" (1..%" PRIu32 "), a munge \"credential\" and \"run\" {...}",
			 UINT32_MAX);
		return -EINVAL;
	}
	a->job_id = (uint32_t)json_integer_value(id);
	a->peer_uid = json_is_integer(json_object_get(spec, "peer_uid"))
			  ? (long long)json_integer_value(json_object_get(spec, "peer_uid"))
			  : -1;
	a->run_id = strdup(c->run_id);
	a->origin = strdup(origin ? origin : "");
	a->credential = strdup(cred);
	if (!a->run_id || !a->origin || !a->credential) {
		snprintf(why, whylen, "ATTACH: out of memory");
		return -ENOMEM;
	}
	return 0;
}

int agg_job_attach_request(struct aggregator *agg, const struct agg_peer *from,
			   const Nunatak__Wire__Control *c)
{
	struct attach_work *a = calloc(1, sizeof(*a));
	char why[1024];
	int err;

	if (!a)
		return agg_reply_error(agg, from, ENOMEM, c->run_id, "ATTACH: out of memory");
	a->w.run = attach_run;
	a->w.done = attach_done;
	a->w.discard = attach_free;
	a->from = *from;
	err = attach_parse(a, c, why, sizeof(why));
	if (err == -EINVAL)
		agg->refused++;
	/* a Run of that job open already: said once the credential and the
	 * job's owner are checked (attach_done), never to another user */
	if (!err) {
		err = agg_worker_submit(agg->worker, &a->w);
		if (err == -EAGAIN)
			snprintf(why, sizeof(why),
				 "attach to job %" PRIu32 " refused: this Aggregator has %d job "
				 "requests under way; try again in a few seconds",
				 a->job_id, AGG_WORKER_QUEUE_MAX);
		else if (err)
			snprintf(why, sizeof(why),
				 "attach to job %" PRIu32 " failed: no thread to check it: %s",
				 a->job_id, strerror(-err));
	}
	if (err) {
		attach_free(&a->w);
		return refuse_attach(agg, from, -err, c->run_id, why);
	}
	return 0;
}

/* --- the watch ----------------------------------------------------------- */

static void watch_free(struct agg_work *w)
{
	struct watch_work *x = (struct watch_work *)w;

	if (x->have_job)
		slurm_job_release(&x->job);
	free(x->run_id);
	free(x);
}

static void watch_run(struct agg_work *w, const struct agg_worker *wk)
{
	struct watch_work *x = (struct watch_work *)w;

	struct passwd pw, *found = NULL;
	char buf[4096];

	x->err =
	    slurm_job_lookup(agg_worker_slurm_conf(wk), x->job_id, &x->job, x->why, sizeof(x->why));
	x->have_job = !x->err;
	/* STATUS names the owner also when Slurm does not answer */
	if ((x->err || !x->job.user[0]) && !getpwuid_r(x->uid, &pw, buf, sizeof(buf), &found) &&
	    found)
		snprintf(x->user, sizeof(x->user), "%s", found->pw_name);
}

void agg_job_send_close(struct aggregator *agg, struct agg_run *r)
{
	int err = agg_send_control(agg, &r->job->origin_peer, NUNATAK__WIRE__CONTROL__ACTION__CLOSE,
				   r->run_id, "{\"why\":\"job-ended\"}", r->origin);

	if (err)
		pr_warn("run '%s': cannot send CLOSE to its origin '%s': %s", r->run_id, r->origin,
			strerror(-err));
	else if (!r->job->close_sent_ms)
		pr_info("run '%s': job %" PRIu32 " ended: CLOSE to its origin '%s'", r->run_id,
			r->job->id, r->origin);
	r->job->close_sent_ms = clock_monotonic_ms();
}

/* what a look at the job says of it: ended (1), not (0), unknown (-1) */
static int watch_ended(struct agg_run *r, struct watch_work *x)
{
	struct agg_job *job = r->job;

	if (x->err == -ENOENT && job->seen)
		return 1; /* Slurm forgot it: long gone */
	if (x->err) {
		if (!job->lookup_warned)
			pr_warn("run '%s': cannot look at job %" PRIu32 " in Slurm: %s (said once; "
				"looked at again every %d ms)",
				r->run_id, job->id, x->why, AGG_JOB_WATCH_MS);
		job->lookup_warned = 1;
		return -1;
	}
	job->seen = 1;
	if (!job->user[0])
		snprintf(job->user, sizeof(job->user), "%s", x->job.user);
	if (!job->name[0])
		snprintf(job->name, sizeof(job->name), "%s", x->job.name);
	if (!job->work_dir[0] && x->job.work_dir[0]) {
		char *wd = strdup(x->job.work_dir);

		if (wd) {
			free(job->work_dir);
			job->work_dir = wd;
		}
	}
	/* an attach ends when the job no longer runs; a prolog job Run waits
	 * for its Epilogs while Slurm completes it */
	return job->mode == AGG_JOB_ATTACH ? !x->job.running : x->job.ended;
}

static void watch_done(struct aggregator *agg, struct agg_work *w)
{
	struct watch_work *x = (struct watch_work *)w;
	struct agg_run *r = agg_run_find(agg, x->run_id);
	int ended;

	if (!r || !r->job || r->job->id != x->job_id)
		goto out; /* closed meanwhile */
	r->job->watching = 0;
	if (!r->job->user[0])
		snprintf(r->job->user, sizeof(r->job->user), "%s", x->user);
	r->job->next_watch_ms = clock_monotonic_ms() + AGG_JOB_WATCH_MS;
	ended = watch_ended(r, x);
	if (ended < 0)
		goto out;
	if (!ended) {
		r->job->ended_ms = 0; /* requeued, or it came back */
		goto out;
	}
	if (!r->job->ended_ms)
		r->job->ended_ms = clock_monotonic_ms();
	if (r->job->mode == AGG_JOB_ATTACH && r->state == RUN_COLLECTING && !r->job->close_sent_ms)
		agg_job_send_close(agg, r);
out:
	watch_free(w);
}

int agg_job_watch_submit(struct aggregator *agg, struct agg_run *r)
{
	struct watch_work *x = calloc(1, sizeof(*x));
	int err;

	if (!x || !(x->run_id = strdup(r->run_id))) {
		free(x);
		return -ENOMEM;
	}
	x->w.run = watch_run;
	x->w.done = watch_done;
	x->w.discard = watch_free;
	x->job_id = r->job->id;
	x->uid = r->uid;
	err = agg_worker_submit(agg->worker, &x->w);
	if (err) {
		watch_free(&x->w);
		return err;
	}
	r->job->watching = 1;
	return 0;
}
