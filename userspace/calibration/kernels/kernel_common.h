/* kernel_common — what the calibration kernels (triad.c, fma.c) share:
 * their command line, the pinning of their threads, the timed repetitions
 * and the line each repetition prints. Built on the Machine with the
 * kernels (never linked into nunatak), so it depends on libc only.
 *
 * A kernel runs REPS repetitions of MS milliseconds with THREADS threads,
 * thread i pinned to the i-th CPU of CPULIST (round robin). In a
 * repetition every thread calls work(thread, deadline) which returns the
 * units of work it did before the deadline; the repetition's rate is
 * their sum over the wall time between the barriers around it. Each
 * repetition prints one line on stdout (the contract with
 * userspace/calibration/kernel_output.h):
 *
 *   nunatak-calibration kernel=NAME rep=R threads=T simd=S seconds=X value=V unit=U
 *                       ns=N flops=F bytes=B
 *
 * ns, flops and bytes are exact integers (the repetition's wall time, the
 * FLOP and bytes its threads did: work units x flop_per_unit and
 * bytes_per_unit), for the calibration rows (calibration_rows.h).
 */
#ifndef NUNATAK_KERNEL_COMMON_H
#define NUNATAK_KERNEL_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KERNEL_MAX_THREADS 1024

/* the widest SIMD the compiler was allowed to use */
#if defined(__AVX512F__)
#define KERNEL_VBYTES 64
#define KERNEL_SIMD "avx512"
#elif defined(__AVX__) && defined(__FMA__)
#define KERNEL_VBYTES 32
#define KERNEL_SIMD "avx2-fma"
#elif defined(__AVX__)
#define KERNEL_VBYTES 32
#define KERNEL_SIMD "avx"
#elif defined(__SSE2__)
#define KERNEL_VBYTES 16
#define KERNEL_SIMD "sse2"
#elif defined(__ARM_FEATURE_SVE)
/* a fixed-width vector type cannot be an SVE register of unknown length:
 * NEON, said as narrower than the Machine's */
#define KERNEL_VBYTES 16
#define KERNEL_SIMD "neon-not-sve"
#elif defined(__ARM_NEON)
#define KERNEL_VBYTES 16
#define KERNEL_SIMD "neon"
#else
#define KERNEL_VBYTES 8
#define KERNEL_SIMD "scalar"
#endif

struct kernel_run {
	const char *name, *unit;
	double unit_scale; /* value = work units * unit_scale / seconds */
	double flop_per_unit, bytes_per_unit; /* exact counts of a work unit */
	int threads, reps, ms;
	int cpus[KERNEL_MAX_THREADS];
	int ncpus;
	/* the work of thread @t until @deadline (CLOCK_MONOTONIC ns) */
	double (*work)(int t, long long deadline);
	/* once per thread before the repetitions (first touch), may be NULL */
	void (*prepare)(int t);
	pthread_barrier_t barrier;
	long long deadline, start;
	double done[KERNEL_MAX_THREADS];
};

static inline long long kernel_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "0,2,5" into k->cpus; 0 or -1 */
static inline int kernel_parse_cpus(struct kernel_run *k, const char *list)
{
	const char *p = list;
	char *end;

	k->ncpus = 0;
	while (*p && k->ncpus < KERNEL_MAX_THREADS) {
		long c = strtol(p, &end, 10);

		if (end == p || c < 0 || c >= CPU_SETSIZE)
			return -1;
		k->cpus[k->ncpus++] = (int)c;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return k->ncpus ? 0 : -1;
}

static inline long kernel_arg(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "bad argument '%s' (%ld..%ld)\n", s, min, max);
		exit(2);
	}
	return v;
}

struct kernel_thread_arg {
	struct kernel_run *k;
	int t;
};

static void *kernel_thread(void *p)
{
	struct kernel_thread_arg *a = p;
	struct kernel_run *k = a->k;
	cpu_set_t set;
	int r;

	CPU_ZERO(&set);
	CPU_SET(k->cpus[a->t % k->ncpus], &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fprintf(stderr, "cannot pin thread %d to cpu %d\n", a->t, k->cpus[a->t % k->ncpus]);
	if (k->prepare)
		k->prepare(a->t);
	for (r = 1; r <= k->reps; r++) {
		pthread_barrier_wait(&k->barrier);
		if (a->t == 0) {
			k->start = kernel_now_ns();
			k->deadline = k->start + k->ms * 1000000LL;
		}
		pthread_barrier_wait(&k->barrier);
		k->done[a->t] = k->work(a->t, k->deadline);
		pthread_barrier_wait(&k->barrier);
		if (a->t == 0) {
			long long ns = kernel_now_ns() - k->start;
			double seconds = ns / 1e9, sum = 0;
			int i;

			for (i = 0; i < k->threads; i++)
				sum += k->done[i];
			printf("nunatak-calibration kernel=%s rep=%d threads=%d simd=%s seconds=%.6f "
			       "value=%.6e unit=%s ns=%lld flops=%.0f bytes=%.0f\n",
			       k->name, r, k->threads, KERNEL_SIMD, seconds,
			       sum * k->unit_scale / seconds, k->unit, ns, sum * k->flop_per_unit,
			       sum * k->bytes_per_unit);
			fflush(stdout);
		}
	}
	return NULL;
}

/* runs the repetitions; 0 or 1 (a message on stderr) */
static inline int kernel_run_all(struct kernel_run *k)
{
	static pthread_t tid[KERNEL_MAX_THREADS];
	static struct kernel_thread_arg args[KERNEL_MAX_THREADS];
	int i, err;

	if (pthread_barrier_init(&k->barrier, NULL, (unsigned)k->threads))
		return 1;
	for (i = 0; i < k->threads; i++) {
		args[i] = (struct kernel_thread_arg){ k, i };
		err = pthread_create(&tid[i], NULL, kernel_thread, &args[i]);
		if (err) {
			fprintf(stderr, "cannot start thread %d: %s\n", i, strerror(err));
			exit(1); /* the others wait at a barrier forever */
		}
	}
	for (i = 0; i < k->threads; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&k->barrier);
	return 0;
}

#endif
