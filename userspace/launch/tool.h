/* tool — running a helper program (llvm-symbolizer --version, ldconfig -p)
 * the way a root process must: a file that passed trust(), started with
 * execve and an argument vector (never a shell), bounded in time and in
 * output.
 *
 * The tool runs with stdin on /dev/null, stdout on a pipe that nunatak
 * reads, stderr on /dev/null, no other descriptor (all closed from 3 up),
 * default signal dispositions and an empty signal mask, in a process group
 * of its own: on a timeout the whole group is killed (SIGKILL) and the
 * tool reaped before tool_run() returns, so nothing is left behind.
 */
#ifndef NUNATAK_LAUNCH_TOOL_H
#define NUNATAK_LAUNCH_TOOL_H

#include <stddef.h>

/* @name: a path, or a bare name looked up in PATH as execvp(3) would.
 * Fills @path with the absolute file that would run (symbolic links
 * resolved: running @path runs exactly the file that was checked). 0;
 * -ENOENT not found; -EACCES not executable; -EPERM when the file or a
 * directory above it is writable by a user other than the euid or root
 * (see trust.h; @err says which and its owner); another -errno. @err
 * always says what was wrong (may be NULL). */
int tool_resolve_trusted(const char *name, char *path, size_t pathlen, char *err, size_t errlen);

struct tool_result {
	int status;	/* wait status, valid when tool_run() returned 0 */
	size_t out_len; /* bytes of stdout kept in out (NUL-terminated) */
	int truncated;	/* stdout had more than fit; the rest was not read */
};

/* Runs @path (absolute, normally from tool_resolve_trusted()) with @argv
 * (argv[0] is free, argv NULL-terminated) and the current environment.
 * Keeps at most @outlen - 1 bytes of its stdout in @out; once @out is full
 * the pipe is closed (the tool sees EPIPE). Waits at most @timeout_ms in
 * all. Returns 0 with @res filled once the tool has exited; -ETIMEDOUT when
 * the bound was reached (the tool is then killed and reaped, @out holds
 * what it wrote); -ENOENT/-EACCES... when it cannot be started; -errno.
 */
int tool_run(const char *path, char *const argv[], int timeout_ms, char *out, size_t outlen,
	     struct tool_result *res);

#endif
