/* fma — the flops_dp / flops_sp calibration kernel: independent chains
 * of x = x * m + a on the widest vectors the compiler was allowed to use
 * (-march=native), enough chains (12) to cover the latency of every FMA
 * unit of the server cores of the last decade, so that the units, not a
 * dependency, are the limit. No memory traffic: everything in registers.
 *
 *   fma dp|sp THREADS CPULIST REPS MS
 *
 * FLOP are counted 2 per lane per x = x * m + a (a multiply and an add,
 * fused or not).
 */
#define _GNU_SOURCE
#include "kernel_common.h"

#define INNER 4096 /* iterations between two looks at the clock */
#define CHAINS 12

typedef double vdp __attribute__((vector_size(KERNEL_VBYTES)));
typedef float vsp __attribute__((vector_size(KERNEL_VBYTES)));

static volatile double seed = 1e-3; /* values the compiler cannot know */
static volatile double sink;
static struct kernel_run k = { .unit = "flop/s" };

/* FMA_WORK(name, vector type, lane type): the work function of a precision */
#define FMA_WORK(fn, V, T)                                                                        \
	static double fn(int t, long long deadline)                                               \
	{                                                                                         \
		const V m = (V){} + (T)(1.0 - seed * 1e-3), add = (V){} + (T)(seed * 1e-4);       \
		V x0 = (V){} + (T)(t + 1), x1 = x0 + (T)1, x2 = x0 + (T)2, x3 = x0 + (T)3;        \
		V x4 = x0 + (T)4, x5 = x0 + (T)5, x6 = x0 + (T)6, x7 = x0 + (T)7;                 \
		V x8 = x0 + (T)8, x9 = x0 + (T)9, x10 = x0 + (T)10, x11 = x0 + (T)11;             \
		double iterations = 0;                                                            \
		long i;                                                                           \
                                                                                                  \
		for (;;) {                                                                        \
			for (i = 0; i < INNER; i++) {                                             \
				x0 = x0 * m + add, x1 = x1 * m + add, x2 = x2 * m + add;          \
				x3 = x3 * m + add, x4 = x4 * m + add, x5 = x5 * m + add;          \
				x6 = x6 * m + add, x7 = x7 * m + add, x8 = x8 * m + add;          \
				x9 = x9 * m + add, x10 = x10 * m + add, x11 = x11 * m + add;      \
			}                                                                         \
			iterations += INNER;                                                      \
			if (kernel_now_ns() >= deadline)                                          \
				break;                                                            \
		}                                                                                 \
		x0 += x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;                     \
		sink = (double)x0[0];                                                             \
		return iterations * CHAINS * (KERNEL_VBYTES / sizeof(T));                         \
	}

FMA_WORK(work_dp, vdp, double)
FMA_WORK(work_sp, vsp, float)

int main(int argc, char **argv)
{
	if (argc != 6 || (strcmp(argv[1], "dp") && strcmp(argv[1], "sp"))) {
		fprintf(stderr, "usage: fma dp|sp THREADS CPULIST REPS MS\n");
		return 2;
	}
	k.name = strcmp(argv[1], "dp") ? "fma_sp" : "fma_dp";
	k.work = strcmp(argv[1], "dp") ? work_sp : work_dp;
	k.unit_scale = 2.0; /* a lane of x * m + a: 2 FLOP */
	k.flop_per_unit = 2.0;
	k.bytes_per_unit = 0.0; /* in registers: no memory traffic */
	k.threads = (int)kernel_arg(argv[2], 1, KERNEL_MAX_THREADS);
	if (kernel_parse_cpus(&k, argv[3])) {
		fprintf(stderr, "bad cpu list '%s'\n", argv[3]);
		return 2;
	}
	k.reps = (int)kernel_arg(argv[4], 1, 1000);
	k.ms = (int)kernel_arg(argv[5], 1, 600000);
	if (kernel_run_all(&k))
		return 1;
	printf("nunatak-calibration-check kernel=%s sum=%.6e\n", k.name, sink);
	return 0;
}
