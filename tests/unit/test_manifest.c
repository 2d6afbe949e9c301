/* test_manifest — manifest.json written atomically and read back; what is
 * not a nunatak manifest is refused with the reason, a FIFO, a link, a
 * directory or a file over 16 MiB at its name at once, without blocking; written under the
 * Run directory's descriptor, 0600, it never follows a link planted at its
 * temporary name nor a Run directory swapped for a link; when a manifest
 * says its Run was finalized. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
static int run_fd = -1; /* dir, as the Aggregator holds its Run directory */

static int setup(void **state)
{
	(void)state;
	if (make_tmpdir(dir, sizeof(dir), "manifest"))
		return -1;
	run_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return run_fd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	close(run_fd);
	run_fd = -1;
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
	assert_int_equal(manifest_write(run_fd, m1), 0);
	got = manifest_read(dir, err, sizeof(err));
	assert_non_null(got);
	assert_true(json_equal(got, m1));
	assert_true(json_is_null(json_object_get(got, "exit_code")));
	json_decref(got);

	/* the second write (the Run finalized) replaces the first */
	m2 = manifest("run-1", json_integer(3));
	assert_int_equal(manifest_write(run_fd, m2), 0);
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
	assert_int_equal(manifest_write(run_fd, m1), 0);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, MANIFEST_FILE);
	assert_int_equal(mkdir(tmp, 0755), 0); /* the temporary file cannot be created */
	assert_int_equal(manifest_write(run_fd, m2), -EISDIR);
	got = manifest_read(dir, err, sizeof(err));
	assert_non_null(got);
	assert_true(json_equal(got, m1));
	json_decref(got);
	assert_int_equal(rmdir(tmp), 0);

	assert_int_equal(manifest_write(-1, m2), -EBADF);
	json_decref(m1);
	json_decref(m2);
}

