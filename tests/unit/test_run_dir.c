/* Tests of userspace/cli/run_dir: the runs directory created 0700 when
 * missing and refused when another user owns it, when its group or anyone
 * may write it without the sticky bit, when it is a symbolic link, or when
 * it is reached through a directory or a link another user owns (nothing
 * created, the message names it, its owner and the way out); a plain
 * run_dir_find() skipping Runs of another user and links; Run directories 0700
 * whatever the umask, names never hidden ("." and ".." included) and found
 * again by run_dir_find(); a path too long or a full file system said in
 * words; run_dir_discard() removing only a Run of nunatak's own files;
 * run_dir_lock() seeing a writer's lock. Root-only cases (chown, mount)
 * are skipped otherwise. The CLI is not in libnunatak.a: the module is
 * compiled in here. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/aggregator/run_dir.c"

static char tmpdir[PATH_MAX];
static const time_t when = 1764580000; /* a fixed second: suffixes -2, -3 */

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "run-dir") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

static int entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void assert_in(const char *needle, const char *haystack)
{
	if (!strstr(haystack, needle))
		fail_msg("'%s' not in '%s'", needle, haystack);
}

static void test_create_private(void **state)
{
	char runs[PATH_MAX], path[PATH_MAX], path2[PATH_MAX], err[1024] = "";
	struct stat st, got;
	mode_t old_umask;

	(void)state;
	snprintf(runs, sizeof(runs), "%s/a/b/runs/", tmpdir); /* parents missing */
	old_umask = umask(0);
	assert_int_equal(
	    run_dir_create(runs, "solver", when, path, sizeof(path), &st, err, sizeof(err)), 0);
	umask(old_umask);
	assert_int_equal(stat(path, &got), 0);
	assert_int_equal(got.st_mode & 07777, 0700);
	assert_int_equal(got.st_dev, st.st_dev);
	assert_int_equal(got.st_ino, st.st_ino);
	assert_int_equal(got.st_uid, geteuid());
	assert_int_equal(stat(path_in(tmpdir, "a/b/runs"), &got), 0);
	assert_int_equal(got.st_mode & 07777, 0700); /* the runs directory itself */
	assert_int_equal(stat(path_in(tmpdir, "a/b"), &got), 0);
	assert_int_equal(got.st_mode & 07777, 0755);
	assert_in("/solver-", path);

	old_umask = umask(0077);
	assert_int_equal(
	    run_dir_create(runs, "solver", when, path2, sizeof(path2), NULL, err, sizeof(err)), 0);
	umask(old_umask);
	assert_string_not_equal(path, path2);
	assert_in("-2", strrchr(path2, '-'));
}

/* "." and ".." become "_" and "_."; "--name ." is found again */
static void test_names_never_hidden(void **state)
{
	static const char *const names[] = {".", "..", ".hidden", "a/../b", "", NULL};
	static const char *const want[] = {"_-", "_.-", "_hidden-", "a_.._b-", "run-", NULL};
	char runs[PATH_MAX], path[PATH_MAX], found[PATH_MAX], err[1024] = "";
	const char *base;
	int i;

	(void)state;
	snprintf(runs, sizeof(runs), "%s/runs", tmpdir);
	for (i = 0; names[i]; i++) {
		assert_int_equal(run_dir_create(runs, names[i], when + i, path, sizeof(path), NULL,
						err, sizeof(err)),
				 0);
		base = strrchr(path, '/') + 1;
		if (strncmp(base, want[i], strlen(want[i])))
			fail_msg("name '%s' gave '%s', expected '%s...'", names[i], base, want[i]);
		assert_int_equal(strncmp(path, runs, strlen(runs)), 0);
		assert_null(strchr(base, '/'));
	}
	/* the "." Run, made the most recent, is the one summary finds */
	assert_int_equal(
	    run_dir_create(runs, ".", when + 100, path, sizeof(path), NULL, err, sizeof(err)), 0);
	assert_int_equal(write_file(path_in(path, MANIFEST_FILE), "{}\n"), 0);
	assert_int_equal(run_dir_find(runs, NULL, found, sizeof(found), err, sizeof(err)), 0);
	assert_string_equal(found, path);
}

