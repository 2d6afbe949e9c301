/* test_unwind_fde — function extents from CFI (unwind_fde_extents(),
 * unwind_fde_extent_find()), checked against oracles that do not read
 * CFI through our code: the symbol table (st_value, st_size) of a program
 * this test builds, readelf's count of libc's FDEs. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/unwind_fixture.h"
#include "userspace/elf/elf_file.h"
#include "userspace/log/log.h"
#include "userspace/unwind/unwind_table.h"

static char tmpdir[PATH_MAX];

static const char workload_src[] =
    "#include <stdlib.h>\n"
    "__attribute__((noinline)) long leaf_c(long x) { return x * 3 + 1; }\n"
    "__attribute__((noinline)) long mid_b(long x) { long s = 0; for (long i = 0; i < x; i++) s += leaf_c(i); return s; }\n"
    "__attribute__((noinline)) long top_a(long x) { return mid_b(x) + mid_b(x / 2); }\n"
    "int main(int argc, char **argv) { return (int)top_a(argc > 1 ? atol(argv[1]) : 10); }\n";

static const char *const funcs[] = { "leaf_c", "mid_b", "top_a", "main" };

static int group_setup(void **state)
{
	(void)state;
	log_set_level(LOG_QUIET);
	return make_tmpdir(tmpdir, sizeof(tmpdir), "unwind-fde");
}

static int group_teardown(void **state)
{
	(void)state;
	return tmpdir[0] ? remove_tree(tmpdir) : 0;
}

/* each function's FDE extent is its symbol's [st_value, st_value + st_size) */
static void check_functions(const char *bin, size_t *n_out)
{
	struct elf_file *f = elf_file__open(bin);
	struct fde_extent *ext = NULL;
	size_t n = 0;
	int fd = open_ro(bin);

	assert_non_null(f);
	assert_int_equal(unwind_fde_extents(fd, &ext, &n), 0);
	close(fd);
	assert_true(n >= 4);
	for (size_t i = 1; i < n; i++)
		assert_true(ext[i - 1].start < ext[i].start ||
			    (ext[i - 1].start == ext[i].start && ext[i - 1].end < ext[i].end));
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		struct elf_symbol s;
		int k;

		assert_int_equal(elf_file__lookup_name(f, funcs[i], &s), 0);
		k = unwind_fde_extent_find(ext, n, s.start + s.size / 2);
		assert_true(k >= 0);
		if (ext[k].start != s.start || ext[k].end != s.start + s.size)
			fail_msg("%s: FDE [%#lx, %#lx) != symbol [%#lx, %#lx)", funcs[i],
				 (unsigned long)ext[k].start, (unsigned long)ext[k].end,
				 (unsigned long)s.start, (unsigned long)(s.start + s.size));
		assert_int_equal(unwind_fde_extent_find(ext, n, s.start), k);
		assert_int_equal(unwind_fde_extent_find(ext, n, s.start + s.size - 1), k);
	}
	*n_out = n;
	free(ext);
	elf_file__free(f);
}

static void test_extents_match_symbols(void **state)
{
	static const char *const eh[] = { "-O2", "-fomit-frame-pointer", NULL };
	/* no unwind tables for the program's own code: its FDEs come from
	 * .debug_frame (crt files keep .eh_frame) */
	static const char *const dbg[] = { "-O2", "-g", "-fno-asynchronous-unwind-tables",
					   "-fno-unwind-tables", NULL };
	size_t n_eh, n_dbg;

	(void)state;
	assert_int_equal(build_c(tmpdir, "w_eh", workload_src, eh), 0);
	assert_int_equal(build_c(tmpdir, "w_dbg", workload_src, dbg), 0);
	check_functions(path_in(tmpdir, "w_eh"), &n_eh);
	check_functions(path_in(tmpdir, "w_dbg"), &n_dbg);
	assert_true(n_dbg >= 4);
}

