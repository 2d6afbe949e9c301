/* source_extracts — the finalize step that puts source extracts in a Run
 * (source.h says how a file is found, verified and read).
 *
 * For the SOURCE_MAX_HOTSPOTS Hotspots with the most samples on lines of
 * their own source file: an extract from SOURCE_CONTEXT_LINES before the
 * function's first line (its DWARF StartLine, else the earliest sampled
 * line) to SOURCE_CONTEXT_LINES after the last sampled line, or no text
 * and the reason (status missing, ambiguous, stale, disabled). The MD5s
 * come from `llvm-dwarfdump --debug-line` of each module (the
 * llvm-dwarfdump beside the Run's llvm-symbolizer, else in PATH; trusted
 * as tool.h says), once per module.
 *
 * What the Run asked comes from its manifest: provenance.
 * effective_configuration "source.embed" (false: every extract
 * `disabled`, no line of code read) and "source_map" (a list of {old,
 * new}), run.project_root (the basename search; absent: none). Files are
 * read with the identity of this thread's filesystem uid and gid (the
 * Run's owner in the service, as_owner.h), in a child process.
 */
#ifndef NUNATAK_SOURCE_EXTRACTS_H
#define NUNATAK_SOURCE_EXTRACTS_H

#include <jansson.h>

struct pivot;

#define SOURCE_MAX_HOTSPOTS 32

/* Stores the extracts of the Run in p (Run directory run_dir_fd, its runs
 * directory never searched); symbolizer: the Run's llvm-symbolizer ("" or
 * NULL: none). A source that cannot be had is a stored reason, not an
 * error. 0, -ENOMEM, or the pivot's error. */
int source_extracts_store(struct pivot *p, int run_dir_fd, const json_t *manifest,
			  const char *symbolizer);

#endif
