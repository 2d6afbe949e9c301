/* Tests of report/export_speedscope on the Run of export_fixture.h, the
 * output parsed back (jansson): the schema, one sampled profile per rank
 * (its threads together) then per process and thread, samples root first
 * as indexes into shared.frames, weights adding up to the pivot's, names
 * kept as they are but made UTF-8, a Run without samples, a failed write. */
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
#include <jansson.h>

#include "report/export_speedscope.h"
#include "tests/unit/export_fixture.h"
#include "tests/unit/test_helpers.h"

static char tmpdir[PATH_MAX];

static json_t *export_and_parse(struct pivot *p, const json_t *manifest,
				struct export_speedscope_stats *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_error_t e;
	json_t *doc;

	assert_non_null(f);
	assert_int_equal(export_speedscope(p, manifest, f, st), 0);
	fclose(f);
	doc = json_loads(buf, 0, &e);
	if (!doc)
		fail_msg("not JSON: %s: %s", e.text, buf);
	free(buf);
	return doc;
}

/* sample k of profile pr, frames root first joined by '|' */
static void sample_names(json_t *frames, json_t *pr, size_t k, char *buf, size_t len)
{
	json_t *s = json_array_get(json_object_get(pr, "samples"), k), *i;
	size_t n;

	buf[0] = '\0';
	json_array_foreach(s, n, i)
	{
		json_t *fr = json_array_get(frames, (size_t)json_integer_value(i));

		assert_non_null(fr);
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", n ? "|" : "",
			 json_string_value(json_object_get(fr, "name")));
	}
}

static void test_speedscope_profiles(void **state)
{
	struct pivot *p = efx_build(tmpdir, "ss.sqlite", EFX_ALL);
	json_t *manifest = json_pack("{s:{s:s}}", "run", "name", "solver");
	static const char *const names[] = {"rank 0", "rank 1", "launcher (pid 5, tid 5)"};
	static const json_int_t sums[] = {24, 12, 7};
	struct export_speedscope_stats st;
	json_t *doc, *frames, *profiles, *pr, *w;
	json_int_t total = 0, sum;
	char buf[256];
	size_t i, k;
	int truncated = 0;

	(void)state;
	doc = export_and_parse(p, manifest, &st);
	assert_string_equal(json_string_value(json_object_get(doc, "$schema")),
			    "https://www.speedscope.app/file-format-schema.json");
	assert_string_equal(json_string_value(json_object_get(doc, "name")), "solver");
	frames = json_object_get(json_object_get(doc, "shared"), "frames");
	profiles = json_object_get(doc, "profiles");
	assert_int_equal(json_array_size(frames), 9);
	assert_int_equal(json_array_size(profiles), 3); /* the thread never sampled: none */
	json_array_foreach(profiles, i, pr)
	{
		assert_string_equal(json_string_value(json_object_get(pr, "name")), names[i]);
		assert_string_equal(json_string_value(json_object_get(pr, "type")), "sampled");
		assert_string_equal(json_string_value(json_object_get(pr, "unit")), "none");
		assert_int_equal(json_array_size(json_object_get(pr, "samples")),
				 json_array_size(json_object_get(pr, "weights")));
		sum = 0;
		json_array_foreach(json_object_get(pr, "weights"), k, w)
		{
			sum += json_integer_value(w);
			sample_names(frames, pr, k, buf, sizeof(buf));
			assert_true(strncmp(buf, "main", 4) == 0 || strncmp(buf, "[", 1) == 0 ||
				    strcmp(buf, "a\nnew\\xff") == 0);
			if (!strcmp(buf, "[truncated]|c")) {
				assert_int_equal(json_integer_value(w), 3);
				truncated = 1;
			}
		}
		assert_int_equal(sum, sums[i]);
		assert_int_equal(json_integer_value(json_object_get(pr, "endValue")), sum);
		total += sum;
	}
	assert_true(truncated);
	assert_int_equal(total, EFX_TOTAL);
	assert_int_equal(st.samples, EFX_TOTAL);
	assert_int_equal(st.profiles, 3);
	json_decref(doc);
	json_decref(manifest);
	pivot__free(p);
}

static void test_speedscope_empty_and_errors(void **state)
{
	struct pivot *p = efx_build(tmpdir, "empty.sqlite", EFX_MPI);
	struct export_speedscope_stats st;
	json_t *doc, *profiles;
	FILE *out;

	(void)state;
	doc = export_and_parse(p, NULL, &st);
	profiles = json_object_get(doc, "profiles");
	assert_int_equal(json_array_size(profiles), 1);
	assert_int_equal(json_array_size(json_object_get(json_array_get(profiles, 0), "samples")),
			 0);
	assert_null(st.counter);
	json_decref(doc);
	pivot__free(p);
	assert_int_equal(export_speedscope(NULL, NULL, stdout, NULL), -EINVAL);
	out = fopen("/dev/full", "w");
	if (!out) {
		print_message("SKIPPED: /dev/full cannot be opened here\n");
		return;
	}
	p = efx_build(tmpdir, "full.sqlite", EFX_ALL);
	assert_int_equal(export_speedscope(p, NULL, out, NULL), -ENOSPC);
	fclose(out);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "export_speedscope") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_speedscope_profiles),
	    cmocka_unit_test(test_speedscope_empty_and_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
