/* tool — see tool.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "userspace/config/trust.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

extern char **environ;

int tool_resolve_trusted(const char *name, char *path, size_t pathlen, char *err, size_t errlen)
{
	char found[PATH_MAX], *real, no_err[1];
	int ret;

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	ret = launch_resolve(name, found, sizeof(found));
	if (ret) {
		snprintf(err, errlen, "'%s': %s", name ? name : "",
			 ret == -EACCES ? "not executable" : strerror(-ret));
		return ret;
	}
	real = realpath(found, NULL);
	if (!real) {
		ret = -errno;
		snprintf(err, errlen, "cannot resolve '%s': %s", found, strerror(-ret));
		return ret;
	}
	ret = trust_file(real, err, errlen);
	if (!ret && snprintf(path, pathlen, "%s", real) >= (int)pathlen) {
		ret = -ENAMETOOLONG;
		snprintf(err, errlen, "path too long: '%s'", real);
	}
	free(real);
	return ret;
}

/* Copies the caller's descriptors that are 0, 1 or 2 above 2 (in @moved,
 * close-on-exec, closed by the caller): the child's dup2s then never
 * overwrite a descriptor another dup2 still has to read. */
static int sources_above_stdio(const int stdio[3], int src[3], int moved[3])
{
	int i;

	for (i = 0; i < 3; i++) {
		src[i] = stdio[i];
		if (stdio[i] < 0 || stdio[i] > STDERR_FILENO)
			continue;
		moved[i] = fcntl(stdio[i], F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
		if (moved[i] < 0)
			return -errno;
		src[i] = moved[i];
	}
	return 0;
}

/* stdin, stdout, stderr from @src (all above 2) or /dev/null, nothing else */
static int child_files(posix_spawn_file_actions_t *fa, const int src[3])
{
	int i, err = 0;

	/* dup2 clears FD_CLOEXEC on the target; every other fd is closed */
	for (i = 0; i < 3 && !err; i++)
		err = src[i] >= 0 ? posix_spawn_file_actions_adddup2(fa, src[i], i)
				  : posix_spawn_file_actions_addopen(fa, i, "/dev/null",
								     i ? O_WRONLY : O_RDONLY, 0);
	if (!err)
		err = posix_spawn_file_actions_addclosefrom_np(fa, STDERR_FILENO + 1);
	return err;
}

/* default dispositions (nunatak ignores some), no signal blocked, a
 * process group of its own (a bound kills what the tool started too) */
static int child_attributes(posix_spawnattr_t *attr)
{
	sigset_t all, none;
	int err;

	sigfillset(&all);
	sigemptyset(&none);
	err = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
						 POSIX_SPAWN_SETPGROUP);
	if (!err)
		err = posix_spawnattr_setsigdefault(attr, &all);
	if (!err)
		err = posix_spawnattr_setsigmask(attr, &none);
	if (!err)
		err = posix_spawnattr_setpgroup(attr, 0);
	return err;
}

static __thread const struct tool_user *bound_user;

const struct tool_user *tool_user_bind(const struct tool_user *u)
{
	const struct tool_user *previous = bound_user;

	bound_user = u;
	return previous;
}

/* the user the tools of this thread run as, NULL: this process' own */
static const struct tool_user *user_to_become(void)
{
	const struct tool_user *u = bound_user;

	return u && u->uid != 0 && u->uid != geteuid() ? u : NULL;
}

/* what a tool run as another user gets of this (root) process: nothing
 * of its environment, the limits of an ordinary process */
static char *const user_env[] = {"PATH=/usr/bin:/bin", "LANG=C", "HOME=/", NULL};
static const struct {
	int resource;
	struct rlimit limit;
} user_limits[] = {
    {RLIMIT_MEMLOCK, {8u << 20, 8u << 20}},
    {RLIMIT_CORE, {0, 0}},
    {RLIMIT_NOFILE, {1024, 1024}},
};

/* The child of spawn_as(): what posix_spawn does for the others (see
 * tool.h), the limits above, then no supplementary group, the user's gid
 * and uid, exec with the environment above.
 * Only system calls: the parent may have other threads. Its errno goes
 * to report (close-on-exec: EOF when the exec succeeded). */
static void __attribute__((noreturn)) child_as(const char *path, char *const argv[],
					      const int src[3], const struct tool_user *u,
					      int report)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int i, fd, e;

	setpgid(0, 0);
	for (i = 1; i < NSIG; i++)
		sigaction(i, &dfl, NULL); /* SIGKILL, SIGSTOP: EINVAL, harmless */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (i = 0; i < 3; i++) {
		fd = src[i] >= 0 ? src[i] : open("/dev/null", i ? O_WRONLY : O_RDONLY);
		if (fd < 0 || dup2(fd, i) < 0)
			goto fail;
	}
	/* every other descriptor closes at exec (report must live until then) */
	if (close_range(STDERR_FILENO + 1, ~0U, CLOSE_RANGE_CLOEXEC))
		goto fail;
	for (i = 0; i < (int)(sizeof(user_limits) / sizeof(user_limits[0])); i++)
		if (setrlimit(user_limits[i].resource, &user_limits[i].limit))
			goto fail;
	if (setgroups(0, NULL) || setgid(u->gid) || setuid(u->uid))
		goto fail;
	execve(path, argv, user_env);
