/* manifest — the Run's manifest.json: plain JSON, readable without nunatak
 * (keys in DESIGN.md section 7).
 *
 * Written atomically (temporary file, fsync, rename, fsync of the
 * directory), so a reader sees the previous complete manifest or the new
 * one, never half of one. The Aggregator writes it when the Run starts
 * (exit_code null) and again when the Run is finalized, so a crashed Run
 * still has one.
 *
 * Written under the Run directory's descriptor only: the temporary file is
 * created with O_CREAT|O_EXCL|O_NOFOLLOW, 0600, and renamed within that
 * directory, so neither a symbolic link planted at its name nor the Run
 * directory replaced by a link to another one makes it write elsewhere.
 */
#ifndef NUNATAK_AGGREGATOR_MANIFEST_H
#define NUNATAK_AGGREGATOR_MANIFEST_H

#include <jansson.h>

#define MANIFEST_FILE "manifest.json"
#define MANIFEST_TMP_FILE "." MANIFEST_FILE ".tmp"
/* the room the Aggregator keeps for the end of a Run on a full disk
 * (aggregator_storage_reserve): never part of a finished Run */
#define RUN_STORAGE_RESERVE_FILE "storage-reserve"
#define MANIFEST_FORMAT "nunatak-run"
/* what manifest_read() accepts: a real manifest is a few KiB */
#define MANIFEST_MAX_BYTES (16 * 1024 * 1024)
#define MANIFEST_SCHEMA 1

/* Writes manifest as MANIFEST_FILE in the directory run_dir_fd. A stale
 * temporary file (a writer that crashed) is unlinked, never followed nor
 * truncated. 0 or -errno (-ENOSPC, -EISDIR: a directory at the temporary
 * name, ...); on failure the previous manifest is left whole. */
int manifest_write(int run_dir_fd, json_t *manifest);

/* manifest.json of the Run directory run_dir, opened under a descriptor of
 * it without following a link and without blocking (O_NOFOLLOW|
 * O_NONBLOCK), refused unless a regular file of at most
 * MANIFEST_MAX_BYTES: a FIFO or device planted there never blocks nor
 * sees an open. NULL + errno, with err saying what and where: ENOENT (no
 * manifest), ELOOP (a symbolic link), EINVAL (a FIFO, socket, device or
 * directory), EFBIG (too large), EBADMSG (not JSON, or not a nunatak
 * manifest), other errno (cannot open). */
json_t *manifest_read(const char *run_dir, char *err, size_t errlen);

/* 1 when manifest is the one of a finalized Run: it has the application's
 * exit code, or its last pass has its end (FINALIZE's: a job Run has no
 * exit code), or it says the Run was interrupted (a run-interrupted
 * Degradation: finalized without an exit code); 0 when it is the first
 * manifest of a Run that was never finalized. */
int manifest_finalized(const json_t *manifest);

#endif
