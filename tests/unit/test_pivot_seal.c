/* Tests of the pivot's files: made under a Run directory descriptor they
 * are 0600 whatever the umask (-wal and -shm included) and stay in that
 * directory when it is replaced by a symbolic link while the Run is
 * written; a sealed pivot is one plain file (no -wal, no -shm, journal_mode
 * DELETE) that pivot__open(read_only), and a plain read-write SQLite
 * connection as Python's sqlite3 opens, read from a read-only mount, where
 * an unsealed one cannot be read; a full disk said as ENOSPC. Real SQLite, real mounts (root only:
 * skipped otherwise). */
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/pivot/pivot.h"

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "pivot-seal") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

/* one small Batch: a module, a Locus, a stack, one sample */
static int store_batch(struct pivot *p, uint64_t seq)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module m = NUNATAK__WIRE__MODULE__INIT, *mods[1] = {&m};
	Nunatak__Wire__Locus l = NUNATAK__WIRE__LOCUS__INIT, *loci[1] = {&l};
	Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT, *frames[1] = {&a};
	Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT, *stacks[1] = {&s};
	Nunatak__Wire__SampleCount x = NUNATAK__WIRE__SAMPLE_COUNT__INIT, *samples[1] = {&x};

	b.run_id = "run-seal";
	b.node = "n1";
	b.seq = seq;
	m.identity = "buildid:00ff";
	m.path = "/usr/bin/app";
	m.display_name = "app";
	l.node = "n1";
	l.tgid = l.tid = 42;
	l.comm = "app";
	a.module = 0;
	a.offset = 0x1000 + seq;
	s.n_frames = 1;
	s.frames = frames;
	x.counter = "cpu-clock";
	x.sample_count = 1;
	x.value = 1000;
	b.n_modules = 1;
	b.modules = mods;
	b.n_loci = 1;
	b.loci = loci;
	b.n_stacks = 1;
	b.stacks = stacks;
	b.n_samples = 1;
	b.samples = samples;
	return pivot_store_batch(p, &b);
}

static int64_t sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *stmt;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static int mode_of(const char *dir, const char *name)
{
	struct stat st;

	return lstat(path_in(dir, name), &st) ? -1 : (int)(st.st_mode & 07777);
}

static int exists(const char *dir, const char *name)
{
	return mode_of(dir, name) >= 0;
}

static void test_files_private_and_under_descriptor(void **state)
{
	char run[PATH_MAX], moved[PATH_MAX], other[PATH_MAX];
	struct pivot *p;
	mode_t old_umask;
	int fd;

	(void)state;
	snprintf(run, sizeof(run), "%s/run", tmpdir);
	snprintf(moved, sizeof(moved), "%s/run.moved", tmpdir);
	snprintf(other, sizeof(other), "%s/other", tmpdir);
	assert_int_equal(mkdir(run, 0700), 0);
	assert_int_equal(mkdir(other, 0700), 0);
	fd = open(run, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);

	/* a link planted at the name is refused, not followed */
	assert_int_equal(symlink(path_in(other, "target"), path_in(run, PIVOT_FILE)), 0);
	assert_null(pivot__create_at(fd, PIVOT_FILE, "run/" PIVOT_FILE));
	assert_int_equal(errno, EEXIST);
	assert_false(exists(other, "target"));
	assert_int_equal(unlink(path_in(run, PIVOT_FILE)), 0);

	old_umask = umask(0);
	p = pivot__create_at(fd, PIVOT_FILE, "run/" PIVOT_FILE);
	umask(old_umask);
	assert_non_null(p);
	assert_int_equal(store_batch(p, 1), 0);
	assert_int_equal(mode_of(run, PIVOT_FILE), 0600);
	assert_int_equal(mode_of(run, PIVOT_FILE "-wal"), 0600);
	assert_int_equal(mode_of(run, PIVOT_FILE "-shm"), 0600);

	/* the Run directory swapped for a link to another one */
	assert_int_equal(rename(run, moved), 0);
	assert_int_equal(symlink(other, run), 0);
	assert_int_equal(store_batch(p, 2), 0);
	assert_int_equal(pivot_seal(p), 0);
	assert_int_equal(sql_int(pivot_sqlite(p), "SELECT count(*) FROM batches"), 2);
	pivot__free(p);
	assert_false(exists(other, PIVOT_FILE));
	assert_false(exists(other, PIVOT_FILE "-wal"));
	assert_false(exists(other, PIVOT_FILE "-shm"));
	assert_false(exists(other, PIVOT_FILE "-journal"));
	assert_int_equal(mode_of(moved, PIVOT_FILE), 0600);
	assert_false(exists(moved, PIVOT_FILE "-wal"));
	assert_false(exists(moved, PIVOT_FILE "-shm"));

	/* read back under the descriptor, and by path */
	p = pivot__open_at(fd, PIVOT_FILE, 1, "run/" PIVOT_FILE);
	assert_non_null(p);
	assert_int_equal(sql_int(pivot_sqlite(p), "SELECT count(*) FROM samples"), 2);
	pivot__free(p);
	p = pivot__open(path_in(moved, PIVOT_FILE), 1);
	assert_non_null(p);
	assert_int_equal(pivot_seal(p), -EROFS);
	pivot__free(p);
	close(fd);
}

