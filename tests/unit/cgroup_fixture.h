/* cgroup_fixture — what the tests of Slurm job membership share: cgroup
 * directories made and removed by the test (a fake Slurm layout), a
 * process moved into one (the spin and the throwaway uids are
 * process_fixture.h's, included). Header-only, static inline (each test is
 * one translation unit); include after cmocka.h.
 */
#ifndef NUNATAK_TESTS_CGROUP_FIXTURE_H
#define NUNATAK_TESTS_CGROUP_FIXTURE_H

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/process_fixture.h"

#define CG_FREEZER "/sys/fs/cgroup/freezer"
#define CG_UNIFIED "/sys/fs/cgroup/unified"

/* mkdir of every component of rel under root; 0 or -1 */
static inline int cg_mkdirs(const char *root, const char *rel, char *out, size_t outlen)
{
	char path[256];
	const char *p = rel;

	for (;;) {
		p = strchr(p + 1, '/');
		snprintf(path, sizeof(path), "%s/%.*s", root, p ? (int)(p - rel) : (int)strlen(rel),
			 rel);
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		if (!p)
			break;
	}
	snprintf(out, outlen, "%s", path);
	return 0;
}

/* kills every process left in dir (its cgroup.procs) */
static inline void cg_kill_all(const char *dir)
{
	char path[300];
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fscanf(f, "%d", &pid) == 1)
		if (pid > 0)
			kill(pid, SIGKILL);
	fclose(f);
}

/* rmdir of leaf and of its parents up to (and with) base, once the
 * processes left in leaf are killed and gone (within 2 s) */
static inline void cg_rmdirs(const char *leaf, const char *base)
{
	char path[256], *slash;

	if (!leaf[0] || !base[0])
		return;
	for (int i = 0; i < 100 && rmdir(leaf) && errno == EBUSY; i++) {
		cg_kill_all(leaf);
		usleep(20000);
	}
	snprintf(path, sizeof(path), "%s", leaf);
	while (strlen(path) >= strlen(base)) {
		rmdir(path);
		slash = strrchr(path, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
}

static inline int cg_enter(const char *dir, pid_t pid)
{
	char path[300], buf[32];
	int fd, n, err = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	if (write(fd, buf, (size_t)n) != n)
		err = -errno;
	close(fd);
	return err;
}

/* A child in cgroup dir (NULL: ours) as uid (proc_become; 0: as we are)
 * that execs path with argv and envp (NULL: an empty environment). Its pid
 * once the exec happened (a CLOEXEC pipe closes); a step that fails exits
 * the child: 120 cgroup, 121 uid, 123 exec. */
static inline pid_t cg_exec_child(uid_t uid, const char *dir, const char *path,
				  char *const argv[], char *const envp[])
{
	int ready[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (dir && cg_enter(dir, getpid()))
			_exit(120);
		if (proc_become(uid))
			_exit(121);
		execve(path, argv, envp);
		_exit(123);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 0); /* exec'd */
	close(ready[0]);
	return pid;
}

#endif
