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
#include "userspace/config/trust.h"
#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"

#define MAX_FLAGS 32

struct kernel_workdir {
	char path[PATH_MAX];
	int dirfd;
};

/* $TMPDIR when nobody else can rename what we make in it (trust.h: owned
 * by us or root, not writable by others unless sticky, up to "/"), else
 * /tmp: a kernel is run by its path, which must stay ours */
static const char *base_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	if (!tmp || tmp[0] != '/' || trust_open_dir_chain(NULL, tmp, &fd, NULL, 0))
		return "/tmp";
	close(fd);
	return tmp;
}

struct kernel_workdir *kernel_workdir__new(void)
{
	struct kernel_workdir *wd = calloc(1, sizeof(*wd));
	struct stat st;
	int err;

	if (!wd)
		return NULL;
	if (snprintf(wd->path, sizeof(wd->path), "%s/nunatak-calibrate.XXXXXX", base_dir()) >=
	    (int)sizeof(wd->path)) {
		err = ENAMETOOLONG;
		goto cleanup;
	}
	if (!mkdtemp(wd->path)) { /* mode 0700 */
		err = errno;
		goto cleanup;
	}
	wd->dirfd = open(wd->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wd->dirfd < 0 || fstat(wd->dirfd, &st) || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0700) {
		err = wd->dirfd < 0 ? errno : EPERM;
		if (wd->dirfd >= 0)
			close(wd->dirfd);
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

int kernel_workdir_read(const struct kernel_workdir *wd, const char *file, char *buf, size_t len)
{
	int fd = openat(wd->dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ret = 0;
	size_t done = 0;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	if (fd < 0)
		return -errno;
	while (done + 1 < len) {
		ssize_t n = read(fd, buf + done, len - 1 - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		done += (size_t)n;
	}
	buf[done] = '\0';
	close(fd);
	return ret;
}

/* A tool's messages as one line: newlines and tabs as spaces, rules of
 * dashes (Open MPI frames its messages with them) and runs of blanks
 * dropped, at most @len - 1 bytes. */
static void one_line(const char *text, char *out, size_t len)
{
	size_t o = 0;
	const char *p;

	for (p = text; *p && o + 1 < len; p++) {
		char c = *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : *p;

		if ((c == '-' || c == '=' || c == '*') && p[1] == c && p[2] == c) {
			while (p[1] == c)
				p++;
			continue;
		}
		if (c == ' ' && (!o || out[o - 1] == ' '))
			continue;
		out[o++] = c;
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

/* how @argv0 ended, with the start of DIR/@name.err */
static void say_end(const struct kernel_workdir *wd, const char *argv0, const char *name, int ret,
		    int status, int timeout_ms, char *why, size_t whylen)
{
	char file[NAME_MAX], messages[2048], line[512];

	snprintf(file, sizeof(file), "%s.err", name);
	kernel_workdir_read(wd, file, messages, sizeof(messages));
	one_line(messages, line, sizeof(line));
	if (ret == -ETIMEDOUT)
		snprintf(why, whylen, "'%s' did not end within %d s", argv0, timeout_ms / 1000);
	else if (ret)
		snprintf(why, whylen, "cannot run '%s': %s", argv0, strerror(-ret));
	else if (WIFEXITED(status))
		snprintf(why, whylen, "'%s' exited with status %d%s%s", argv0, WEXITSTATUS(status),
			 line[0] ? ": " : "", line);
	else
		snprintf(why, whylen, "'%s' was killed by signal %d%s%s", argv0, WTERMSIG(status),
			 line[0] ? ": " : "", line);
}

int kernel_workdir_run(struct kernel_workdir *wd, const char *path, char *const argv[],
		       const char *name, int timeout_ms, char *why, size_t whylen)
{
	char out_name[NAME_MAX], err_name[NAME_MAX];
	int ret, status = 0, stdio[3] = { -1, -1, -1 };
	pid_t pid;

	snprintf(out_name, sizeof(out_name), "%s.out", name);
	snprintf(err_name, sizeof(err_name), "%s.err", name);
	unlinkat(wd->dirfd, out_name, 0); /* a retry of the same step */
	unlinkat(wd->dirfd, err_name, 0);
	stdio[1] = create_file(wd, out_name);
	stdio[2] = create_file(wd, err_name);
	ret = stdio[1] < 0 ? stdio[1] : stdio[2] < 0 ? stdio[2] : 0;
	if (!ret)
		ret = tool_spawn(path, argv, stdio, &pid);
	if (!ret)
		ret = tool_reap(pid, clock_monotonic_ms() + timeout_ms, &status);
	if (stdio[1] >= 0)
		close(stdio[1]);
	if (stdio[2] >= 0)
		close(stdio[2]);
	if (!ret && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	say_end(wd, argv[0], name, ret, status, timeout_ms, why, whylen);
	return ret ? ret : -ENOEXEC;
}

int kernel_compile(struct kernel_workdir *wd, const char *compiler, const char *argv0,
		   const char *const flags[], const char *source, const char *binary, char *err,
		   size_t errlen)
{
	char src[PATH_MAX], bin[PATH_MAX];
	char *argv[MAX_FLAGS + 6];
	int argc = 0;
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
	return kernel_workdir_run(wd, compiler, argv, binary, KERNEL_BUILD_TIMEOUT_MS, err, errlen);
}
