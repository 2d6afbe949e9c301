/* stripped — STRIPPED_FUNCTIONS (4) hot functions of different weights
 * (4:3:2:1 of the work), built then `strip --strip-all`: no symbol names
 * them, only their .eh_frame extents, so each must be one Hotspot
 * `stripped+0xSTART`, never one per sampled instruction.
 *
 * usage: stripped [MILLIONS]  (default 30: million iterations of the
 * lightest, 10 times that in all, about 2.5 s). Prints "ok". */
#include <stdio.h>
#include <stdlib.h>

#define STRIPPED_FUNCTIONS 4

static volatile double sink;

/* each a loop of several instructions, so its samples fall on many
 * addresses: one per instruction would be many Hotspots; noipa: never
 * merged with its twin (identical code folding) nor specialized */
#define HOT_FUNCTION(name, k)                                                          \
	__attribute__((noipa)) static double name(unsigned long iterations) \
	{                                                                              \
		double x = k, y = 1.0;                                                 \
		unsigned long i;                                                       \
		for (i = 0; i < iterations; i++) {                                     \
			x = x * 1.0000001 + 0.5 / (x + 1.0);                           \
			y = y * 0.9999999 + x * 1e-9;                                  \
		}                                                                      \
		__asm__ __volatile__("" ::: "memory");                                 \
		return x + y;                                                          \
	}

HOT_FUNCTION(hot1, 1.0)
HOT_FUNCTION(hot2, 2.0)
HOT_FUNCTION(hot3, 3.0)
HOT_FUNCTION(hot4, 4.0)

int main(int argc, char **argv)
{
	unsigned long unit = (argc > 1 ? strtoul(argv[1], NULL, 10) : 30) * 1000000ul;
	double r;

	if (!unit) {
		fprintf(stderr, "usage: stripped [MILLIONS]\n");
		return 2;
	}
	r = hot4(4 * unit);
	r += hot3(3 * unit);
	r += hot2(2 * unit);
	r += hot1(unit);
	sink = r;
	printf("ok\n");
	return 0;
}
