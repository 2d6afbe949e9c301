/* kernel_build — see kernel_build.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/calibration/kernel_build.h"
#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"

#define MAX_FLAGS 32

struct kernel_workdir {
	char path[PATH_MAX];
	int dirfd;
};

struct kernel_workdir *kernel_workdir__new(void)
{
	const char *tmp = getenv("TMPDIR");
	struct kernel_workdir *wd = calloc(1, sizeof(*wd));
	int err;

	if (!wd)
		return NULL;
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (snprintf(wd->path, sizeof(wd->path), "%s/nunatak-calibrate.XXXXXX", tmp) >=
	    (int)sizeof(wd->path)) {
		err = ENAMETOOLONG;
		goto cleanup;
	}
	if (!mkdtemp(wd->path)) { /* mode 0700 */
		err = errno;
		goto cleanup;
	}
	wd->dirfd = open(wd->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wd->dirfd < 0) {
		err = errno;
		rmdir(wd->path);
		goto cleanup;
	}
	return wd;
cleanup:
	free(wd);
	errno = err;
	return NULL;
}

void kernel_workdir__free(struct kernel_workdir *wd)
{
	struct dirent *e;
	DIR *d;
	int fd;

	if (!wd)
		return;
	fd = dup(wd->dirfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(wd->dirfd, e->d_name, 0);
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	close(wd->dirfd);
	rmdir(wd->path);
	free(wd);
}

const char *kernel_workdir_path(const struct kernel_workdir *wd)
{
	return wd->path;
}

int kernel_workdir_file(const struct kernel_workdir *wd, const char *file, char *buf, size_t len)
{
	return snprintf(buf, len, "%s/%s", wd->path, file) >= (int)len ? -ENAMETOOLONG : 0;
}

/* a new file of the directory: its descriptor, or -errno */
static int create_file(struct kernel_workdir *wd, const char *name)
{
	int fd = openat(wd->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);

	return fd < 0 ? -errno : fd;
}

int kernel_workdir_write(struct kernel_workdir *wd, const struct kernel_source *src)
{
	size_t len = strlen(src->text), done = 0;
	int fd = create_file(wd, src->file), err = 0;

	if (fd < 0)
		return fd;
	while (done < len) {
		ssize_t n = write(fd, src->text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	if (close(fd) && !err)
		err = -errno;
	return err;
}

int kernel_compiler_find(char *path, size_t len, char *err, size_t errlen)
{
	static const char *const names[] = { "cc", "gcc", "clang" };
	size_t i;
	int ret = -ENOENT;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ret = tool_resolve_trusted(names[i], path, len, err, errlen);
		if (!ret)
			return 0;
	}
	return ret;
}

/* the first line(s) of the compiler's messages into err */
static void read_messages(int fd, char *err, size_t errlen)
{
	ssize_t n;

	if (!errlen)
		return;
	n = pread(fd, err, errlen - 1, 0);
	err[n > 0 ? n : 0] = '\0';
	for (char *p = err; *p; p++)
		if (*p == '\n')
			*p = ' ';
}

int kernel_compile(struct kernel_workdir *wd, const char *compiler, const char *argv0,
		   const char *const flags[], const char *source, const char *binary, char *err,
		   size_t errlen)
{
	char src[PATH_MAX], bin[PATH_MAX], log_name[64];
	char *argv[MAX_FLAGS + 6];
	int argc = 0, ret, status, log_fd, stdio[3];
	pid_t pid;
	size_t i;

	if (kernel_workdir_file(wd, source, src, sizeof(src)) ||
	    kernel_workdir_file(wd, binary, bin, sizeof(bin)))
		return -ENAMETOOLONG;
	argv[argc++] = (char *)(argv0 ? argv0 : compiler);
	for (i = 0; flags && flags[i] && i < MAX_FLAGS; i++)
		argv[argc++] = (char *)flags[i];
	argv[argc++] = "-o";
	argv[argc++] = bin;
	argv[argc++] = src;
	argv[argc] = NULL;
	snprintf(log_name, sizeof(log_name), "%s.log", binary);
	unlinkat(wd->dirfd, log_name, 0); /* a retry of the same build */
	log_fd = create_file(wd, log_name);
	if (log_fd < 0)
		return log_fd;
	stdio[0] = -1, stdio[1] = log_fd, stdio[2] = log_fd;
	ret = tool_spawn(compiler, argv, stdio, &pid);
	if (!ret)
		ret = tool_reap(pid, clock_monotonic_ms() + KERNEL_BUILD_TIMEOUT_MS, &status);
	if (!ret && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		ret = -ENOEXEC;
		read_messages(log_fd, err, errlen);
	} else if (ret) {
		snprintf(err, errlen, "%s", ret == -ETIMEDOUT ? "it took too long" : strerror(-ret));
	}
	close(log_fd);
	return ret;
}
