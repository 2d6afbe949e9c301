/* spool — Batches the Aggregator has not acknowledged, on disk, so that
 * an unreachable Aggregator (or an Agent restart) loses nothing within
 * a byte cap.
 *
 * One file per Batch in the spool directory: the packed Envelope, exactly
 * the bytes sent, mode 0600, created under the directory's fd with
 * O_CREAT|O_EXCL|O_NOFOLLOW as a temporary name and renamed (no
 * replacement) to its final name, so a file with a final name is always
 * complete. Name: "<spooled ns, 16 hex>-<incarnation, 16 hex>-<seq, 16
 * hex>-<run_id>.batch": sorted by name = oldest first.
 *
 * Files are not fsync'ed (a Batch a second per Run would cost a disk
 * flush each): an Agent that restarts or is killed loses nothing spooled,
 * a power loss may lose the last ones.
 *
 * The directory itself must be a real directory (no symbolic link) owned
 * by the euid and not writable by group or others; it is created 0700
 * when missing (its parent must exist). Files with other names are left
 * alone. spool__open() lists what earlier incarnations left: replayed
 * by the Agent, removed once acknowledged.
 */
#ifndef NUNATAK_AGENT_SPOOL_H
#define NUNATAK_AGENT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define SPOOL_DEFAULT_CAP_BYTES (1ull << 30)
#define SPOOL_RUN_ID_MAX 64

struct spool;

struct spool_entry {
	char name[128];
	char run_id[SPOOL_RUN_ID_MAX + 1];
	uint64_t incarnation, seq;
	uint64_t bytes;
	uint64_t samples; /* known for Batches spooled by this process, else 0 */
};

/* NULL + errno; err says what and what to do. cap_bytes 0: default. */
struct spool *spool__open(const char *dir, uint64_t cap_bytes, char *err, size_t errlen);
void spool__free(struct spool *sp);

/* Writes one packed Batch. 0; -ENOSPC when it would exceed the cap (not
 * written: the caller counts the loss); -ENAMETOOLONG (run_id); -errno. */
int spool_put(struct spool *sp, const char *run_id, uint64_t incarnation, uint64_t seq,
	      const void *buf, size_t len, uint64_t samples);
/* the oldest entry of (run_id, incarnation), NULL when none. Valid until
 * the next put/remove. */
const struct spool_entry *spool_oldest(const struct spool *sp, const char *run_id,
				       uint64_t incarnation);
/* the i-th entry, oldest first; NULL past the end (i >= spool_files) */
const struct spool_entry *spool_entry_at(const struct spool *sp, size_t i);
/* number of entries of (run_id, incarnation) */
size_t spool_count(const struct spool *sp, const char *run_id, uint64_t incarnation);
/* Reads an entry: *buf (malloc'd, caller frees), *len. -errno. */
int spool_read(struct spool *sp, const struct spool_entry *e, void **buf, size_t *len);
/* Removes the entry matching (run_id, incarnation, seq). 0, -ENOENT. */
int spool_remove(struct spool *sp, const char *run_id, uint64_t incarnation, uint64_t seq);

uint64_t spool_bytes(const struct spool *sp);
size_t spool_files(const struct spool *sp);
const char *spool_dir(const struct spool *sp);

#endif
