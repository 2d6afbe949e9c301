/* chain — the known call chain of chain.h, for the unwind tests and the
 * unwind benchmark.
 *
 * usage: chain [MILLIONS [THREADS]]  (default 150 2)
 * main and THREADS - 1 more threads each run main or chain_thread ->
 * chain_a -> chain_b -> chain_c for MILLIONS million iterations (about
 * 1.2 s); a SIGPROF timer (every 20 ms of the process' CPU) runs
 * chain_handler -> chain_sig_b -> chain_sig_c (about 3 ms) on the thread
 * it interrupts. Prints "ok" and nothing else. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "chain.h"

#define MAX_THREADS 64

static volatile double sink;

__attribute__((noinline, noclone)) double chain_a(unsigned long iterations)
{
	double r = chain_b(iterations);

	CHAIN_BARRIER();
	return r * 0.5;
}

__attribute__((noinline, noclone)) static void chain_handler(int sig)
{
	double r = chain_sig_b(400000);

	CHAIN_BARRIER();
	sink = r + sig;
}

__attribute__((noinline, noclone)) static void *chain_thread(void *arg)
{
	double r = chain_a(*(unsigned long *)arg);

	CHAIN_BARRIER();
	sink = r;
	return NULL;
}

static int profile_timer(long usec)
{
	struct itimerval it = { { 0, usec }, { 0, usec } };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = chain_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGPROF, &sa, NULL))
		return -1;
	return setitimer(ITIMER_PROF, &it, NULL);
}

int main(int argc, char **argv)
{
	unsigned long iterations = (argc > 1 ? strtoul(argv[1], NULL, 10) : 150) * 1000000ul;
	int threads = argc > 2 ? atoi(argv[2]) : 2, i;
	pthread_t t[MAX_THREADS];
	double r;

	if (!iterations || threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "usage: chain [MILLIONS [THREADS]]\n");
		return 2;
	}
	if (profile_timer(20000)) {
		perror("chain: SIGPROF timer");
		return 1;
	}
	for (i = 1; i < threads; i++)
		if (pthread_create(&t[i], NULL, chain_thread, &iterations)) {
			fprintf(stderr, "chain: pthread_create failed\n");
			return 1;
		}
	r = chain_a(iterations);
	CHAIN_BARRIER();
	for (i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	sink += r;
	printf("ok\n");
	return 0;
}
