/* test_manifest — manifest.json written atomically and read back; what is
 * not a nunatak manifest is refused with the reason. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/aggregator/manifest.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(dir, sizeof(dir), "manifest") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

static json_t *manifest(const char *run_id, json_t *exit_code)
{
	json_t *m = json_pack("{s:{s:s,s:i},s:s,s:o}", "format", "name", MANIFEST_FORMAT, "schema",
			      MANIFEST_SCHEMA, "run_id", run_id, "exit_code", exit_code);

	assert_non_null(m);
	return m;
}

/* the names in dir, sorted, joined by spaces */
static void list_dir(char *out, size_t len)
{
	struct dirent **names;
	int i, n = scandir(dir, &names, NULL, alphasort);

	assert_true(n >= 0);
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..")) {
			if (out[0])
				strncat(out, " ", len - strlen(out) - 1);
			strncat(out, names[i]->d_name, len - strlen(out) - 1);
		}
		free(names[i]);
	}
	free(names);
}

static void test_write_then_read(void **state)
{
	json_t *m1 = manifest("run-1", json_null()), *m2, *got;
	char err[512] = "", names[256];

	(void)state;
	assert_int_equal(manifest_write(dir, m1), 0);
	got = manifest_read(dir, err, sizeof(err));
	assert_non_null(got);
	assert_true(json_equal(got, m1));
	assert_true(json_is_null(json_object_get(got, "exit_code")));
	json_decref(got);

	/* the second write (the Run finalized) replaces the first */
	m2 = manifest("run-1", json_integer(3));
	assert_int_equal(manifest_write(dir, m2), 0);
	got = manifest_read(dir, err, sizeof(err));
	assert_non_null(got);
	assert_true(json_equal(got, m2));
	assert_int_equal(json_integer_value(json_object_get(got, "exit_code")), 3);
	json_decref(got);
	/* no temporary file left behind */
	list_dir(names, sizeof(names));
	assert_string_equal(names, MANIFEST_FILE);
	json_decref(m1);
	json_decref(m2);
}

/* a write that cannot complete leaves the previous manifest whole */
static void test_failed_write_keeps_previous(void **state)
{
	json_t *m1 = manifest("run-2", json_null()), *m2 = manifest("run-2", json_integer(0)), *got;
	char err[512] = "", tmp[PATH_MAX];

	(void)state;
	assert_int_equal(manifest_write(dir, m1), 0);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, MANIFEST_FILE);
	assert_int_equal(mkdir(tmp, 0755), 0); /* the temporary file cannot be created */
	assert_int_equal(manifest_write(dir, m2), -EISDIR);
	got = manifest_read(dir, err, sizeof(err));
	assert_non_null(got);
	assert_true(json_equal(got, m1));
	json_decref(got);
	assert_int_equal(rmdir(tmp), 0);

	assert_int_equal(manifest_write(path_in(dir, "no-such-dir"), m2), -ENOENT);
	json_decref(m1);
	json_decref(m2);
}

static void expect_refused(int want_errno, const char *want_in_err)
{
	char err[512] = "";

	errno = 0;
	assert_null(manifest_read(dir, err, sizeof(err)));
	assert_int_equal(errno, want_errno);
	if (!strstr(err, want_in_err))
		fail_msg("'%s' not in '%s'", want_in_err, err);
}

static void test_refused(void **state)
{
	const char *path = path_in(dir, MANIFEST_FILE);

	(void)state;
	expect_refused(ENOENT, "no manifest");
	expect_refused(ENOENT, dir);

	assert_int_equal(write_file(path, "{\"format\": {\"name\": \"other-tool\", \"schema\": 1}}\n"),
			 0);
	expect_refused(EBADMSG, "not a nunatak manifest");
	assert_int_equal(write_file(path, "{\"format\": {\"name\": 1}}\n"), 0);
	expect_refused(EBADMSG, "not a nunatak manifest");
	assert_int_equal(write_file(path, "{\"name\": \"nunatak-run\"}\n"), 0);
	expect_refused(EBADMSG, "not a nunatak manifest");
	assert_int_equal(write_file(path, "[\"nunatak-run\"]\n"), 0);
	expect_refused(EBADMSG, "not a nunatak manifest");

	/* invalid JSON: the line of the error */
	assert_int_equal(write_file(path, "{\n  \"format\": {\"name\": \"nunatak-run\"},\n  \"run_id\" "
					  "\"x\"\n}\n"),
			 0);
	expect_refused(EBADMSG, "line 3");
	assert_int_equal(write_file(path, ""), 0);
	expect_refused(EBADMSG, MANIFEST_FILE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_write_then_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_write_keeps_previous, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
