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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "userspace/config/trust.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/tool.h"

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

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* stdin and stderr on /dev/null, stdout on @out_fd, nothing else */
static int child_files(posix_spawn_file_actions_t *fa, int out_fd)
{
	/* stdout first: out_fd may be 0 or 2 when nunatak's own are closed */
	int err = posix_spawn_file_actions_adddup2(fa, out_fd, STDOUT_FILENO);

	if (!err)
		err = posix_spawn_file_actions_addopen(fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (!err)
		err = posix_spawn_file_actions_addopen(fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	if (!err)
		err = posix_spawn_file_actions_addclosefrom_np(fa, STDERR_FILENO + 1);
	return err;
}

/* default dispositions (nunatak ignores some), no signal blocked, a
 * process group of its own */
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

static int tool_spawn(const char *path, char *const argv[], int out_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int err;

	err = posix_spawnattr_init(&attr);
	if (err)
		return -err;
	err = posix_spawn_file_actions_init(&fa);
	if (err) {
		posix_spawnattr_destroy(&attr);
		return -err;
	}
	err = child_files(&fa, out_fd);
	if (!err)
		err = child_attributes(&attr);
	if (!err)
		err = posix_spawn(pid, path, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return -err;
}

/* Reads the tool's stdout into @out until EOF, a full @out or @deadline.
 * 0 or -ETIMEDOUT. */
static int read_output(int fd, long long deadline, char *out, size_t outlen,
		       struct tool_result *res)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char probe;
	ssize_t n;
	int ready;

	for (;;) {
		long long left = deadline - now_ms();

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

/* Reaps @pid by @deadline: 0 with res->status, or -ETIMEDOUT. */
static int reap_by(pid_t pid, long long deadline, struct tool_result *res)
{
	const struct timespec pause = {.tv_nsec = 2 * 1000 * 1000};
	pid_t got;

	for (;;) {
		got = waitpid(pid, &res->status, WNOHANG);
		if (got == pid)
			return 0;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
}

int tool_run(const char *path, char *const argv[], int timeout_ms, char *out, size_t outlen,
	     struct tool_result *res)
{
	long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int pipe_fd[2], ret;
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
	ret = tool_spawn(path, argv, pipe_fd[1], &pid);
	close(pipe_fd[1]);
	if (ret) {
		close(pipe_fd[0]);
		return ret;
	}
	ret = read_output(pipe_fd[0], deadline, out, outlen, res);
	close(pipe_fd[0]);
	if (!ret)
		ret = reap_by(pid, deadline, res);
	if (ret == -ETIMEDOUT) {
		/* the group first: a script's children hold the pipe too; the
		 * unreaped leader keeps the group id from being reused */
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, &res->status, 0) < 0 && errno == EINTR)
			;
	}
	return ret;
}
