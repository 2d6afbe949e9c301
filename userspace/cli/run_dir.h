/* run_dir — where Runs live: `<runs_dir>/<name>-YYYYMMDD-HHMMSS/`.
 *
 * run_dir_create() makes a new, empty Run directory that no other Run
 * uses (a suffix -2, -3, ... when two Runs start in the same second);
 * run_dir_find() turns what a user typed (a path, a directory name under
 * runs_dir, or nothing: the most recent) into the directory of a Run.
 */
#ifndef NUNATAK_CLI_RUN_DIR_H
#define NUNATAK_CLI_RUN_DIR_H

#include <stddef.h>
#include <time.h>

/* name: any text; characters unsafe in a file name become '_'.
 * 0 and path filled, or -errno (err says what failed). */
int run_dir_create(const char *runs_dir, const char *name, time_t when, char *path,
		   size_t pathlen, char *err, size_t errlen);

/* 0 and path filled, -ENOENT with err saying what was looked for. */
int run_dir_find(const char *runs_dir, const char *which, char *path, size_t pathlen, char *err,
		 size_t errlen);

#endif
