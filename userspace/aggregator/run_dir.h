/* run_dir — where Runs live: `<runs_dir>/<name>-YYYYMMDD-HHMMSS/`.
 *
 * run_dir_create() makes a new, empty Run directory that no other Run
 * uses (a suffix -2, -3, ... when two Runs start in the same second);
 * run_dir_find() turns what a user typed (a path, a directory name under
 * runs_dir, or nothing: the most recent) into the directory of a Run;
 * run_dir_discard() removes a Run that failed before its application ran;
 * run_dir_lock() tells whether a Run is still being written.
 *
 * Safety (nunatak runs as root): the runs directory must be owned by the
 * writer — the fsuid of the calling thread (as_owner.h: the Run's owner
 * in the service Aggregator, the euid otherwise) — and not writable by its group or others unless sticky,
 * every directory above it must pass trust_open_dir_chain() (config/trust.h:
 * owned by the euid or root, not writable, links only where their owner
 * is trusted), or nothing is created; the Run directory is made with mkdirat() under a descriptor of
 * the runs directory (O_NOFOLLOW), 0700 whatever the umask, and checked
 * again on its own descriptor. A Run name never starts with '.', so it is
 * never "." or "..", never hidden, and run_dir_find() finds it.
 * Error messages say what failed, on which path, and what to do; errno
 * values in words ("no space left on device").
 */
#ifndef NUNATAK_AGGREGATOR_RUN_DIR_H
#define NUNATAK_AGGREGATOR_RUN_DIR_H

#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

/* The files nunatak itself puts in a Run directory (what run_dir_discard()
 * may remove); NULL-terminated. */
extern const char *const run_dir_own_files[];

/* Creates runs_dir if missing (parents 0755 as needed, the last level
 * 0700), checks it, then creates the Run directory in it.
 * name: any text; characters unsafe in a file name become '_', a leading
 * '.' too, an empty or NULL name is "run".
 * 0 with path filled and *st (may be NULL) the Run directory's fstat() (its
 * st_dev/st_ino identify it to the Aggregator); or -errno with err saying
 * what failed: -EPERM runs_dir owned by another user or writable by its
 * group or others without the sticky bit, or a directory above it refused
 * by trust_open_dir_chain(), -ELOOP runs_dir is a symbolic link, -ENAMETOOLONG
 * the Run's path would not fit in pathlen, -EEXIST too many Runs of that
 * name in one second, any mkdir/open error (ENOSPC, EROFS, EACCES...). No
 * Run directory is left on failure. */
int run_dir_create(const char *runs_dir, const char *name, time_t when, char *path, size_t pathlen,
		   struct stat *st, char *err, size_t errlen);

/* Removes the Run directory at path when it holds only nunatak's own files
 * (run_dir_own_files), regular files each: 0, or -ENOTEMPTY (something else
 * is in it: nothing is removed), -ELOOP (path is a symbolic link), -errno. */
int run_dir_discard(const char *path);

/* Opens the Run directory at path and takes its lock without waiting
 * (flock LOCK_EX, as the Aggregator holds it while it writes the Run).
 * 0 with *dirfd open and locked (the writer is gone; close it to release),
 * -EWOULDBLOCK when a writer holds the lock (nothing left open), -errno. */
int run_dir_lock(const char *path, int *dirfd);

/* which given: the Run at that path, else runs_dir/which, else, when which
 * is a directory (a runs directory, as `nunatak run -o DIR` makes), the
 * most recent Run of ours in it. No which: the
 * most recent Run of ours in runs_dir: an entry that is not a directory,
 * is a symbolic link or is owned by another user than the euid is skipped
 * (a Run planted in a shared runs directory is not read in place of
 * ours), and said in err when no other Run is found.
 * 0 and path filled, -ENOENT with err saying what was looked for. */
int run_dir_find(const char *runs_dir, const char *which, char *path, size_t pathlen, char *err,
		 size_t errlen);

#endif
