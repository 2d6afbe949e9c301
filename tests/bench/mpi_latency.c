/* mpi_latency — the latency loops of tests/bench/mpi_latency.sh, timed by
 * their own MPI_Wtime: a ping-pong of 0 bytes between ranks 0 and 1, or an
 * MPI_Allreduce of 0 bytes over every rank.
 *
 * usage: mpirun -n 2 mpi_latency pingpong|allreduce ITERATIONS
 * Rank 0 prints us_per_iteration=X (a ping-pong iteration is one round
 * trip: half of it is the one-way latency).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 100000, i;
	int pingpong = argc > 1 && !strcmp(argv[1], "pingpong"), rank;
	double t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < n; i++) {
		if (!pingpong) {
			MPI_Allreduce(MPI_IN_PLACE, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		} else if (rank == 0) {
			MPI_Send(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	if (rank == 0)
		printf("us_per_iteration=%.4f\n", (MPI_Wtime() - t0) * 1e6 / (double)n);
	MPI_Finalize();
	return 0;
}
