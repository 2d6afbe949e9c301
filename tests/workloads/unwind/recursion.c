/* recursion — tens of thousands of distinct stacks: THREADS threads
 * (default 2) each descend, round after round, a recursion of depth 1 to
 * 60 (descend -> rec0..rec3 -> descend ...: 2 frames a level, up to 126
 * frames with bottom and the thread's start, within the 127 frames issue
 * 9 promises) through four mutually recursive functions, the callee at
 * every level picked by the bits of a per-round hash, and burn a little at
 * the bottom. Almost every sample is a stack of its own.
 *
 * usage: recursion [MILLIONS [THREADS]]  (default 120 2: million
 * iterations burnt per thread, about 1 s). Prints "ok". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_DEPTH 60
#define BOTTOM_ITERATIONS 20000 /* about 160 us at the bottom of a descent */

static volatile double sink;
static unsigned long per_thread;

__attribute__((noipa)) static double bottom(unsigned long seed)
{
	double x = 1.0 + (seed & 7);
	unsigned long i;

	for (i = 0; i < BOTTOM_ITERATIONS; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	return x;
}

static double descend(int depth, unsigned long h);

#define REC(name, k)                                                   \
	__attribute__((noipa)) static double name(int depth, unsigned long h) \
	{                                                              \
		double r = descend(depth - 1, h * 6364136223846793005ul + k); \
		__asm__ __volatile__("" ::: "memory");                 \
		return r + 1.0;                                        \
	}

REC(rec0, 1442695040888963407ul)
REC(rec1, 1442695040888963409ul)
REC(rec2, 1442695040888963411ul)
REC(rec3, 1442695040888963413ul)

/* the next level: rec0..rec3 by the top bits of h, bottom at depth 0 */
__attribute__((noipa)) static double descend(int depth, unsigned long h)
{
	double r;

	if (depth <= 0)
		return bottom(h);
	switch (h >> 62) {
	case 0: r = rec0(depth, h); break;
	case 1: r = rec1(depth, h); break;
	case 2: r = rec2(depth, h); break;
	default: r = rec3(depth, h); break;
	}
	__asm__ __volatile__("" ::: "memory");
	return r;
}

static void *worker(void *arg)
{
	unsigned long seed = (unsigned long)arg * 0x9e3779b97f4a7c15ul, round, rounds;
	double r = 0;

	rounds = per_thread / BOTTOM_ITERATIONS;
	for (round = 0; round < rounds; round++) {
		unsigned long h = (seed + round) * 0xbf58476d1ce4e5b9ul;

		h ^= h >> 31;
		r += descend(1 + (int)(h % MAX_DEPTH), h);
	}
	sink = r;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 2, i;
	pthread_t t[64];

	per_thread = (argc > 1 ? strtoul(argv[1], NULL, 10) : 120) * 1000000ul;
	if (!per_thread || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: recursion [MILLIONS [THREADS]]\n");
		return 2;
	}
	for (i = 1; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(unsigned long)i)) {
			fprintf(stderr, "recursion: pthread_create failed\n");
			return 1;
		}
	worker(NULL);
	for (i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("ok\n");
	return 0;
}
