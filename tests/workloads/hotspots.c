/* hotspots — the bundled demo and test workload: two hot functions built
 * to take about 75 % and 25 % of the CPU (the same unit of work, called 3
 * times for every 1), for about SECONDS seconds (default 2).
 *
 * usage: hotspots [SECONDS] [EXIT_CODE]
 *        hotspots --rounds N      a fixed amount of work instead (benchmarks)
 * Prints one line so stdout can be compared with a bare run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile double sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* one unit of work: a dependent chain the compiler cannot fold */
static inline double unit(double x)
{
	int i;

	for (i = 0; i < 200000; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	return x;
}

__attribute__((noinline)) double heavy_kernel(double x)
{
	return unit(unit(unit(x)));
}

__attribute__((noinline)) double light_kernel(double x)
{
	return unit(x);
}

int main(int argc, char **argv)
{
	int fixed = argc > 2 && !strcmp(argv[1], "--rounds");
	double seconds = argc > 1 && !fixed ? atof(argv[1]) : 2.0;
	int exit_code = argc > 2 && !fixed ? atoi(argv[2]) : 0;
	long rounds = 0, limit = fixed ? atol(argv[2]) : -1;
	double start = now(), x = 1.0;

	do {
		x = heavy_kernel(x);
		x = light_kernel(x);
		rounds++;
	} while (fixed ? rounds < limit : now() - start < seconds);
	sink = x;
	printf("hotspots: %s\n", x > 0 ? "ok" : "odd");
	(void)rounds;
	return exit_code;
}