static void expect_refused(const char *runs, int want, const char *const *words)
{
	char path[PATH_MAX] = "", err[1024] = "";
	int i;

	assert_int_equal(
	    run_dir_create(runs, "x", when, path, sizeof(path), NULL, err, sizeof(err)), want);
	for (i = 0; words[i]; i++)
		assert_in(words[i], err);
}

static void test_runs_dir_refused(void **state)
{
	char runs[PATH_MAX], link[PATH_MAX];
	struct passwd *nobody = getpwnam("nobody");

	(void)state;
	snprintf(runs, sizeof(runs), "%s/open", tmpdir);
	assert_int_equal(mkdir(runs, 0700), 0);
	assert_int_equal(chmod(runs, 0777), 0);
	expect_refused(runs, -EPERM,
		       (const char *const[]){runs, "writable by every user", "chmod o-w", NULL});
	assert_int_equal(entries(runs), 0);
	assert_int_equal(chmod(runs, 01777), 0); /* sticky, as /tmp: accepted */
	expect_refused(runs, 0, (const char *const[]){NULL});

	snprintf(link, sizeof(link), "%s/link", tmpdir);
	assert_int_equal(symlink(runs, link), 0);
	expect_refused(link, -ELOOP, (const char *const[]){link, "symbolic link", NULL});

	SKIP_UNLESS(geteuid() == 0 && nobody, "chown to 'nobody' needs root and the user");
	snprintf(runs, sizeof(runs), "%s/theirs", tmpdir);
	assert_int_equal(mkdir(runs, 0755), 0);
	assert_int_equal(chown(runs, nobody->pw_uid, nobody->pw_gid), 0);
	expect_refused(runs, -EPERM,
		       (const char *const[]){runs, "owned by nobody", "-o DIR", NULL});
	assert_int_equal(entries(runs), 0);
}

/* writable by its group: refused as by others, unless sticky */
static void test_runs_dir_group_writable(void **state)
{
	char runs[PATH_MAX];

	(void)state;
	snprintf(runs, sizeof(runs), "%s/group", tmpdir);
	assert_int_equal(mkdir(runs, 0700), 0);
	assert_int_equal(chmod(runs, 0770), 0);
	expect_refused(runs, -EPERM,
		       (const char *const[]){runs, "writable by its group", "chmod g-w", NULL});
	assert_int_equal(entries(runs), 0);
	assert_int_equal(chmod(runs, 01770), 0);
	expect_refused(runs, 0, (const char *const[]){NULL});
}

/* the directories above the runs directory: checked as trust.h says, a
 * link on the way followed only where nobody else could change it */
static void test_runs_dir_chain(void **state)
{
	char good[PATH_MAX], theirs[PATH_MAX], runs[PATH_MAX], link[PATH_MAX];
	struct passwd *nobody = getpwnam("nobody");

	(void)state;
	SKIP_UNLESS(geteuid() == 0 && nobody, "chown to 'nobody' needs root and the user");
	snprintf(good, sizeof(good), "%s/good", tmpdir);
	assert_int_equal(mkdir(good, 0755), 0);
	/* a root link in a root directory: followed */
	snprintf(link, sizeof(link), "%s/alias", tmpdir);
	assert_int_equal(symlink(good, link), 0);
	snprintf(runs, sizeof(runs), "%s/runs", link);
	expect_refused(runs, 0, (const char *const[]){NULL});
	/* the same link in a directory nobody owns: nobody can point it elsewhere */
	snprintf(theirs, sizeof(theirs), "%s/theirs", tmpdir);
	assert_int_equal(mkdir(theirs, 0755), 0);
	snprintf(link, sizeof(link), "%s/theirs/alias", tmpdir);
	assert_int_equal(symlink(good, link), 0);
	assert_int_equal(chown(theirs, nobody->pw_uid, nobody->pw_gid), 0);
	snprintf(runs, sizeof(runs), "%s/runs2", link);
	expect_refused(runs, -EPERM, (const char *const[]){runs, "nobody", theirs, NULL});
	assert_int_equal(access(path_in(good, "runs2"), F_OK), -1);
	/* a link nobody owns in a sticky directory */
	assert_int_equal(chmod(tmpdir, 01777), 0);
	snprintf(link, sizeof(link), "%s/their-link", tmpdir);
	assert_int_equal(symlink(good, link), 0);
	assert_int_equal(lchown(link, nobody->pw_uid, nobody->pw_gid), 0);
	snprintf(runs, sizeof(runs), "%s/runs3", link);
	expect_refused(runs, -EPERM,
		       (const char *const[]){"symbolic link owned by nobody", link, NULL});
	assert_int_equal(chmod(tmpdir, 0700), 0);
}

