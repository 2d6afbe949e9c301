/* Tests of report/export_folded on pivots built here (stacks_fixture.h):
 * frames root first, the count after the last space, lines of one folded
 * stack merged (two addresses of one function, two Loci), counts adding
 * up to the Run's samples, [truncated] at the root, kernel frames by their
 * Hotspot, MODULE+0xOFFSET without one, names made parseable (';', control
 * characters, bytes that are not UTF-8), nothing for a Run without
 * samples, and a failed write said. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/export_folded.h"
#include "tests/unit/stacks_fixture.h"
#include "tests/unit/test_helpers.h"

static char tmpdir[PATH_MAX];

enum { M_APP, M_LIBX, M_KERNEL };

static const struct sfx_module modules[] = {
    [M_APP] = {"a1", "/opt/app/app", "app", 1},
    [M_LIBX] = {"x1", "/opt/app/libx.so", "libx.so", 0}, /* never attributed */
    [M_KERNEL] = {"pseudo:kernel", "[kernel]", "[kernel]", 1},
};

static const struct sfx_name names[] = {
    {M_APP, 0x100, "c", RESOLUTION_FUNCTION},
    {M_APP, 0x104, "c", RESOLUTION_FUNCTION}, /* another address of c */
    {M_APP, 0x200, "b;weird", RESOLUTION_FUNCTION},
    {M_APP, 0x300, "main", RESOLUTION_FUNCTION},
    {M_APP, 0x400, "a\nnew\xff", RESOLUTION_SYMBOL},
    {M_KERNEL, 0x50, "clear_page_erms", RESOLUTION_SYMBOL},
};

static const struct sfx_locus loci[] = {{10, 10, "app", "/opt/app/app"},
					{10, 11, "app", "/opt/app/app"}};

static const struct sfx_stack stacks[] = {
    {0, 3, {{M_APP, 0x100}, {M_APP, 0x200}, {M_APP, 0x300}}},
    {0, 3, {{M_APP, 0x104}, {M_APP, 0x200}, {M_APP, 0x300}}},
    {1, 1, {{M_APP, 0x100}}},
    {0, 4, {{M_KERNEL, 0x50}, {M_APP, 0x100}, {M_LIBX, 0x7000}, {M_APP, 0x300}}},
    {0, 1, {{M_APP, 0x400}}},
    {0, 2, {{M_LIBX, 0x7000}, {M_APP, 0x300}}},
};

static const struct sfx_sample samples[] = {
    {0, 0, 6, 0}, {1, 0, 4, 0}, {0, 1, 5, 0}, {1, 2, 3, 0},
    {0, 3, 4, 1}, {0, 4, 2, 0}, {1, 5, 1, 0},
};

static const char expected[] = "[truncated];c 3\n"
			       "a?new\\xff 2\n"
			       "main;b:weird;c 15\n"
			       "main;libx.so+0x7000 1\n"
			       "main;libx.so+0x7000;c;clear_page_erms 4\n";

static char *export_to_string(struct pivot *p, struct export_folded_stats *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(export_folded(p, f, st), 0);
	fclose(f);
	return buf;
}

static void test_folded_lines(void **state)
{
	struct sfx f = {modules, 3, loci, 2, stacks, 6, samples, 7, NULL, 0, names, 6};
	struct pivot *p = sfx_build(tmpdir, "folded.sqlite", &f);
	struct export_folded_stats st;
	uint64_t total = 0, sum = 0;
	char *text, *line, *save = NULL, *space;

	(void)state;
	text = export_to_string(p, &st);
	if (strcmp(text, expected))
		fail_msg("folded output:\n%s\nexpected:\n%s", text, expected);
	assert_string_equal(st.counter, "cpu-clock");
	assert_int_equal(st.lines, 5);
	assert_int_equal(st.stacks, 6);
	assert_int_equal(st.truncated, 3);
	/* the counts add up to the Run's samples, read back as a tool would */
	assert_int_equal(pivot_sample_total(p, &total), 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		space = strrchr(line, ' ');
		assert_non_null(space);
		sum += strtoull(space + 1, NULL, 10);
	}
	assert_int_equal(total, 25);
	assert_int_equal(sum, total);
	assert_int_equal(st.samples, total);
	free(text);
	pivot__free(p);
}

static void test_folded_names(void **state)
{
	char *s;

	(void)state;
	s = export_folded_name("std::vector<int, std::allocator<int> >::push_back(int&&)");
	assert_string_equal(s, "std::vector<int, std::allocator<int> >::push_back(int&&)");
	free(s);
	s = export_folded_name("a;b\tc\r\n\x7f\xc3\xa9\xc3");
	assert_string_equal(s, "a:b?c???\xc3\xa9\\xc3");
	free(s);
}

static void test_folded_empty_and_errors(void **state)
{
	struct sfx f = {modules, 3, loci, 2, NULL, 0, NULL, 0, NULL, 0, names, 6};
	struct sfx full = {modules, 3, loci, 2, stacks, 6, samples, 7, NULL, 0, names, 6};
	struct pivot *p = sfx_build(tmpdir, "empty.sqlite", &f);
	struct export_folded_stats st;
	FILE *out;
	char *text;

	(void)state;
	text = export_to_string(p, &st);
	assert_string_equal(text, "");
	assert_null(st.counter);
	assert_int_equal(st.samples, 0);
	free(text);
	pivot__free(p);
	assert_int_equal(export_folded(NULL, stdout, NULL), -EINVAL);
	/* a write that fails is said, not a short file called done */
	out = fopen("/dev/full", "w");
	if (!out) {
		print_message("SKIPPED: /dev/full cannot be opened here\n");
		return;
	}
	p = sfx_build(tmpdir, "full.sqlite", &full);
	assert_int_equal(export_folded(p, out, NULL), -ENOSPC);
	fclose(out);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "export") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_folded_lines),
	    cmocka_unit_test(test_folded_names),
	    cmocka_unit_test(test_folded_empty_and_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
