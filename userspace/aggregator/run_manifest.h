/* run_manifest — the Run's manifest.json, built by the Aggregator alone
 * (DESIGN.md §7): the first version from the facts START gives (run,
 * effective configuration), the origin node's machine (its Hello), the
 * Aggregator's provenance; completed at FINALIZE (exit code, end, nodes,
 * Degradations: finalize.c writes it). Text from users (name, command
 * line) arrives as JSON text and is kept as it is.
 */
#ifndef NUNATAK_AGGREGATOR_RUN_MANIFEST_H
#define NUNATAK_AGGREGATOR_RUN_MANIFEST_H

#include <jansson.h>
#include <stddef.h>

/* now, UTC, as "YYYY-MM-DDTHH:MM:SSZ" */
void run_iso_time(char *buf, size_t len);

/* A new reference, or NULL + errno (ENOMEM, EINVAL: run is not an
 * object). run: START.run ({"name","created","command","node","job_id",
 * "effective_configuration",...}: copied but effective_configuration,
 * which goes to provenance); owner_uid recorded in run; machine: the
 * origin's Hello.machine_json parsed (NULL: null); symbolizer: for
 * provenance (provenance_json()). Takes ~0.1 s the first time a given
 * symbolizer is asked its version. */
json_t *run_manifest_seed(const json_t *run, unsigned owner_uid, const json_t *machine,
			  const char *symbolizer);

/* A node's machine (its Hello.machine_json, parsed) into manifest
 * "machines" {node: machine}; the origin's also as "machine". */
void run_manifest_set_machine(json_t *manifest, const char *node, int origin,
			      const json_t *machine);

/* FINALIZE facts {"exit_code": n|null, "end": "ISO", ...} into the run
 * and its pass. */
void run_manifest_set_end(json_t *manifest, const json_t *finalize);

#endif
