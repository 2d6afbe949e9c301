/* fixed_cost — the probes of tests/bench/fixed_cost.sh (nunatak's fixed
 * cost). Every time is CLOCK_MONOTONIC, one clock for every process of
 * the machine, in ns; each result is one line of numbers written to OUT
 * (a new file: O_EXCL).
 *
 *   fixed-cost launch OUT -- CMD ARGS...
 *       runs CMD (execvp) and waits for it: "launch_ns end_ns cpu_ns",
 *       launch_ns just before the fork, end_ns once it was reaped, cpu_ns
 *       the user + system CPU of CMD and of every descendant it reaped
 *       (its rusage as a child): `nunatak run` and its application.
 *   fixed-cost start OUT
 *       the application of a start/end measure: "start_ns exit_ns",
 *       start_ns at the first instruction of main, exit_ns just before
 *       it exits.
 *   fixed-cost spin SECONDS OUT [PID...]
 *       the application of a CPU-share measure: burns SECONDS of its own
 *       CPU, then "start_ns exit_ns cpu_ns busy_ns..." with cpu_ns its own
 *       CPU (CLOCK_PROCESS_CPUTIME_ID) and, per PID, the CPU time that
 *       process used from the spin's start to its end (/proc/PID/stat's
 *       utime + stime, threads that ended included: to a clock tick; -1
 *       when it cannot be read). PID 0 stands for the parent (nunatak
 *       run).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PIDS 8

static long long now_ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* line into the new file path: 0, or 1 (said) */
static int write_result(const char *path, const char *line)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t len = strlen(line);

	if (fd < 0 || write(fd, line, len) != (ssize_t)len || close(fd)) {
		fprintf(stderr, "fixed-cost: cannot write '%s': %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

/* the CPU time of process pid so far, its ended threads' included, in
 * ns (/proc/PID/stat's utime + stime: clock ticks, 10 ms here); -1 when
 * unreadable */
static long long process_busy_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long utime, stime;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* after the command, which may hold spaces */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
			 &stime) != 2)
		return -1;
	return (long long)((utime + stime) * (1000000000.0 / sysconf(_SC_CLK_TCK)));
}

static int cmd_launch(const char *out, char **cmd)
{
	long long launch = now_ns(CLOCK_MONOTONIC), end;
	struct rusage ru;
	char line[128];
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		perror("fixed-cost: fork");
		return 1;
	}
	if (!pid) {
		execvp(cmd[0], cmd);
		fprintf(stderr, "fixed-cost: cannot run '%s': %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("fixed-cost: wait4");
			return 1;
		}
	end = now_ns(CLOCK_MONOTONIC);
	snprintf(line, sizeof(line), "%lld %lld %lld\n", launch, end,
		 (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ll +
		     (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ll);
	if (write_result(out, line))
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int cmd_start(const char *out)
{
	long long start = now_ns(CLOCK_MONOTONIC);
	char line[64];

	snprintf(line, sizeof(line), "%lld %lld\n", start, now_ns(CLOCK_MONOTONIC));
	return write_result(out, line);
}

static int cmd_spin(double seconds, const char *out, int npids, char **pids)
{
	long long start = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	long long busy0[MAX_PIDS], busy;
	volatile double x = 1.0;
	pid_t pid[MAX_PIDS];
	char line[512];
	size_t len;
	int i;

	for (i = 0; i < npids; i++) {
		pid[i] = atoi(pids[i]) ?: getppid();
		busy0[i] = process_busy_ns(pid[i]);
	}
	while (now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0 < (long long)(seconds * 1e9))
		for (i = 0; i < 100000; i++)
			x = x * 1.0000001 + 1e-9;
	len = (size_t)snprintf(line, sizeof(line), "%lld %lld %lld", start,
			       now_ns(CLOCK_MONOTONIC), now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0);
	for (i = 0; i < npids; i++) {
		busy = process_busy_ns(pid[i]);
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %lld",
					busy < 0 || busy0[i] < 0 ? -1 : busy - busy0[i]);
	}
	snprintf(line + len, sizeof(line) - len, "\n");
	return write_result(out, line);
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "launch") && !strcmp(argv[3], "--"))
		return cmd_launch(argv[2], argv + 4);
	if (argc == 3 && !strcmp(argv[1], "start"))
		return cmd_start(argv[2]);
	if (argc >= 4 && argc - 4 <= MAX_PIDS && !strcmp(argv[1], "spin"))
		return cmd_spin(atof(argv[2]), argv[3], argc - 4, argv + 4);
	fprintf(stderr, "usage: fixed-cost launch OUT -- CMD ARGS... | start OUT | "
			"spin SECONDS OUT [PID...]\n");
	return 2;
}
