/* manifest — the Run's manifest.json: plain JSON, readable without nunatak
 * (keys in DESIGN.md section 7).
 *
 * Written atomically (temporary file, fsync, rename), so a reader sees the
 * previous complete manifest or the new one, never half of one. The
 * Aggregator writes it when the Run starts (exit_code null) and again when
 * the Run is finalized, so a crashed Run still has one.
 */
#ifndef NUNATAK_AGGREGATOR_MANIFEST_H
#define NUNATAK_AGGREGATOR_MANIFEST_H

#include <jansson.h>

#define MANIFEST_FILE "manifest.json"
#define MANIFEST_FORMAT "nunatak-run"
#define MANIFEST_SCHEMA 1

/* 0 or -errno */
int manifest_write(const char *run_dir, json_t *manifest);
/* NULL + errno (ENOENT: no manifest; EBADMSG: not a nunatak manifest, with
 * err saying why) */
json_t *manifest_read(const char *run_dir, char *err, size_t errlen);

#endif
