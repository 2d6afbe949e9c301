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
#include "userspace/aggregator/aggregator_job.h"
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
int agg_storage_reserve(int dir_fd, int make)
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
	agg_job_free(r->job);
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
	return n && (n->opened || n->sent_batch || n->joined);
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
			agg_storage_reserve(r->dir_fd, 0);
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
