/* agent_job — job Targets: a Slurm job's processes on this node join the
 * Target (contract in agent_internal.h; the kernel's part: bpf/job.h).
 *
 * The job's name is registered in BPF first, then the running processes
 * are found (userspace/slurm/job_cgroup.h: by cgroup, else SLURM_JOB_ID)
 * and put into the Target from here: a process that forks or execs
 * meanwhile is adopted by the kernel (its child, or its new image), and
 * the scan then finds it followed already. A running process is let in
 * under the kernel's own rule (bpf/target.h target_adoption_allows), its
 * credentials read from /proc: the uids and gids of status, CapPrm with
 * its user namespace, its dumpability from the owner of /proc/PID (the
 * kernel gives a process that is not dumpable as its user to root).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/sampler.h"
#include "userspace/log/log.h"
#include "userspace/slurm/job_cgroup.h"

/* the values of "Name:\tv1\tv2..." in a /proc/PID/status text: the
 * number read (at most max), base 10 or 16 */
static int status_values(const char *text, const char *name, int base, uint64_t *v, int max)
{
	size_t len = strlen(name);
	const char *p = text;
	char *end;
	int n = 0;

	while (p && strncmp(p, name, len)) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p)
		return 0;
	p += len;
	for (; n < max; n++) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || !*p)
			break;
		v[n] = strtoull(p, &end, base);
		if (end == p)
			break;
		p = end;
	}
	return n;
}

/* the inode of the namespace dirfd/ns/<kind> (a process'), 0 when unknown */
static uint32_t ns_inode(int dirfd, const char *rel)
{
	struct stat st;

	return fstatat(dirfd, rel, &st, 0) ? 0 : (uint32_t)st.st_ino;
}

/* the credentials of the process of /proc/PID (dirfd) as the kernel's
 * target_cred_read gives them, and its network namespace: 0 or -errno */
static int proc_cred_read(int dirfd, struct target_cred *c, uint32_t *netns)
{
	char text[4096];
	uint64_t uid[4], gid[4], cap = 0;
	struct stat st;
	ssize_t n;
	int fd;

	fd = openat(dirfd, "status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	text[n] = '\0';
	if (status_values(text, "Uid:", 10, uid, 4) != 4 ||
	    status_values(text, "Gid:", 10, gid, 4) != 4 ||
	    status_values(text, "CapPrm:", 16, &cap, 1) != 1 || fstat(dirfd, &st))
		return -ESRCH; /* a zombie: no credentials to read */
	c->uid = (__u32)uid[0], c->euid = (__u32)uid[1];
	c->suid = (__u32)uid[2], c->fsuid = (__u32)uid[3];
	c->gid = (__u32)gid[0], c->egid = (__u32)gid[1];
	c->sgid = (__u32)gid[2], c->fsgid = (__u32)gid[3];
	/* /proc/PID is its euid's only while it is dumpable as that user */
	c->dumpable = st.st_uid == c->euid ? TARGET_DUMP_USER : 0;
	/* capabilities inside a user namespace of its own give nothing here */
	c->caps = cap && ns_inode(dirfd, "ns/user") == ns_inode(AT_FDCWD, "/proc/self/ns/user");
	*netns = ns_inode(dirfd, "ns/net");
	return 0;
}

struct job_scan {
	struct agent *a;
	struct agent_target *t;
	uint32_t want_netns;
	int adopted, refused, followed;
};

/* one running process of the job: into t when the rule lets it */
static int job_adopt_one(pid_t pid, void *ctx)
{
	struct job_scan *js = ctx;
	struct target_cred cred;
	uint32_t netns = 0;
	char path[32];
	int dirfd, err;

	if (pid == getpid())
		return 0;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return 0; /* gone */
	err = proc_cred_read(dirfd, &cred, &netns);
	if (err)
		goto out;
	if (!target_adoption_allows(agent_target_uid(js->t), &cred, netns, js->want_netns)) {
		js->refused++;
		goto out;
	}
	err = sampler_adopt_process(js->a->sampler, pid, js->t->id, agent_target_uid(js->t));
	if (err == -EEXIST) { /* the kernel took it meanwhile, or another Target has it */
		js->followed++;
		goto out;
	}
	if (err) {
		pr_warn("run %s: process %d of job %u cannot join it: %s", js->t->run_id, (int)pid,
			(unsigned)js->t->job_id, strerror(-err));
		goto out;
	}
	/* an exec between the look and the insertion (a setuid program) came
	 * before the kernel's exec rule could see the process: look again,
	 * now that any later exec is the kernel's to judge */
	if (proc_cred_read(dirfd, &cred, &netns) ||
	    !target_adoption_allows(agent_target_uid(js->t), &cred, netns, js->want_netns)) {
		__u32 key = (__u32)pid;

		bpf_map_delete_elem(sampler_targets_fd(js->a->sampler), &key);
		js->refused++;
		goto out;
	}
	close(dirfd);
	agent_adopt_running(js->a, js->t, pid);
	js->adopted++;
	return 0;
out:
	close(dirfd);
	return 0;
}

int agent_job_attach(struct agent *a, struct agent_target *t)
{
	struct job_scan js = {.a = a, .t = t};
	int err;

	if (!t->job_id)
		return -EINVAL;
	if (!a->sampler)
		return 0;
	if (a->opts.netns_only)
		js.want_netns = ns_inode(AT_FDCWD, "/proc/self/ns/net");
	err = sampler_add_job(a->sampler, t->job_id, t->id, agent_target_uid(t));
	if (err) {
		pr_warn("run %s: job %u cannot be followed: %s", t->run_id, (unsigned)t->job_id,
			err == -ENOSPC ? "too many jobs followed on this node"
			: err == -EEXIST ? "another Run follows it on this node"
					 : strerror(-err));
		return err;
	}
	/* a Slurm that makes no job cgroup: the environment is the word */
	if (!job_cgroups_in_use(NULL)) {
		pr_info("run %s: no Slurm job cgroups on this node: the processes of job %u that "
			"start later are known by SLURM_JOB_ID in their environment",
			t->run_id, (unsigned)t->job_id);
		sampler_set_job_env(a->sampler, 1);
	}
	err = job_processes_for_each(t->job_id, (uid_t)agent_target_uid(t), job_adopt_one, &js);
	if (err < 0) {
		pr_warn("run %s: the processes of job %u cannot be listed: %s", t->run_id,
			(unsigned)t->job_id, strerror(-err));
		sampler_remove_job(a->sampler, t->job_id, t->id);
		return err;
	}
	pr_debug("run %s: job %u: %d running processes adopted, %d followed already, %d "
		 "refused (credentials not the owner's)",
		 t->run_id, (unsigned)t->job_id, js.adopted, js.followed, js.refused);
	return js.adopted;
}

void agent_job_detach(struct agent *a, struct agent_target *t)
{
	int err;

	if (!t->job_id || !a->sampler)
		return;
	err = sampler_remove_job(a->sampler, t->job_id, t->id);
	if (err && err != -ENOENT)
		pr_warn("run %s: job %u is still followed: %s", t->run_id, (unsigned)t->job_id,
			strerror(-err));
}
