/* slurm_job — what Slurm itself says about a job: its owner, its nodes,
 * its working directory and its state (libslurm's slurm_load_job, asked of
 * slurmctld), never what a user claims.
 *
 * libslurm is configured once per process: the first slurm_job_lookup()
 * calls slurm_init(conf) (conf NULL: $SLURM_CONF, else
 * /etc/slurm/slurm.conf). libslurm ends the whole process (fatal(): exit)
 * on a configuration it cannot read or parse (measured: a missing file is
 * retried for 60 s, then exit 1; a malformed one: exit 1 at once), so:
 * - guarded: a missing or non-regular conf is refused (-EINVAL, stat())
 *   before libslurm sees it; the conf is then loaded by slurm_init() in a
 *   short-lived child (bounded: SLURM_JOB_INIT_TIMEOUT_MS) and given to
 *   slurm_init() in this process only when the child came through; a bad
 *   one is -EINVAL naming the file with libslurm's own reason, tried again
 *   at the next call (fix the file, no restart needed);
 * - not guarded: the file changing between the child's load and ours
 *   (microseconds); a fatal() of libslurm's RPC code (none known).
 * Configless Slurm (no slurm.conf, DNS SRV records) is not supported. Once
 * configured, a call with another conf is refused with -EINVAL (libslurm
 * keeps one configuration per process).
 *
 * Threads: libslurm is not made for concurrent use; slurm_job_lookup
 * serialises its libslurm calls with a mutex, but the design keeps it on one
 * thread anyway (the Aggregator's worker), since a lookup can block.
 * slurm_job_hostlist_expand and slurm_job_nodes_free are plain C (no
 * libslurm call, no lock, no blocking): any thread, any time.
 * libslurm may write to a socket slurmctld has closed: the process must
 * ignore SIGPIPE (nunatakd and nunatak-aggregator do). The trial
 * child is waited for by its own PID (never waitpid(-1)); a process that
 * reaps every child itself or ignores SIGCHLD is fine too (the child's
 * verdict travels through a pipe). Jobs of hidden partitions are shown
 * (SHOW_ALL).
 *
 * Time: a lookup is one RPC to slurmctld (a few ms). Measured with Slurm
 * 22.05: libslurm itself retries a refused connection for about
 * 2 x (MessageTimeout - 1) s (MessageTimeout 10, the default: 18 s; 5: 8 s;
 * 2: 2 s), and a missing slurm.conf for 60 s before exit()ing. So:
 * - a missing conf is -EINVAL at once (stat() before libslurm sees it);
 * - before the RPC, unless a lookup succeeded in the last 5 s, a TCP
 *   connection to the configuration's slurmctld hosts is tried (at most
 *   SLURM_JOB_PROBE_MS each): slurmctld down is -EHOSTUNREACH in
 *   milliseconds (refused) or SLURM_JOB_PROBE_MS (silent host);
 * - slurmctld that dies within 5 s of a successful lookup, or accepts and
 *   never answers (measured with a SIGSTOPped slurmctld, MessageTimeout
 *   10: 20 s, then -EHOSTUNREACH "Socket timed out"), still costs
 *   libslurm's own bound: about 2 x MessageTimeout.
 * The first lookup also costs the trial of the configuration in a child
 * (about 10 ms; at most SLURM_JOB_INIT_TIMEOUT_MS).
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
#define SLURM_JOB_PROBE_MS 1000

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
 * the caller with slurm_job_release), -ENOENT (slurmctld says: no such job,
 * never existed or purged after MinJobAge; only that), -EHOSTUNREACH (slurmctld
 * unreachable; err says so), -EACCES (slurmctld refused us: munge key or
 * authentication), -EINVAL (conf missing, unreadable or bad, another conf
 * than the process's; not a job id), -ETIMEDOUT (libslurm hung loading conf), -ENOMEM, -EIO
 * (any other Slurm error, named in err). *job is zeroed at every error. */
int slurm_job_lookup(const char *conf, uint32_t id, struct slurm_job *job, char *err,
		     size_t errlen);

/* Frees what slurm_job_lookup allocated (job->nodes) and zeroes *job.
 * NULL-safe. */
void slurm_job_release(struct slurm_job *job);

/* Expands a Slurm hostlist ("vm[1-3],x" -> {"vm1","vm2","vm3","x"}, in
 * order, duplicates kept as Slurm keeps them). 0 and *nodes (a
 * NULL-terminated array of *n strings: free with slurm_job_nodes_free), or
 * -EINVAL (empty, malformed: unbalanced or nested brackets, a bad range, a
 * name that is not letters, digits, '.', '_', '-' or longer than 255, more
 * than 262144 names), -ENOMEM. Plain C, Slurm's syntax (tested against
 * libslurm's own hostlist): needs no slurm.conf, no slurmctld, no lock. */
int slurm_job_hostlist_expand(const char *hostlist, char ***nodes, size_t *n);

/* Frees an array of slurm_job_hostlist_expand (n strings). NULL-safe. */
void slurm_job_nodes_free(char **nodes, size_t n);

#endif
