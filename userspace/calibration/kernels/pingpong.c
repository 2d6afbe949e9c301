/* pingpong — the network calibration kernel, an MPI program: ranks 0 and
 * 1 send a message back and forth (the others only wait). Latency: half a
 * round trip of SMALL bytes, per repetition the mean over ROUND_TRIPS;
 * bandwidth: LARGE-byte messages, 2 x LARGE x trips / time. Rank 0 prints
 * one line per repetition (the format of kernel_common.h):
 *
 *   nunatak-calibration kernel=network_latency rep=R bytes=8 seconds=X value=V unit=s
 *   nunatak-calibration kernel=network_bandwidth rep=R bytes=N seconds=X value=V unit=B/s
 *
 *   pingpong [REPS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL 8
#define LARGE (4 << 20)
#define LATENCY_TRIPS 2000
#define BANDWIDTH_TRIPS 20

/* seconds of @trips round trips of @bytes between ranks 0 and 1 */
static double trips(int rank, char *buf, int bytes, int n)
{
	double t0;
	int i;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < n && rank < 2; i++) {
		if (rank == 0) {
			MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
	int rank, size, reps = argc > 1 ? atoi(argv[1]) : 5, r;
	char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || reps < 1 || reps > 1000) {
		if (rank == 0)
			fprintf(stderr, "the ping-pong needs 2 ranks (it has %d) and 1..1000 "
					"repetitions\n", size);
		MPI_Finalize();
		return 2;
	}
	buf = malloc(LARGE);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	memset(buf, 1, LARGE);
	trips(rank, buf, SMALL, 100); /* connections set up, caches warm */
	trips(rank, buf, LARGE, 2);
	for (r = 1; r <= reps; r++) {
		double s = trips(rank, buf, SMALL, LATENCY_TRIPS);

		if (rank == 0)
			printf("nunatak-calibration kernel=network_latency rep=%d bytes=%d "
			       "seconds=%.6f value=%.6e unit=s\n",
			       r, SMALL, s, s / (2.0 * LATENCY_TRIPS));
	}
	for (r = 1; r <= reps; r++) {
		double s = trips(rank, buf, LARGE, BANDWIDTH_TRIPS);

		if (rank == 0)
			printf("nunatak-calibration kernel=network_bandwidth rep=%d bytes=%d "
			       "seconds=%.6f value=%.6e unit=B/s\n",
			       r, LARGE, s, 2.0 * LARGE * BANDWIDTH_TRIPS / s);
	}
	fflush(stdout);
	free(buf);
	MPI_Finalize();
	return 0;
}
