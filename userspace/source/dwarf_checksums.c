/* dwarf_checksums — see dwarf_checksums.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/source/dwarf_checksums.h"

#define LINE_MAX_BYTES 8192

void dwarf_checksums_init(struct dwarf_checksums *dc)
{
	memset(dc, 0, sizeof(*dc));
	dc->dir_index = -1;
}

static void free_dirs(struct dwarf_checksums *dc)
{
	size_t i;

	for (i = 0; i < dc->n_dirs; i++)
		free(dc->dirs[i]);
	dc->n_dirs = 0;
}

void dwarf_checksums_release(struct dwarf_checksums *dc)
{
	size_t i;

	for (i = 0; i < dc->n; i++)
		free(dc->files[i].path);
	free(dc->files);
	free_dirs(dc);
	free(dc->dirs);
	free(dc->name);
	dwarf_checksums_init(dc);
}

void dwarf_path_normalize(const char *path, char *out, size_t len)
{
	size_t o = 0;
	const char *p = path;

	while (*p && o + 1 < len) {
		if (p[0] == '/' && p[1] == '/') {
			p++;
			continue;
		}
		if (p[0] == '/' && p[1] == '.' && (p[2] == '/' || !p[2]) && o) {
			p += 2;
			continue;
		}
		out[o++] = *p++;
	}
	out[o] = '\0';
}

/* the text between the first and the last double quote of s */
static char *quoted(const char *s)
{
	const char *a = strchr(s, '"'), *b = strrchr(s, '"');

	if (!a || b <= a)
		return NULL;
	return strndup(a + 1, (size_t)(b - a - 1));
}

/* the file entry being read, named from / and kept */
static int end_file(struct dwarf_checksums *dc)
{
	char joined[PATH_MAX * 2], norm[PATH_MAX];
	const char *dir = "", *base = "";
	struct dwarf_file_checksum *f;

	if (!dc->in_file)
		return 0;
	dc->in_file = 0;
	if (!dc->name)
		return 0;
	if (dc->dir_index >= 0 && (size_t)dc->dir_index < dc->n_dirs)
		dir = dc->dirs[dc->dir_index];
	if (dc->n_dirs && dir[0] != '/')
		base = dc->dirs[0];
	if (dc->name[0] == '/')
		snprintf(joined, sizeof(joined), "%s", dc->name);
	else if (dir[0] == '/' || !base[0])
		snprintf(joined, sizeof(joined), "%s/%s", dir, dc->name);
	else
		snprintf(joined, sizeof(joined), "%s/%s/%s", base, dir, dc->name);
	free(dc->name);
	dc->name = NULL;
	dwarf_path_normalize(joined, norm, sizeof(norm));
	if (dc->n == dc->cap) {
		size_t cap = dc->cap ? dc->cap * 2 : 16;
		void *files = reallocarray(dc->files, cap, sizeof(*dc->files));

		if (!files)
			return -ENOMEM;
		dc->files = files;
		dc->cap = cap;
	}
	f = &dc->files[dc->n];
	f->path = strdup(norm);
	if (!f->path)
		return -ENOMEM;
	f->has_md5 = dc->has_md5;
	memcpy(f->md5, dc->md5, sizeof(f->md5));
	dc->n++;
	return 0;
}

static int add_dir(struct dwarf_checksums *dc, const char *line)
{
	char *dir = quoted(line);

	if (!dir)
		return 0; /* not a quoted path: skipped */
	if (dc->n_dirs == dc->cap_dirs) {
		size_t cap = dc->cap_dirs ? dc->cap_dirs * 2 : 8;
		void *dirs = reallocarray(dc->dirs, cap, sizeof(*dc->dirs));

		if (!dirs) {
			free(dir);
			return -ENOMEM;
		}
		dc->dirs = dirs;
		dc->cap_dirs = cap;
	}
	dc->dirs[dc->n_dirs++] = dir;
	return 0;
}

