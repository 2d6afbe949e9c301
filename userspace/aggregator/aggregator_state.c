/* aggregator_state — the open Runs an Aggregator restarted resumes (and
 * reopens: directory as the owner, pivot, manifest, nodes):
 * <state_dir>/open/<run_id>.json (0600, written at START, removed once the
 * Run is finalized), made under a descriptor of that directory with
 * O_EXCL|O_NOFOLLOW; the directory is this process' (owner euid, not
 * writable by others), never followed through a link. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/aggregator/aggregator_internal.h"
#include "userspace/aggregator/aggregator_job.h"
#include "userspace/aggregator/as_owner.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

#define STATE_OPEN_DIR "open"
#define STATE_FILE_MAX (64 * 1024)

/* dir under at, made 0700 when missing, opened without following a link,
 * ours and not writable by others: its descriptor or -errno (logged) */
static int open_private_dir(int at, const char *dir, const char *shown)
{
	struct stat st;
	int fd;

	if (mkdirat(at, dir, 0700) && errno != EEXIST) {
		fd = -errno;
		pr_warn("cannot make the state directory '%s': %s", shown, strerror(-fd));
		return fd;
	}
	fd = openat(at, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		pr_warn("cannot open the state directory '%s': %s", shown, strerror(-fd));
		return fd;
	}
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		pr_warn("refusing the state directory '%s': it must be owned by uid %u and "
			"writable by nobody else (chown, chmod go-w)",
			shown, (unsigned)geteuid());
		close(fd);
		return -EPERM;
	}
	return fd;
}

int agg_state_open(struct aggregator *agg, const char *state_dir)
{
	char shown[PATH_MAX];
	int dir_fd;

	if (state_dir[0] != '/') {
		pr_warn("the state directory '%s' is not an absolute path", state_dir);
		return -EINVAL;
	}
	dir_fd = open_private_dir(AT_FDCWD, state_dir, state_dir);
	if (dir_fd < 0)
		return dir_fd;
	snprintf(shown, sizeof(shown), "%s/" STATE_OPEN_DIR, state_dir);
	agg->open_dir_fd = open_private_dir(dir_fd, STATE_OPEN_DIR, shown);
	close(dir_fd);
	return agg->open_dir_fd < 0 ? agg->open_dir_fd : 0;
}