/* readelf's FDE count of libc (no .debug_frame there) is ours */
static void test_libc_fde_count_matches_readelf(void **state)
{
	char *const argv[] = { "readelf", "--debug-dump=frames", LIBC_PATH, NULL };
	const char *out = path_in(tmpdir, "libc.frames");
	struct fde_extent *ext = NULL;
	size_t n = 0, readelf_fdes = 0, len;
	char *text, *p;
	int fd, rc;

	(void)state;
	SKIP_UNLESS(access(LIBC_PATH, R_OK) == 0, LIBC_PATH " not readable");
	SKIP_UNLESS(have_command("readelf"), "readelf not installed (binutils)");
	/* readelf 2.40 exits 1 here after a complete dump (no .debug_frame to dump) */
	rc = spawn_tool(argv, out);
	assert_true(rc == 0 || rc == 1);
	text = slurp(out, &len);
	assert_non_null(text);
	for (p = text; (p = strstr(p, " FDE cie=")); p++)
		readelf_fdes++;
	free(text);
	fd = open_ro(LIBC_PATH);
	assert_int_equal(unwind_fde_extents(fd, &ext, &n), 0);
	close(fd);
	assert_true(readelf_fdes > 1000);
	assert_int_equal(n, readelf_fdes);
	free(ext);
}

static void test_find_gaps_and_nesting(void **state)
{
	const struct fde_extent e[] = {
		{ 0x100, 0x200 }, { 0x200, 0x280 }, { 0x300, 0x400 }, { 0x340, 0x360 },
		{ 0x340, 0x380 }, { 0x500, 0x501 },
	};
	size_t n = sizeof(e) / sizeof(e[0]);

	(void)state;
	assert_int_equal(unwind_fde_extent_find(e, n, 0xff), -ENOENT);
	assert_int_equal(unwind_fde_extent_find(e, n, 0x100), 0);
	assert_int_equal(unwind_fde_extent_find(e, n, 0x1ff), 0);
	assert_int_equal(unwind_fde_extent_find(e, n, 0x200), 1);
	assert_int_equal(unwind_fde_extent_find(e, n, 0x280), -ENOENT); /* a gap: no neighbour */
	assert_int_equal(unwind_fde_extent_find(e, n, 0x2ff), -ENOENT);
	assert_int_equal(unwind_fde_extent_find(e, n, 0x33f), 2);
	assert_int_equal(unwind_fde_extent_find(e, n, 0x350), 3); /* innermost */
	assert_int_equal(unwind_fde_extent_find(e, n, 0x370), 4);
	assert_int_equal(unwind_fde_extent_find(e, n, 0x390), 2); /* back in the outer one */
	assert_int_equal(unwind_fde_extent_find(e, n, 0x500), 5);
	assert_int_equal(unwind_fde_extent_find(e, n, 0x501), -ENOENT);
	assert_int_equal(unwind_fde_extent_find(e, 0, 0x100), -ENOENT);
}

static void test_errors(void **state)
{
	static const char *const eh[] = { "-O2", NULL };
	char *const strip[] = { "objcopy", "-R", ".eh_frame", "-R", ".eh_frame_hdr",
				(char *)path_in(tmpdir, "w_err"), (char *)path_in(tmpdir, "w_nocfi"), NULL };
	struct fde_extent *ext = (void *)1;
	size_t n = 7;
	int fd;

	(void)state;
	assert_int_equal(write_file(path_in(tmpdir, "not_elf"), "#!/bin/sh\necho hi\n"), 0);
	fd = open_ro(path_in(tmpdir, "not_elf"));
	assert_int_equal(unwind_fde_extents(fd, &ext, &n), -ENOEXEC);
	assert_null(ext);
	assert_int_equal(n, 0);
	close(fd);

	assert_int_equal(build_c(tmpdir, "w_err", workload_src, eh), 0);
	assert_int_equal(spawn_tool(strip, NULL), 0);
	fd = open_ro(path_in(tmpdir, "w_nocfi"));
	assert_int_equal(unwind_fde_extents(fd, &ext, &n), -ENODATA);
	assert_null(ext);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_extents_match_symbols),
	    cmocka_unit_test(test_libc_fde_count_matches_readelf),
	    cmocka_unit_test(test_find_gaps_and_nesting),
	    cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
