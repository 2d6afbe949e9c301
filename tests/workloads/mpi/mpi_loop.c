/* mpi_loop — an application that is 100 % MPI: between MPI_Init and
 * MPI_Finalize, nothing but a tight loop of cheap MPI calls (no work; the
 * clock read once before and once after the loop), as an IMB latency loop. Every rank's time is MPI
 * time, so a profiler that reads less than ~100 % MPI has moved time out
 * of MPI (tests/integration/mpi_probe_cost.sh). Also the latency loops of
 * tests/bench/mpi_latency.sh.
 *
 * usage: mpi_loop allreduce|pingpong ITERATIONS
 *   allreduce: MPI_Allreduce of one double on MPI_COMM_WORLD, every rank
 *              (0 bytes would not communicate: Open MPI returns at once)
 *   pingpong:  ranks 0 and 1 exchange 8 bytes (MPI_Send / MPI_Recv);
 *              other ranks do nothing but MPI_Barrier at the end
 * Rank 0 prints "us_per_iteration=X" (MPI_Wtime around the loop). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long iters, i;
	int rank, size, pingpong;
	double buf = 0, start;

	if (argc != 3 || (strcmp(argv[1], "allreduce") && strcmp(argv[1], "pingpong"))) {
		fprintf(stderr, "usage: mpi_loop allreduce|pingpong ITERATIONS\n");
		return 2;
	}
	pingpong = !strcmp(argv[1], "pingpong");
	iters = atol(argv[2]);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	start = MPI_Wtime();
	for (i = 0; i < iters; i++) {
		if (!pingpong) {
			MPI_Allreduce(MPI_IN_PLACE, &buf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		} else if (rank == 0 && size > 1) {
			MPI_Send(&buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(&buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(&buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(&buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
		}
	}
	if (rank == 0)
		printf("us_per_iteration=%.3f\n", (MPI_Wtime() - start) / (double)iters * 1e6);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
