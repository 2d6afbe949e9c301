/* aggregator_run — the table of open Runs: START (the Run's directory,
 * pivot and first manifest, made as the owner), Batches stored into them,
 * a Run reopened after a restart, a Run closed. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "userspace/aggregator/aggregator_internal.h"
#include "userspace/aggregator/as_owner.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/aggregator/run_dir.h"
#include "userspace/aggregator/run_manifest.h"
#include "userspace/launch/tool.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

#define RUN_ID_MAX 64

struct agg_run *agg_run_find(struct aggregator *agg, const char *run_id)
{
	struct agg_run *r;

	for (r = agg->runs; r && run_id; r = r->next)
		if (!strcmp(r->run_id, run_id))
			return r;
	return NULL;
}

struct agg_node *agg_run_node_find(struct agg_run *r, const char *node)
{
	size_t i;

	for (i = 0; i < r->n_nodes && node; i++)
		if (!strcmp(r->nodes[i].name, node))
			return &r->nodes[i];
	return NULL;
}

struct agg_node *agg_run_node(struct agg_run *r, const char *node)
{
	struct agg_node *nodes = agg_run_node_find(r, node);

	if (nodes)
		return nodes;
	nodes = realloc(r->nodes, (r->n_nodes + 1) * sizeof(*nodes));
	if (!nodes)
		return NULL;
	r->nodes = nodes;
	memset(&nodes[r->n_nodes], 0, sizeof(*nodes));
	nodes[r->n_nodes].name = strdup(node);
	if (!nodes[r->n_nodes].name)
		return NULL;
	return &nodes[r->n_nodes++];
}

/* The room the Agent's last Batch and the finalize need when the disk
 * fills up during the Run: a file of zeros made when the Run starts and
 * removed for the last Batch (Batch.last), so that what was lost can still
 * be said in the Run. make 0: remove it. 0, or -errno when it cannot be
 * made (a Run without that room would lose the count of its losses: the
 * start fails instead, before the application runs). As the owner. */
#define STORAGE_RESERVE_BYTES (512 * 1024)

static int storage_reserve(int dir_fd, int make)
{
	static const char zeros[64 * 1024];
	size_t done;
	int fd, err = 0;

	if (!make) {
		unlinkat(dir_fd, RUN_STORAGE_RESERVE_FILE, 0);
		return 0;
	}
	fd = openat(dir_fd, RUN_STORAGE_RESERVE_FILE,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno; /* EEXIST: made already */
	for (done = 0; done < STORAGE_RESERVE_BYTES && !err; done += sizeof(zeros)) {
		ssize_t n = write(fd, zeros, sizeof(zeros));

		if (n != (ssize_t)sizeof(zeros))
			err = n < 0 ? -errno : -ENOSPC;
	}
	if (!err && fsync(fd))
		err = -errno;
	close(fd);
	if (err)
		unlinkat(dir_fd, RUN_STORAGE_RESERVE_FILE, 0);
	return err;
}

void agg_run_close(struct agg_run *r)
{
	struct aggregator *agg = r->agg;
	struct agg_run **at;
	struct as_owner o;
	size_t i;

	for (at = &agg->runs; *at; at = &(*at)->next)
		if (*at == r) {
			*at = r->next;
			break;
		}
	as_owner_enter(&o, r->uid, r->gid);
	pivot__free(r->pivot);
	if (r->dir_fd >= 0) {
		/* the Run is no longer written: no room is kept for its end, and
		 * closing releases the lock */
		unlinkat(r->dir_fd, RUN_STORAGE_RESERVE_FILE, 0);
		close(r->dir_fd);
	}
	as_owner_leave(&o);
	if (r->cancel_fd >= 0)
		close(r->cancel_fd);
	for (i = 0; i < r->n_nodes; i++)
		free(r->nodes[i].name);
	free(r->nodes);
	json_decref(r->manifest);
	json_decref(r->finalize);
	free(r->run_id);
	free(r->run_dir);
	free(r->origin);
	free(r->symbolizer);
	free(r);
}

int agg_run_discard(struct aggregator *agg, struct agg_run *r)
{
	char *dir = strdup(r->run_dir ? r->run_dir : "");
	uid_t uid = r->uid;
	gid_t gid = r->gid;
	struct as_owner o;
	int err = -ENOMEM;

	agg_state_remove(agg, r->run_id);
	agg_run_close(r); /* the pivot closed, the lock released */
	if (dir && dir[0] && !(err = as_owner_enter(&o, uid, gid))) {
		err = run_dir_discard(dir);
		as_owner_leave(&o);
	}
	if (err)
		pr_warn("the discarded Run '%s' is left in place: %s", dir ? dir : "?",
			strerror(-err));
	free(dir);
	return !err;
}

struct agg_run *agg_run_new(struct aggregator *agg, const char *run_id, const char *origin,
			    const char *symbolizer)
{
	struct agg_run *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->agg = agg;
	r->dir_fd = r->cancel_fd = -1;
	r->run_id = strdup(run_id);
	r->origin = strdup(origin ? origin : "");
	r->symbolizer = strdup(symbolizer ? symbolizer : ""); /* none: ELF names */
	if (!r->run_id || !r->origin || !r->symbolizer) {
		agg_run_close(r);
		return NULL;
	}
	return r;
}

int agg_run_id_valid(const char *id)
{
	size_t i, n = id ? strlen(id) : 0;

	if (!n || n > RUN_ID_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && id[i] != '-' && id[i] != '_')
			return 0;
	return 1;
}

int agg_token_valid(const char *t)
{
	size_t i;

	if (strlen(t) != 32)
		return 0;
	for (i = 0; i < 32; i++)
		if (!isdigit((unsigned char)t[i]) && !(t[i] >= 'a' && t[i] <= 'f'))
			return 0;
	return 1;
}

int agg_open_run_dir(const char *run_dir, uid_t uid, char *why, size_t whylen)
{
	struct stat st;
	int fd, err = 0;

	fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		snprintf(why, whylen, "cannot open run directory '%s': %s", run_dir,
			 strerror(-err));
		goto out;
	}
	if (st.st_uid != (uid ? uid : geteuid()) || (st.st_mode & 07777) != 0700) {
		err = -EPERM;
		snprintf(why, whylen,
			 "refusing run directory '%s': owner uid %u, mode %04o; a Run "
			 "directory is its owner's (uid %u) and 0700",
			 run_dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			 (unsigned)(uid ? uid : geteuid()));
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EWOULDBLOCK) {
			err = -EBUSY;
			snprintf(why, whylen,
				 "run directory '%s' is locked: another nunatak "
				 "writes it",
				 run_dir);
			goto out;
		}
		/* a file system without locks (Lustre without -o flock): the Run
		 * is written all the same, unlocked */
		pr_warn("cannot lock run directory '%s': %s; `nunatak summary` will not "
			"finalize it, not knowing whether it is still written",
			run_dir, strerror(errno));
	}
