/* Unit tests for userspace/slurm/slurm_job (slurm_job.h).
 *
 * Pure: hostlist expansion (libslurm's hostlist, no slurm.conf needed).
 * Bounded failures: a missing slurm.conf (-ENOENT), a broken one (-EINVAL,
 * libslurm's reason, the process alive: libslurm would exit()), one whose
 * slurmctld is down (-EHOSTUNREACH) or silent, each quickly. libslurm keeps
 * one configuration per process, so every lookup case runs in its own
 * child process.
 * Real: with $NUNATAK_TEST_SLURM_CONF (a running cluster's slurm.conf, as
 * the Slurm integration tests give), a job submitted with sbatch is looked
 * up and compared with what squeue says, then cancelled until it ends;
 * without it, SKIPPED with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include <slurm/slurm.h>

#include "tests/unit/test_helpers.h"
#include "userspace/slurm/slurm_job.h"

extern char **environ;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- hostlists ---- */

static void expect_nodes(const char *hostlist, const char *const *want, size_t n_want)
{
	char **nodes = NULL;
	size_t n = 0, i;
	int ret = slurm_job_hostlist_expand(hostlist, &nodes, &n);

	if (ret)
		fail_msg("'%s': %d", hostlist, ret);
	assert_int_equal(n, n_want);
	for (i = 0; i < n; i++)
		assert_string_equal(nodes[i], want[i]);
	assert_null(nodes[n]);
	slurm_job_nodes_free(nodes, n);
}

static void test_hostlist_expand(void **state)
{
	const char *a[] = {"vm1", "vm2", "vm3", "x"};
	const char *b[] = {"n01", "n02", "n03"};
	const char *c[] = {"vm"};
	const char *d[] = {"x1y3", "x1y4", "x2y3", "x2y4"};
	const char *e[] = {"a", "b"};
	const char *f[] = {"vm1", "vm2", "vm3", "vm2"};
	const char *g[] = {"n1.cluster", "n-2_b"};
	const char *h[] = {"n1", "n3", "n4", "n5", "n9"};

	(void)state;
	expect_nodes("vm[1-3],x", a, 4);
	expect_nodes("n[01-03]", b, 3);
	expect_nodes("vm", c, 1);
	expect_nodes("x[1-2]y[3-4]", d, 4);
	expect_nodes("a,,b", e, 2);
	expect_nodes("vm[1-3],vm2", f, 4);
	expect_nodes("n1.cluster,n-2_b", g, 2);
	expect_nodes("n[1,3-5,9]", h, 5);
}

/* The same names, in the same order, as libslurm's own hostlist (the
 * oracle) gives; refused where it refuses */
static void test_hostlist_as_libslurm(void **state)
{
	const char *lists[] = {"vm[1-3],x", "n[01-03]", "vm", "x[1-2]y[3-4]", "a,,b", "vm[1-3],vm2",
			       "n[08-11]", "n[1,3-5,9]", "r[1-2]n[001-003],login", "n[0-0]",
			       "gpu[7-12]-ib", "a[1-2]b[3-4]c[5-6]", "n[1-3],m[1-2],n2", "n1,n[3-4]x",
			       "c[0001-1000]", "n[9-10]", "n[099-101]", "a[1-2]b[1-2]c[1-2]d[1-2]",
			       "[1-2]", "n[1-2]-ib", "a[1-2]b[1-2]c", "n[1-2]9", "n[3-4]x,y"};
	char **nodes = NULL, *name;
	size_t n = 0, i, k;
	hostlist_t hl;

	(void)state;
	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		hl = slurm_hostlist_create(lists[i]);
		if (!hl) { /* refused by both */
			if (slurm_job_hostlist_expand(lists[i], &nodes, &n) != -EINVAL)
				fail_msg("'%s' taken, libslurm refuses it", lists[i]);
			continue;
		}
		if (slurm_job_hostlist_expand(lists[i], &nodes, &n))
			fail_msg("'%s' refused, libslurm takes it", lists[i]);
		for (k = 0; (name = slurm_hostlist_shift(hl)); k++) {
			if (k >= n || strcmp(nodes[k], name))
				fail_msg("'%s': name %zu is '%s', libslurm says '%s'", lists[i], k,
					 k < n ? nodes[k] : "(none)", name);
			free(name);
		}
		assert_int_equal(k, n);
		slurm_hostlist_destroy(hl);
		slurm_job_nodes_free(nodes, n);
	}
}

