/* bare_interrupt — the benchmark's baseline for the sampling mechanism
 * itself: the same per-CPU cpu-clock perf events nunatak opens, at the
 * same frequency, with bpf/empty.bpf.c attached (a program that returns
 * at once). Runs CMD under them and exits with its code.
 *
 * usage: bare-interrupt FREQUENCY CMD [ARGS...]
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "bpf/empty.skel.h"

int main(int argc, char **argv)
{
	struct empty_bpf *skel;
	int ncpu, cpu, status;
	long frequency;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: bare-interrupt FREQUENCY CMD [ARGS...]\n");
		return 125;
	}
	frequency = strtol(argv[1], NULL, 10);
	skel = empty_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "bare-interrupt: loading bpf/empty.bpf.c failed: %s\n", strerror(errno));
		return 125;
	}
	ncpu = libbpf_num_possible_cpus();
	for (cpu = 0; cpu < ncpu; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(attr),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.freq = 1,
			.sample_freq = (unsigned long long)frequency,
		};
		int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0)
			continue;
		if (!bpf_program__attach_perf_event(skel->progs.empty_sample, fd)) {
			fprintf(stderr, "bare-interrupt: attach on cpu %d failed\n", cpu);
			return 125;
		}
	}
	pid = fork();
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