out:
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

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
		snprintf(why, whylen,
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
	err = storage_reserve(r->dir_fd, 1);
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
	err = manifest_write(r->dir_fd, r->manifest);
	if (err)
		snprintf(why, whylen, "cannot write the manifest in '%s': %s", r->run_dir,
			 strerror(-err));
	return err;
}

/* START's Ack: {"run_id","run_dir"} */
static int reply_start_ack(struct aggregator *agg, const struct agg_peer *from,
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
		       const json_t *spec)
{
	json_t *uid = json_object_get(json_object_get(spec, "owner"), "uid");
	char why[512];

	if (!json_is_integer(uid) || (uid_t)json_integer_value(uid) != r->uid ||
	    strcmp(from->key, r->origin_key) || r->state != RUN_COLLECTING) {
		snprintf(why, sizeof(why), "run '%s' is already being collected (in '%s')",
			 r->run_id, r->run_dir);
		return agg_reply_error(agg, from, EEXIST, r->run_id, why);
	}
	return reply_start_ack(agg, from, r);
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

int agg_run_start(struct aggregator *agg, const struct agg_peer *from,
		  const Nunatak__Wire__Control *c)
{
	char refused_tool[2 * PATH_MAX + 512];
	json_t *spec, *run;
	const char *runs_dir = NULL;
	char why[2 * PATH_MAX + 256] = "";
	struct tool_user tu, *prev_tu;
	struct agg_run *r = NULL;
	struct as_owner o;
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
	run = json_object_get(spec, "run");
	if (agg_run_find(agg, c->run_id)) {
		err = start_again(agg, from, agg_run_find(agg, c->run_id), spec);
		json_decref(spec);
		return err;
	}
	/* the origin: the node the START comes from, else the one it names */
	r = agg_run_new(agg, c->run_id,
			c->node && c->node[0] ? c->node
					      : json_string_value(json_object_get(run, "node")),
			json_string_value(json_object_get(spec, "symbolizer")));
	if (!r) {
		json_decref(spec);
		return agg_reply_error(agg, from, ENOMEM, c->run_id,
				       "cannot start a Run: out of memory");
	}
	snprintf(r->origin_key, sizeof(r->origin_key), "%s", from->key);
	err = agg_node_claim(agg, from, r->origin, "START", why, sizeof(why));
	if (err == -EPERM) {
		agg_run_close(r);
		json_decref(spec);
		agg->refused++;
		return agg_reply_error(agg, from, EPERM, c->run_id, why);
	}
	if (!err)
		err = start_facts(r, spec, &runs_dir, why, sizeof(why));
	if (!err)
		symbolizer_for_owner(r, refused_tool, sizeof(refused_tool));
	if (!err)
		err = as_owner_enter(&o, r->uid, r->gid);
	if (!err) {
		tu = (struct tool_user){r->uid, r->gid};
		prev_tu = (struct tool_user *)tool_user_bind(&tu);
		err = start_files(r, spec, runs_dir, why, sizeof(why));
		if (!err && refused_tool[0])
			pivot_add_degradation(r->pivot, "symbolizer-untrusted", refused_tool,
					      "set tools.llvm-symbolizer in the site's nunatak.toml "
					      "to a root-owned llvm-symbolizer");
		tool_user_bind(prev_tu);
		if (err && r->run_dir)
			run_dir_discard(r->run_dir);
		as_owner_leave(&o);
	} else if (!why[0]) {
		snprintf(why, sizeof(why), "cannot write run '%s' as uid %u: %s", r->run_id,
			 (unsigned)r->uid, strerror(-err));
	}
	json_decref(spec);
	if (err) {
		agg_run_close(r);
		if (err == -EINVAL)
			agg->refused++; /* a malformed request */
		return agg_reply_error(agg, from, -err, c->run_id, why);
	}
	if (r->origin[0] && agg_run_node(r, r->origin) == NULL)
		pr_warn("run '%s': out of memory", r->run_id);
	r->next = agg->runs;
	agg->runs = r;
	if (agg->open_dir_fd >= 0 && agg_state_write(agg, r))
		pr_warn("run '%s': it will not be resumed if this Aggregator restarts", r->run_id);
	err = reply_start_ack(agg, from, r);
	if (r->token[0])
		agg_open_to_agents(agg, r);
	return err;
}

/* An Error about Batch b, with code (an errno) saying whether storing it
 * again later may work (wire_storage_error_transient). */
static int reply_batch_error(struct aggregator *agg, const struct agg_peer *to,
			     const Nunatak__Wire__Batch *b, int code, const char *message)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	if (wire_storage_error_transient(code)) {
		pr_debug("%s", message); /* the Agent says it once, not at each resend */
	} else {
		pr_warn("%s", message);
		agg->refused++;
	}
	error.message = (char *)message;
	error.has_code = error.has_seq = 1;
	error.code = code;
	error.seq = b->seq;
	error.has_incarnation = 1; /* 0: a Batch without one */
	error.incarnation = b->incarnation;
	error.run_id = b->run_id;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	return agg_send(agg, to, &env);
}

