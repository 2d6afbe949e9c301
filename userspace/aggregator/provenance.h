/* provenance — the manifest's `provenance` object: which nunatak (commit,
 * dirty tree), which libraries and tools (the Aggregator's: it writes the
 * Run), and the effective configuration with where each value came from
 * (the origin's, as START carried it). */
#ifndef NUNATAK_AGGREGATOR_PROVENANCE_H
#define NUNATAK_AGGREGATOR_PROVENANCE_H

#include <jansson.h>

/* symbolizer_path: the llvm-symbolizer the Run uses ("" or NULL: none;
 * else asked --version, as the tool_user bound to this thread, bounded);
 * effective_configuration copied (NULL: {}). NULL + errno (ENOMEM) */
json_t *provenance_json(const char *symbolizer_path, const json_t *effective_configuration);

/* Asks symbolizer_path's --version now, in a thread of its own, as the
 * caller's user, so that the provenance_json() of a Run to come (in this
 * process) finds it known rather than asking it while the application
 * waits for its Run (~0.1 s); a provenance_json() meanwhile waits for
 * that answer. "" or NULL: nothing. 0, or -errno (no thread: then it is
 * asked as before). */
int provenance_prefetch(const char *symbolizer_path);

#endif
