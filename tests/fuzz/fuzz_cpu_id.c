/* fuzz_cpu_id — the Machine's parsers on arbitrary bytes: cpu_id_parse()
 * of a /proc/cpuinfo text (a guest's hypervisor chooses it) and
 * allocation_parse() of a /proc/self/cgroup text (a delegated subtree's
 * names are a user's) over an empty cgroup root. The first byte picks the
 * parser. A recognised microarchitecture always has a theory row; strings
 * are terminated; no limit is NAN/-1, never a negative or zero limit. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/log/log.h"
#include "userspace/machine/allocation.h"
#include "userspace/machine/cpu_id.h"
#include "userspace/machine/theory.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_QUIET);
	fuzz_scratch_dir();
	return 0;
}

static void check_cpu_id(const char *text)
{
	struct cpu_id id;
	char reason[512];
	double dp, sp;
	int r = cpu_id_parse(text, &id);

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r)
		return;
	FUZZ_CHECK(memchr(id.vendor, '\0', sizeof(id.vendor)));
	FUZZ_CHECK(memchr(id.model_name, '\0', sizeof(id.model_name)));
	FUZZ_CHECK(isnan(id.rated_hz) || id.rated_hz > 0);
	if (id.microarchitecture)
		FUZZ_CHECK(theory_flop_per_cycle(id.microarchitecture, &dp, &sp) == 0);
	r = theory_flops(&id, 1e9, 1, &dp, &sp, reason, sizeof(reason));
	FUZZ_CHECK(r == 0 || r == -ENOENT);
	FUZZ_CHECK(memchr(reason, '\0', sizeof(reason)));
	if (!r)
		FUZZ_CHECK(dp > 0 && sp >= dp);
}

static void check_allocation(const char *text)
{
	struct allocation a;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	FUZZ_CHECK(allocation_parse(fuzz_scratch_dir(), text, &set, &a) == 0);
	FUZZ_CHECK(a.visible_cores == 1);
	FUZZ_CHECK(isnan(a.cpu_quota) || a.cpu_quota > 0);
	FUZZ_CHECK(a.memory_limit_bytes == -1 || a.memory_limit_bytes >= 0);
	FUZZ_CHECK(allocation_threads(&a) == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1)
		return 0;
	text = malloc(size);
	FUZZ_CHECK(text);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (data[0] & 1)
		check_allocation(text);
	else
		check_cpu_id(text);
	free(text);
	return 0;
}
