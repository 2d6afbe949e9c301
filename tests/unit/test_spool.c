/* Tests of the spool (userspace/agent/spool.h) and of the Agent's use of
 * it against real ZeroMQ: an Aggregator that is absent (nothing bound on
 * a tcp port of 127.0.0.1) makes the Agent spool its Batches to files;
 * once a ROUTER binds there they are replayed oldest first, and removed
 * at their Ack; over the spool's cap Batches are dropped and counted
 * (spool-full); a new Agent replays what an earlier incarnation left. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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
#include "tests/unit/agent_fixture.h"
#include "userspace/agent/spool.h"

#define RUN_A "0123456789abcdef0123456789abcdef"

static char dir[PATH_MAX];

static int spool_setup(void **state)
{
	(void)state;
	mkdir("/tmp/agent", 0700);
	snprintf(dir, sizeof(dir), "/tmp/agent/spool-unit-%d-XXXXXX", (int)getpid());
	return mkdtemp(dir) ? 0 : -1;
}

static int spool_teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

static int files_in(const char *d)
{
	char cmd[PATH_MAX + 64];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", d);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* put, list in order, read back, remove; 0600 files; the cap; what a
 * reopen finds (an interrupted write's temporary file is removed) */
static void test_spool_files(void **state)
{
	char err[512], path[PATH_MAX];
	struct spool *sp;
	const struct spool_entry *e;
	struct stat st;
	void *buf;
	size_t len;

	(void)state;
	sp = spool__open(dir, 100, err, sizeof(err));
	assert_non_null(sp);
	assert_int_equal(spool_put(sp, RUN_A, 7, 0, "first", 5, 3), 0);
	assert_int_equal(spool_put(sp, RUN_A, 7, 1, "second", 6, 4), 0);
	assert_int_equal(spool_put(sp, "other", 8, 0, "x", 1, 0), 0);
	assert_int_equal(spool_put(sp, RUN_A, 7, 2, dir, 95, 0), -ENOSPC); /* over 100 bytes */
	assert_int_equal(spool_put(sp, "a/b", 7, 3, "x", 1, 0), -ENAMETOOLONG);
	assert_int_equal(spool_files(sp), 3);
	assert_int_equal(spool_bytes(sp), 12);
	assert_int_equal(spool_count(sp, RUN_A, 7), 2);
	e = spool_oldest(sp, RUN_A, 7);
	assert_non_null(e);
	assert_int_equal(e->seq, 0);
	assert_int_equal(e->samples, 3);
	snprintf(path, sizeof(path), "%s/%s", dir, e->name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(spool_read(sp, e, &buf, &len), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(buf, "first", 5);
	free(buf);
	assert_int_equal(spool_remove(sp, RUN_A, 7, 0), 0);
	assert_int_equal(spool_remove(sp, RUN_A, 7, 0), -ENOENT);
	assert_int_equal(spool_oldest(sp, RUN_A, 7)->seq, 1);
	spool__free(sp);
	/* a temporary file of an interrupted write, and a stranger's name */
	assert_int_equal(write_file(path_in(dir, ".tmp-1-0"), "half"), 0);
	assert_int_equal(write_file(path_in(dir, "notes.txt"), "left alone"), 0);
	sp = spool__open(dir, 0, err, sizeof(err));
	assert_non_null(sp);
	assert_int_equal(spool_files(sp), 2);
	assert_string_equal(spool_entry_at(sp, 0)->run_id, RUN_A);
	assert_int_equal(spool_entry_at(sp, 0)->seq, 1);
	assert_string_equal(spool_entry_at(sp, 1)->run_id, "other");
	assert_null(spool_entry_at(sp, 2));
	assert_int_equal(access(path_in(dir, ".tmp-1-0"), F_OK), -1);
	assert_int_equal(access(path_in(dir, "notes.txt"), F_OK), 0);
	spool__free(sp);
}

/* a spool directory others can write, or a symbolic link, is refused */
static void test_spool_dir_refused(void **state)
{
	char err[512], link[PATH_MAX];
	struct spool *sp;

	(void)state;
	assert_int_equal(chmod(dir, 0777), 0);
	sp = spool__open(dir, 0, err, sizeof(err));
	assert_null(sp);
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(err, "chmod"));
	assert_int_equal(chmod(dir, 0700), 0);
	snprintf(link, sizeof(link), "%s-link", dir);
	assert_int_equal(symlink(dir, link), 0);
	sp = spool__open(link, 0, err, sizeof(err));
	unlink(link);
	assert_null(sp);
	assert_non_null(strstr(err, "symbolic link"));
}

/* An absent Aggregator: Batches spooled (files appear); a ROUTER binds:
 * replayed oldest first (seq 0, 1, ...), each removed at its Ack. */
static void test_absent_spooled_then_replayed(void **state)
{
	struct fixture *fx = *state;
	struct agent_opts o = {0};
	struct received r;
	uint64_t expect = 0;
	long long end;
	int spooled;

	fx_spool_dir(fx);
	fx->agent = fx_agent_opts(fx, &o);
	fx_target(fx->agent, RUN_A);
	fx_pump(fx->agent, AGENT_RESEND_MS + 1000);
	spooled = files_in(fx->spool);
	print_message("%d Batches spooled\n", spooled);
	assert_true(spooled >= 5);
	fx_bind(fx);
	/* the Agent goes on building Batches (spooled behind the others) until
	 * it has replayed them all: then the spool empties */
	end = fx_now_ms() + 20000;
	while (files_in(fx->spool) > 0 && fx_now_ms() < end) {
		assert_true(fx_recv_batch(fx, fx->agent, &r, FX_RECV_MS));
		assert_string_equal(r.env->batch->run_id, RUN_A);
		assert_int_equal(r.env->batch->seq, expect);
		assert_int_equal(r.env->batch->incarnation, agent_incarnation(fx->agent));
		fx_ack(fx, &r, NULL);
		fx_release(&r);
		expect++;
	}
	print_message("%llu Batches replayed in order\n", (unsigned long long)expect);
	assert_true(expect >= (uint64_t)spooled);
	assert_int_equal(files_in(fx->spool), 0);
}

/* Over the spool's cap: dropped, counted, the Run told (spool-full). */
static void test_spool_cap_counted(void **state)
{
	struct fixture *fx = *state;
	struct agent_opts o = {.spool_cap_bytes = 1000};
	struct received r;
	long long dropped = -1;
	int n = 0;

	fx_spool_dir(fx);
	fx->agent = fx_agent_opts(fx, &o);
	fx_target(fx->agent, RUN_A);
	fx_pump(fx->agent, AGENT_RESEND_MS + 1500);
	fx_bind(fx);
	while (dropped <= 0 && n++ < 100 && fx_recv_batch(fx, fx->agent, &r, FX_RECV_MS)) {
		dropped = batch_counter(r.env->batch, "spool_dropped_batches");
		if (dropped > 0)
			assert_true(batch_has_degradation(r.env->batch, "spool-full"));
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	print_message("%lld Batches dropped over the cap\n", dropped);
	assert_true(dropped > 0);
}

/* What an earlier incarnation spooled is replayed by the next Agent, as
 * it was (its incarnation), and removed at its Ack. */
static void test_earlier_incarnation_replayed(void **state)
{
	struct fixture *fx = *state;
	struct agent_opts o = {0};
	struct received r;
	uint64_t old;
	int left;

	fx_spool_dir(fx);
	fx->agent = fx_agent_opts(fx, &o);
	old = agent_incarnation(fx->agent);
	fx_target(fx->agent, RUN_A);
	fx_pump(fx->agent, AGENT_RESEND_MS + 500);
	agent__free(fx->agent);
	left = files_in(fx->spool);
	assert_true(left >= 1);
	fx_bind(fx);
	fx->agent = fx_agent_opts(fx, &o);
	assert_true(agent_incarnation(fx->agent) != old);
	while (left > 0) {
		assert_true(fx_recv_batch(fx, fx->agent, &r, FX_RECV_MS));
		assert_int_equal(r.env->batch->incarnation, old);
		assert_string_equal(r.env->batch->run_id, RUN_A);
		fx_ack(fx, &r, NULL);
		fx_release(&r);
		left--;
	}
	fx_pump(fx->agent, 100);
	assert_int_equal(files_in(fx->spool), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_spool_files, spool_setup, spool_teardown),
	    cmocka_unit_test_setup_teardown(test_spool_dir_refused, spool_setup, spool_teardown),
	    cmocka_unit_test_setup_teardown(test_absent_spooled_then_replayed, fx_setup_tcp,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_spool_cap_counted, fx_setup_tcp, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_earlier_incarnation_replayed, fx_setup_tcp,
					    fx_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	mkdir("/tmp/agent", 0700);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
