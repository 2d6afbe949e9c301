/* pattern — the MPI test workload: known compute imbalance, known MPI call
 * counts and known bytes, so that what nunatak measures can be checked
 * against what the program says it did.
 *
 * usage: mpirun -n P pattern [UNITS_MS N D M B]
 *   UNITS_MS  CPU milliseconds of one compute unit        (default 150)
 *   N         MPI_Allreduce calls, in total, per rank      (default 100)
 *   D         MPI_DOUBLEs per MPI_Allreduce               (default 1000)
 *   M         MPI_Send/MPI_Recv pairs, in total, per pair  (default 100)
 *   B         MPI_BYTEs per MPI_Send                       (default 4096)
 *
 * Rank r computes r + 1 units in compute_units(); even rank r sends to
 * rank r + 1 (when it exists), which receives; every rank ends with one
 * MPI_Barrier. The work is spread over ROUNDS rounds of compute, then
 * Allreduce, then Send/Recv, so that compute and communication interleave.
 * Call counts are deterministic; times are not. The defaults take 2-4 s with
 * 4 ranks on 2 cores (MPICH busy-polls, so it is the slower of the two).
 *
 * Each rank prints one line:
 *   rank=R size=S compute_s=X mpi_s=Y allreduce_calls=.. send_calls=..
 *   recv_calls=.. barrier_calls=.. sent_bytes=.. compute_cpu_s=Z
 * compute_s and mpi_s are MPI_Wtime (wall) seconds inside compute_units()
 * and inside MPI calls (MPI_Init and MPI_Finalize excluded); compute_cpu_s is
 * the thread CPU time inside compute_units(). sent_bytes is B per MPI_Send
 * plus D * 8 per MPI_Allreduce contribution. A wrong received value aborts.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 10
#define TAG 7

static double mpi_s;
static double unit_slice_ns; /* one unit is ROUNDS slices */
static volatile double sink;

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* n slices of pure CPU: a dependent floating-point chain, the clock read
 * only every few thousand iterations so the time is spent here */
__attribute__((noinline)) void compute_units(int n)
{
	double end = thread_cpu_ns() + n * unit_slice_ns, x = sink + 1.0;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5 / (x + 1.0);
	} while (thread_cpu_ns() < end);
	sink = x;
}

/* every MPI call goes through TIMED so mpi_s covers all of them */
#define TIMED(call)                                                                                \
	do {                                                                                       \
		double t0_ = MPI_Wtime();                                                          \
		int rc_ = (call);                                                                  \
		mpi_s += MPI_Wtime() - t0_;                                                        \
		if (rc_ != MPI_SUCCESS)                                                            \
			MPI_Abort(MPI_COMM_WORLD, 2);                                              \
	} while (0)

static long arg(int argc, char **argv, int i, long def, long min)
{
	char *end;
	long v;

	if (argc <= i)
		return def;
	v = strtol(argv[i], &end, 10);
	if (*end || v < min) {
		fprintf(stderr, "pattern: bad argument %d '%s'\n", i, argv[i]);
		exit(2);
	}
	return v;
}

/* the share of total for round i when total is spread over ROUNDS rounds */
static long share(long total, int i)
{
	return total / ROUNDS + (i < total % ROUNDS);
}

int main(int argc, char **argv)
{
	long units_ms = arg(argc, argv, 1, 150, 0), n = arg(argc, argv, 2, 100, 0);
	long d = arg(argc, argv, 3, 1000, 1), m = arg(argc, argv, 4, 100, 0);
	long b = arg(argc, argv, 5, 4096, 1);
	long allreduce_calls = 0, send_calls = 0, recv_calls = 0, barrier_calls = 0;
	double compute_s = 0, compute_cpu_ns = 0, *in, *out;
	unsigned long long sent_bytes = 0;
	int rank, size, partner = -1;
	unsigned char *buf;

	MPI_Init(&argc, &argv);
	TIMED(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	TIMED(MPI_Comm_size(MPI_COMM_WORLD, &size));
	unit_slice_ns = units_ms * 1e6 / ROUNDS;
	if (rank % 2 == 0 && rank + 1 < size)
		partner = rank + 1;
	else if (rank % 2 == 1)
		partner = rank - 1;
	in = malloc(d * sizeof(*in));
	out = malloc(d * sizeof(*out));
	buf = malloc(b);
	if (!in || !out || !buf)
		MPI_Abort(MPI_COMM_WORLD, 3);
	for (long k = 0; k < d; k++)
		in[k] = rank + 1;

	for (int round = 0; round < ROUNDS; round++) {
		double t0 = MPI_Wtime(), c0 = thread_cpu_ns();

		compute_units(rank + 1);
		compute_s += MPI_Wtime() - t0;
		compute_cpu_ns += thread_cpu_ns() - c0;

		for (long k = share(n, round); k > 0; k--) {
			TIMED(MPI_Allreduce(in, out, (int)d, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
			if (out[0] != size * (size + 1) / 2.0 || out[d - 1] != out[0])
				MPI_Abort(MPI_COMM_WORLD, 4);
			allreduce_calls++;
			sent_bytes += (unsigned long long)d * sizeof(double);
		}

		for (long k = share(m, round); k > 0 && partner >= 0; k--) {
			unsigned char seq = (unsigned char)(send_calls + recv_calls);

			if (rank % 2 == 0) {
				memset(buf, seq, b);
				TIMED(
				    MPI_Send(buf, (int)b, MPI_BYTE, partner, TAG, MPI_COMM_WORLD));
				send_calls++;
				sent_bytes += b;
			} else {
				TIMED(MPI_Recv(buf, (int)b, MPI_BYTE, partner, TAG, MPI_COMM_WORLD,
					       MPI_STATUS_IGNORE));
				if (buf[0] != seq || buf[b - 1] != seq)
					MPI_Abort(MPI_COMM_WORLD, 5);
				recv_calls++;
			}
		}
	}
	TIMED(MPI_Barrier(MPI_COMM_WORLD));
	barrier_calls++;

	printf("rank=%d size=%d compute_s=%.6f mpi_s=%.6f allreduce_calls=%ld send_calls=%ld "
	       "recv_calls=%ld barrier_calls=%ld sent_bytes=%llu compute_cpu_s=%.6f\n",
	       rank, size, compute_s, mpi_s, allreduce_calls, send_calls, recv_calls, barrier_calls,
	       sent_bytes, compute_cpu_ns / 1e9);
	fflush(stdout);
	free(buf);
	free(out);
	free(in);
	MPI_Finalize();
	return 0;
}
