/* threads — CPU spent in several threads, some still parked when main
 * returns (as an OpenMP runtime's workers are): the process' CPU time must
 * count every thread. usage: threads [WORKERS] [MS_EACH] (default 2 200)
 * Each worker burns MS_EACH ms then exits; main burns MS_EACH ms while 2
 * more threads sleep forever; main returns. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(double seconds)
{
	double start = cpu_now(), x = 1.0;

	while (cpu_now() - start < seconds)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	sink = x;
}

static void *worker(void *arg)
{
	burn(*(double *)arg);
	return NULL;
}

static void *parked(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	int workers = argc > 1 ? atoi(argv[1]) : 2, i;
	double each = (argc > 2 ? atoi(argv[2]) : 200) / 1000.0;
	pthread_t t;

	for (i = 0; i < workers; i++) {
		pthread_create(&t, NULL, worker, &each);
		pthread_join(t, NULL);
	}
	for (i = 0; i < 2; i++)
		pthread_create(&t, NULL, parked, NULL);
	burn(each);
	printf("threads: %d workers of %.3f s, main %.3f s\n", workers, each, each);
	return 0;
}
