/* spank_option — what the SPANK plugin makes of `--nunatak[=FREQ]` and of
 * the submitter's NUNATAK_PROFILE, with no Slurm in sight (unit-tested by
 * tests/unit/test_spank_option.c).
 *
 * The plugin never refuses a submission over its option (a non-zero option
 * callback makes sbatch/srun/salloc refuse the job): a FREQ that is not a
 * frequency is reported and replaced by the default. So both functions
 * always give a usable answer; the return value only says whether the
 * user's text was taken as written.
 *
 * FREQ is decimal digits only (no sign, no blank, no suffix), 1..10000 Hz,
 * the range `nunatak job-prolog` accepts. Leading zeros are fine ("0099").
 */
#ifndef NUNATAK_SPANK_OPTION_H
#define NUNATAK_SPANK_OPTION_H

#include <stddef.h>

#define SPANK_NUNATAK_DEFAULT_FREQ 99
#define SPANK_NUNATAK_MIN_FREQ 1
#define SPANK_NUNATAK_MAX_FREQ 10000

/* The sampling frequency asked by the option's argument @arg (NULL or ""
 * when the option was given without "=FREQ": Slurm hands over either).
 * Always sets *freq: to the value asked, or to the default.
 * Returns 0 (taken as written, or no value given), -EINVAL (not decimal
 * digits: "abc", "99x", " 99", "-5") or -ERANGE (0, or over the maximum),
 * each with @err saying what was wrong and what is used instead. */
int spank_option_freq(const char *arg, int *freq, char *err, size_t errlen);

/* 1 when the submitter's NUNATAK_PROFILE value @value asks for profiling:
 * exactly "1"; 0 otherwise (NULL, "", "0", "yes" ...). */
int spank_option_profile_requested(const char *value);

#endif
