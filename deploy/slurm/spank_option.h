/* spank_option — what the SPANK plugin makes of `--nunatak[=FREQ]` and of
 * the submitter's NUNATAK_PROFILE, with no Slurm in sight (unit-tested by
 * tests/unit/test_spank_option.c).
 *
 * The plugin never refuses a submission over its option (a non-zero option
 * callback makes sbatch/srun/salloc refuse the job): a FREQ that is not a
 * frequency is reported and the job is profiled without one, at the
 * frequency of the nodes' nunatak service (one per node; a FREQ asked that
 * it does not sample at is named in the Run's Degradation frequency-fixed).
 * So both functions always give a usable answer; the return value only
 * says whether the user's text was taken as written.
 *
 * FREQ is decimal digits only (no sign, no blank, no suffix), 1..10000 Hz,
 * the range `nunatak job-prolog` accepts. Leading zeros are fine ("0099").
 *
 * What the Prolog gets (spank_option_value): SPANK_NUNATAK=<FREQ> for a
 * FREQ asked, SPANK_NUNATAK=default for none (never empty, never the
 * "(null)" Slurm hands out in some contexts).
 */
#ifndef NUNATAK_SPANK_OPTION_H
#define NUNATAK_SPANK_OPTION_H

#include <stddef.h>

#define SPANK_NUNATAK_MIN_FREQ 1
#define SPANK_NUNATAK_MAX_FREQ 10000

/* The sampling frequency asked by the option's argument @arg (NULL or ""
 * when the option was given without "=FREQ": Slurm hands over either).
 * Always sets *freq: to the value asked, or to 0 (none asked).
 * Returns 0 (taken as written, or no value given), -EINVAL (not decimal
 * digits: "abc", "99x", " 99", "-5") or -ERANGE (0, or over the maximum),
 * each with @err saying what was wrong and what is done instead. */
int spank_option_freq(const char *arg, int *freq, char *err, size_t errlen);

/* The value of SPANK_NUNATAK for @freq (0: none asked) into @buf: "<freq>"
 * or "default". Returns @buf. */
const char *spank_option_value(int freq, char *buf, size_t buflen);

/* 1 when the submitter's NUNATAK_PROFILE value @value asks for profiling:
 * exactly "1"; 0 otherwise (NULL, "", "0", "yes" ...). */
int spank_option_profile_requested(const char *value);

#endif
