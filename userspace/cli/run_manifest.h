/* run_manifest — the first version of a Run's manifest.json, what
 * `nunatak run` knows before launch (DESIGN.md §7): format, run (name,
 * command, launcher, target, world size; exit code null), machine, node,
 * provenance, one pass without an end, no Degradation yet. The Aggregator
 * completes it at FINALIZE. Text from the user (name, command line,
 * launcher, target, node) is written as json_text writes it: a word that is
 * not UTF-8 is kept, its invalid bytes as \xNN (userspace/log/json_text.h).
 */
#ifndef NUNATAK_CLI_RUN_MANIFEST_H
#define NUNATAK_CLI_RUN_MANIFEST_H

#include <jansson.h>
#include <stddef.h>

struct config;
struct launcher_split;

/* now, UTC, as "YYYY-MM-DDTHH:MM:SSZ" */
void run_iso_time(char *buf, size_t len);

/* A new reference, or NULL (ENOMEM). cmd[0..ncmd) is the command line,
 * split how launcher_split() cut it. Takes ~0.1 s (provenance runs
 * llvm-symbolizer --version): worth a thread. */
json_t *run_manifest_seed(const char *name, int ncmd, char *const cmd[],
			  const struct launcher_split *split, const struct config *cfg,
			  const char *start, const char *node);

#endif