/* a plain `nunatak summary`: another user's Run, or a link named as a
 * Run, is never the most recent Run */
static void test_find_skips_others(void **state)
{
	char runs[PATH_MAX], mine[PATH_MAX], theirs[PATH_MAX], found[PATH_MAX], err[1024] = "";
	struct passwd *nobody = getpwnam("nobody");

	(void)state;
	SKIP_UNLESS(geteuid() == 0 && nobody, "chown to 'nobody' needs root and the user");
	snprintf(runs, sizeof(runs), "%s/runs", tmpdir);
	assert_int_equal(mkdir(runs, 0700), 0);
	snprintf(theirs, sizeof(theirs), "%s/app-20991231-235959", runs);
	assert_int_equal(mkdir(theirs, 0755), 0);
	assert_int_equal(write_file(path_in(theirs, MANIFEST_FILE), "{}\n"), 0);
	assert_int_equal(chown(theirs, nobody->pw_uid, nobody->pw_gid), 0);
	assert_int_equal(run_dir_find(runs, NULL, found, sizeof(found), err, sizeof(err)), -ENOENT);
	assert_in("no Run of yours", err);
	assert_in("1 entry skipped", err);
	assert_in("root (uid 0)", err);
	snprintf(mine, sizeof(mine), "%s/app-20200101-000000", runs);
	assert_int_equal(mkdir(mine, 0700), 0);
	assert_int_equal(write_file(path_in(mine, MANIFEST_FILE), "{}\n"), 0);
	assert_int_equal(symlink(theirs, path_in(runs, "app-20991231-235960")), 0);
	assert_int_equal(run_dir_find(runs, NULL, found, sizeof(found), err, sizeof(err)), 0);
	assert_string_equal(found, mine);
	/* named, another user's Run is read: the user chose it */
	assert_int_equal(
	    run_dir_find(runs, "app-20991231-235959", found, sizeof(found), err, sizeof(err)), 0);
	assert_string_equal(found, theirs);
}

/* RUN naming a runs directory (`nunatak run -o DIR`): its most recent
 * Run, as without RUN; a directory without Runs is said as such */
static void test_find_in_named_runs_dir(void **state)
{
	char runs[PATH_MAX], path[PATH_MAX], newest[PATH_MAX], found[PATH_MAX], err[1024] = "";

	(void)state;
	snprintf(runs, sizeof(runs), "%s/elsewhere", tmpdir);
	assert_int_equal(
	    run_dir_create(runs, "app", when, path, sizeof(path), NULL, err, sizeof(err)), 0);
	assert_int_equal(write_file(path_in(path, MANIFEST_FILE), "{}\n"), 0);
	assert_int_equal(
	    run_dir_create(runs, "app", when + 60, newest, sizeof(newest), NULL, err, sizeof(err)),
	    0);
	assert_int_equal(write_file(path_in(newest, MANIFEST_FILE), "{}\n"), 0);
	/* the configured runs directory is another one */
	assert_int_equal(run_dir_find(tmpdir, runs, found, sizeof(found), err, sizeof(err)), 0);
	assert_string_equal(found, newest);
	/* a Run itself is still that Run */
	assert_int_equal(run_dir_find(tmpdir, path, found, sizeof(found), err, sizeof(err)), 0);
	assert_string_equal(found, path);
	assert_int_equal(mkdir(path_in(tmpdir, "empty"), 0700), 0);
	assert_int_equal(
	    run_dir_find(tmpdir, path_in(tmpdir, "empty"), found, sizeof(found), err, sizeof(err)),
	    -ENOENT);
	assert_in("is neither a Run", err);
}

