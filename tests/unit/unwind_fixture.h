/* unwind_fixture — what the unwind-table tests share: running a tool
 * (gcc, readelf, objcopy) by execve with an argv, never a shell, its
 * stdout into a file; building a small C workload into a temporary
 * directory; opening a file read-only for the fd-based compiler.
 *
 * Header-only (static inline), included after <cmocka.h> and
 * tests/unit/test_helpers.h.
 */
#ifndef NUNATAK_TESTS_UNWIND_FIXTURE_H
#define NUNATAK_TESTS_UNWIND_FIXTURE_H

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/unwind/unwind_table.h"

extern char **environ;

/* Runs argv[0] (an absolute path, or a name searched in PATH) with argv,
 * stdout into out_path (NULL: /dev/null), stderr inherited: its exit
 * status, -1 when it could not run or died of a signal. */
static inline int spawn_tool(char *const argv[], const char *out_path)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out_path ? out_path : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		print_error("cannot run '%s': %s\n", argv[0], strerror(rc));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Writes src to dir/name.c and compiles it with gcc and the options
 * (a NULL-terminated list) into dir/name: 0 or the failure status. */
static inline int build_c(const char *dir, const char *name, const char *src,
			  const char *const *options)
{
	char c_path[PATH_MAX], bin[PATH_MAX];
	char *argv[32];
	size_t n = 0;

	snprintf(c_path, sizeof(c_path), "%s/%s.c", dir, name);
	snprintf(bin, sizeof(bin), "%s/%s", dir, name);
	if (write_file(c_path, src))
		return -1;
	argv[n++] = (char *)"gcc";
	for (size_t i = 0; options[i] && n < 28; i++)
		argv[n++] = (char *)options[i];
	argv[n++] = (char *)"-o";
	argv[n++] = bin;
	argv[n++] = c_path;
	argv[n] = NULL;
	return spawn_tool(argv, NULL);
}

/* open(path, O_RDONLY|O_CLOEXEC), failing the test when it cannot */
static inline int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("cannot open '%s': %s", path, strerror(errno));
	return fd;
}

/* the whole of path, NUL-terminated, malloc'ed; NULL on failure */
static inline char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!fp)
		return NULL;
	for (;;) {
		if (cap - n < 65536) {
			char *b = realloc(buf, cap + (1 << 20));

			if (!b)
				break;
			buf = b;
			cap += 1 << 20;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, fp);

		n += r;
		if (r == 0)
			break;
	}
	fclose(fp);
	if (buf)
		buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"

/* A compiled table, for the tests: rows and the dictionary they index */
struct table_fixture {
	struct unwind_rules *rules;
	struct unwind_row *rows;
	size_t n;
	struct unwind_table_stats st;
};

/* compiles path into t (a fresh dictionary): unwind_table_compile's result */
static inline int table_compile_path(const char *path, struct table_fixture *t)
{
	int fd = open_ro(path), err;

	memset(t, 0, sizeof(*t));
	t->rules = unwind_rules__new();
	assert_non_null(t->rules);
	err = unwind_table_compile(fd, t->rules, &t->rows, &t->n, &t->st);
	close(fd);
	return err;
}

static inline void table_release(struct table_fixture *t)
{
	free(t->rows);
	unwind_rules__free(t->rules);
	memset(t, 0, sizeof(*t));
}

/* The rule that covers file offset off, as the in-kernel unwinder finds
 * it (the last row whose pc <= off); the INVALID rule before the first */
static inline const struct unwind_rule *table_rule_at(const struct table_fixture *t, uint64_t off)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return unwind_rules_get(t->rules, lo ? t->rows[lo - 1].rule : 0);
}

/* the row (index) that covers off, -1 before the first */
static inline long table_row_at(const struct table_fixture *t, uint64_t off)
{
	long i = -1;

	for (size_t lo = 0, hi = t->n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= off) {
			i = (long)mid;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return i;
}

#endif
