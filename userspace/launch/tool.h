/* tool — running a helper program (llvm-symbolizer, ldconfig -p) the way
 * a root process must: a file that passed trust(), started with execve
 * and an argument vector (never a shell), bounded in time and in output.
 *
 * Every tool starts the same way (tool_spawn()): stdin, stdout and stderr
 * as the caller gives them (a descriptor, or /dev/null), no other
 * descriptor (all closed from 3 up), default signal dispositions and an
 * empty signal mask (nunatak blocks and ignores some), in a process group
 * of its own. It ends the same way (tool_reap()): waited for until a
 * deadline, then its whole group killed (SIGKILL) and the tool reaped,
 * within TOOL_REAP_MS more, so that nothing is left behind.
 *
 * Time is clock_monotonic_ms() (userspace/log/clock.h).
 */
#ifndef NUNATAK_LAUNCH_TOOL_H
#define NUNATAK_LAUNCH_TOOL_H

#include <stddef.h>
#include <sys/types.h>

/* how long a killed tool may take to be reaped */
#define TOOL_REAP_MS 1000

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

/* The user every tool this thread starts runs as (the service Aggregator
 * runs llvm-symbolizer as the Run's owner): the child drops every
 * supplementary group, then takes @gid, then @uid, before exec (a failure
 * to is the spawn's error). NULL, uid 0 or the euid: the tools run as this
 * process does. Such a tool gets none of this process' environment (PATH=
 * /usr/bin:/bin, LANG=C, HOME=/ only) and ordinary limits (RLIMIT_MEMLOCK
 * 8 MiB, RLIMIT_CORE 0, RLIMIT_NOFILE 1024), in a process group of its
 * own that tool_reap() kills. Per thread; returns the previous binding.
 * The struct must live while it is bound. */
struct tool_user {
	uid_t uid;
	gid_t gid;
};
const struct tool_user *tool_user_bind(const struct tool_user *u);

/* Starts @path (absolute: -EINVAL otherwise, no PATH search) with @argv
 * (argv[0] is free, argv NULL-terminated) and the current environment, as
 * the header says. @stdio[0..2] are the descriptors the tool gets as its
 * stdin, stdout and stderr, -1 for /dev/null; they may be 0, 1 or 2
 * themselves, in any order (nunatak started with some closed): each lands
 * where it is asked; as the user tool_user_bind() gave, if any. The
 * caller keeps and closes its descriptors. 0 with
 * *pid (the caller must tool_reap() it); -ENOENT/-EACCES... when it cannot
 * be started; -errno. */
int tool_spawn(const char *path, char *const argv[], const int stdio[3], pid_t *pid);

/* Waits for @pid until @deadline_ms (<= now: not at all), then kills its
 * process group and itself with SIGKILL and waits TOOL_REAP_MS more.
 * 0 with *status when it exited in time; -ETIMEDOUT when it was killed
 * (*status set once reaped; a tool still unreaped after TOOL_REAP_MS is
 * said on stderr and left); another -errno from waitpid. */
int tool_reap(pid_t pid, long long deadline_ms, int *status);

/* Runs @path (absolute, normally from tool_resolve_trusted()) with @argv,
 * stdin and stderr on /dev/null. Keeps at most @outlen - 1 bytes of its
 * stdout in @out; once @out is full the pipe is closed (the tool sees
 * EPIPE). Waits at most @timeout_ms in all. Returns 0 with @res filled
 * once the tool has exited; -ETIMEDOUT when the bound was reached; another
 * -errno when reading failed; -ENOENT/-EACCES... when it cannot be
 * started. On any error the tool is killed and reaped (tool_reap()) and
 * @out holds what it wrote. */
int tool_run(const char *path, char *const argv[], int timeout_ms, char *out, size_t outlen,
	     struct tool_result *res);

#endif
