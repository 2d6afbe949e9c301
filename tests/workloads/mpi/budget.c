/* budget — the MPI workload of the cost budget's test
 * (tests/integration/mpi_budget.sh): MPI calls frequent enough that
 * probing every one costs more than the 2 % budget, but not a pure
 * ping-pong: each iteration computes, then calls MPI_Allreduce.
 *
 * usage: mpirun -n P budget [ITERATIONS COMPUTE_US]
 *   ITERATIONS  MPI_Allreduce calls per rank            (default 20000)
 *   COMPUTE_US  thread CPU microseconds between calls   (default 200)
 *
 * Each rank prints one line:
 *   rank=R allreduce_calls=N mpi_s=X wall_s=Y
 * mpi_s is MPI_Wtime seconds inside MPI_Allreduce, wall_s the loop's.
 * A wrong sum aborts.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) static void compute(double ns)
{
	double end = thread_cpu_ns() + ns, x = sink + 1.0;

	do {
		for (int i = 0; i < 200; i++)
			x = x * 1.0000001 + 0.5 / (x + 1.0);
	} while (thread_cpu_ns() < end);
	sink = x;
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 20000;
	double compute_us = argc > 2 ? atof(argv[2]) : 200, mpi_s = 0, t0, t;
	int rank, size, one = 1, sum;
	long i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	t0 = MPI_Wtime();
	for (i = 0; i < iterations; i++) {
		compute(compute_us * 1000);
		t = MPI_Wtime();
		MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		mpi_s += MPI_Wtime() - t;
		if (sum != size) {
			fprintf(stderr, "rank %d: sum %d, expected %d\n", rank, sum, size);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	printf("rank=%d allreduce_calls=%ld mpi_s=%.6f wall_s=%.6f\n", rank, iterations, mpi_s,
	       MPI_Wtime() - t0);
	fflush(stdout);
	MPI_Finalize();
	return 0;
}
