/* aggregator_start — START: a Run made (its directory, pivot, reserve and
 * first manifest, as the owner), asked again (its Ack again), or joined by
 * another node of a prolog job Run (aggregator_job.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "userspace/aggregator/aggregator_internal.h"
#include "userspace/aggregator/aggregator_job.h"
#include "userspace/aggregator/as_owner.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/aggregator/run_dir.h"
#include "userspace/aggregator/run_manifest.h"
#include "userspace/launch/tool.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

#define RUN_ID_MAX 64

/* The facts of START (Control.json) into r; -EINVAL with why. */
static int start_facts(struct agg_run *r, const json_t *spec, const char **runs_dir, char *why,
		       size_t whylen)
{
	json_t *owner = json_object_get(spec, "owner"), *run = json_object_get(spec, "run");
	json_t *uid = json_object_get(owner, "uid"), *gid = json_object_get(owner, "gid");
	const char *token = json_string_value(json_object_get(spec, "token"));
	json_t *freq = json_object_get(spec, "frequency");

	*runs_dir = json_string_value(json_object_get(spec, "runs_dir"));
	if (!json_is_object(run) || !*runs_dir || (*runs_dir)[0] != '/' || !json_is_integer(uid) ||
	    !json_is_integer(gid) || json_integer_value(uid) < 0 ||
	    json_integer_value(uid) > UINT32_MAX - 1 || json_integer_value(gid) < 0 ||
	    json_integer_value(gid) > UINT32_MAX - 1 || (token && !agg_token_valid(token))) {
		snprintf(why, whylen,
			 "malformed START for run '%s': it needs \"run\" {...}, an absolute "
			 "\"runs_dir\", \"owner\" {\"uid\",\"gid\"} and, if any, a \"token\" of 32 "
			 "lowercase hex digits",
			 r->run_id);
		return -EINVAL;
	}
	r->uid = (uid_t)json_integer_value(uid);
	r->gid = (gid_t)json_integer_value(gid);
	if (r->uid == 0 && (r->agg->root_runs == AGG_ROOT_RUNS_REFUSED ||
			    (r->agg->root_runs == AGG_ROOT_RUNS_LOCAL && r->origin_key[0]))) {
		snprintf(
		    why, whylen,
		    "run '%s' refused: its owner is root, and this Aggregator writes no Run as "
		    "root for a remote Agent (the root of a node is not root here); profile "
		    "as a user, or start nunatak-aggregator with --allow-root-runs",
		    r->run_id);
		return -EPERM;
	}
	snprintf(r->token, sizeof(r->token), "%s", token ? token : "");
	r->frequency = json_is_integer(freq) ? (long)json_integer_value(freq) : 0;
	r->mpi_events = json_is_true(json_object_get(spec, "mpi_events"));
	return 0;
}

/* The frequency the Agents sample the Run at (START's "frequency": the
 * node service's own for a service Run, whatever the client asked) as
 * run.frequency, and as the effective sampling.frequency when the client's
 * configuration said another */
static void manifest_frequency(json_t *manifest, long frequency)
{
	json_t *eff =
	    json_object_get(json_object_get(manifest, "provenance"), "effective_configuration");
	json_t *asked = json_object_get(json_object_get(eff, "sampling.frequency"), "value");

	if (frequency <= 0)
		return;
	json_object_set_new(json_object_get(manifest, "run"), "frequency", json_integer(frequency));
	if (json_is_object(eff) && json_integer_value(asked) != frequency)
		json_object_set_new(eff, "sampling.frequency",
				    json_pack("{s:I, s:s}", "value", (json_int_t)frequency,
					      "source",
					      "the node service (its sampling.frequency)"));
}

/* The Run's directory, pivot, reserve and first manifest, as the owner
 * (the caller switched). 0 or -errno with why. */
