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

/* CLOCK_MONOTONIC in ms; cannot fail (the clock exists on every Linux) */
static inline long long clock_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
