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

void slurm_job_release(struct slurm_job *job)
{
	if (!job)
		return;
	slurm_job_nodes_free(job->nodes, job->n_nodes);
	memset(job, 0, sizeof(*job));
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
	if (slurm_load_job(&msg, id, SHOW_ALL) != SLURM_SUCCESS) {
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