/* a pivot sealed, then (control) one left in WAL mode, both copied to a
 * tmpfs remounted read-only */
static void test_sealed_reads_from_read_only_mount(void **state)
{
	char mnt[PATH_MAX], sealed[PATH_MAX], wal[PATH_MAX];
	struct pivot *p, *q;
	sqlite3 *db;

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "a read-only mount needs root");
	snprintf(mnt, sizeof(mnt), "%s/mnt", tmpdir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	SKIP_UNLESS(!mount("tmpfs", mnt, "tmpfs", 0, "size=4m"), "cannot mount a tmpfs here");

	snprintf(sealed, sizeof(sealed), "%s/sealed.sqlite", tmpdir);
	snprintf(wal, sizeof(wal), "%s/wal.sqlite", tmpdir);
	p = pivot__create(sealed);
	q = pivot__create(wal);
	assert_non_null(p);
	assert_non_null(q);
	assert_int_equal(store_batch(p, 1), 0);
	assert_int_equal(store_batch(q, 1), 0);
	assert_int_equal(pivot_seal(p), 0);
	pivot__free(p);
	assert_false(exists(tmpdir, "sealed.sqlite-wal"));
	assert_false(exists(tmpdir, "sealed.sqlite-shm"));
	/* q stays open: its -wal is not checkpointed, as when nunatak is killed */
	assert_int_equal(run_cmd("cp %s %s/ && cp %s %s/", sealed, mnt, wal, mnt), 0);
	pivot__free(q);
	assert_int_equal(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);

	p = pivot__open(path_in(mnt, "sealed.sqlite"), 1);
	assert_non_null(p);
	assert_int_equal(sql_int(pivot_sqlite(p), "SELECT count(*) FROM samples"), 1);
	pivot__free(p);
	/* a plain connection, read-write asked, as python3's sqlite3.connect() */
	assert_int_equal(sqlite3_open(path_in(mnt, "sealed.sqlite"), &db), SQLITE_OK);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM batches"), 1);
	assert_int_equal(sql_int(db, "SELECT count(*) FROM pragma_integrity_check "
				     "WHERE integrity_check = 'ok'"),
			 1);
	sqlite3_close(db);
	/* the control: the same read of a pivot still in WAL mode fails */
	assert_null(pivot__open(path_in(mnt, "wal.sqlite"), 1));
	assert_int_equal(umount(mnt), 0);
}

/* a full file system: said as ENOSPC (not EIO), and no file left */
static void test_create_on_full_disk(void **state)
{
	char mnt[PATH_MAX];
	struct pivot *p;
	int fd;

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "mounting a small tmpfs needs root");
	snprintf(mnt, sizeof(mnt), "%s/small", tmpdir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	SKIP_UNLESS(!mount("tmpfs", mnt, "tmpfs", 0, "size=8k"), "cannot mount a tmpfs here");
	fd = open(mnt, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	p = pivot__create_at(fd, PIVOT_FILE, "small/" PIVOT_FILE);
	assert_null(p);
	assert_int_equal(errno, ENOSPC);
	assert_false(exists(mnt, PIVOT_FILE));
	assert_false(exists(mnt, PIVOT_FILE "-wal"));
	assert_false(exists(mnt, PIVOT_FILE "-journal"));
	close(fd);
	assert_int_equal(umount(mnt), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_files_private_and_under_descriptor),
	    cmocka_unit_test(test_sealed_reads_from_read_only_mount),
	    cmocka_unit_test(test_create_on_full_disk),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
