/* test_sampler_jobs — Slurm job membership in the kernel (bpf/job.h), on
 * real BPF, real cgroups and real execs and forks: the test makes
 * Slurm-like cgroups of its own (v1 freezer
 * /nktest_<pid>/uid_U/job_J/step_0, and, when the cgroup2 mount lets it
 * make children, .../job_J/step_0/user/task_0), registers job J for a
 * Target of user U, and shows that
 *   - a process of U exec'd in the job's cgroup joins the Target
 *     (TASK_EVENT_EXEC, exec_seq 0, its samples carry the Target id);
 *   - a process of U running in the cgroup before, outside every Target,
 *     that forks: its child joins (reported the same way), it does not;
 *   - root's and another user's processes in the cgroup, and U's outside
 *     it, do not; a root job Target takes root's only;
 *   - with the environment fallback on (a Slurm without job cgroups),
 *     SLURM_JOB_ID in the new environment of a process in no job cgroup
 *     adopts it under the same rule, a malformed or other id does not,
 *     nor does it for a process in another job's cgroup;
 *   - an unregistered or removed job (sampler_remove_job, and
 *     sampler_remove_target) adopts nothing; the checks of
 *     sampler_add_job.
 * The cost per exec is printed from the kernel's BPF statistics.
 *
 * The processes are this test binary ("spin", "fork" as arguments) under
 * throwaway uids (setresuid: no account needed). Without root, kernel
 * BTF or a v1 freezer hierarchy the tests are SKIPPED with the reason.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
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

#include <cmocka.h>

#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/cgroup_fixture.h"
#include "tests/unit/sampler_fixture.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sampler_internal.h"

#define FREQUENCY 999
#define SPIN_MS "300"
#define JOB 4242u
#define FREEZER CG_FREEZER
#define UNIFIED CG_UNIFIED

static const char *why_not;
static struct sampler *s;
static uid_t user, other_user;
static char v1_base[128], v1_step[256], v2_base[128], v2_task[256];

static int group_setup(void **state)
{
	char rel[128];

	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	user = 62000 + (uid_t)(getpid() % 1000);
	other_user = user + 1000;
	if (access(FREEZER "/cgroup.procs", W_OK)) {
		why_not = "no v1 freezer hierarchy at " FREEZER;
		return 0;
	}
	snprintf(v1_base, sizeof(v1_base), FREEZER "/nktest_%d", (int)getpid());
	snprintf(rel, sizeof(rel), "nktest_%d/uid_%u/job_%u/step_0", (int)getpid(), user, JOB);
	if (cg_mkdirs(FREEZER, rel, v1_step, sizeof(v1_step)))
		return -1;
	snprintf(v2_base, sizeof(v2_base), UNIFIED "/nktest_%d", (int)getpid());
	snprintf(rel, sizeof(rel), "nktest_%d/slurmstepd.scope/job_%u/step_0/user/task_0",
		 (int)getpid(), JOB + 1);
	if (cg_mkdirs(UNIFIED, rel, v2_task, sizeof(v2_task)))
		v2_task[0] = '\0'; /* the v2 test says SKIPPED */
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	cg_rmdirs(v1_step, v1_base);
	cg_rmdirs(v2_task, v2_base);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	if (why_not)
		return 0;
	s = sampler_fixture_new(FREQUENCY);
	return s ? sampler_set_active(s, 1) : -1;
}

static int teardown(void **state)
{
	(void)state;
	sampler__free(s);
	s = NULL;
	return 0;
}

struct prog_stats {
	uint64_t ns, cnt;
};

static struct prog_stats prog_stats_of(const struct bpf_program *p)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);

	assert_int_equal(bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len), 0);
	return (struct prog_stats){info.run_time_ns, info.run_cnt};
}

/* n processes of uid in cgroup dir fork and exec /bin/true; the mean
 * cost of the exec and fork programs meanwhile (every exec and fork of
 * the node counts: the others' as well) */
