/* trust — whether a file may be obeyed by this process: read as its
 * configuration, or executed as one of its tools.
 *
 * nunatak runs as root: a file that another user can write, or replace, is
 * that user's instructions to root. The rule is git's safe.directory one,
 * extended to the directories above the file:
 *
 *  - the file is a regular file, reached without following a symbolic
 *    link in its last component (a FIFO, device, socket or directory is
 *    refused before it is opened, so nothing blocks and no device sees an
 *    open);
 *  - it is owned by the effective uid or by root: a root nunatak obeys only
 *    files root owns, a user's nunatak files owned by that user or root;
 *  - it is not writable by its group or by others;
 *  - every directory above it, up to "/", is owned by the euid or root
 *    and is not writable by group or others unless it is sticky (as /tmp
 *    is: there, nobody can replace a file they do not own).
 *
 * Directories are walked from "/" as the path names them, each opened
 * without following links from the one above it, so the chain that was
 * checked is the chain the file was reached through; a symbolic link on
 * the way is followed only when its owner is trusted (the directory
 * holding it was checked), and its target is walked and checked in turn
 * (a link in a directory another user owns is refused with it: that
 * user could point it elsewhere). trust_open_dir_chain() is that walk,
 * also for a directory to work in (the runs directory).
 */
#ifndef NUNATAK_CONFIG_TRUST_H
#define NUNATAK_CONFIG_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when the file at @path may be obeyed by this process. Errors, with
 * @err naming the offending path, its owner (user name and uid) and what to
 * do:
 *   -ENOENT  @path (or a directory above it) does not exist
 *   -ELOOP   @path is a symbolic link
 *   -EISDIR  @path is a directory
 *   -EINVAL  @path is a FIFO, device or socket
 *   -EPERM   @path or a directory above it is owned by another user, or
 *            writable by others (group, other; a directory unless sticky)
 *   -errno   it cannot be examined
 * @err may be NULL. Nothing is opened for reading: an O_PATH descriptor is
 * enough to examine the file. */
int trust_file(const char *path, char *err, size_t errlen);

/* trust_file(), then the file opened for reading (O_RDONLY|O_CLOEXEC|
 * O_NOFOLLOW, checked again on the descriptor): *@fd is the very file
 * that was checked, for the caller to close. Same errors. */
int trust_open(const char *path, int *fd, char *err, size_t errlen);

/* Walks the directory @dir (absolute, or relative to the working
 * directory) from "/" and checks every directory of it, @dir included,
 * with the rule above; links on the way as said above. 0 with *@dirfd an
 * O_PATH descriptor of @dir (usable as the directory of *at() calls; the
 * caller closes it), or -errno with @err naming @path (what the caller
 * wants to reach through @dir; NULL: @dir) and the offending directory:
 * -EPERM (another owner, writable, a link another user owns), -ENOENT,
 * -ENOTDIR, -ELOOP (links nested too deep), -ENAMETOOLONG. @err may be
 * NULL. */
int trust_open_dir_chain(const char *path, const char *dir, int *dirfd, char *err, size_t errlen);

/* "alice (uid 1000)", or "uid 1000" for a uid without a name, into buf */
void trust_owner_name(uid_t uid, char *buf, size_t len);

#endif
