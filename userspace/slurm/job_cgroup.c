/* job_cgroup — see job_cgroup.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/slurm/job_cgroup.h"

/* the text of a /proc file: a cgroup list is short, an environment may
 * hold a few hundred kB; beyond this much it is read truncated */
#define PROC_TEXT_MAX (1024 * 1024)

/* s[0..n) as a job id: decimal digits only, 1..UINT32_MAX; 0 when not */
static uint32_t job_id_of(const char *s, size_t n)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > 10)
		return 0;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return 0;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return v <= UINT32_MAX ? (uint32_t)v : 0;
}

struct job_line {
	uint32_t job; /* 0: none */
	const char *step;
	size_t step_len; /* 0 with step NULL: none */
};

/* path[0..n): the outermost component job_<id> and the step_<S> below it */
static void job_of_path(const char *path, size_t n, struct job_line *out)
{
	const char *p = path, *end = path + n, *c, *next;

	memset(out, 0, sizeof(*out));
	for (; p < end; p = next) {
		while (p < end && *p == '/')
			p++;
		c = p;
		while (p < end && *p != '/')
			p++;
		next = p;
		if (!out->job) {
			if (p - c > 4 && !memcmp(c, "job_", 4))
				out->job = job_id_of(c + 4, (size_t)(p - c - 4));
			continue;
		}
		if (p - c > 5 && !memcmp(c, "step_", 5)) {
			out->step = c + 5;
			out->step_len = (size_t)(p - c - 5);
		}
		return; /* only right below the job */
	}
}

/* one line "ID:controllers:/path" (without its newline): 0 and *out, or
 * -EINVAL */
static int job_of_line(const char *line, size_t n, struct job_line *out)
{
	const char *c1 = memchr(line, ':', n), *c2, *path;

	if (!c1)
		return -EINVAL;
	c2 = memchr(c1 + 1, ':', (size_t)(line + n - c1 - 1));
	if (!c2 || c1 == line)
		return -EINVAL;
	path = c2 + 1;
	if (path >= line + n || *path != '/')
		return -EINVAL;
	job_of_path(path, (size_t)(line + n - path), out);
	return 0;
}

int job_cgroup_parse(const char *text, uint32_t *job, char *step, size_t steplen)
{
	struct job_line best = {0}, l;
	const char *p, *nl;
	size_t n;
	int err;

	if (!text || !job)
		return -EINVAL;
	for (p = text; *p; p = nl ? nl + 1 : p + n) {
		nl = strchr(p, '\n');
		n = nl ? (size_t)(nl - p) : strlen(p);
		if (n == 0) {
			if (!nl)
				break;
			continue;
		}
		err = job_of_line(p, n, &l);
		if (err)
			return err;
		if (!l.job)
			continue;
		if (best.job && best.job != l.job)
			return -EINVAL;
		if (!best.job || (!best.step && l.step))
			best = l;
	}
	if (!best.job)
		return 0;
	*job = best.job;
	if (step && steplen) {
		n = best.step_len < steplen - 1 ? best.step_len : steplen - 1;
		if (n)
			memcpy(step, best.step, n);
		step[n] = '\0';
	}
	return 1;
}

int job_environ_parse(const char *env, size_t len, uint32_t *job)
{
	static const char name[] = "SLURM_JOB_ID=";
	const size_t name_len = sizeof(name) - 1;
	const char *p = env, *end = env + len, *nul;
	size_t n;
	uint32_t id;

	if (!env || !job)
		return 0;
	for (; p < end; p = nul + 1) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			nul = end;
		n = (size_t)(nul - p);
		if (n >= name_len && !memcmp(p, name, name_len)) {
			id = job_id_of(p + name_len, n - name_len);
			if (!id)
				return 0; /* the first occurrence counts */
			*job = id;
			return 1;
		}
		if (nul == end)
			break;
	}
	return 0;
}

/* the contents of dirfd/name, NUL terminated, at most PROC_TEXT_MAX
 * bytes: 0 and *text (free()) and *len, or -errno */
static int read_proc_text(int dirfd, const char *name, char **text, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *grown;
	ssize_t r;
	int fd, err = 0;

	if (!buf)
		return -ENOMEM;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	for (;;) {
		if (n + 1 >= cap) {
			if (cap >= PROC_TEXT_MAX)
				break;
			grown = realloc(buf, cap * 2);
			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = grown;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - 1 - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	buf = NULL;
cleanup:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

/* job_of_process under /proc/PID as dirfd */
static int job_of_proc_dir(int dirfd, uint32_t *job, char *step, size_t steplen)
{
	char *text = NULL;
	size_t len = 0;
	int r;

	r = read_proc_text(dirfd, "cgroup", &text, &len);
	if (r)
		return r;
	r = job_cgroup_parse(text, job, step, steplen);
	free(text);
	if (r)
		return r;
	/* no Slurm cgroup at all: the environment's word */
	r = read_proc_text(dirfd, "environ", &text, &len);
	if (r)
		return r;
	r = job_environ_parse(text, len, job);
	free(text);
	if (r && step && steplen)
		step[0] = '\0';
	return r;
}

int job_of_process(pid_t pid, uint32_t *job, char *step, size_t steplen)
{
	char path[32];
	int fd, r;

	if (pid <= 0 || !job)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = job_of_proc_dir(fd, job, step, steplen);
	close(fd);
	return r;
}

/* 1 when dir has an entry "slurm" or "slurm_*" that is a directory */
static int has_slurm_dir(const char *dir)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int found = 0;

	if (!dp)
		return 0;
	while (!found && (d = readdir(dp)))
		found = d->d_type == DT_DIR &&
			(!strcmp(d->d_name, "slurm") || !strncmp(d->d_name, "slurm_", 6));
	closedir(dp);
	return found;
}

int job_cgroups_in_use(const char *root)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dp;
	int found = 0;

	if (!root)
		root = "/sys/fs/cgroup";
	snprintf(path, sizeof(path), "%s/system.slice/slurmstepd.scope", root);
	if (!access(path, F_OK))
		return 1;
	snprintf(path, sizeof(path), "%s/unified/system.slice/slurmstepd.scope", root);
	if (!access(path, F_OK) || has_slurm_dir(root))
		return 1;
	dp = opendir(root); /* v1: one directory per hierarchy */
	if (!dp)
		return 0;
	while (!found && (d = readdir(dp))) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, d->d_name);
		found = has_slurm_dir(path);
	}
	closedir(dp);
	return found;
}

int job_processes_for_each(uint32_t job, uid_t owner, int (*cb)(pid_t pid, void *ctx),
			   void *ctx)
{
	struct dirent *d;
	struct stat st;
	uint32_t found;
	DIR *proc;
	int fd, r = 0;
	long pid;
	char *end;

	if (!job || !cb)
		return -EINVAL;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (!r && (d = readdir(proc))) {
		pid = strtol(d->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		fd = openat(dirfd(proc), d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone */
		found = 0;
		if (owner != JOB_ANY_OWNER && (fstat(fd, &st) || st.st_uid != owner))
			; /* another user's, or gone: never read */
		else if (job_of_proc_dir(fd, &found, NULL, 0) == 1 && found == job)
			r = cb((pid_t)pid, ctx);
		close(fd);
	}
	closedir(proc);
	return r;
}
