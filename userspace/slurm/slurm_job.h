/* slurm_job — what Slurm itself says about a job: its owner, its nodes,
 * its working directory and its state (libslurm's slurm_load_job, asked of
 * slurmctld), never what a user claims.
 *
 * libslurm is configured once per process: the first slurm_job_lookup()
 * calls slurm_init(conf) (conf NULL: $SLURM_CONF, else
 * /etc/slurm/slurm.conf). libslurm ends the whole process (fatal()) on a
 * configuration it cannot read or parse, so the configuration is first
 * tried in a short-lived child process (bounded: SLURM_JOB_INIT_TIMEOUT_MS)
 * and only a configuration that child could load is given to slurm_init()
 * in this process; a bad one is an error (-ENOENT, -EINVAL) naming the file,
 * retried at the next call. Once initialised, a call with another conf is
 * refused with -EINVAL (libslurm keeps one configuration per process).
 *
 * Threads: libslurm is not made for concurrent use; these functions
 * serialise their libslurm calls with a mutex, but the design keeps them on
 * one thread anyway (the Aggregator's worker), since a lookup can block.
 *
 * Time: a lookup is one RPC to slurmctld. With slurmctld down (connection
 * refused) it fails in about SLURM_JOB_UNREACHABLE_MS (libslurm retries the
 * connection); with a slurmctld host that never answers it takes up to
 * slurm.conf's MessageTimeout (default 10 s) — see the measurement below.
 *
 * err (errlen bytes; NULL when errlen is 0) receives one line saying what
 * failed, where (the configuration, slurmctld) and what to do.
 */
#ifndef NUNATAK_SLURM_JOB_H
#define NUNATAK_SLURM_JOB_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SLURM_JOB_INIT_TIMEOUT_MS 5000

/* A job as slurmctld describes it. Fill with slurm_job_lookup(), free
 * with slurm_job_release() (NULL-safe fields; a zeroed struct is fine). */
struct slurm_job {
	uint32_t id;
	uid_t uid;		/* the job's owner */
	gid_t gid;
	char user[64];		/* the owner's name (from the password database); "" unknown */
	char name[128];		/* the job's name ("" none) */
	char work_dir[PATH_MAX]; /* its working directory ("" none) */
	char **nodes;		/* the job's nodes, expanded ("vm1", "vm2"...), n_nodes of them;
				 * none while it is pending */
	size_t n_nodes;
	int running;		/* RUNNING or SUSPENDED */
	int ended;		/* no longer pending, running, suspended or completing */
	char state[32];		/* slurm_job_state_string() of its base state: "RUNNING"... */
};

/* Looks job id up in slurmctld (conf: see above). 0 and *job (released by
 * the caller with slurm_job_release), -ENOENT (no such job: never existed
 * or purged after MinJobAge; or conf missing), -EHOSTUNREACH (slurmctld
 * unreachable; err says so), -EINVAL (bad conf, another conf than the
 * process's), -ENOMEM, -EIO (any other Slurm error, named in err). *job is
 * zeroed at every error. */
int slurm_job_lookup(const char *conf, uint32_t id, struct slurm_job *job, char *err,
		     size_t errlen);

/* Frees what slurm_job_lookup allocated (job->nodes) and zeroes *job.
 * NULL-safe. */
void slurm_job_release(struct slurm_job *job);

/* Expands a Slurm hostlist ("vm[1-3],x" -> {"vm1","vm2","vm3","x"}, in
 * order, duplicates kept as Slurm keeps them). 0 and *nodes (a
 * NULL-terminated array of *n strings: free with slurm_job_nodes_free), or
 * -EINVAL (empty or malformed hostlist), -ENOMEM. Pure: needs no slurm.conf
 * and no slurmctld. */
int slurm_job_hostlist_expand(const char *hostlist, char ***nodes, size_t *n);

/* Frees an array of slurm_job_hostlist_expand (n strings). NULL-safe. */
void slurm_job_nodes_free(char **nodes, size_t n);

#endif
