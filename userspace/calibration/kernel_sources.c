/* kernel_sources — see kernel_sources.h. The Makefile makes this object
 * depend on kernels/ (the assembler reads them; the compiler's dependency
 * list does not name them). Paths are relative to the top of the tree,
 * where make runs the compiler. */
#include "userspace/calibration/kernel_sources.h"

#define EMBED(symbol, path)                                                                       \
	__asm__(".section .rodata\n"                                                              \
		".global " #symbol "\n"                                                           \
		".type " #symbol ", %object\n"                                                    \
		".balign 16\n" #symbol ":\n"                                                      \
		".incbin \"" path "\"\n"                                                          \
		".byte 0\n"                                                                       \
		".size " #symbol ", . - " #symbol "\n"                                            \
		".previous\n")

EMBED(kernel_text_common, "userspace/calibration/kernels/kernel_common.h");
EMBED(kernel_text_triad, "userspace/calibration/kernels/triad.c");
EMBED(kernel_text_fma, "userspace/calibration/kernels/fma.c");
EMBED(kernel_text_pingpong, "userspace/calibration/kernels/pingpong.c");

extern const char kernel_text_common[], kernel_text_triad[], kernel_text_fma[],
	kernel_text_pingpong[];

const struct kernel_source kernel_source_common = { "kernel_common.h", kernel_text_common };
const struct kernel_source kernel_source_triad = { "triad.c", kernel_text_triad };
const struct kernel_source kernel_source_fma = { "fma.c", kernel_text_fma };
const struct kernel_source kernel_source_pingpong = { "pingpong.c", kernel_text_pingpong };
