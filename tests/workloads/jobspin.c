/* jobspin — a busy task of a Slurm job for the slurm_* integration tests:
 * spins for SECONDS seconds in jobspin_busy() and, at its end, prints its
 * own CPU time (getrusage), so a test can tell how much a Run that saw
 * only part of it should hold.
 *
 * usage: jobspin SECONDS
 * prints: "jobspin: pid=P cpu_s=C wall_s=W end=E" (E: CLOCK_REALTIME)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* a dependent chain the compiler cannot fold, ~1 ms a call */
__attribute__((noinline)) static double jobspin_busy(double x)
{
	for (int i = 0; i < 400000; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	return x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	double start = clock_s(CLOCK_MONOTONIC), x = 1.0;
	struct rusage ru;

	while (clock_s(CLOCK_MONOTONIC) - start < seconds)
		x = jobspin_busy(x);
	sink = x;
	getrusage(RUSAGE_SELF, &ru);
	printf("jobspin: pid=%d cpu_s=%.3f wall_s=%.3f end=%.3f\n", (int)getpid(),
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		   ru.ru_stime.tv_usec / 1e6,
	       clock_s(CLOCK_MONOTONIC) - start, clock_s(CLOCK_REALTIME));
	return 0;
}
