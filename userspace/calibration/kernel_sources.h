/* kernel_sources — the calibration kernels' C source (the .c files of kernels/ and
 * kernels/kernel_common.h), embedded in nunatak at build time (.incbin in
 * kernel_sources.c), never downloaded: calibration writes them into a
 * private directory and builds them there with the Machine's compiler.
 */
#ifndef NUNATAK_CALIBRATION_KERNEL_SOURCES_H
#define NUNATAK_CALIBRATION_KERNEL_SOURCES_H

#include <stddef.h>

struct kernel_source {
	const char *file; /* its name in the build directory: "triad.c" */
	const char *text; /* NUL-terminated */
};

/* the files a kernel build needs (every kernel includes kernel_common.h) */
extern const struct kernel_source kernel_source_common, kernel_source_triad, kernel_source_fma,
	kernel_source_pingpong;

#endif
