/* test_helpers — what several unit tests need around the code under test:
 * a temporary directory and files in it, shell commands (compilers,
 * binutils), what nm says about a symbol, and SKIPPED with a reason.
 *
 * Header-only, every function static inline: the Makefile builds each
 * tests/unit/test_X.c alone and links it against libnunatak.a, and a test
 * that does not use a helper must still build under -Werror. Include it
 * after <cmocka.h>. Expected values come from these tools, never from the
 * code under test.
 */
#ifndef NUNATAK_TESTS_TEST_HELPERS_H
#define NUNATAK_TESTS_TEST_HELPERS_H

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Skip the current test, saying why on stdout (tests/run.sh shows it). */
#define SKIP_UNLESS(cond, why)                                                                     \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("SKIPPED: %s\n", why);                                              \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

/* cmocka 1.1 has no assert_double_equal */
#define assert_near(a, b, eps)                                                                     \
	do {                                                                                       \
		double a_ = (a), b_ = (b);                                                         \
		if (!(a_ - b_ <= (eps) && b_ - a_ <= (eps)))                                       \
			fail_msg("%.17g != %.17g", a_, b_);                                        \
	} while (0)

/* Runs the formatted command through the shell: system()'s status, 0 on
 * success; a failure is reported with the command on stderr. */
__attribute__((format(printf, 1, 2))) static inline int run_cmd(const char *fmt, ...)
{
	char cmd[8 * PATH_MAX];
	va_list ap;
	int status;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	status = system(cmd);
	if (status)
		print_error("command failed (%d): %s\n", status, cmd);
	return status;
}

/* 1 if name is a command in PATH, else 0 (quietly) */
static inline int have_command(const char *name)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

/* the llvm-symbolizer to run: $NUNATAK_LLVM_SYMBOLIZER, else the one in
 * PATH, as an absolute path (nunatak runs no bare name); the bare name
 * when none is found (have_command() then says so) */
static inline const char *symbolizer_tool(void)
{
	static char found[PATH_MAX];
	const char *name = getenv("NUNATAK_LLVM_SYMBOLIZER") ?: "llvm-symbolizer";
	char cmd[PATH_MAX + 64];
	FILE *p;

	if (found[0])
		return found;
	if (name[0] == '/')
		return name;
	snprintf(cmd, sizeof(cmd), "command -v '%s' 2>/dev/null", name);
	p = popen(cmd, "r");
	if (p && fgets(found, sizeof(found), p))
		found[strcspn(found, "\n")] = '\0';
	if (p)
		pclose(p);
	if (found[0] != '/')
		found[0] = '\0';
	return found[0] ? found : name;
}

/* 0 or -errno */
static inline int write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	if (!fp)
		return -errno;
	fputs(text, fp);
	return fclose(fp) ? -errno : 0;
}

/* Creates $TMPDIR/nunatak-test-NAME-XXXXXX (/tmp without TMPDIR), its path
 * in buf: 0, or -errno with buf empty. */
static inline int make_tmpdir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/nunatak-test-%s-XXXXXX", getenv("TMPDIR") ?: "/tmp", name);
	if (!mkdtemp(buf)) {
		int err = -errno;

		print_error("cannot create temporary directory '%s': %s\n", buf, strerror(errno));
		buf[0] = '\0';
		return err;
	}
	return 0;
}

/* dir/name in one of 8 static buffers, reused in turn: enough for the
 * paths of one call */
static inline const char *path_in(const char *dir, const char *name)
{
	static char paths[8][PATH_MAX];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, PATH_MAX, "%s/%s", dir, name);
	return p;
}

static inline int remove_tree_entry(const char *path, const struct stat *sb, int flag,
				    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes dir and all below it: 0, or -1 if anything could not be removed.
 * An empty dir (never created) is nothing to remove. */
static inline int remove_tree(const char *dir)
{
	if (!dir[0])
		return 0;
	return nftw(dir, remove_tree_entry, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}

struct nm_symbol {
	uint64_t addr, size; /* size 0 when nm knows none */
};

/* The last definition of name in path as nm prints it (raw, mangled names;
 * options "-D" for the .dynsym): 0, -ENOENT if nm has none, or -errno. */
static inline int nm_lookup_with(const char *options, const char *path, const char *name,
				 struct nm_symbol *out)
{
	char cmd[PATH_MAX + 64], line[1024];
	int found = -ENOENT;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -P --defined-only %s '%s' 2>/dev/null", options, path);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a, s = 0;
		char type, sym[512];

		if (sscanf(line, "%511s %c %llx %llx", sym, &type, &a, &s) >= 3 &&
		    strcmp(sym, name) == 0) {
			out->addr = a;
			out->size = s;
			found = 0;
		}
	}
	pclose(p);
	return found;
}

/* name in path's .symtab, as nm_lookup_with() */
static inline int nm_lookup(const char *path, const char *name, struct nm_symbol *out)
{
	return nm_lookup_with("", path, name, out);
}

#endif