static int start_files(struct agg_run *r, const json_t *spec, const char *runs_dir, char *why,
		       size_t whylen)
{
	json_t *run = json_object_get(spec, "run");
	const char *name = json_string_value(json_object_get(run, "name"));
	struct agg_agent *origin = agg_agent_find(r->agg, r->origin);
	json_t *machine = NULL;
	json_error_t jerr;
	char path[PATH_MAX];
	int err;

	err = run_dir_create(runs_dir, name, time(NULL), path, sizeof(path), NULL, why, whylen);
	if (err)
		return err;
	r->run_dir = strdup(path);
	if (!r->run_dir)
		return -ENOMEM;
	err = agg_open_run_dir(path, r->uid, why, whylen);
	if (err < 0)
		return err;
	r->dir_fd = err;
	snprintf(path, sizeof(path), "%s/" PIVOT_FILE, r->run_dir);
	r->pivot = pivot__create_at(r->dir_fd, PIVOT_FILE, path);
	if (!r->pivot) {
		err = -errno;
		snprintf(why, whylen, "cannot create '%s': %s", path, strerror(-err));
		return err;
	}
	/* before the disk can fill (the first Batch may be too late), and
	 * before the manifest: a Run with a manifest has its reserve */
	err = agg_storage_reserve(r->dir_fd, 1);
	if (err) {
		snprintf(why, whylen, "cannot reserve %d KiB for the end of the Run in '%s': %s",
			 STORAGE_RESERVE_BYTES / 1024, r->run_dir, strerror(-err));
		return err;
	}
	if (origin && origin->machine_json)
		machine = json_loads(origin->machine_json, 0, &jerr);
	r->manifest = run_manifest_seed(run, (unsigned)r->uid, machine, r->symbolizer);
	json_decref(machine);
	if (!r->manifest)
		return -ENOMEM;
	manifest_frequency(r->manifest, r->frequency);
	err = manifest_write(r->dir_fd, r->manifest);
	if (err)
		snprintf(why, whylen, "cannot write the manifest in '%s': %s", r->run_dir,
			 strerror(-err));
	return err;
}

int agg_reply_start_ack(struct aggregator *agg, const struct agg_peer *from,
			const struct agg_run *r)
{
	json_t *j = json_pack("{s:s, s:s}", "run_id", r->run_id, "run_dir", r->run_dir);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	int err;

	json_decref(j);
	err = agg_reply_ack(agg, from, r->run_id, "", 0, 0, 0, text);
	free(text);
	return err;
}

/* a START for a Run already open: the same owner asking again (its Ack
 * was lost) gets it again; anyone else is refused */
static int start_again(struct aggregator *agg, const struct agg_peer *from, struct agg_run *r,
		       const Nunatak__Wire__Control *c, const json_t *spec)
{
	json_t *uid = json_object_get(json_object_get(spec, "owner"), "uid");
	char why[512];

	if (r->job && json_object_get(spec, "job"))
		return agg_job_start_join(agg, from, r, c, spec);
	if (!json_is_integer(uid) || (uid_t)json_integer_value(uid) != r->uid ||
	    strcmp(from->key, r->origin_key) || r->state != RUN_COLLECTING) {
		snprintf(why, sizeof(why), "run '%s' is already being collected (in '%s')",
			 r->run_id, r->run_dir);
		return agg_reply_error(agg, from, EEXIST, r->run_id, why);
	}
	return agg_reply_start_ack(agg, from, r);
}

/* The symbolizer a Run of another user may have run: one root would run
 * (the trust rules as this process, not as the owner: never a file of
 * the owner's, which would run with what the service gives it). Refused:
 * none (ELF names), and *why says so (the Run's Degradation). */
static void symbolizer_for_owner(struct agg_run *r, char *why, size_t whylen)
{
	char path[PATH_MAX], reason[PATH_MAX + 256];

	why[0] = '\0';
	if (!r->symbolizer[0] || r->uid == 0 || r->uid == geteuid())
		return;
	if (!tool_resolve_trusted(r->symbolizer, path, sizeof(path), reason, sizeof(reason)))
		return;
	snprintf(why, whylen,
		 "llvm-symbolizer '%s' was not run by the service: %s; names come from ELF symbols "
		 "only",
		 r->symbolizer, reason);
	r->symbolizer[0] = '\0';
}