int agg_state_write(struct aggregator *agg, const struct agg_run *r)
{
	char name[96], tmp[104];
	json_t *j;
	int fd, err = 0;

	snprintf(name, sizeof(name), "%s.json", r->run_id);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", r->run_id);
	j = json_pack("{s:s, s:s, s:s, s:{s:I, s:I}, s:s, s:s, s:s, s:I, s:b}", "run_id", r->run_id,
		      "origin_key", r->origin_key, "run_dir", r->run_dir, "owner", "uid",
		      (json_int_t)r->uid, "gid", (json_int_t)r->gid, "symbolizer", r->symbolizer,
		      "token", r->token, "origin", r->origin, "frequency", (json_int_t)r->frequency,
		      "mpi_events", r->mpi_events);
	if (!j)
		return -ENOMEM;
	if (!r->token[0])
		json_object_del(j, "token");
	if (r->job)
		json_object_set_new(j, "job", agg_job_state_json(r));
	unlinkat(agg->open_dir_fd, tmp, 0); /* a stale one: never followed */
	fd = openat(agg->open_dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		err = -errno;
	else if (json_dumpfd(j, fd, JSON_COMPACT) || fsync(fd))
		err = errno ? -errno : -EIO;
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	/* whole or not at all: written aside, then renamed */
	if (!err && renameat(agg->open_dir_fd, tmp, agg->open_dir_fd, name))
		err = -errno;
	if (err) {
		unlinkat(agg->open_dir_fd, tmp, 0);
		pr_warn("run '%s': cannot write its state file %s: %s", r->run_id, name,
			strerror(-err));
	} else {
		fsync(agg->open_dir_fd);
	}
	json_decref(j);
	return err;
}

void agg_state_remove(struct aggregator *agg, const char *run_id)
{
	char name[96];

	if (agg->open_dir_fd < 0)
		return;
	snprintf(name, sizeof(name), "%s.json", run_id);
	if (unlinkat(agg->open_dir_fd, name, 0) && errno != ENOENT)
		pr_warn("run '%s': cannot remove its state file %s: %s", run_id, name,
			strerror(errno));
}

/* the state file name under the open directory, parsed; NULL (logged) */
static json_t *state_read(int dir_fd, const char *name)
{
	char buf[STATE_FILE_MAX + 1];
	struct stat st;
	ssize_t n;
	json_t *j;
	int fd;

	fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_size > STATE_FILE_MAX) {
		pr_warn("state file '%s' refused (not a regular file of ours of at most %d "
			"bytes): ignored",
			name, STATE_FILE_MAX);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	n = read(fd, buf, STATE_FILE_MAX);
	close(fd);
	j = n > 0 ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
	if (!j)
		pr_warn("state file '%s' is not JSON: ignored", name);
	return j;
}

/* a Run that will never be resumed: gone, finalized, refused, malformed
 * (not: locked by another writer, out of memory, an I/O error...) */
static int state_forgotten(int err)
{
	switch (-err) {
	case ENOENT:
	case ENOTDIR:
	case EALREADY:
	case EINVAL:
	case EPERM:
	case EACCES:
	case ELOOP:
	case EBADMSG:
		return 1;
	default:
		return 0;
	}
}

void agg_state_resume(struct aggregator *agg)
{
	char why[1024];
	struct dirent *de;
	json_t *state;
	size_t len;
	DIR *d;
	int fd, err;

	fd = openat(agg->open_dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		pr_warn("cannot read the state directory: %s", strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		state = state_read(agg->open_dir_fd, de->d_name);
		if (!state)
			continue;
		why[0] = '\0';
		err = agg_run_reopen(agg, state, why, sizeof(why));
		if (err) {
			pr_warn("cannot resume the Run of state file '%s': %s; %s", de->d_name,
				why[0] ? why : strerror(-err),
				state_forgotten(err) ? "forgotten" : "kept for the next start");
			if (state_forgotten(err))
				unlinkat(agg->open_dir_fd, de->d_name, 0);
		} else {
			pr_info("resumed run '%s' in '%s'",
				json_string_value(json_object_get(state, "run_id")),
				json_string_value(json_object_get(state, "run_dir")));
		}
		json_decref(state);
	}
	closedir(d);
}

/* the nodes that sent Batches of a reopened Run, from its pivot */
static int reopen_node(const char *node, uint64_t batches, int last, void *ctx)
{
	struct agg_run *r = ctx;
	struct agg_node *n = agg_run_node(r, node);

	if (!n)
		return -ENOMEM;
	n->sent_batch = batches > 0;
	n->sent_last = last;
	r->batches += batches;
	return 0;
}

/* The Run's directory, pivot and manifest reopened as the owner (the
 * caller switched). 0 or -errno with why. */
static int reopen_files(struct agg_run *r, char *why, size_t whylen)
{
	char path[PATH_MAX];
	int err;

	err = agg_open_run_dir(r->run_dir, r->uid, why, whylen);
	if (err < 0)
		return err;
	r->dir_fd = err;
	snprintf(path, sizeof(path), "%s/" PIVOT_FILE, r->run_dir);
	r->pivot = pivot__open_at(r->dir_fd, PIVOT_FILE, 0, path);
	if (!r->pivot) {
		err = -errno;
		snprintf(why, whylen, "cannot open '%s': %s", path, strerror(-err));
		return err;
	}
	r->manifest = manifest_read(r->run_dir, why, whylen);
	if (!r->manifest)
		return -errno;
	if (manifest_finalized(r->manifest)) {
		/* finalized before the state file could go */
		snprintf(why, whylen, "'%s' is finalized already", r->run_dir);
		return -EALREADY;
	}
	err = pivot_for_each_batch_node(r->pivot, reopen_node, r);
	err = err ?: pivot_sample_total(r->pivot, &r->samples);
	if (err)
		snprintf(why, whylen, "cannot read the Batches of '%s': %s", path, strerror(-err));
	return err;
}

int agg_run_reopen(struct aggregator *agg, const json_t *state, char *why, size_t whylen)
{
	const char *run_id = json_string_value(json_object_get(state, "run_id"));
	const char *run_dir = json_string_value(json_object_get(state, "run_dir"));
	const char *token = json_string_value(json_object_get(state, "token"));
	json_t *owner = json_object_get(state, "owner");
	struct agg_run *r;
	struct as_owner o;
	int err;

	if (!agg_run_id_valid(run_id) || !run_dir || run_dir[0] != '/' ||
	    !json_is_integer(json_object_get(owner, "uid")) ||
	    !json_is_integer(json_object_get(owner, "gid")) || (token && !agg_token_valid(token))) {
		snprintf(why, whylen, "malformed state (run_id, run_dir, owner, token)");
		return -EINVAL;
	}
	if (agg_run_find(agg, run_id)) {
		snprintf(why, whylen, "run '%s' is open already", run_id);
		return -EEXIST;
	}
	r = agg_run_new(agg, run_id, json_string_value(json_object_get(state, "origin")),
			json_string_value(json_object_get(state, "symbolizer")));
	if (!r || !(r->run_dir = strdup(run_dir))) {
		if (r)
			agg_run_close(r);
		return -ENOMEM;
	}
	r->uid = (uid_t)json_integer_value(json_object_get(owner, "uid"));
	r->gid = (gid_t)json_integer_value(json_object_get(owner, "gid"));
	snprintf(r->token, sizeof(r->token), "%s", token ? token : "");
	snprintf(r->origin_key, sizeof(r->origin_key), "%s",
		 json_string_value(json_object_get(state, "origin_key"))
		     ? json_string_value(json_object_get(state, "origin_key"))
		     : "");
	r->frequency = (long)json_integer_value(json_object_get(state, "frequency"));
	r->mpi_events = json_is_true(json_object_get(state, "mpi_events"));
	err = agg_job_from_state(r, state);
	if (err) {
		snprintf(why, whylen, "malformed job in the state");
		agg_run_close(r);
		return err;
	}
	err = as_owner_enter(&o, r->uid, r->gid);
	if (!err) {
		err = reopen_files(r, why, whylen);
		as_owner_leave(&o);
	} else {
		snprintf(why, whylen, "cannot act as uid %u", (unsigned)r->uid);
	}
	if (err) {
		agg_run_close(r);
		return err;
	}
	r->next = agg->runs;
	agg->runs = r;
	/* its origin node stays its key's: no other key takes the name
	 * before the origin's Agent says Hello again */
	if (r->origin_key[0] && r->origin[0] && agg_node_bind(agg, r->origin_key, r->origin))
		pr_warn("run '%s': node '%s' is bound to another Agent key already", r->run_id,
			r->origin);
	return 0;
}
