/* Unit tests for userspace/config/trust: each refusal (another owner,
 * group- or other-writable, a link, a FIFO, a device, a directory, a
 * directory above writable by others or owned by another user) and each
 * acceptance (root-owned, under a sticky directory, through a linked
 * directory), as root and, in a child, as nobody. Files are made by the
 * test in its own directory, owners set with chown(2). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/config/trust.h"

#define NOBODY 65534

struct dir {
	char root[256];
	char path[4][PATH_MAX]; /* rotating scratch for at() */
	unsigned next;
};

static const char *at(struct dir *d, const char *rel)
{
	char *path = d->path[d->next++ % 4];

	assert_true(strlen(d->root) + 1 + strlen(rel) < PATH_MAX);
	strcpy(stpcpy(stpcpy(path, d->root), "/"), rel);
	return path;
}

static void make_file(struct dir *d, const char *rel, mode_t mode, uid_t uid)
{
	const char *path = at(d, rel);

	assert_int_equal(write_file(path, "name = \"x\"\n"), 0);
	assert_int_equal(chmod(path, mode), 0);
	assert_int_equal(chown(path, uid, uid ? uid : 0), 0);
}

static void make_dir(struct dir *d, const char *rel, mode_t mode, uid_t uid)
{
	const char *path = at(d, rel);

	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chmod(path, mode), 0);
	assert_int_equal(chown(path, uid, uid ? uid : 0), 0);
}

static int setup_dir(void **state)
{
	char tmpl[] = "/tmp/nunatak-test-trust-XXXXXX";
	struct dir *d = calloc(1, sizeof(*d));
	char *real;

	if (!d || !mkdtemp(tmpl) || !(real = realpath(tmpl, NULL))) {
		free(d);
		return -1;
	}
	snprintf(d->root, sizeof(d->root), "%s", real);
	free(real);
	/* traversable by nobody for the unprivileged cases */
	if (chmod(d->root, 0755)) {
		free(d);
		return -1;
	}
	*state = d;
	return 0;
}

static int teardown_dir(void **state)
{
	struct dir *d = *state;
	int ret = remove_tree(d->root);

	free(d);
	return ret;
}

/* The refusal: its code, and a message with the path and @words. */
static void assert_refused(const char *path, int want, const char *words)
{
	char err[1024] = "";
	int ret = trust_file(path, err, sizeof(err));

	if (ret != want || !strstr(err, path) || (words && !strstr(err, words)))
		fail_msg("'%s': ret %d (want %d), message \"%s\" (want \"%s\")", path, ret, want,
			 err, words ? words : "");
}

