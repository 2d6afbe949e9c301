/* work — a fixed amount of work for benchmarks (the demo workload runs
 * for a fixed time instead): ROUNDS rounds of the same two kernels as
 * tests/workloads/hotspots.c, 3 units in heavy_kernel for 1 in
 * light_kernel. usage: work [ROUNDS] (default 600, about 2 s here) */
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

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
	long rounds = argc > 1 ? atol(argv[1]) : 600, r;
	double x = 1.0;

	for (r = 0; r < rounds; r++) {
		x = heavy_kernel(x);
		x = light_kernel(x);
	}
	sink = x;
	printf("work: %ld rounds\n", rounds);
	return 0;
}