static void test_hostlist_many(void **state)
{
	char **nodes = NULL, want[32];
	size_t n = 0, i;

	(void)state;
	assert_int_equal(slurm_job_hostlist_expand("c[0001-2000]", &nodes, &n), 0);
	assert_int_equal(n, 2000);
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "c%04zu", i + 1);
		assert_string_equal(nodes[i], want);
	}
	slurm_job_nodes_free(nodes, n);
}

static void test_hostlist_refused(void **state)
{
	const char *bad[] = {"", ",", "[", "vm[1-3", "vm1-3]", "vm[3-1]", "a b", "vm[[1-2]]",
			     "n[1-100000000]", "x;rm", "a,$b", "n[]", "n[1-]", "n[a-b]", "n[1,]", "n[-1]",
			     "n]1[", "n[1-3]]", "n[1-2", "a[1-2]b[", "n[1-65536]0[1-8]"};
	char **nodes = (char **)&nodes;
	size_t n = 99, i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (slurm_job_hostlist_expand(bad[i], &nodes, &n) != -EINVAL)
			fail_msg("'%s' was not refused", bad[i]);
		assert_null(nodes);
		assert_int_equal(n, 0);
	}
	assert_int_equal(slurm_job_hostlist_expand(NULL, &nodes, &n), -EINVAL);
	slurm_job_nodes_free(NULL, 0);
	slurm_job_release(NULL);
}

/* ---- lookups, each in a child ---- */

struct lookup_result {
	int ret;
	long long ms;
	char err[512];
	struct slurm_job job; /* nodes not carried over */
	char first_node[256];
};

static void lookup_in_child(const char *conf, uint32_t id, struct lookup_result *r)
{
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct lookup_result c;
		long long t0 = now_ms();

		memset(&c, 0, sizeof(c));
		c.ret = slurm_job_lookup(conf, id, &c.job, c.err, sizeof(c.err));
		c.ms = now_ms() - t0;
		if (!c.ret && c.job.n_nodes)
			snprintf(c.first_node, sizeof(c.first_node), "%s", c.job.nodes[0]);
		slurm_job_release(&c.job);
		_exit(write(fds[1], &c, sizeof(c)) == sizeof(c) ? 0 : 1);
	}
	close(fds[1]);
	n = read(fds[0], r, sizeof(*r));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (n != sizeof(*r))
		fail_msg("the lookup's child died (status %d): libslurm exit()ed?", status);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

struct conf_dir {
	char dir[PATH_MAX];
	char conf[PATH_MAX];
};

static void write_conf(struct conf_dir *cd, const char *text)
{
	assert_int_equal(make_tmpdir(cd->dir, sizeof(cd->dir), "slurm-job"), 0);
	snprintf(cd->conf, sizeof(cd->conf), "%s/slurm.conf", cd->dir);
	assert_int_equal(write_file(cd->conf, text), 0);
}

static void test_conf_missing(void **state)
{
	struct lookup_result r;

	(void)state;
	lookup_in_child("/nonexistent-nunatak/slurm.conf", 1, &r);
	assert_int_equal(r.ret, -EINVAL); /* -ENOENT is "no such job" only */
	assert_non_null(strstr(r.err, "/nonexistent-nunatak/slurm.conf"));
	assert_non_null(strstr(r.err, "slurm_conf"));
	assert_true(r.ms < 1000); /* libslurm alone would retry 60 s, then exit() */
	lookup_in_child("relative/slurm.conf", 1, &r);
	assert_int_equal(r.ret, -EINVAL);
}

