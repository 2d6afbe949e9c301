/* machine_cache — the Machine profile cache: the Ceilings calibration
 * measured on a Machine (hardware + allocation shape), so that `nunatak run`
 * uses them and never calibrates.
 *
 * One file per Machine: $XDG_CACHE_HOME/nunatak/machines/<identity>.json
 * (else $HOME/.cache/nunatak/machines/...), directories 0700, file 0600,
 * written under a directory fd (a temporary O_EXCL|O_NOFOLLOW file, then
 * renameat). A directory or file not owned by the effective uid, or a
 * symbolic link, is refused with a message (-EPERM / -ELOOP).
 *
 * The file: {identity, calibration_version, calibrated (ISO 8601 UTC),
 * machine{...}, ceilings[...]}. A file whose calibration_version is not
 * CALIBRATION_VERSION is stale: load says -ENOENT as if none.
 */
#ifndef NUNATAK_MACHINE_CACHE_H
#define NUNATAK_MACHINE_CACHE_H

#include <stddef.h>

#include <jansson.h>

/* bumped by the calibration part whenever its kernels change */
#define CALIBRATION_VERSION 1

/* Hex SHA-256 of the Machine's identifying fields of a machine object (as
 * machine_describe builds it: architecture, cpu vendor/family/model/stepping/
 * model name, logical cores, allocation visible cores + mask, cpu quota,
 * memory limit). Malloc'ed (caller frees); NULL + errno (EINVAL, ENOMEM). */
char *machine_identity(const json_t *machine);

/* The cache directory path into buf: 0 or -ENOENT (neither XDG_CACHE_HOME
 * nor HOME) / -ENAMETOOLONG. Creates nothing. */
int machine_cache_dir(char *buf, size_t len);

/* *profile = the whole cached file (new reference, caller decrefs).
 * 0; -ENOENT (no file, or stale calibration_version, or another identity in
 * it); -EPERM/-ELOOP (not ours, a link); -EINVAL (not a profile); -errno. */
int machine_cache_load(const char *identity, json_t **profile);

/* Store ceilings (borrowed) with the current Machine (machine_describe) and
 * the time now under identity. 0 or -errno. */
int machine_cache_store(const char *identity, json_t *ceilings);

/* The same with an explicit machine object (borrowed), for tests and for a
 * caller that already holds it. 0 or -errno. */
int machine_cache_store_profile(const char *identity, const json_t *machine, json_t *ceilings);

/* The Machine's calibration rows file, <identity>.rows.tsv in the same
 * directory (created as above), opened to append (O_APPEND, created 0600,
 * never through a link: -ELOOP); its path into shown (len bytes) for the
 * messages. The fd, or -errno. calibration_rows.h writes it. */
int machine_cache_open_rows(const char *identity, char *shown, size_t len);

#endif
