/* spank_option — see spank_option.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "deploy/slurm/spank_option.h"

int spank_option_freq(const char *arg, int *freq, char *err, size_t errlen)
{
	long v = 0;
	const char *p;

	*freq = 0;
	if (errlen)
		err[0] = '\0';
	if (!arg || !arg[0])
		return 0;
	for (p = arg; *p; p++) {
		if (*p < '0' || *p > '9') {
			snprintf(err, errlen, "--nunatak=%.32s: FREQ must be a whole number of Hz "
					      "(%d..%d); profiling at the nodes' own frequency",
				 arg, SPANK_NUNATAK_MIN_FREQ, SPANK_NUNATAK_MAX_FREQ);
			return -EINVAL;
		}
		if (v <= SPANK_NUNATAK_MAX_FREQ) /* stops growing: no overflow */
			v = v * 10 + (*p - '0');
	}
	if (v < SPANK_NUNATAK_MIN_FREQ || v > SPANK_NUNATAK_MAX_FREQ) {
		snprintf(err, errlen, "--nunatak=%.32s: FREQ out of range %d..%d Hz; profiling at the "
				      "nodes' own frequency",
			 arg, SPANK_NUNATAK_MIN_FREQ, SPANK_NUNATAK_MAX_FREQ);
		return -ERANGE;
	}
	*freq = (int)v;
	return 0;
}

const char *spank_option_value(int freq, char *buf, size_t buflen)
{
	if (freq >= SPANK_NUNATAK_MIN_FREQ && freq <= SPANK_NUNATAK_MAX_FREQ)
		snprintf(buf, buflen, "%d", freq);
	else
		snprintf(buf, buflen, "default");
	return buf;
}

int spank_option_profile_requested(const char *value)
{
	return value && !strcmp(value, "1");
}
