/* cgroup_fixture — what the tests of Slurm job membership share: cgroup
 * directories made and removed by the test (a fake Slurm layout), a
 * process moved into one, and a CPU-bound spin. Header-only, static
 * inline (each test is one translation unit); include after cmocka.h.
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
#include <time.h>
#include <unistd.h>

#define CG_FREEZER "/sys/fs/cgroup/freezer"
#define CG_UNIFIED "/sys/fs/cgroup/unified"

static inline uint64_t cg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cg_spin(int cpu_ms)
{
	struct timespec ts;
	uint64_t end, wall_end = cg_now_ns() + 5000000000ull;
	volatile double x = 1.0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
	      (uint64_t)cpu_ms * 1000000ull;
	for (;;) {
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		if ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec >= end ||
		    cg_now_ns() >= wall_end)
			break;
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 0.5 / (x + 1.0);
	}
}

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

#endif
