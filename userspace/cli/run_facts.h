/* run_facts — what `nunatak run` tells the node service about its Run
 * (run-start's "run", START's run facts): name, created, command line,
 * launcher, target, world size, origin node, the project root (the git
 * work tree of the current directory, else it: where source files are
 * searched by name), and the effective
 * configuration with where each value came from. Text from the user is
 * written as json_text writes it (a word that is not UTF-8 is kept, its
 * invalid bytes as \xNN). The Aggregator builds the manifest from it.
 */
#ifndef NUNATAK_CLI_RUN_FACTS_H
#define NUNATAK_CLI_RUN_FACTS_H

#include <jansson.h>

struct config;
struct launcher_split;

/* A new reference, or NULL (ENOMEM). cmd[0..ncmd) is the command line,
 * split how launcher_split() cut it; created: ISO-8601 UTC. */
json_t *run_facts_json(const char *name, int ncmd, char *const cmd[],
		       const struct launcher_split *split, const struct config *cfg,
		       const char *created, const char *node);

/* The Components asked for (--component, --step) recorded in facts'
 * effective configuration as its other keys ({value, source}):
 * "components" [PATTERN...] and "step" (null: none). 0 or -ENOMEM. */
int run_facts_add_components(json_t *facts, const char *const *patterns, int n, const char *step);

#endif
