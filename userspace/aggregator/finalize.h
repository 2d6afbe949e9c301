/* finalize — turns a Run's stored Batches into its final form: every
 * sampled address attributed (one batched llvm-symbolizer call per module),
 * the sampling Measurements derived, losses counted by the kernel turned
 * into Degradations with their counts, and manifest.json rewritten.
 *
 * Finalizing twice gives the same Run (attribution is done once per
 * module, Measurements are derived idempotently).
 */
#ifndef NUNATAK_AGGREGATOR_FINALIZE_H
#define NUNATAK_AGGREGATOR_FINALIZE_H

#include <jansson.h>

struct pivot;

/* manifest: the Run's manifest, updated in place (nodes, degradations) and
 * written in the Run directory run_dir_fd; then the pivot is sealed
 * (pivot_seal: plain SQLite, journal_mode DELETE; a seal that fails is
 * logged, not returned: the Run is complete). symbolizer: the
 * llvm-symbolizer to run; "" when the caller refused it (names from ELF
 * symbols; the caller records the Degradation that says why). 0 or -errno. */
int finalize_run(struct pivot *p, int run_dir_fd, json_t *manifest, const char *symbolizer);

#endif
