/* library_closure — the shared libraries a program will load, found as
 * the dynamic loader would before the program runs: its DT_NEEDED
 * entries and theirs, searched in DT_RUNPATH/DT_RPATH ($ORIGIN expanded),
 * LD_LIBRARY_PATH, the ldconfig cache, then the default directories.
 * Libraries loaded with dlopen() are not in it.
 *
 * The cache is what `ldconfig -p` lists, ldconfig being /sbin/ldconfig or
 * /usr/sbin/ldconfig (never looked up in PATH), accepted by
 * tool_resolve_trusted() and run through tool_run(): execve, no shell,
 * 5 s and 8 MiB at most. Without a trusted ldconfig the cache is empty.
 */
#ifndef NUNATAK_LAUNCH_LIBRARY_CLOSURE_H
#define NUNATAK_LAUNCH_LIBRARY_CLOSURE_H

#define LIBRARY_CLOSURE_MAX 256 /* libraries followed at most */

/* Calls fn once per library path (resolved, in breadth-first order).
 * 0, -ENOEXEC when exe is not a dynamically linked ELF program (a script,
 * a static binary: its libraries cannot be known in advance), -errno. */
int library_closure(const char *exe, void (*fn)(const char *path, void *ctx), void *ctx);

/* Calls fn for every installed library whose file name holds word: those
 * the ldconfig cache lists, then those in the LD_LIBRARY_PATH directories
 * (for a program that cannot be read, the libraries it could load). A
 * library may be reported twice, under two names. 0 or -ENOMEM. */
int library_installed(const char *word, void (*fn)(const char *path, void *ctx), void *ctx);

#endif