/* the whole content of path in buf ("" when it cannot be read) */
static void read_all(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

/* A symbolic link planted at the temporary name (another user's, or a
 * crashed writer's leftover) is never followed: the file it points to
 * keeps its content, and the manifest is a new 0600 regular file. */
static void test_link_at_temporary_name_not_followed(void **state)
{
	json_t *m = manifest("run-3", json_integer(0)), *got;
	char victim[PATH_MAX], tmp[PATH_MAX], content[256], err[512] = "";
	struct stat st;

	(void)state;
	snprintf(victim, sizeof(victim), "%s.victim", dir);
	assert_int_equal(write_file(victim, "root-only secret\n"), 0);
	assert_int_equal(chmod(victim, 0600), 0);
	snprintf(tmp, sizeof(tmp), "%s/%s", dir, MANIFEST_TMP_FILE);
	assert_int_equal(symlink(victim, tmp), 0);

	assert_int_equal(manifest_write(run_fd, m), 0);
	read_all(victim, content, sizeof(content));
	assert_string_equal(content, "root-only secret\n");
	assert_int_equal(lstat(path_in(dir, MANIFEST_FILE), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	got = manifest_read(dir, err, sizeof(err));
	assert_non_null(got);
	assert_true(json_equal(got, m));
	json_decref(got);
	assert_int_equal(lstat(tmp, &st), -1); /* the link is gone, nothing replaced it */
	unlink(victim);
	json_decref(m);
}

/* The Run directory renamed and replaced by a link to another directory
 * while the Run is written: the manifest still lands in the real one,
 * through the descriptor, and the other directory is untouched. */
static void test_directory_swapped_for_link(void **state)
{
	json_t *m = manifest("run-4", json_integer(7)), *got;
	char moved[PATH_MAX], other[PATH_MAX], content[256], err[512] = "";
	mode_t old_umask;
	struct stat st;

	(void)state;
	snprintf(moved, sizeof(moved), "%s.moved", dir);
	snprintf(other, sizeof(other), "%s.other", dir);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(write_file(path_in(other, MANIFEST_FILE), "other's manifest\n"), 0);
	assert_int_equal(rename(dir, moved), 0);
	assert_int_equal(symlink(other, dir), 0);

	old_umask = umask(0); /* 0600 whatever the umask */
	assert_int_equal(manifest_write(run_fd, m), 0);
	umask(old_umask);
	read_all(path_in(other, MANIFEST_FILE), content, sizeof(content));
	assert_string_equal(content, "other's manifest\n");
	assert_int_equal(stat(path_in(other, MANIFEST_TMP_FILE), &st), -1);
	got = manifest_read(moved, err, sizeof(err));
	assert_non_null(got);
	assert_true(json_equal(got, m));
	json_decref(got);
	assert_int_equal(stat(path_in(moved, MANIFEST_FILE), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	assert_int_equal(unlink(dir), 0);
	assert_int_equal(rename(moved, dir), 0);
	remove_tree(other);
	json_decref(m);
}

static void test_finalized(void **state)
{
	json_t *m;

	(void)state;
	m = json_pack("{s:{s:n}, s:[]}", "run", "exit_code", "degradations");
	assert_int_equal(manifest_finalized(m), 0); /* the first manifest */
	json_object_set_new(json_object_get(m, "run"), "exit_code", json_integer(0));
	assert_int_equal(manifest_finalized(m), 1);
	json_object_set_new(json_object_get(m, "run"), "exit_code", json_null());
	json_array_append_new(json_object_get(m, "degradations"),
			      json_pack("{s:s}", "name", "samples-dropped"));
	assert_int_equal(manifest_finalized(m), 0);
	json_array_append_new(json_object_get(m, "degradations"),
			      json_pack("{s:s}", "name", "run-interrupted"));
	assert_int_equal(manifest_finalized(m), 1); /* finalized late, without exit code */
	json_decref(m);
	assert_int_equal(manifest_finalized(NULL), 0);
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

	assert_int_equal(
	    write_file(path, "{\"format\": {\"name\": \"other-tool\", \"schema\": 1}}\n"), 0);
	expect_refused(EBADMSG, "not a nunatak manifest");
	assert_int_equal(write_file(path, "{\"format\": {\"name\": 1}}\n"), 0);
	expect_refused(EBADMSG, "not a nunatak manifest");
	assert_int_equal(write_file(path, "{\"name\": \"nunatak-run\"}\n"), 0);
	expect_refused(EBADMSG, "not a nunatak manifest");
	assert_int_equal(write_file(path, "[\"nunatak-run\"]\n"), 0);
	expect_refused(EBADMSG, "not a nunatak manifest");

	/* invalid JSON: the line of the error */
	assert_int_equal(write_file(path,
				    "{\n  \"format\": {\"name\": \"nunatak-run\"},\n  \"run_id\" "
				    "\"x\"\n}\n"),
			 0);
	expect_refused(EBADMSG, "line 3");
	assert_int_equal(write_file(path, ""), 0);
	expect_refused(EBADMSG, MANIFEST_FILE);
}

/* A FIFO, a link, a directory or a huge file at manifest.json: refused
 * at once, never opened blocking (alarm: a blocked open fails the test
 * instead of hanging it) */
static void test_not_a_regular_manifest(void **state)
{
	const char *path = path_in(dir, MANIFEST_FILE);
	int fd;

	(void)state;
	alarm(10);
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_refused(EINVAL, "not a regular file but a FIFO");
	expect_refused(EINVAL, path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/hostname", path), 0);
	expect_refused(ELOOP, "a symbolic link");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	expect_refused(EINVAL, "a directory");
	assert_int_equal(rmdir(path), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, MANIFEST_MAX_BYTES + 1), 0);
	close(fd);
	expect_refused(EFBIG, "16 MiB");
	assert_int_equal(unlink(path), 0);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_write_then_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_write_keeps_previous, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_a_regular_manifest, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_link_at_temporary_name_not_followed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_directory_swapped_for_link, setup, teardown),
	    cmocka_unit_test(test_finalized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
