/* fuzz_hostlist — slurm_job_hostlist_expand() (userspace/slurm/slurm_job.h)
 * on arbitrary bytes up to the first NUL, as a Prolog's SLURM_NODELIST or
 * a START's "nodes" hands it over. An expansion that succeeds must keep
 * the header's promises: *n names, NULL-terminated, each a valid node
 * name of at most 255 bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/slurm/slurm_job.h"

static int name_ok(const char *s)
{
	size_t len = strlen(s);

	if (!len || len > 255)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), **nodes = NULL;
	size_t n = 0;
	int err;

	FUZZ_CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	err = slurm_job_hostlist_expand(text, &nodes, &n);
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ENOMEM);
	if (!err) {
		FUZZ_CHECK(nodes && n > 0 && n <= 262144);
		FUZZ_CHECK(nodes[n] == NULL);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(nodes[i] && name_ok(nodes[i]));
		slurm_job_nodes_free(nodes, n);
	}
	free(text);
	return 0;
}
