/* triad — the dram_bandwidth calibration kernel: a[i] = b[i] + s * c[i]
 * over three arrays far beyond the last-level cache, each thread sweeping
 * its own slice, first touched by that thread (its pages land on its NUMA
 * node), in blocks so that it stops close to the deadline.
 *
 *   triad THREADS CPULIST ARRAY_BYTES REPS MS
 *
 * ARRAY_BYTES is the size of the three arrays together. Bytes are counted
 * as STREAM counts them: 24 per element (two reads, one write; the write
 * allocate is not counted), FLOP 2 per element (a multiply, an add).
 */
#define _GNU_SOURCE
#include "kernel_common.h"

#define BLOCK 32768 /* elements between two looks at the clock */

static double *a, *b, *c;
static long n, slice;
static struct kernel_run k = { .name = "triad",
			       .unit = "B/s",
			       .unit_scale = 24.0,
			       .flop_per_unit = 2.0,
			       .bytes_per_unit = 24.0 };

static void bounds(int t, long *lo, long *hi)
{
	*lo = t * slice;
	*hi = t == k.threads - 1 ? n : *lo + slice;
}

static void prepare(int t)
{
	long lo, hi, i;

	bounds(t, &lo, &hi);
	for (i = lo; i < hi; i++) {
		a[i] = 0.0;
		b[i] = 1.0 + (double)(i & 7);
		c[i] = 2.0;
	}
}

static double work(int t, long long deadline)
{
	const double s = 3.0;
	long lo, hi, i, j, end;
	double elements = 0;

	bounds(t, &lo, &hi);
	for (i = lo;; i = i + BLOCK >= hi ? lo : i + BLOCK) {
		end = i + BLOCK < hi ? i + BLOCK : hi;
		for (j = i; j < end; j++)
			a[j] = b[j] + s * c[j];
		elements += (double)(end - i);
		if (kernel_now_ns() >= deadline)
			return elements;
	}
}

int main(int argc, char **argv)
{
	long bytes;
	double check = 0;
	long i;

	if (argc != 6) {
		fprintf(stderr, "usage: triad THREADS CPULIST ARRAY_BYTES REPS MS\n");
		return 2;
	}
	k.threads = (int)kernel_arg(argv[1], 1, KERNEL_MAX_THREADS);
	if (kernel_parse_cpus(&k, argv[2])) {
		fprintf(stderr, "bad cpu list '%s'\n", argv[2]);
		return 2;
	}
	bytes = kernel_arg(argv[3], 3L * 8 * BLOCK, 1L << 40);
	k.reps = (int)kernel_arg(argv[4], 1, 1000);
	k.ms = (int)kernel_arg(argv[5], 1, 600000);
	n = bytes / 24;
	slice = n / k.threads;
	a = aligned_alloc(4096, (size_t)n * 8 + 4096);
	b = aligned_alloc(4096, (size_t)n * 8 + 4096);
	c = aligned_alloc(4096, (size_t)n * 8 + 4096);
	if (!a || !b || !c) {
		fprintf(stderr, "cannot allocate 3 x %ld bytes\n", n * 8);
		return 1;
	}
	k.work = work;
	k.prepare = prepare;
	if (kernel_run_all(&k))
		return 1;
	for (i = 0; i < n; i += 4099)
		check += a[i];
	/* keeps the sweeps alive, and says they computed what they should */
	printf("nunatak-calibration-check kernel=triad elements=%ld sum=%.6e\n", n, check);
	return 0;
}
