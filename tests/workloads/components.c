/* components — a program with known per-Step Component costs, for
 * `nunatak run --component comp_a --component comp_b --component comp_c
 * --step step -- components` (tests/integration/components.sh).
 * usage: components [--threads N] [--steps S]   (default 1 thread, 40 Steps)
 *
 * main calls step() S times; in each Step:
 *  - comp_a() burns 3 ms of its thread's CPU, calls comp_b() (1 ms of CPU),
 *    then sleeps 2 ms: self CPU 3 ms, inclusive 4 ms, wall - CPU 2 ms,
 *    at least one voluntary context switch;
 *  - with --threads N, comp_a runs in N threads at once (started and joined
 *    inside step()), so their wall times overlap;
 *  - on even Steps, comp_c() maps 8 MiB of fresh memory (huge pages
 *    refused) and writes one byte per 4 KiB page: 2048 minor page faults,
 *    then unmaps it.
 * The Components are global (exported with -rdynamic, in .dynsym once the
 * binary is stripped), never inlined nor cloned. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define COMPONENT __attribute__((noinline, noclone, used))
#define FRESH_BYTES (8u << 20)
#define PAGE 4096u

void comp_a(void);
void comp_b(void);
void comp_c(void);
void step(int k, int threads);

static volatile double sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void burn(double seconds)
{
	double start = cpu_now(), x = 1.0;

	while (cpu_now() - start < seconds)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	sink = x;
}

COMPONENT void comp_b(void)
{
	burn(0.001);
}

COMPONENT void comp_a(void)
{
	struct timespec two_ms = {0, 2000000};

	burn(0.003);
	comp_b();
	while (nanosleep(&two_ms, &two_ms))
		;
}

COMPONENT void comp_c(void)
{
	volatile char *m;
	size_t off;

	m = mmap(NULL, FRESH_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("components: mmap");
		exit(1);
	}
	madvise((void *)m, FRESH_BYTES, MADV_NOHUGEPAGE); /* one fault per 4 KiB page */
	for (off = 0; off < FRESH_BYTES; off += PAGE)
		m[off] = 1;
	munmap((void *)m, FRESH_BYTES);
}

static void *thread_a(void *arg)
{
	(void)arg;
	comp_a();
	return NULL;
}

COMPONENT void step(int k, int threads)
{
	pthread_t t[64];
	int i, started = 0;

	if (threads <= 1) {
		comp_a();
	} else {
		for (i = 0; i < threads; i++)
			if (!pthread_create(&t[i], NULL, thread_a, NULL))
				started++;
		for (i = 0; i < started; i++)
			pthread_join(t[i], NULL);
		if (started < threads) {
			fprintf(stderr, "components: %d of %d threads started\n", started, threads);
			exit(1);
		}
	}
	if (k % 2 == 0)
		comp_c();
}

static int number(const char *s, int max)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || v < 1 || v > max) {
		fprintf(stderr, "components: '%s' is not a number in 1..%d\n", s, max);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	int threads = 1, steps = 40, i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads"))
			threads = number(argv[i + 1], 64);
		else if (!strcmp(argv[i], "--steps"))
			steps = number(argv[i + 1], 100000);
		else
			break;
	}
	if (i < argc) {
		fprintf(stderr, "usage: components [--threads N] [--steps S]\n");
		return 2;
	}
	for (i = 0; i < steps; i++)
		step(i, threads);
	printf("components: %d Steps, %d thread%s\n", steps, threads, threads > 1 ? "s" : "");
	return 0;
}