fail:
	e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		e = 0;
	_exit(127);
}

/* tool_spawn() for a tool run as u: fork, child_as(). */
static int spawn_as(const char *path, char *const argv[], const int src[3],
		    const struct tool_user *u, pid_t *pid)
{
	int report[2], child_errno = 0, status;
	ssize_t n;
	pid_t child;

	if (pipe2(report, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child < 0) {
		child_errno = errno;
		close(report[0]);
		close(report[1]);
		return -child_errno;
	}
	if (!child)
		child_as(path, argv, src, u, report[1]);
	close(report[1]);
	do
		n = read(report[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(report[0]);
	if (n == (ssize_t)sizeof(child_errno) && child_errno) {
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		return -child_errno;
	}
	*pid = child;
	return 0;
}

int tool_spawn(const char *path, char *const argv[], const int stdio[3], pid_t *pid)
{
	int src[3], moved[3] = {-1, -1, -1}, i, err;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;

	if (!path || path[0] != '/' || !argv || !argv[0])
		return -EINVAL;
	err = -posix_spawnattr_init(&attr);
	if (err)
		return err;
	err = -posix_spawn_file_actions_init(&fa);
	if (err) {
		posix_spawnattr_destroy(&attr);
		return err;
	}
	err = sources_above_stdio(stdio, src, moved);
	if (!err && user_to_become()) {
		err = spawn_as(path, argv, src, user_to_become(), pid);
		goto out;
	}
	err = err ?: -child_files(&fa, src);
	err = err ?: -child_attributes(&attr);
	err = err ?: -posix_spawn(pid, path, &fa, &attr, argv, environ);
out:
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	for (i = 0; i < 3; i++)
		if (moved[i] >= 0)
			close(moved[i]);
	return err;
}

int tool_reap(pid_t pid, long long deadline_ms, int *status)
{
	const struct timespec pause = {.tv_nsec = 2 * 1000 * 1000};
	int killed = 0;

	for (;;) {
		pid_t got = waitpid(pid, status, WNOHANG);

		if (got == pid)
			return killed ? -ETIMEDOUT : 0;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (clock_monotonic_ms() >= deadline_ms) {
			if (killed) {
				pr_warn("tool process %d not reaped %d ms after SIGKILL: left to "
					"the exit of nunatak",
					(int)pid, TOOL_REAP_MS);
				return -ETIMEDOUT;
			}
			/* the group first: a script's children hold the pipes
			 * too; the unreaped leader keeps the group id from
			 * being reused */
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed = 1;
			deadline_ms = clock_monotonic_ms() + TOOL_REAP_MS;
		}
		nanosleep(&pause, NULL);
	}
}

/* Reads the tool's stdout into @out until EOF, a full @out or @deadline.
 * 0, -ETIMEDOUT, or the -errno of poll or read. */
static int read_output(int fd, long long deadline, char *out, size_t outlen,
		       struct tool_result *res)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char probe;
	ssize_t n;
	int ready;

	for (;;) {
		long long left = deadline - clock_monotonic_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		ready = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return -errno;
		if (!ready)
			return -ETIMEDOUT;
		if (res->out_len + 1 < outlen)
			n = read(fd, out + res->out_len, outlen - 1 - res->out_len);
		else
			n = read(fd, &probe, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		if (res->out_len + 1 >= outlen) {
			res->truncated = 1;
			return 0;
		}
		res->out_len += (size_t)n;
		out[res->out_len] = '\0';
	}
}

int tool_run(const char *path, char *const argv[], int timeout_ms, char *out, size_t outlen,
	     struct tool_result *res)
{
	long long deadline = clock_monotonic_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int pipe_fd[2], stdio[3] = {-1, -1, -1}, ret, reaped;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (out && outlen)
		out[0] = '\0';
	else
		outlen = 0;
	if (!path || !argv || !argv[0])
		return -EINVAL;
	if (pipe2(pipe_fd, O_CLOEXEC))
		return -errno;
	stdio[STDOUT_FILENO] = pipe_fd[1];
	ret = tool_spawn(path, argv, stdio, &pid);
	close(pipe_fd[1]);
	if (ret) {
		close(pipe_fd[0]);
		return ret;
	}
	ret = read_output(pipe_fd[0], deadline, out, outlen, res);
	close(pipe_fd[0]);
	/* any failure of the read kills the tool at once */
	reaped = tool_reap(pid, ret ? 0 : deadline, &res->status);
	return ret ?: reaped;
}
