/* clock — the one monotonic clock of nunatak's bounded waits.
 *
 * Every deadline a wait computes (tools, llvm-symbolizer, the publish
 * queue, Control messages, the application's observation) is in these
 * milliseconds of CLOCK_MONOTONIC: a wall-clock step (NTP, an
 * administrator) neither shortens nor lengthens a bound.
 */
#ifndef NUNATAK_LOG_CLOCK_H
#define NUNATAK_LOG_CLOCK_H

#include <time.h>

/* CLOCK_MONOTONIC in ns; cannot fail (the clock exists on every Linux) */
static inline unsigned long long clock_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* the same in ms */
static inline long long clock_monotonic_ms(void)
{
	return (long long)(clock_monotonic_ns() / 1000000);
}

#endif
