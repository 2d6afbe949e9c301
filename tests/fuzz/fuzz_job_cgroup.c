/* fuzz_job_cgroup — job_cgroup_parse() and job_environ_parse()
 * (userspace/slurm/job_cgroup.h) on arbitrary bytes: a /proc/PID/cgroup
 * text carries cgroup names a user may choose (a delegated subtree), an
 * environ block is the process' own. The first byte picks the parser; a
 * job found is in 1..4294967295 and its step a terminated string that fits. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/slurm/job_cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char step[16], *text;
	uint32_t job = 0;
	int r;

	if (size < 1)
		return 0;
	text = malloc(size);
	FUZZ_CHECK(text);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	memset(step, 'x', sizeof(step));
	if (data[0] & 1) {
		r = job_environ_parse(text, size - 1, &job);
		FUZZ_CHECK(r == 0 || r == 1);
	} else {
		r = job_cgroup_parse(text, &job, step, sizeof(step));
		FUZZ_CHECK(r == 0 || r == 1 || r == -EINVAL);
		if (r == 1)
			FUZZ_CHECK(memchr(step, '\0', sizeof(step)) != NULL);
	}
	if (r == 1)
		FUZZ_CHECK(job >= 1);
	free(text);
	return 0;
}
