/* fuzz_manifest — a Run's manifest.json as `nunatak summary` reads it:
 * manifest_read() of arbitrary bytes in a Run directory on tmpfs, then what
 * the readers take from it (the "run" object copied into the summary JSON)
 * and what the finalize does to it (nodes and degradations set, then the
 * document dumped as manifest_write() does). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/aggregator/manifest.h"

static char path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(path, sizeof(path), "%s/%s", fuzz_scratch_dir(), MANIFEST_FILE);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *m, *summary;
	char err[512], *dump;

	fuzz_write_file(path, data, size);
	err[0] = '\0';
	m = manifest_read(fuzz_scratch_dir(), err, sizeof(err));
	if (!m) {
		FUZZ_CHECK(errno == EBADMSG);
		FUZZ_CHECK(err[0]);
		return 0;
	}
	FUZZ_CHECK(json_is_object(m));
	/* cmd_summary: the "run" object, whatever it holds, into the summary */
	summary = json_object();
	FUZZ_CHECK(summary);
	json_object_set(summary, "manifest_run", json_object_get(m, "run"));
	dump = json_dumps(summary, JSON_INDENT(2));
	free(dump);
	json_decref(summary);
	/* finalize_run: nodes and degradations replaced, then written */
	json_object_set_new(m, "nodes", json_array());
	json_object_set_new(m, "degradations", json_array());
	dump = json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS);
	FUZZ_CHECK(dump);
	free(dump);
	json_decref(m);
	return 0;
}
