/* run_read — a Run opened for reading by `nunatak summary`, `nunatak run`'s
 * own summary and `nunatak export`: its manifest and its pivot, read-only.
 *
 * When the Run's writer is gone (its lock is free) and it is a private
 * (0700) Run of ours, it is first made whole:
 *  - never finalized (nunatak was killed): finalized now, when a
 *    symbolizer is given (the run-interrupted Degradation says so);
 *  - finalized but its pivot still in WAL mode (a reader held it when it
 *    was sealed, an older nunatak): sealed now (journal_mode DELETE),
 *    symbolizer or not.
 * Why: a read-only SQLite connection to a pivot in WAL mode creates
 * pivot.sqlite-wal and -shm and, being read-only, cannot remove them, so
 * a finished Run would keep them (DESIGN.md section 7: plain files).
 * A Run still written (lock held) or not ours is read as it is, and said.
 */
#ifndef NUNATAK_CLI_RUN_READ_H
#define NUNATAK_CLI_RUN_READ_H

#include <limits.h>

#include <jansson.h>

struct argp;
struct config;
struct pivot;

/* Where a reader's Run is: the RUN argument and --runs-dir DIR, parsed by
 * run_where_argp, an argp child every reader command shares (its input:
 * a struct run_where *, set in the parent's ARGP_KEY_INIT through
 * state->child_inputs[0]); NULLs when not given. */
struct run_where {
	const char *run;
	const char *runs_dir;
};
extern const struct argp run_where_argp;

/* The Run a reader asked for: the configuration loaded into cfg (the
 * caller releases it on success), runs_dir (an option; NULL: the
 * configuration's) applied, then run (a Run, a runs directory, or NULL:
 * the most recent Run) found into run_dir. 0, or the exit code with the
 * reason said on stderr (cfg released). */
int run_read_locate(struct config *cfg, const char *runs_dir, const char *run, char *run_dir,
		    size_t len);

/* run_read_locate() for a reader that needs nothing else of the
 * configuration (it is released before the return): 0 or the exit code */
int run_where_locate(const struct run_where *w, char *run_dir, size_t len);

struct run_read {
	char path[PATH_MAX]; /* the pivot's, for messages */
	json_t *manifest;
	struct pivot *p; /* read-only */
	int live;	 /* still being written by its nunatak */
	int dirfd;	 /* the Run directory, locked: -1 when not */
	int read_fd;	 /* the Run directory the pivot is read under */
};

/* Opens the Run in run_dir (see above). 0, or -errno with the reason said
 * on stderr; r is then released. */
int run_read_open(struct run_read *r, const char *run_dir, const char *symbolizer);

/* Closes what run_read_open() opened (the lock too); NULL-safe, twice-safe. */
void run_read_close(struct run_read *r);

#endif
