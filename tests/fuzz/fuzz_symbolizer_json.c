/* fuzz_symbolizer_json — the parser of llvm-symbolizer's JSON lines
 * (symbolizer_parse_json_line, userspace/attribution/symbolizer.h) on
 * arbitrary bytes, up to the first NUL as the reader hands it a C string.
 * A line that parses must satisfy the invariants of symbolizer.h; one that
 * does not must leave the result empty. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/attribution/symbolizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symbolizer_result r;
	char *line = malloc(size + 1);
	size_t i;
	int err;

	FUZZ_CHECK(line);
	memcpy(line, data, size);
	line[size] = '\0';
	memset(&r, 0x5a, sizeof(r)); /* the parser must not read what it did not fill */
	err = symbolizer_parse_json_line(line, &r);
	if (err) {
		FUZZ_CHECK(err == -EINVAL || err == -ENOMEM);
		FUZZ_CHECK(r.n_frames == 0 && r.frames == NULL);
	} else {
		FUZZ_CHECK(r.n_frames == 0 || r.frames);
		for (i = 0; i < r.n_frames; i++) {
			const struct symbolizer_frame *f = &r.frames[i];

			FUZZ_CHECK(f->function && f->file && f->start_file);
			(void)strlen(f->function);
			(void)strlen(f->file);
			(void)strlen(f->start_file);
			FUZZ_CHECK(f->has_start_address == 0 || f->has_start_address == 1);
			if (!f->has_start_address)
				FUZZ_CHECK(f->start_address == 0);
		}
	}
	symbolizer_result_release(&r);
	symbolizer_result_release(&r); /* idempotent */
	FUZZ_CHECK(r.n_frames == 0 && r.frames == NULL);
	free(line);
	return 0;
}