static void test_root_owned_file_accepted(void **state)
{
	struct dir *d = *state;
	char err[256] = "", buf[64] = "";
	int fd;

	SKIP_UNLESS(geteuid() == 0, "needs root to set owners");
	make_file(d, "ok.toml", 0644, 0);
	assert_int_equal(trust_file(at(d, "ok.toml"), err, sizeof(err)), 0);
	assert_int_equal(trust_file(at(d, "ok.toml"), NULL, 0), 0);
	make_file(d, "private.toml", 0600, 0);
	assert_int_equal(trust_file(at(d, "private.toml"), err, sizeof(err)), 0);

	/* trust_open() hands over the very file, readable */
	assert_int_equal(trust_open(at(d, "ok.toml"), &fd, err, sizeof(err)), 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
	assert_string_equal(buf, "name = \"x\"\n");
	assert_int_equal(close(fd), 0);

	/* relative, through the current directory */
	assert_int_equal(chdir(d->root), 0);
	assert_int_equal(trust_file("ok.toml", err, sizeof(err)), 0);
	assert_int_equal(chdir("/"), 0);
}

static void test_other_owner_refused(void **state)
{
	struct dir *d = *state;

	SKIP_UNLESS(geteuid() == 0, "needs root to set owners");
	make_file(d, "planted.toml", 0644, NOBODY);
	assert_refused(at(d, "planted.toml"), -EPERM, "owned by nobody (uid 65534), not by root");
	assert_refused(at(d, "planted.toml"), -EPERM, "chown");
}

static void test_writable_by_others_refused(void **state)
{
	struct dir *d = *state;

	SKIP_UNLESS(geteuid() == 0, "needs root to set owners");
	make_file(d, "gw.toml", 0664, 0);
	assert_refused(at(d, "gw.toml"), -EPERM, "writable by its group (mode 0664)");
	make_file(d, "ow.toml", 0646, 0);
	assert_refused(at(d, "ow.toml"), -EPERM, "writable by others (mode 0646)");
	assert_refused(at(d, "ow.toml"), -EPERM, "chmod go-w");
}

static void test_not_regular_refused(void **state)
{
	struct dir *d = *state;
	struct timespec t0, t1;

	SKIP_UNLESS(geteuid() == 0, "needs root to set owners");
	make_file(d, "target.toml", 0644, 0);
	assert_int_equal(symlink(at(d, "target.toml"), at(d, "link.toml")), 0);
	assert_refused(at(d, "link.toml"), -ELOOP, "symbolic link");

	/* a FIFO with no writer: refused at once, never opened */
	assert_int_equal(mkfifo(at(d, "fifo.toml"), 0644), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_refused(at(d, "fifo.toml"), -EINVAL, "not a regular file but a FIFO");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 2);

	make_dir(d, "dir.toml", 0755, 0);
	assert_refused(at(d, "dir.toml"), -EISDIR, "not a regular file but a directory");
	assert_refused(at(d, "dir.toml/"), -EISDIR, "directory");
	assert_refused("/dev/null", -EINVAL, "not a regular file but a device");
}

static void test_missing_file(void **state)
{
	struct dir *d = *state;
	char err[256] = "";

	assert_int_equal(trust_file(at(d, "absent.toml"), err, sizeof(err)), -ENOENT);
	assert_int_equal(trust_file(at(d, "no/such/dir/absent.toml"), err, sizeof(err)), -ENOENT);
	assert_int_equal(trust_file("", err, sizeof(err)), -EINVAL);
}

static void test_directory_above(void **state)
{
	struct dir *d = *state;
	char err[256] = "";

	SKIP_UNLESS(geteuid() == 0, "needs root to set owners");
	/* writable by others, not sticky: anyone can replace the file */
	make_dir(d, "open", 0777, 0);
	make_file(d, "open/nunatak.toml", 0644, 0);
	assert_refused(at(d, "open/nunatak.toml"), -EPERM, "writable by others (mode 0777)");
	assert_refused(at(d, "open/nunatak.toml"), -EPERM, "and not sticky");
	make_dir(d, "group", 0775, 0);
	make_file(d, "group/nunatak.toml", 0644, 0);
	assert_refused(at(d, "group/nunatak.toml"), -EPERM, "writable by its group");

	/* sticky, as /tmp: only the owner can replace its own file */
	make_dir(d, "sticky", 01777, 0);
	make_file(d, "sticky/nunatak.toml", 0644, 0);
	assert_int_equal(trust_file(at(d, "sticky/nunatak.toml"), err, sizeof(err)), 0);

	/* a directory another user owns, even 0755: the owner can swap it */
	make_dir(d, "theirs", 0755, NOBODY);
	make_file(d, "theirs/nunatak.toml", 0644, 0);
	assert_refused(at(d, "theirs/nunatak.toml"), -EPERM, "nobody (uid 65534)");
	assert_refused(at(d, "theirs/nunatak.toml"), -EPERM, "the directory");

	/* further up than the parent */
	make_dir(d, "open/deep", 0755, 0);
	make_file(d, "open/deep/nunatak.toml", 0644, 0);
	assert_refused(at(d, "open/deep/nunatak.toml"), -EPERM, "writable by others");
}

static void test_linked_directory_checked_on_its_real_path(void **state)
{
	struct dir *d = *state;
	char err[256] = "";

	SKIP_UNLESS(geteuid() == 0, "needs root to set owners");
	make_dir(d, "real", 0755, 0);
	make_file(d, "real/nunatak.toml", 0644, 0);
	make_dir(d, "theirs", 0755, NOBODY);
	make_file(d, "theirs/nunatak.toml", 0644, 0);
	/* a root link to a good directory is followed and accepted */
	assert_int_equal(symlink(at(d, "real"), at(d, "alias")), 0);
	assert_int_equal(trust_file(at(d, "alias/nunatak.toml"), err, sizeof(err)), 0);
	/* a link to a directory another user owns is judged by the target */
	assert_int_equal(symlink(at(d, "theirs"), at(d, "alias2")), 0);
	assert_int_equal(trust_file(at(d, "alias2/nunatak.toml"), err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "nobody"));
	/* a link to a good directory, in a directory nobody owns: nobody
	 * could point it elsewhere, so it is not followed */
	assert_int_equal(symlink(at(d, "real"), at(d, "theirs/back")), 0);
	assert_int_equal(trust_file(at(d, "theirs/back/nunatak.toml"), err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "nobody"));
}

/* trust_open_dir_chain(): the directory itself is checked, relative
 * paths and nested root links are walked, a link nobody owns (in a sticky
 * directory, where nobody may own one) is refused, a loop of links too */
static void test_dir_chain(void **state)
{
	struct dir *d = *state;
	char err[1024] = "", cwd[PATH_MAX];
	struct stat st, want;
	int fd;

	SKIP_UNLESS(geteuid() == 0, "needs root to set owners");
	make_dir(d, "real", 0755, 0);
	make_dir(d, "real/sub", 0755, 0);
	assert_int_equal(symlink("real", at(d, "rel-link")), 0);	  /* relative target */
	assert_int_equal(symlink(at(d, "rel-link"), at(d, "link2")), 0); /* link to a link */
	assert_int_equal(trust_open_dir_chain(NULL, at(d, "link2/sub"), &fd, err, sizeof(err)), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(stat(at(d, "real/sub"), &want), 0);
	assert_int_equal(st.st_ino, want.st_ino);
	close(fd);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(d->root), 0);
	assert_int_equal(trust_open_dir_chain(NULL, "real/../real/sub", &fd, err, sizeof(err)), 0);
	close(fd);
	assert_int_equal(chdir(cwd), 0);

	/* the directory itself is judged, not only those above it */
	make_dir(d, "open", 0777, 0);
	assert_int_equal(trust_open_dir_chain(NULL, at(d, "open"), &fd, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others"));

	make_dir(d, "sticky", 01777, 0);
	assert_int_equal(symlink(at(d, "real"), at(d, "sticky/theirs")), 0);
	assert_int_equal(lchown(at(d, "sticky/theirs"), NOBODY, NOBODY), 0);
	assert_int_equal(
	    trust_open_dir_chain("the runs", at(d, "sticky/theirs/sub"), &fd, err, sizeof(err)),
	    -EPERM);
	assert_non_null(strstr(err, "symbolic link owned by nobody"));
	assert_non_null(strstr(err, "the runs"));
	assert_int_equal(fd, -1);

	assert_int_equal(symlink("loop", at(d, "loop")), 0);
	assert_int_equal(trust_open_dir_chain(NULL, at(d, "loop"), &fd, err, sizeof(err)), -ELOOP);
	assert_int_equal(trust_open_dir_chain(NULL, at(d, "absent"), &fd, err, sizeof(err)),
			 -ENOENT);
}

/* As nobody: its own files and root's are obeyed, another user's not. */
static void test_unprivileged_owner_rule(void **state)
{
	struct dir *d = *state;
	int status;
	pid_t pid;

	SKIP_UNLESS(geteuid() == 0, "needs root to set owners and become nobody");
	make_file(d, "mine.toml", 0644, NOBODY);
	make_file(d, "roots.toml", 0644, 0);
	make_file(d, "daemons.toml", 0644, 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[512] = "";

		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(10);
		if (trust_file(at(d, "mine.toml"), err, sizeof(err)))
			_exit(11);
		if (trust_file(at(d, "roots.toml"), err, sizeof(err)))
			_exit(12);
		if (trust_file(at(d, "daemons.toml"), err, sizeof(err)) != -EPERM ||
		    !strstr(err, "not by nobody (uid 65534) or root"))
			_exit(13);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_root_owned_file_accepted, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_other_owner_refused, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_writable_by_others_refused, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_not_regular_refused, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_missing_file, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_directory_above, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_linked_directory_checked_on_its_real_path,
					    setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_dir_chain, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_unprivileged_owner_rule, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
