/* fuzz_kernel_output — kernel_output_parse() on arbitrary bytes: what a
 * calibration kernel or an MPI launcher printed (a launcher's chatter, a
 * kernel killed mid-line). Every repetition read has its required fields:
 * a terminated kernel name and unit, rep >= 1, a finite value > 0 and
 * seconds > 0; never more than the room given. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/calibration/kernel_output.h"
#include "userspace/log/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_QUIET);
	return 0;
}

static void check(const char *text, const char *kernel)
{
	struct kernel_rep reps[4];
	int n, i, malformed = -1;

	n = kernel_output_parse(text, kernel, reps, 4, &malformed);
	FUZZ_CHECK(n >= 0 && n <= 4 && malformed >= 0);
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(!strcmp(reps[i].kernel, kernel));
		FUZZ_CHECK(memchr(reps[i].unit, '\0', sizeof(reps[i].unit)) && reps[i].unit[0]);
		FUZZ_CHECK(memchr(reps[i].simd, '\0', sizeof(reps[i].simd)));
		FUZZ_CHECK(reps[i].rep >= 1 && reps[i].threads >= 0);
		FUZZ_CHECK(isfinite(reps[i].value) && reps[i].value > 0);
		FUZZ_CHECK(isfinite(reps[i].seconds) && reps[i].seconds > 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	FUZZ_CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	check(text, "triad");
	check(text, "fma_dp");
	check(text, "network_latency");
	free(text);
	return 0;
}
