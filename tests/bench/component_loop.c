/* component_loop — a tight loop of calls of one empty function,
 * component_loop_call, the Component of tests/bench/component_probe.sh:
 * prints ns_per_call=X for CALLS calls (default 200000), measured with
 * CLOCK_MONOTONIC around the loop.
 *
 * usage: component-loop [CALLS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline, used)) int component_loop_call(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 200000, i;
	struct timespec t0, t1;
	int x = 0;

	if (calls < 1) {
		fprintf(stderr, "usage: component-loop [CALLS]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < calls; i++)
		x = component_loop_call(x);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("ns_per_call=%.1f\n",
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)calls);
	return x == calls ? 0 : 1;
}
