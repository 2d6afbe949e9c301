/* fuzz_proc_maps — proc_maps_parse_line() (userspace/agent/proc_maps.h) on
 * arbitrary bytes, up to the first NUL as getline() hands it a line. A line
 * that parses must satisfy the struct's invariants. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/agent/proc_maps.h"

static struct proc_map map;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1);
	int err;

	FUZZ_CHECK(line);
	memcpy(line, data, size);
	line[size] = '\0';
	err = proc_maps_parse_line(line, &map);
	FUZZ_CHECK(err == 0 || err == -EINVAL);
	if (!err) {
		FUZZ_CHECK(map.start <= map.end);
		FUZZ_CHECK(strlen(map.perms) == 4);
		FUZZ_CHECK(strchr("r-", map.perms[0]) && strchr("w-", map.perms[1]) &&
			   strchr("x-", map.perms[2]) && strchr("ps", map.perms[3]));
		FUZZ_CHECK(strnlen(map.path, sizeof(map.path)) < sizeof(map.path));
		FUZZ_CHECK(!strchr(map.path, '\n'));
	}
	free(line);
	return 0;
}
