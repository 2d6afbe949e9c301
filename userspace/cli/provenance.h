/* provenance — the manifest's `provenance` object: which nunatak (commit,
 * dirty tree), which libraries and tools, and the effective configuration
 * with where each value came from. */
#ifndef NUNATAK_CLI_PROVENANCE_H
#define NUNATAK_CLI_PROVENANCE_H

#include <jansson.h>

struct config;

/* NULL + errno (ENOMEM) */
json_t *provenance_json(const struct config *cfg);

#endif