static uint64_t batch_samples(const Nunatak__Wire__Batch *b)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < b->n_samples; i++)
		n += b->samples[i] ? b->samples[i]->sample_count : 0;
	return n;
}

/* what a stored Batch tells of its node */
static void note_batch(struct agg_run *r, const Nunatak__Wire__Batch *b)
{
	struct agg_node *n = agg_run_node(r, b->node);

	r->batches++;
	r->samples += batch_samples(b);
	if (!n)
		return;
	n->sent_batch = 1;
	n->last_batch = time(NULL);
	if (b->has_last && b->last)
		n->sent_last = 1;
}

/* Is node one of r's (with authentication): its origin, or a node it was
 * OPENed to, or one whose Batches it holds (stored before a restart)? */
static int batch_node_of_run(struct agg_run *r, const struct agg_peer *from, const char *node)
{
	struct agg_node *n;

	if (!from->key[0] || !strcmp(node, r->origin))
		return 1;
	n = agg_run_node_find(r, node);
	return n && (n->opened || n->sent_batch);
}

int agg_run_store_batch(struct aggregator *agg, const struct agg_peer *from,
			const Nunatak__Wire__Batch *b)
{
	struct agg_run *r = agg_run_find(agg, b->run_id);
	char why[1024], cause[128];
	struct as_owner o;
	int err;

	agg->received++;
	err = agg_node_claim(agg, from, b->node, "batch", why, sizeof(why));
	if (err)
		return reply_batch_error(agg, from, b, -err, why);
	if (!r) {
		snprintf(why, sizeof(why), "batch %" PRIu64 " from '%s' names unknown run '%s'",
			 b->seq, b->node, b->run_id);
		return reply_batch_error(agg, from, b, ENOENT, why);
	}
	if (!batch_node_of_run(r, from, b->node)) {
		snprintf(why, sizeof(why),
			 "batch %" PRIu64 " from node '%.64s' refused: run '%s' was started on '%.64s' "
			 "and not opened to that node",
			 b->seq, b->node, b->run_id, r->origin);
		return reply_batch_error(agg, from, b, EPERM, why);
	}
	if (r->state == RUN_FINALIZING) {
		snprintf(why, sizeof(why),
			 "batch %" PRIu64 " from '%s' came after run '%s' was closed: it is being "
			 "finalized",
			 b->seq, b->node, b->run_id);
		return reply_batch_error(agg, from, b, ESTALE, why);
	}
	err = as_owner_enter(&o, r->uid, r->gid);
	if (!err) {
		if (b->has_last && b->last)
			storage_reserve(r->dir_fd, 0);
		err = pivot_store_batch(r->pivot, b);
		as_owner_leave(&o);
	}
	if (err < 0) {
		snprintf(why, sizeof(why), "batch %" PRIu64 " from '%s' not stored in '%s': %s",
			 b->seq, b->node, r->run_dir, errno_text(err, cause, sizeof(cause)));
		return reply_batch_error(agg, from, b, -err, why);
	}
	if (err == 1) {
		agg->duplicates++;
		if (b->has_last && b->last && agg_run_node(r, b->node))
			agg_run_node(r, b->node)->sent_last = 1;
	} else {
		agg->stored++;
		note_batch(r, b);
	}
	return agg_reply_ack(agg, from, b->run_id, b->node, b->seq, 1, b->incarnation, NULL);
}