static void test_conf_broken(void **state)
{
	struct conf_dir cd;
	struct lookup_result r;

	(void)state;
	write_conf(&cd, "this is no slurm.conf\n");
	lookup_in_child(cd.conf, 1, &r);
	assert_int_equal(r.ret, -EINVAL);
	assert_non_null(strstr(r.err, cd.conf));
	assert_non_null(strstr(r.err, "Parse error")); /* libslurm's reason */
	print_message("broken slurm.conf: %lld ms: %s\n", r.ms, r.err);
	assert_true(r.ms < SLURM_JOB_INIT_TIMEOUT_MS + 1000);
	remove_tree(cd.dir);
}

/* a free TCP port on 127.0.0.1 (bound then closed: nothing listens) */
static int free_port(void)
{
	char cmd[] = "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); "
		     "print(s.getsockname()[1])'";
	FILE *p = popen(cmd, "r");
	int port = 0;

	if (p) {
		if (fscanf(p, "%d", &port) != 1)
			port = 0;
		pclose(p);
	}
	return port;
}

static void test_slurmctld_down(void **state)
{
	struct conf_dir cd;
	struct lookup_result r;
	char text[512];
	int port = free_port();

	(void)state;
	SKIP_UNLESS(port > 0, "no free port found (python3 missing?)");
	/* MessageTimeout 10 (the default): libslurm alone retries for 18 s */
	snprintf(text, sizeof(text),
		 "ClusterName=nunatak-test\nSlurmctldHost=nowhere(127.0.0.1)\n"
		 "SlurmctldPort=%d\nMessageTimeout=10\n",
		 port);
	write_conf(&cd, text);
	lookup_in_child(cd.conf, 1, &r);
	print_message("slurmctld down: %d after %lld ms: %s\n", r.ret, r.ms, r.err);
	assert_int_equal(r.ret, -EHOSTUNREACH);
	assert_non_null(strstr(r.err, "slurmctld unreachable"));
	assert_non_null(strstr(r.err, cd.conf));
	assert_true(r.ms < 3000);
	remove_tree(cd.dir);
}

static void test_slurmctld_silent(void **state)
{
	struct conf_dir cd;
	struct lookup_result r;

	(void)state;
	/* 192.0.2.1: TEST-NET-1, never answers (or unroutable: fails at once) */
	write_conf(&cd, "ClusterName=nunatak-test\nSlurmctldHost=nowhere(192.0.2.1)\n"
			"SlurmctldPort=6817\n");
	lookup_in_child(cd.conf, 1, &r);
	print_message("slurmctld silent: %d after %lld ms\n", r.ret, r.ms);
	assert_int_equal(r.ret, -EHOSTUNREACH);
	assert_true(r.ms < SLURM_JOB_PROBE_MS + 2000);
	remove_tree(cd.dir);
}

static void test_bad_id(void **state)
{
	struct slurm_job job;
	char err[256];

	(void)state;
	assert_int_equal(slurm_job_lookup("/nonexistent-nunatak/slurm.conf", 0, &job, err,
					  sizeof(err)),
			 -EINVAL);
	assert_int_equal(job.n_nodes, 0);
	assert_int_equal(slurm_job_lookup(NULL, 1, NULL, err, sizeof(err)), -EINVAL);
}

/* ---- against a real slurmctld ---- */

