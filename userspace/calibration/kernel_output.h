/* kernel_output — reading what a calibration kernel printed: one line per
 * repetition,
 *
 *   nunatak-calibration kernel=NAME rep=R [threads=T] [simd=S]
 *                       seconds=X value=V unit=U [ns=N flops=F bytes=B]
 *
 * (the format kernels/kernel_common.h and kernels/pingpong.c print), in any
 * order of fields, unknown fields ignored, other lines (a launcher's
 * chatter, the kernel's check line) skipped. A line with the prefix but a
 * missing or malformed required field (kernel, rep, value > 0 and finite,
 * unit, seconds) is rejected: it is counted, never guessed. ns, flops and
 * bytes (the exact counts of the repetition, for calibration rows) are
 * optional; when present they must read as non-negative numbers.
 */
#ifndef NUNATAK_CALIBRATION_KERNEL_OUTPUT_H
#define NUNATAK_CALIBRATION_KERNEL_OUTPUT_H

#include <stddef.h>

#define KERNEL_MAX_REPS 64

struct kernel_rep {
	char kernel[32];
	char unit[16];
	char simd[16]; /* "" when the line does not say */
	int rep, threads; /* threads 0 when not said */
	double seconds, value;
	long long ns;	     /* 0 when not said */
	double flops, bytes; /* NAN when not said */
};

/* One line (without or with its '\n'). 1 with @out filled when it is a
 * repetition line; 0 when it is another line; -EINVAL when it has the
 * prefix but cannot be read. */
int kernel_line_parse(const char *line, struct kernel_rep *out);

/* The repetitions of @kernel in @text (the kernel's whole stdout).
 * @reps has room for @max; returns how many were read (0..max), and
 * *malformed the lines with the prefix that could not be read (may be
 * NULL). */
int kernel_output_parse(const char *text, const char *kernel, struct kernel_rep *reps, int max,
			int *malformed);

#endif
