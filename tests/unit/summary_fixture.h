/* summary_fixture — the summary's text as a string, and a check that it
 * holds a piece of text, for the unit tests of what the summary prints
 * (test_summary, test_diagnostic, test_summary_processes,
 * test_processes_executables).
 *
 * Header-only, static inline (each test is built alone, under -Werror).
 * Include it after <cmocka.h> and report/summary.h.
 */
#ifndef NUNATAK_TESTS_SUMMARY_FIXTURE_H
#define NUNATAK_TESTS_SUMMARY_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what summary_print_of wrote, NUL-terminated; caller frees */
static inline char *print_to_string(const struct diagnosis *d, struct pivot *p)
{
	/* the stream's buffer pointer on the heap: gcc 12's -Wdangling-pointer
	 * takes a local one, kept by the stream, for a dangling pointer */
	struct {
		char *buf;
		size_t len;
	} *m = calloc(1, sizeof(*m));
	char *buf;
	FILE *f;

	assert_non_null(m);
	f = open_memstream(&m->buf, &m->len);
	assert_non_null(f);
	assert_int_equal(summary_print_of(f, d, p), 0);
	fclose(f);
	buf = m->buf;
	free(m);
	return buf;
}

/* fails unless needle is in text; cmocka cuts its messages, so the whole
 * text goes to stderr */
static inline void assert_contains(const char *text, const char *needle)
{
	if (!strstr(text, needle)) {
		fprintf(stderr, "missing:\n%s\nin:\n%s\n", needle, text);
		fail_msg("missing text (see above)");
	}
}

#endif