int dwarf_checksums_feed(struct dwarf_checksums *dc, const char *line)
{
	const char *s = line + strspn(line, " \t");
	int err;

	if (!strncmp(s, "debug_line[", 11)) { /* a new line table */
		err = end_file(dc);
		free_dirs(dc);
		return err;
	}
	if (!strncmp(s, "include_directories[", 20))
		return end_file(dc) ?: add_dir(dc, s);
	if (!strncmp(s, "file_names[", 11)) {
		err = end_file(dc);
		dc->in_file = 1;
		dc->dir_index = -1;
		dc->has_md5 = 0;
		return err;
	}
	if (!dc->in_file)
		return 0;
	if (!strncmp(s, "name:", 5)) {
		free(dc->name);
		dc->name = quoted(s);
	} else if (!strncmp(s, "dir_index:", 10)) {
		dc->dir_index = strtol(s + 10, NULL, 10);
	} else if (!strncmp(s, "md5_checksum:", 13)) {
		dc->has_md5 = !md5_parse_hex(s + 13 + strspn(s + 13, " "), dc->md5);
	} else if (strncmp(s, "mod_time:", 9) && strncmp(s, "length:", 7)) {
		return end_file(dc); /* the rows after the prologue */
	}
	return 0;
}

int dwarf_checksums_finish(struct dwarf_checksums *dc)
{
	return end_file(dc);
}

int dwarf_checksums_lookup(const struct dwarf_checksums *dc, const char *path,
			   unsigned char md5[MD5_DIGEST_BYTES])
{
	char norm[PATH_MAX];
	size_t i;

	dwarf_path_normalize(path, norm, sizeof(norm));
	for (i = 0; i < dc->n; i++) {
		if (!dc->files[i].has_md5 || strcmp(dc->files[i].path, norm))
			continue;
		memcpy(md5, dc->files[i].md5, MD5_DIGEST_BYTES);
		return 1;
	}
	return 0;
}

/* feeds every complete line of buf[0..*len), keeps the rest at its start;
 * an over-long line is cut (it is never a prologue line) */
static int feed_lines(struct dwarf_checksums *dc, char *buf, size_t *len)
{
	char *start = buf, *nl;
	int err = 0;

	while (!err && (nl = memchr(start, '\n', *len - (size_t)(start - buf)))) {
		*nl = '\0';
		err = dwarf_checksums_feed(dc, start);
		start = nl + 1;
	}
	*len -= (size_t)(start - buf);
	memmove(buf, start, *len);
	if (*len == LINE_MAX_BYTES - 1)
		*len = 0;
	return err;
}

static int stream(int fd, long long deadline, struct dwarf_checksums *dc)
{
	char buf[LINE_MAX_BYTES];
	size_t len = 0;
	ssize_t r;
	int err = 0;

	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		long long left = deadline - clock_monotonic_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		r = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		err = feed_lines(dc, buf, &len);
		if (err)
			return err;
	}
	buf[len] = '\0';
	if (len)
		err = dwarf_checksums_feed(dc, buf);
	return err ?: dwarf_checksums_finish(dc);
}

int dwarf_checksums_read(const char *tool, const char *module, int timeout_ms,
			 struct dwarf_checksums *dc)
{
	char *argv[] = {"llvm-dwarfdump", "--debug-line", (char *)module, NULL};
	long long deadline = clock_monotonic_ms() + timeout_ms;
	int pipefd[2], stdio[3], status = 0, err, reap;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	stdio[0] = -1;
	stdio[1] = pipefd[1];
	stdio[2] = -1;
	err = tool_spawn(tool, argv, stdio, &pid);
	close(pipefd[1]);
	if (err) {
		close(pipefd[0]);
		return err;
	}
	err = stream(pipefd[0], deadline, dc);
	close(pipefd[0]);
	reap = tool_reap(pid, err ? 0 : deadline, &status);
	if (!err && reap)
		err = reap;
	if (!err && (!WIFEXITED(status) || WEXITSTATUS(status)))
		err = -EIO;
	if (err)
		pr_debug("'%s --debug-line %s': %s", tool, module, strerror(-err));
	return err;
}
