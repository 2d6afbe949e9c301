/* launch — see launch.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/launch/launch.h"

static int check_executable(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode) || access(path, X_OK))
		return -EACCES;
	return 0;
}

int launch_resolve(const char *cmd, char *path, size_t pathlen)
{
	const char *env_path = getenv("PATH");
	const char *dir, *end;
	int err, seen_eacces = 0;

	if (!cmd || !cmd[0])
		return -ENOENT;
	if (strchr(cmd, '/')) {
		if (snprintf(path, pathlen, "%s", cmd) >= (int)pathlen)
			return -ENAMETOOLONG;
		return check_executable(path);
	}
	if (!env_path)
		env_path = "/usr/local/bin:/bin:/usr/bin";
	for (dir = env_path;; dir = end + 1) {
		size_t len;

		end = strchrnul(dir, ':');
		len = end - dir;
		/* an empty entry is the current directory, as for execvp(3) */
		if ((len ? snprintf(path, pathlen, "%.*s/%s", (int)len, dir, cmd)
			 : snprintf(path, pathlen, "./%s", cmd)) < (int)pathlen) {
			err = check_executable(path);
			if (!err)
				return 0;
			if (err == -EACCES)
				seen_eacces = 1;
		}
		if (!*end)
			break;
	}
	return seen_eacces ? -EACCES : -ENOENT;
}

/* The application starts as a shell would start it: every signal at its
 * default disposition (nunatak ignores SIGPIPE, and an ignored signal
 * survives exec) and none blocked (nunatak blocks the ones it reads from
 * a signalfd, and a blocked mask survives exec too). */
static void child_restore_signals(void)
{
	sigset_t none;
	int sig;

	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL); /* SIGKILL, SIGSTOP and RT signals in use fail: fine */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void child_run(int gate_rd, int error_wr, const char *path, char *const argv[])
{
	char c;
	int e;

	while (read(gate_rd, &c, 1) < 0 && errno == EINTR)
		;
	close(gate_rd);
	/* a signal sent to it while it waited at the gate is delivered now */
	child_restore_signals();
	execv(path, argv);
	e = errno;
	if (write(error_wr, &e, sizeof(e)) < 0)
		_exit(EXIT_NUNATAK_FAILED);
	_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE);
}

int launch_prepare(struct launch *l, const char *path, char *const argv[])
{
	int gate[2], error[2];
	pid_t pid;

	if (pipe2(gate, O_CLOEXEC))
		return -errno;
	if (pipe2(error, O_CLOEXEC)) {
		close(gate[0]);
		close(gate[1]);
		return -errno;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(gate[0]);
		close(gate[1]);
		close(error[0]);
		close(error[1]);
		return err;
	}
	if (pid == 0) {
		close(gate[1]);
		close(error[0]);
		child_run(gate[0], error[1], path, argv);
	}
	close(gate[0]);
	close(error[1]);
	l->pid = pid;
	l->gate_fd = gate[1];
	l->error_fd = error[0];
	return 0;
}

int launch_release(struct launch *l)
{
	ssize_t n;
	int e = 0;

	close(l->gate_fd);
	l->gate_fd = -1;
	do
		n = read(l->error_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(l->error_fd);
	l->error_fd = -1;
	return n == (ssize_t)sizeof(e) ? -e : 0;
}

int launch_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_NUNATAK_FAILED;
}
