/* busy_send — an MPI workload whose sender spins inside MPI_Send, plus many
 * tiny MPI calls whose probe traps nunatak must count as its own.
 *
 * usage: mpirun -n 2 busy_send [ROUNDS BYTES WORK_MS TESTS]
 *   ROUNDS   messages sent by rank 0 to rank 1               (default 20)
 *   BYTES    MPI_BYTEs per message, >= 64 KiB so that the
 *            shared-memory transport (Open MPI vader, MPICH/UCX)
 *            waits for the receiver (rendezvous)               (default 262144)
 *   WORK_MS  CPU milliseconds rank 1 computes before each
 *            MPI_Recv, while rank 0 waits in MPI_Send          (default 50)
 *   TESTS    MPI_Iprobe calls each rank makes in
 *            poll_messages() after the exchange                (default 20000)
 *
 * Rank 0 calls MPI_Send from send_blocks(): the time it waits there is spent
 * in the MPI library's progress loop (vader's polling, libopen-pal), i.e.
 * MPI time whose call site is send_blocks(). Rank 1 computes in
 * compute_before_recv() and receives in receive_blocks(). Then each rank
 * calls MPI_Iprobe TESTS times (nothing pending: each call is cheap, its
 * probe traps are not). Each rank prints one line:
 *   rank=R send_wait_s=X send_cpu_s=C compute_s=Y iprobe_calls=N
 * send_wait_s: MPI_Wtime seconds rank 0 spent inside MPI_Send; send_cpu_s
 * the thread CPU seconds of those (what sampling sees of them when the
 * machine is busy and the sender is not always running).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG 11

static volatile double sink;

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void compute_before_recv(double ms)
{
	double end = thread_cpu_s() + ms / 1e3, x = sink + 1.0;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5 / (x + 1.0);
	} while (thread_cpu_s() < end);
	sink = x;
}

/* the wall and thread CPU seconds spent inside MPI_Send into *cpu */
__attribute__((noinline)) double send_blocks(char *buf, int rounds, int bytes, double *cpu)
{
	double waited = 0;

	for (int i = 0; i < rounds; i++) {
		double t = MPI_Wtime(), c = thread_cpu_s();

		buf[0] = (char)i;
		MPI_Send(buf, bytes, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
		*cpu += thread_cpu_s() - c;
		waited += MPI_Wtime() - t;
	}
	return waited;
}

__attribute__((noinline)) double receive_blocks(char *buf, int rounds, int bytes, double work_ms)
{
	double computed = 0;

	for (int i = 0; i < rounds; i++) {
		double t = MPI_Wtime();

		compute_before_recv(work_ms);
		computed += MPI_Wtime() - t;
		MPI_Recv(buf, bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (buf[0] != (char)i) {
			fprintf(stderr, "busy_send: message %d out of order\n", i);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	return computed;
}

__attribute__((noinline)) int poll_messages(int tests)
{
	int flag, seen = 0;

	for (int i = 0; i < tests; i++) {
		MPI_Iprobe(MPI_ANY_SOURCE, TAG + 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
		seen += flag;
	}
	return seen;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	int bytes = argc > 2 ? atoi(argv[2]) : 262144;
	double work_ms = argc > 3 ? atof(argv[3]) : 50;
	int tests = argc > 4 ? atoi(argv[4]) : 20000;
	double waited = 0, waited_cpu = 0, computed = 0;
	int rank, size;
	char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	buf = calloc(1, bytes > 0 ? bytes : 1);
	if (size != 2 || !buf || rounds < 0 || bytes <= 0 || tests < 0) {
		if (!rank)
			fprintf(stderr, "busy_send: 2 ranks and positive sizes needed\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (rank == 0)
		waited = send_blocks(buf, rounds, bytes, &waited_cpu);
	else
		computed = receive_blocks(buf, rounds, bytes, work_ms);
	MPI_Barrier(MPI_COMM_WORLD);
	poll_messages(tests);
	printf("rank=%d send_wait_s=%.6f send_cpu_s=%.6f compute_s=%.6f iprobe_calls=%d\n", rank,
	       waited, waited_cpu, computed, tests);
	free(buf);
	MPI_Finalize();
	return 0;
}
