/* openmp — an OpenMP process of 2 threads (gcc -fopenmp -O2), each burning
 * a known amount of CPU in omp_burn; at the end it writes its own
 * getrusage(RUSAGE_SELF) user and system CPU time to stderr as
 * "rusage_user_s=U rusage_system_s=S", so a test can compare the CPU time
 * nunatak accounts to the process with the kernel's.
 *
 * usage: openmp [MILLIONS]  (default 120: million iterations per thread,
 * about 1 s). Prints "ok" on stdout. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static volatile double sink;

__attribute__((noipa)) static double omp_burn(unsigned long iterations, int thread)
{
	double x = 1.0 + thread;
	unsigned long i;

	for (i = 0; i < iterations; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	return x;
}

int main(int argc, char **argv)
{
	unsigned long iterations = (argc > 1 ? strtoul(argv[1], NULL, 10) : 120) * 1000000ul;
	struct rusage ru;
	double total = 0;

	if (!iterations) {
		fprintf(stderr, "usage: openmp [MILLIONS]\n");
		return 2;
	}
#pragma omp parallel num_threads(2) reduction(+ : total)
	total += omp_burn(iterations, omp_get_thread_num());
	sink = total;
	if (getrusage(RUSAGE_SELF, &ru)) {
		perror("openmp: getrusage");
		return 1;
	}
	fprintf(stderr, "rusage_user_s=%ld.%06ld rusage_system_s=%ld.%06ld\n",
		(long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
		(long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
	printf("ok\n");
	return 0;
}