/* argv run with SLURM_CONF=conf, stdout into out; its exit status */
static int run_slurm_tool(const char *conf, char *const argv[], char *out, size_t outlen)
{
	char env_conf[PATH_MAX + 16], *envp[512], path[PATH_MAX];
	size_t e = 0, used = 0;
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	snprintf(env_conf, sizeof(env_conf), "SLURM_CONF=%s", conf);
	for (char **p = environ; *p && e < 510; p++)
		if (strncmp(*p, "SLURM_CONF=", 11))
			envp[e++] = *p;
	envp[e++] = env_conf;
	envp[e] = NULL;
	snprintf(path, sizeof(path), "/usr/bin/%s", argv[0]);
	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		execve(path, argv, envp);
		_exit(127);
	}
	close(fds[1]);
	out[0] = '\0';
	while ((n = read(fds[0], out + used, outlen - 1 - used)) > 0) {
		used += n;
		out[used] = '\0';
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_real_lookup(void **state)
{
	const char *conf = getenv("NUNATAK_TEST_SLURM_CONF");
	char out[1024], idstr[32], cwd[PATH_MAX], sq_uid[32] = "", sq_node[256] = "";
	struct slurm_job job;
	char err[512] = "";
	long long deadline;
	uint32_t id;
	int ret;

	(void)state;
	SKIP_UNLESS(conf && *conf, "no Slurm cluster: set NUNATAK_TEST_SLURM_CONF to a running "
				   "cluster's slurm.conf (integration/slurm_units does)");
	SKIP_UNLESS(!access("/usr/bin/sbatch", X_OK), "sbatch not installed");
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	{
		char *argv[] = {"sbatch", "--parsable", "-o", "/dev/null", "-J", "nunatak-unit",
				"--wrap", "sleep 60", NULL};

		assert_int_equal(run_slurm_tool(conf, argv, out, sizeof(out)), 0);
	}
	id = (uint32_t)strtoul(out, NULL, 10);
	assert_true(id > 0);
	snprintf(idstr, sizeof(idstr), "%u", id);
	/* running within 10 s (a single-node cluster starts it at once) */
	deadline = now_ms() + 10000;
	do {
		ret = slurm_job_lookup(conf, id, &job, err, sizeof(err));
		if (ret)
			fail_msg("lookup of job %u: %d %s", id, ret, err);
		if (job.running)
			break;
		slurm_job_release(&job);
		usleep(100000);
	} while (now_ms() < deadline);
	assert_true(job.running);
	assert_false(job.ended);
	assert_string_equal(job.state, "RUNNING");
	assert_int_equal(job.id, id);
	assert_int_equal(job.uid, getuid());
	assert_int_equal(job.gid, getgid());
	assert_string_equal(job.name, "nunatak-unit");
	assert_string_equal(job.work_dir, cwd);
	assert_true(job.n_nodes >= 1);
	{ /* what squeue says */
		char *argv[] = {"squeue", "-h", "-j", idstr, "-o", "%U %N", NULL};

		assert_int_equal(run_slurm_tool(conf, argv, out, sizeof(out)), 0);
		assert_int_equal(sscanf(out, "%31s %255s", sq_uid, sq_node), 2);
		assert_int_equal((uid_t)strtoul(sq_uid, NULL, 10), job.uid);
		assert_string_equal(job.nodes[0], sq_node); /* one node: the list is the name */
	}
	slurm_job_release(&job);
	assert_int_equal(slurm_job_lookup(conf, 0x7ffffff0u, &job, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no job"));
	{
		char *argv[] = {"scancel", idstr, NULL};

		assert_int_equal(run_slurm_tool(conf, argv, out, sizeof(out)), 0);
	}
	deadline = now_ms() + 20000;
	do {
		ret = slurm_job_lookup(conf, id, &job, err, sizeof(err));
		if (ret == -ENOENT || (!ret && job.ended))
			break;
		slurm_job_release(&job);
		usleep(200000);
	} while (now_ms() < deadline);
	if (!ret) {
		assert_true(job.ended);
		assert_false(job.running);
		assert_string_equal(job.state, "CANCELLED");
	}
	slurm_job_release(&job);
	/* a process keeps its first configuration */
	assert_int_equal(slurm_job_lookup("/etc/nunatak-other/slurm.conf", id, &job, err,
					  sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "already"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hostlist_expand),  cmocka_unit_test(test_hostlist_as_libslurm),
	    cmocka_unit_test(test_hostlist_many),
	    cmocka_unit_test(test_hostlist_refused), cmocka_unit_test(test_conf_missing),
	    cmocka_unit_test(test_conf_broken),	     cmocka_unit_test(test_slurmctld_down),
	    cmocka_unit_test(test_slurmctld_silent), cmocka_unit_test(test_bad_id),
	    cmocka_unit_test(test_real_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