static void measure(const char *what, uid_t uid, const char *dir, int n)
{
	struct prog_stats e0 = prog_stats_of(s->task->progs.task_exec);
	struct prog_stats f0 = prog_stats_of(s->task->progs.task_fork), e1, f1;
	int i, status;
	pid_t pid;

	for (i = 0; i < n; i++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			if (dir && cg_enter(dir, getpid()))
				_exit(120);
			if (proc_become(uid))
				_exit(121);
			execl("/bin/true", "true", (char *)NULL);
			_exit(123);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
	}
	e1 = prog_stats_of(s->task->progs.task_exec);
	f1 = prog_stats_of(s->task->progs.task_fork);
	print_message("%s: exec %.2f us (%llu execs), fork %.2f us (%llu forks)\n", what,
		      (double)(e1.ns - e0.ns) / 1000.0 / (double)(e1.cnt - e0.cnt ?: 1),
		      (unsigned long long)(e1.cnt - e0.cnt),
		      (double)(f1.ns - f0.ns) / 1000.0 / (double)(f1.cnt - f0.cnt ?: 1),
		      (unsigned long long)(f1.cnt - f0.cnt));
}

/* what an exec and a fork cost with and without a job registered (BPF
 * statistics: the figures of bpf/job.h); informative, it fails only when
 * the statistics cannot be enabled */
static void test_cost(void **state)
{
	int stats;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	SKIP_UNLESS(stats >= 0, "BPF run-time statistics cannot be enabled");
	measure("no job registered", 0, NULL, 500);
	assert_int_equal(sampler_add_job(s, JOB, 28, user), 0);
	measure("a job registered, outside its cgroup", 0, NULL, 500);
	measure("a job registered, root in its cgroup (not adopted)", 0, v1_step, 500);
	measure("a job registered, another user in its cgroup", other_user, v1_step, 500);
	assert_int_equal(sampler_set_job_env(s, 1), 0);
	measure("a job registered, environment fallback on, outside its cgroup", 0, NULL, 500);
	close(stats);
}