/* a runs path that fits, a Run path that would not: said, nothing left */
static void test_path_too_long(void **state)
{
	char runs[PATH_MAX], path[PATH_MAX], err[1024] = "";
	size_t len;

	(void)state;
	snprintf(runs, sizeof(runs), "%s", tmpdir);
	while ((len = strlen(runs)) < PATH_MAX - 400)
		snprintf(runs + len, sizeof(runs) - len, "/%0200d", 0);
	/* 4085 characters: the Run's "/x-YYYYMMDD-HHMMSS" would pass PATH_MAX */
	snprintf(runs + len, sizeof(runs) - len, "/%0*d", (int)(PATH_MAX - 11 - len - 1), 0);
	assert_int_equal(strlen(runs), PATH_MAX - 11);
	assert_int_equal(
	    run_dir_create(runs, "x", when, path, sizeof(path), NULL, err, sizeof(err)),
	    -ENAMETOOLONG);
	assert_in("shorter runs directory", err);
	assert_int_equal(entries(runs), 0);
}

/* no inode left on the file system: ENOSPC in words, with the path */
static void test_no_space(void **state)
{
	char mnt[PATH_MAX], runs[PATH_MAX], path[PATH_MAX], err[1024] = "";

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "mounting a full tmpfs needs root");
	snprintf(mnt, sizeof(mnt), "%s/full", tmpdir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	SKIP_UNLESS(!mount("tmpfs", mnt, "tmpfs", 0, "size=64k,nr_inodes=2"),
		    "cannot mount a tmpfs here");
	snprintf(runs, sizeof(runs), "%s/runs", mnt);
	assert_int_equal(mkdir(runs, 0700), 0); /* the last inode */
	assert_int_equal(
	    run_dir_create(runs, "x", when, path, sizeof(path), NULL, err, sizeof(err)), -ENOSPC);
	assert_in("no space left on device", err);
	assert_in(runs, err);
	assert_int_equal(umount(mnt), 0);
}

static void test_discard(void **state)
{
	char runs[PATH_MAX], path[PATH_MAX], err[1024] = "";
	struct stat st;

	(void)state;
	snprintf(runs, sizeof(runs), "%s/runs", tmpdir);
	assert_int_equal(
	    run_dir_create(runs, "d", when, path, sizeof(path), NULL, err, sizeof(err)), 0);
	assert_int_equal(write_file(path_in(path, MANIFEST_FILE), "{}\n"), 0);
	assert_int_equal(write_file(path_in(path, PIVOT_FILE), ""), 0);
	assert_int_equal(write_file(path_in(path, PIVOT_FILE "-wal"), ""), 0);

	/* something else in it: nothing is removed */
	assert_int_equal(write_file(path_in(path, "notes.txt"), "mine\n"), 0);
	assert_int_equal(run_dir_discard(path), -ENOTEMPTY);
	assert_int_equal(stat(path_in(path, MANIFEST_FILE), &st), 0);
	assert_int_equal(unlink(path_in(path, "notes.txt")), 0);
	/* one of our names, but a link */
	assert_int_equal(symlink("/etc/passwd", path_in(path, PIVOT_FILE "-shm")), 0);
	assert_int_equal(run_dir_discard(path), -ENOTEMPTY);
	assert_int_equal(unlink(path_in(path, PIVOT_FILE "-shm")), 0);

	assert_int_equal(symlink(path, path_in(tmpdir, "to-run")), 0);
	assert_int_equal(run_dir_discard(path_in(tmpdir, "to-run")), -ELOOP);

	assert_int_equal(run_dir_discard(path), 0);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(entries(runs), 0);
}

static void test_lock(void **state)
{
	char runs[PATH_MAX], path[PATH_MAX], err[1024] = "";
	int writer, fd = -1;

	(void)state;
	snprintf(runs, sizeof(runs), "%s/runs", tmpdir);
	assert_int_equal(
	    run_dir_create(runs, "l", when, path, sizeof(path), NULL, err, sizeof(err)), 0);
	writer = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(writer >= 0);
	assert_int_equal(flock(writer, LOCK_EX), 0); /* as the Aggregator */
	assert_int_equal(run_dir_lock(path, &fd), -EWOULDBLOCK);
	assert_int_equal(fd, -1);
	close(writer); /* the writer is gone */
	assert_int_equal(run_dir_lock(path, &fd), 0);
	assert_true(fd >= 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_create_private, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_names_never_hidden, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_runs_dir_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_runs_dir_group_writable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_runs_dir_chain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_find_skips_others, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_find_in_named_runs_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_path_too_long, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_space, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_discard, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