int agg_run_create(struct aggregator *agg, const struct agg_peer *from, const char *run_id,
		   const char *origin, const json_t *spec, struct agg_run **out, char *why,
		   size_t whylen)
{
	char refused_tool[2 * PATH_MAX + 512];
	const char *runs_dir = NULL;
	struct tool_user tu, *prev_tu;
	struct agg_run *r;
	struct as_owner o;
	int err;

	*out = NULL;
	r = agg_run_new(agg, run_id, origin,
			json_string_value(json_object_get(spec, "symbolizer")));
	if (!r) {
		snprintf(why, whylen, "cannot start run '%s': out of memory", run_id);
		return -ENOMEM;
	}
	snprintf(r->origin_key, sizeof(r->origin_key), "%s", from->key);
	err = start_facts(r, spec, &runs_dir, why, whylen);
	if (!err)
		symbolizer_for_owner(r, refused_tool, sizeof(refused_tool));
	if (!err)
		err = as_owner_enter(&o, r->uid, r->gid);
	if (!err) {
		tu = (struct tool_user){r->uid, r->gid};
		prev_tu = (struct tool_user *)tool_user_bind(&tu);
		err = start_files(r, spec, runs_dir, why, whylen);
		if (!err && refused_tool[0])
			pivot_add_degradation(
			    r->pivot, "symbolizer-untrusted", refused_tool,
			    "set tools.llvm-symbolizer in the site's nunatak.toml "
			    "to a root-owned llvm-symbolizer");
		tool_user_bind(prev_tu);
		if (err && r->run_dir)
			run_dir_discard(r->run_dir);
		as_owner_leave(&o);
	} else if (!why[0]) {
		snprintf(why, whylen, "cannot write run '%s' as uid %u: %s", r->run_id,
			 (unsigned)r->uid, strerror(-err));
	}
	if (err) {
		agg_run_close(r);
		if (err == -EINVAL)
			agg->refused++; /* a malformed request */
		return err;
	}
	if (r->origin[0] && agg_run_node(r, r->origin) == NULL)
		pr_warn("run '%s': out of memory", r->run_id);
	*out = r;
	return 0;
}

void agg_run_register(struct aggregator *agg, struct agg_run *r)
{
	r->next = agg->runs;
	agg->runs = r;
	if (agg->open_dir_fd >= 0 && agg_state_write(agg, r))
		pr_warn("run '%s': it will not be resumed if this Aggregator restarts", r->run_id);
}

int agg_run_start(struct aggregator *agg, const struct agg_peer *from,
		  const Nunatak__Wire__Control *c)
{
	char why[2 * PATH_MAX + 256] = "";
	struct agg_job *job = NULL;
	const char *origin;
	struct agg_run *r;
	json_t *spec;
	int err;

	if (!agg_run_id_valid(c->run_id)) {
		snprintf(why, sizeof(why),
			 "malformed START: run id '%.80s' is not 1 to %d letters, "
			 "digits, '-' or '_'",
			 c->run_id, RUN_ID_MAX);
		agg->refused++;
		return agg_reply_error(agg, from, EINVAL, NULL, why);
	}
	spec = json_loads(c->json ? c->json : "", 0, NULL);
	if ((r = agg_run_find(agg, c->run_id))) {
		err = start_again(agg, from, r, c, spec);
		json_decref(spec);
		return err;
	}
	/* the origin: the node the START comes from, else the one it names */
	origin = c->node && c->node[0]
		     ? c->node
		     : json_string_value(json_object_get(json_object_get(spec, "run"), "node"));
	err = agg_node_claim(agg, from, origin, "START", why, sizeof(why));
	if (err == -EPERM)
		agg->refused++;
	if (!err && json_object_get(spec, "job"))
		err = agg_job_from_start(agg, spec, origin, &job, why, sizeof(why));
	if (!err)
		err = agg_run_create(agg, from, c->run_id, origin, spec, &r, why, sizeof(why));
	json_decref(spec);
	if (err) {
		agg_job_free(job);
		return agg_reply_error(agg, from, -err, c->run_id, why);
	}
	agg_job_bind(r, job);
	agg_run_register(agg, r);
	err = agg_reply_start_ack(agg, from, r);
	agg_open_to_agents(agg, r);
	return err;
}