/* the exec'd workload: spin MS OUT GATE, fork MS OUT GATE */
static int workload(char **argv)
{
	pid_t pid;
	char ch;
	int status;

	if (!strcmp(argv[1], "spin")) {
		proc_spin(atoi(argv[2]));
		return 0;
	}
	pid = getpid(); /* exec'd: ready */
	if (write(atoi(argv[3]), &pid, sizeof(pid)) != (ssize_t)sizeof(pid) ||
	    read(atoi(argv[4]), &ch, 1) != 1)
		return 124;
	pid = fork();
	if (pid < 0)
		return 125;
	if (pid == 0) {
		proc_spin(atoi(argv[2]));
		_exit(0);
	}
	if (write(atoi(argv[3]), &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
		return 126;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 127;
	return 0;
}

struct child {
	pid_t pid;
	int gate;  /* write end: releases it */
	int child; /* read end: "fork" mode writes its child's pid here */
};

/* A child placed in cgroup dir (NULL: where the test is) that becomes uid
 * (unless 0) and runs this binary in mode: "spin" (exec'd when the gate
 * opens: spins) or "fork" (exec'd before this returns, a new image
 * dumpable as the user: when the gate opens, forks a spinning child, says
 * its pid on c.child, waits for it). */
static const char *child_env; /* the whole environment of the exec'd child (NULL: ours) */

static struct child start_child(uid_t uid, const char *dir, const char *mode)
{
	struct child c = {-1, -1, -1};
	int gate[2], out[2];
	char ch;

	assert_int_equal(pipe(gate), 0);
	assert_int_equal(pipe(out), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		char out_fd[16], gate_fd[16];

		close(gate[1]);
		close(out[0]);
		snprintf(out_fd, sizeof(out_fd), "%d", out[1]);
		snprintf(gate_fd, sizeof(gate_fd), "%d", gate[0]);
		if (proc_become(uid))
			_exit(121);
		if (strcmp(mode, "fork") && read(gate[0], &ch, 1) != 1)
			_exit(122);
		if (child_env)
			execle("/proc/self/exe", "test_sampler_jobs", mode, SPIN_MS, out_fd, gate_fd,
			       (char *)NULL, (char *[]){(char *)child_env, NULL});
		else
			execl("/proc/self/exe", "test_sampler_jobs", mode, SPIN_MS, out_fd, gate_fd,
			      (char *)NULL);
		_exit(123);
	}
	close(gate[0]);
	close(out[1]);
	if (dir)
		assert_int_equal(cg_enter(dir, c.pid), 0);
	c.gate = gate[1];
	c.child = out[0];
	if (!strcmp(mode, "fork")) { /* its exec is behind it */
		pid_t ready = 0;

		assert_int_equal(read(c.child, &ready, sizeof(ready)), (ssize_t)sizeof(ready));
		assert_int_equal(ready, c.pid);
	}
	return c;
}

static void release(struct child *c)
{
	assert_int_equal(write(c->gate, "g", 1), 1);
	close(c->gate);
}

static void wait_child(struct child *c)
{
	int status;

	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(c->child);
}

static int reports_of(pid_t pid, struct task_event *out, int max)
{
	return sampler_reports_of(s, pid, out, max);
}

/* pid (adopted into want_target, 0: not adopted) was sampled as such
 * and reported as an adoption (EXEC, exec_seq 0), then its exit */
static void check_adopted(pid_t pid, uint32_t want_target)
{
	struct sampler_tally t = sampler_samples_of(s, pid, want_target);
	struct task_event e[4];

	assert_int_equal(t.wrong_target, 0);
	if (!want_target) {
		assert_int_equal(t.samples, 0);
		assert_int_equal(reports_of(pid, e, 4), 0);
		return;
	}
	assert_true(t.samples >= 60);
	assert_int_equal(reports_of(pid, e, 4), 2);
	assert_int_equal(e[0].kind, TASK_EVENT_EXEC);
	assert_int_equal(e[0].target_id, want_target);
	assert_int_equal(e[0].exec_seq, 0);
	assert_int_equal(e[1].kind, TASK_EVENT_EXIT);
}

/* a process of uid exec'd in cgroup dir: adopted into want_target or not */
static void check_exec(uid_t uid, const char *dir, uint32_t want_target)
{
	child_env = NULL;
	struct child c = start_child(uid, dir, "spin");

	release(&c);
	wait_child(&c);
	check_adopted(c.pid, want_target);
}

static void test_exec_in_job_cgroup(void **state)
{
	struct sampler_counters c;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	/* not registered: nothing */
	check_exec(user, v1_step, 0);
	assert_int_equal(sampler_add_job(s, JOB, 21, user), 0);
	check_exec(user, v1_step, 21);
	check_exec(other_user, v1_step, 0);
	check_exec(0, v1_step, 0);
	check_exec(user, NULL, 0);
	sampler_read_counters(s, &c);
	assert_int_equal(c.adopted, 1);
	assert_int_equal(sampler_remove_job(s, JOB, 22), -ENOENT); /* not that Target's */
	assert_int_equal(sampler_remove_job(s, JOB, 21), 0);
	assert_int_equal(sampler_remove_job(s, JOB, 21), -ENOENT);
	check_exec(user, v1_step, 0);
}

/* the same with env as its whole environment */
static void check_exec_env(uid_t uid, const char *dir, const char *env, uint32_t want_target)
{
	struct child c;

	child_env = env;
	c = start_child(uid, dir, "spin");
	child_env = NULL;
	release(&c);
	wait_child(&c);
	check_adopted(c.pid, want_target);
}

/* a Slurm that makes no job cgroup: SLURM_JOB_ID in the new environment,
 * when asked for (sampler_set_job_env) and only when no cgroup of the
 * process names a job at all */
static void test_environment_fallback(void **state)
{
	char id[32], other[32], bad[32];

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	snprintf(id, sizeof(id), "SLURM_JOB_ID=%u", JOB);
	snprintf(other, sizeof(other), "SLURM_JOB_ID=%u", JOB + 3);
	snprintf(bad, sizeof(bad), "SLURM_JOB_ID=%ux", JOB);
	assert_int_equal(sampler_add_job(s, JOB, 31, user), 0);
	check_exec_env(user, NULL, id, 0); /* not asked for */
	assert_int_equal(sampler_set_job_env(s, 1), 0);
	check_exec_env(user, NULL, id, 31);
	check_exec_env(other_user, NULL, id, 0);
	check_exec_env(0, NULL, id, 0);
	check_exec_env(user, NULL, other, 0);
	check_exec_env(user, NULL, bad, 0);
	check_exec_env(user, NULL, "SLURM_JOB_ID=", 0);
	check_exec_env(user, NULL, "SLURM_JOB_NAME=job", 0);
	/* in a cgroup of another job: its cgroup is the word, not its environment */
	assert_int_equal(sampler_remove_job(s, JOB, 31), 0);
	assert_int_equal(sampler_add_job(s, JOB + 3, 32, user), 0);
	assert_int_equal(sampler_set_job_env(s, 1), 0);
	check_exec_env(user, v1_step, other, 0);
	check_exec_env(user, NULL, other, 32);
	/* the last job gone: off */
	assert_int_equal(sampler_remove_job(s, JOB + 3, 32), 0);
	assert_int_equal(sampler_add_job(s, JOB + 3, 33, user), 0);
	check_exec_env(user, NULL, other, 0);
}

/* running before the job was registered, outside every Target: not
 * adopted itself; the child it forks afterwards is */
static void test_fork_in_job_cgroup(void **state)
{
	struct child c;
	pid_t grandchild = 0;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	c = start_child(user, v1_step, "fork");
	assert_int_equal(sampler_add_job(s, JOB, 22, user), 0);
	release(&c);
	assert_int_equal(read(c.child, &grandchild, sizeof(grandchild)),
			 (ssize_t)sizeof(grandchild));
	wait_child(&c);
	check_adopted(grandchild, 22);
	check_adopted(c.pid, 0);
	/* another user's fork there: no */
	c = start_child(other_user, v1_step, "fork");
	release(&c);
	assert_int_equal(read(c.child, &grandchild, sizeof(grandchild)),
			 (ssize_t)sizeof(grandchild));
	wait_child(&c);
	check_adopted(grandchild, 0);
}

/* a root job Target: root's processes in the cgroup, not the user's */
static void test_root_job_target(void **state)
{
	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(sampler_add_job(s, JOB, 23, TARGET_UID_ANY), 0);
	check_exec(0, v1_step, 23);
	check_exec(user, v1_step, 0);
	check_exec(0, NULL, 0);
}

/* the default hierarchy (cgroup v2 layout, deeper) */
static void test_exec_in_v2_job_cgroup(void **state)
{
	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(v2_task[0], "the cgroup2 mount at " UNIFIED " takes no child cgroup");
	assert_int_equal(sampler_add_job(s, JOB + 1, 24, user), 0);
	check_exec(user, v2_task, 24);
	check_exec(other_user, v2_task, 0);
	check_exec(user, v1_step, 0); /* job JOB is not registered */
}

static void test_add_job_checks_and_remove_target(void **state)
{
	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(sampler_add_job(s, 0, 1, user), -EINVAL);
	assert_int_equal(sampler_add_job(s, JOB, 0, user), -EINVAL);
	assert_int_equal(sampler_add_job(s, JOB, 25, user), 0);
	assert_int_equal(sampler_add_job(s, JOB, 26, user), -EEXIST);
	assert_int_equal(sampler_add_job(s, JOB + 7, 26, user), 0);
	assert_int_equal(sampler_remove_target(s, 25), 0);
	check_exec(user, v1_step, 0); /* its job went with it */
	assert_int_equal(sampler_remove_job(s, JOB, 25), -ENOENT);
	assert_int_equal(sampler_remove_target(s, 26), 0);
	assert_int_equal(sampler_remove_job(s, JOB + 7, 26), -ENOENT);
	/* a running process from userspace: once */
	assert_int_equal(sampler_adopt_process(s, getpid(), 26, TARGET_UID_ANY), 0);
	assert_int_equal(sampler_adopt_process(s, getpid(), 25, TARGET_UID_ANY), -EEXIST);
	assert_int_equal(sampler_adopt_process(s, 0, 25, TARGET_UID_ANY), -EINVAL);
	assert_int_equal(sampler_remove_target(s, 26), 0);
	for (uint32_t j = 1; j <= MAX_JOBS; j++)
		assert_int_equal(sampler_add_job(s, 100000 + j, 27, user), 0);
	assert_int_equal(sampler_add_job(s, 99999, 27, user), -ENOSPC);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_exec_in_job_cgroup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fork_in_job_cgroup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_root_job_target, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exec_in_v2_job_cgroup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_add_job_checks_and_remove_target, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_environment_fallback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cost, setup, teardown),
	};

	if (argc == 5 && (!strcmp(argv[1], "spin") || !strcmp(argv[1], "fork")))
		return workload(argv);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
