/* launch — starts the application exactly once, with stdin, stdout and
 * stderr untouched, held at a gate until the Agent follows it.
 *
 * launch_prepare() forks a child that waits at the gate; the caller adds
 * the child to the Target set, then launch_release() lets it exec, with
 * every signal at its default disposition and an empty signal mask,
 * whatever nunatak blocks or ignores. An exec
 * failure reaches the parent through a close-on-exec pipe, so "not found"
 * and "not executable" are told apart from the application's own exit
 * codes 127 and 126.
 */
#ifndef NUNATAK_LAUNCH_H
#define NUNATAK_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

#define EXIT_NOT_FOUND 127
#define EXIT_NOT_EXECUTABLE 126
#define EXIT_NUNATAK_FAILED 125
#define EXIT_STRICT_DEGRADED 121

struct launch {
	pid_t pid;
	int gate_fd;  /* write end: closing it releases the child */
	int error_fd; /* read end: the child's exec errno, or EOF on success */
};

/* Resolves cmd as execvp(3) would. 0 and path filled; -ENOENT (not found),
 * -EACCES (found but not executable). */
int launch_resolve(const char *cmd, char *path, size_t pathlen);

/* Forks the gated child that will exec path with argv. 0 or -errno. */
int launch_prepare(struct launch *l, const char *path, char *const argv[]);

/* Opens the gate. Returns 0 when the exec succeeded, else -errno of the
 * failed exec (the child has then exited with 127 or 126). */
int launch_release(struct launch *l);

/* Exit code of a wait status as a shell reports it: the code, or 128+sig. */
int launch_exit_code(int status);

#endif
