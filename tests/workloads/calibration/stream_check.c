/* stream_check — an independent STREAM triad for tests/integration/
 * calibrate.sh to hold `nunatak calibrate`'s dram_bandwidth against: not
 * the calibration kernel (userspace/calibration/kernels/triad.c), written
 * apart, with OpenMP instead of pthreads, STREAM's own rules: arrays of N
 * doubles (each at least 4 x the last-level cache), first touched by the
 * threads that sweep them (static schedule), the best of NTIMES sweeps,
 * 24 bytes per element (two reads and one write; the write allocate is
 * not counted).
 *
 *   stream_check [N]      prints: triad_bytes_per_second=<best>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define NTIMES 10

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1L << 24, i;
	double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
	double *c = malloc(n * sizeof(double)), best = 0, check = 0;
	const double scalar = 3.0;
	int k;

	if (n < 1024 || !a || !b || !c) {
		fprintf(stderr, "stream_check: cannot allocate 3 x %ld doubles\n", n);
		return 1;
	}
#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++) {
		a[i] = 1.0;
		b[i] = 2.0;
		c[i] = 0.5;
	}
	for (k = 0; k < NTIMES; k++) {
		double t = omp_get_wtime(), rate;

#pragma omp parallel for schedule(static)
		for (i = 0; i < n; i++)
			a[i] = b[i] + scalar * c[i];
		t = omp_get_wtime() - t;
		rate = 24.0 * (double)n / t;
		if (rate > best)
			best = rate;
	}
	for (i = 0; i < n; i += 1000)
		check += a[i];
	if (check != 3.5 * (double)((n + 999) / 1000)) {
		fprintf(stderr, "stream_check: wrong result %g\n", check);
		return 1;
	}
	printf("triad_bytes_per_second=%.6e threads=%d n=%ld\n", best, omp_get_max_threads(), n);
	return 0;
}
