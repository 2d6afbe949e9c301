/* sample_group — what the sampling group (bpf/sample.h) costs the sampling
 * program: the verifier's processed instructions (bpf_prog_info
 * verified_insns) and the program's run time per sample (BPF run-time
 * statistics, on only while this runs), without a group and with the
 * group of software events the tests use (userspace/agent/pmu_events.h
 * shape: cpu-clock ×2, page-faults), a busy child as the Target, or no
 * Target at all (every sample then a non-Target one), ROUNDS rounds of
 * SECONDS at FREQ Hz, interleaved.
 *
 * usage: sample_group [ROUNDS [SECONDS [FREQ]]]   (root)
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/agent/pmu_events.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sampler_internal.h"

static const struct pmu_event software_events[] = {
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, PMU_FLOP_DP, 1},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, PMU_FLOP_SP, 2},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, PMU_DRAM_BYTES, 64},
};
static const struct pmu_event_set software_set = {"software", software_events, 3, 0, ""};

static int measure(const struct pmu_event_set *pmu, int with_target, int seconds, long freq)
{
	struct sampler_opts o = {.frequency = freq, .pmu = pmu};
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct sampler *s;
	char err[256];
	pid_t child;

	s = sampler__new(&o, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "sample_group: %s\n", err);
		return -1;
	}
	child = fork();
	if (!child) {
		volatile unsigned long x = 0;

		for (;;)
			x++;
	}
	if (with_target)
		sampler_add_target(s, child, 1, TARGET_UID_ANY);
	sampler_set_active(s, 1);
	sleep(seconds);
	sampler_set_active(s, 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	bpf_obj_get_info_by_fd(bpf_program__fd(s->sample->progs.sample_cpu), &info, &len);
	printf("%-9s %-10s %8llu samples %6.0f ns a sample, %u insns verified\n",
	       pmu ? "group(3)" : "no group", with_target ? "Target" : "no Target",
	       (unsigned long long)info.run_cnt,
	       info.run_cnt ? (double)info.run_time_ns / info.run_cnt : 0.0, info.verified_insns);
	sampler__free(s);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3, seconds = argc > 2 ? atoi(argv[2]) : 3, r;
	long freq = argc > 3 ? atol(argv[3]) : 9999;
	int stats = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (stats < 0) {
		perror("sample_group: BPF run-time statistics (root?)");
		return 1;
	}
	for (r = 0; r < rounds; r++)
		if (measure(NULL, 1, seconds, freq) || measure(&software_set, 1, seconds, freq) ||
		    measure(NULL, 0, seconds, freq) || measure(&software_set, 0, seconds, freq))
			return 1;
	close(stats); /* the statistics go off with it */
	return 0;
}
