/* slurm_job — see slurm_job.h. */
#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "userspace/slurm/slurm_internal.h"

/* exported by libslurm.so (the name scontrol prints); declared only in
 * Slurm's own slurm_protocol_defs.h */
extern char *slurm_job_state_string(uint32_t inx);

/* a lookup that succeeded this recently skips the probe (no empty
 * connection in slurmctld's log at every poll of a healthy cluster) */
#define PROBE_AFTER_OK_MS 5000

static pthread_mutex_t slurm_lock = PTHREAD_MUTEX_INITIALIZER;
static long long last_ok_ms = -1;

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void slurm_job_nodes_free(char **nodes, size_t n)
{
	size_t i;

	for (i = 0; nodes && i < n; i++)
		free(nodes[i]);
	free(nodes);
}

void slurm_job_release(struct slurm_job *job)
{
	if (!job)
		return;
	slurm_job_nodes_free(job->nodes, job->n_nodes);
	memset(job, 0, sizeof(*job));
}

/* A name libslurm hands out (malloc()ed by libslurm: free()) */
static int push_node(char ***nodes, size_t *n, size_t *cap, char *name)
{
	char **grown;

	if (*n + 1 >= *cap) {
		*cap = *cap ? *cap * 2 : 8;
		grown = realloc(*nodes, *cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		*nodes = grown;
	}
	(*nodes)[(*n)++] = name;
	(*nodes)[*n] = NULL;
	return 0;
}

/* Slurm's maximum hosts in one range */
#define MAX_RANGE_HOSTS 65536

/* One "[...]" body: "N", "N-M" (N <= M, at most MAX_RANGE_HOSTS) joined by
 * ','. Returns the length consumed up to the ']', or 0 when malformed. */
static size_t range_body_len(const char *s)
{
	const char *p = s;
	unsigned long lo, hi;
	char *end;

	for (;;) {
		if (*p < '0' || *p > '9')
			return 0;
		lo = strtoul(p, &end, 10);
		hi = lo;
		p = end;
		if (*p == '-') {
			if (p[1] < '0' || p[1] > '9')
				return 0;
			hi = strtoul(p + 1, &end, 10);
			p = end;
		}
		if (hi < lo || hi - lo >= MAX_RANGE_HOSTS)
			return 0;
		if (*p == ']')
			return p - s;
		if (*p != ',')
			return 0;
		p++;
	}
}

/* Brackets closed, unnested, holding ranges only: libslurm turns "vm[1-3"
 * into "vm]", and leaks (and prints an error) at a bad range. */
static int hostlist_syntax_ok(const char *s)
{
	size_t len;

	for (; *s; s++) {
		if (*s == ']')
			return 0;
		if (*s != '[')
			continue;
		len = range_body_len(s + 1);
		if (!len)
			return 0;
		s += len + 1; /* at the ']' */
	}
	return 1;
}

static int node_name_valid(const char *s)
{
	size_t len = strlen(s);

	return len && len < 256 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == len;
}

int slurm_job_hostlist_expand(const char *hostlist, char ***nodes, size_t *n)
{
	size_t count = 0, cap = 0;
	char **list = NULL, *name;
	hostlist_t hl;
	int ret = 0;

	if (!nodes || !n)
		return -EINVAL;
	*nodes = NULL;
	*n = 0;
	if (!hostlist || !*hostlist || strpbrk(hostlist, " \t\n") || !hostlist_syntax_ok(hostlist))
		return -EINVAL;
	hl = slurm_hostlist_create(hostlist);
	if (!hl)
		return -EINVAL;
	while ((name = slurm_hostlist_shift(hl))) {
		ret = node_name_valid(name) ? push_node(&list, &count, &cap, name) : -EINVAL;
		if (ret) {
			free(name);
			goto cleanup;
		}
	}
	if (!count)
		ret = -EINVAL;
cleanup:
	slurm_hostlist_destroy(hl);
	if (ret) {
		slurm_job_nodes_free(list, count);
		return ret;
	}
	*nodes = list;
	*n = count;
	return 0;
}

/* Slurm's error as -errno, the message naming it */
static int load_error(int e, uint32_t id, char *err, size_t errlen)
{
	const char *conf = slurm_setup_conf();

	switch (e) {
	case ESLURM_INVALID_JOB_ID:
		return slurm_error(err, errlen, -ENOENT,
				   "slurm: no job %u (never submitted, or ended longer ago than "
				   "MinJobAge): check the id with squeue",
				   id);
	case SLURM_COMMUNICATIONS_CONNECTION_ERROR:
	case SLURM_COMMUNICATIONS_SEND_ERROR:
	case SLURM_COMMUNICATIONS_RECEIVE_ERROR:
	case SLURM_COMMUNICATIONS_SHUTDOWN_ERROR:
	case SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR:
	case SLURMCTLD_COMMUNICATIONS_SEND_ERROR:
	case SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR:
	case SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR:
	case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
		return slurm_error(err, errlen, -EHOSTUNREACH,
				   "slurm: slurmctld unreachable asking for job %u: %s "
				   "(configuration '%s'): start slurmctld or check SlurmctldHost "
				   "and the network",
				   id, slurm_strerror(e), conf);
	case ESLURM_ACCESS_DENIED:
	case SLURM_PROTOCOL_AUTHENTICATION_ERROR:
		return slurm_error(err, errlen, -EACCES,
				   "slurm: slurmctld refused to describe job %u: %s: this host's "
				   "munged must share the cluster's munge key (AuthInfo in '%s')",
				   id, slurm_strerror(e), conf);
	default:
		return slurm_error(err, errlen, -EIO, "slurm: asking slurmctld for job %u: %s (%d)",
				   id, slurm_strerror(e), e);
	}
}

static void copy_string(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

/* The record of job id in msg as *job. 0, -ENOENT, -ENOMEM */
static int fill_job(const job_info_msg_t *msg, uint32_t id, struct slurm_job *job, char *err,
		    size_t errlen)
{
	const slurm_job_info_t *j = NULL;
	struct passwd pw, *found = NULL;
	char pwbuf[4096];
	uint32_t i, base;
	int ret;

	for (i = 0; msg && i < msg->record_count; i++)
		if (msg->job_array[i].job_id == id)
			j = &msg->job_array[i];
	if (!j)
		return load_error(ESLURM_INVALID_JOB_ID, id, err, errlen);
	job->id = id;
	job->uid = j->user_id;
	job->gid = j->group_id;
	if (j->user_name && *j->user_name)
		copy_string(job->user, sizeof(job->user), j->user_name);
	else if (!getpwuid_r(j->user_id, &pw, pwbuf, sizeof(pwbuf), &found) && found)
		copy_string(job->user, sizeof(job->user), found->pw_name);
	copy_string(job->name, sizeof(job->name), j->name);
	copy_string(job->work_dir, sizeof(job->work_dir), j->work_dir);
	base = j->job_state & JOB_STATE_BASE;
	copy_string(job->state, sizeof(job->state), slurm_job_state_string(base));
	job->running = base == JOB_RUNNING || base == JOB_SUSPENDED;
	job->ended = !(base == JOB_PENDING || job->running || (j->job_state & JOB_COMPLETING));
	if (j->nodes && *j->nodes) {
		ret = slurm_job_hostlist_expand(j->nodes, &job->nodes, &job->n_nodes);
		if (ret)
			return slurm_error(err, errlen, ret,
					   "slurm: cannot expand job %u's nodes '%s': %s", id,
					   j->nodes, strerror(-ret));
	}
	return 0;
}

int slurm_job_lookup(const char *conf, uint32_t id, struct slurm_job *job, char *err,
		     size_t errlen)
{
	job_info_msg_t *msg = NULL;
	int ret;

	if (!job)
		return slurm_error(err, errlen, -EINVAL, "slurm: no job to fill");
	memset(job, 0, sizeof(*job));
	if (!id || id >= 0xfffffff0u)
		return slurm_error(err, errlen, -EINVAL, "slurm: %u is not a job id", id);
	pthread_mutex_lock(&slurm_lock);
	ret = slurm_setup(conf, err, errlen);
	if (!ret && (last_ok_ms < 0 || mono_ms() - last_ok_ms > PROBE_AFTER_OK_MS))
		ret = slurm_setup_probe(err, errlen);
	if (ret) {
		last_ok_ms = -1;
		goto cleanup;
	}
	if (slurm_load_job(&msg, id, SHOW_DETAIL) != SLURM_SUCCESS) {
		int e = slurm_get_errno();

		ret = load_error(e, id, err, errlen);
		msg = NULL;
		/* slurmctld answered (ENOENT) or may be gone: probe next time */
		last_ok_ms = ret == -ENOENT ? mono_ms() : -1;
		goto cleanup;
	}
	last_ok_ms = mono_ms();
	ret = fill_job(msg, id, job, err, errlen);
cleanup:
	if (msg)
		slurm_free_job_info_msg(msg);
	pthread_mutex_unlock(&slurm_lock);
	if (ret)
		slurm_job_release(job);
	return ret;
}
