/* mpi_loop — a tight loop of a cheap MPI call, for the cost of one probed
 * call: CALLS times MPI_Test on MPI_REQUEST_NULL (returns at once), timed
 * with MPI_Wtime; prints "us_per_call=X". Runs as a singleton.
 * usage: mpi_loop [CALLS] (default 200000) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 200000, i;
	MPI_Request req = MPI_REQUEST_NULL;
	double start;
	int flag;

	MPI_Init(&argc, &argv);
	start = MPI_Wtime();
	for (i = 0; i < calls; i++)
		MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
	printf("us_per_call=%.3f\n", (MPI_Wtime() - start) / calls * 1e6);
	MPI_Finalize();
	return 0;
}
