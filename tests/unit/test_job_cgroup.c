/* test_job_cgroup — which Slurm job a process belongs to: the parsing of
 * /proc/PID/cgroup texts as Slurm leaves them (v1 with the node's prefix,
 * v1 with task cgroups, v2, the hybrid of several lines, every step kind,
 * nested task cgroups, slurmstepd at job level) and of malformed ones;
 * the SLURM_JOB_ID of an environ block; and, on this machine's /proc, the
 * environ fallback of a process in no Slurm cgroup and the scan
 * (job_processes_for_each) — with, as root and where a v1 freezer
 * hierarchy exists, a process the test puts into a job cgroup it makes;
 * and whether a node shows Slurm job cgroups at all (fake roots).
 */
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/cgroup_fixture.h"
#include "userspace/slurm/job_cgroup.h"

static void expect_job(const char *text, uint32_t want_job, const char *want_step)
{
	char step[16] = "unset";
	uint32_t job = 0;

	assert_int_equal(job_cgroup_parse(text, &job, step, sizeof(step)), 1);
	assert_int_equal(job, want_job);
	assert_string_equal(step, want_step);
}

static void expect_none(const char *text)
{
	uint32_t job = 77;

	assert_int_equal(job_cgroup_parse(text, &job, NULL, 0), 0);
	assert_int_equal(job, 77);
}

static void expect_malformed(const char *text)
{
	uint32_t job = 77;
	char step[8];

	assert_int_equal(job_cgroup_parse(text, &job, step, sizeof(step)), -EINVAL);
	assert_int_equal(job, 77);
}

/* as measured on these machines (shared/slurm/single-node-findings.md) */
static void test_v1(void **state)
{
	(void)state;
	expect_job("6:freezer:/slurm_vm/uid_1001/job_1/step_0\n", 1, "0");
	expect_job("6:freezer:/slurm_vm/uid_1001/job_17/step_batch\n", 17, "batch");
	expect_job("6:freezer:/slurm_vm/uid_1001/job_17/step_extern\n", 17, "extern");
	expect_job("6:freezer:/slurm_vm/uid_1001/job_17/step_interactive", 17, "interactive");
	/* slurmstepd itself, at job level */
	expect_job("6:freezer:/slurm_vm/uid_1001/job_17\n", 17, "");
	/* task cgroups below the step (ConstrainRAMSpace) */
	expect_job("4:memory:/slurm/uid_0/job_3/step_0/task_1\n", 3, "0");
	expect_job("3:cpuset:/slurm/uid_1001/job_4294967295/step_12\n", 4294967295u, "12");
}

static void test_v2(void **state)
{
	(void)state;
	expect_job("0::/system.slice/slurmstepd.scope/job_42/step_3/user/task_0\n", 42, "3");
	expect_job("0::/system.slice/slurmstepd.scope/job_42/step_batch/user/task_special\n", 42,
		   "batch");
	expect_job("0::/system.slice/slurmstepd.scope/job_42/step_extern/slurm\n", 42, "extern");
	expect_job("0::/system.slice/slurmstepd.scope/job_42\n", 42, "");
	expect_none("0::/\n");
	expect_none("0::/system.slice/slurmstepd.scope/system\n");
	expect_none("0::/user.slice/user-1001.slice/session-3.scope\n");
}

/* several hierarchies, as /proc/PID/cgroup lists them on a hybrid node */
static void test_hybrid(void **state)
{
	(void)state;
	expect_job("12:pids:/\n11:blkio:/\n9:devices:/\n"
		   "6:freezer:/slurm_vm/uid_1001/job_9/step_0\n"
		   "4:memory:/process_api/0f3a\n3:cpuset:/slurm_vm/uid_1001/job_9/step_0\n"
		   "1:name=systemd:/\n0::/\n",
		   9, "0");
	/* the line with the step wins over one at job level */
	expect_job("6:freezer:/slurm_vm/uid_1001/job_9\n"
		   "3:cpuset:/slurm_vm/uid_1001/job_9/step_batch\n",
		   9, "batch");
	expect_job("3:cpuset:/slurm_vm/uid_1001/job_9/step_batch\n"
		   "6:freezer:/slurm_vm/uid_1001/job_9\n",
		   9, "batch");
	/* a line without a job next to one with it */
	expect_job("0::/\n6:freezer:/slurm_vm/uid_1001/job_5/step_0/task_2", 5, "0");
	/* no Slurm cgroup at all: linuxproc, pgid */
	expect_none("12:pids:/\n6:freezer:/\n4:memory:/process_api/0f3a\n1:name=systemd:/\n"
		    "0::/\n");
	expect_none("");
	expect_none("\n\n");
}

static void test_nested_and_names(void **state)
{
	char step[4];
	uint32_t job = 0;

	(void)state;
	/* the outermost job component is Slurm's; what is below the step is
	 * not the job's */
	expect_job("0::/system.slice/slurmstepd.scope/job_8/step_0/user/job_9\n", 8, "0");
	/* names that are no job component */
	expect_none("6:freezer:/slurm_vm/uid_1001/job_\n");
	expect_none("6:freezer:/slurm_vm/uid_1001/job_12x/step_0\n");
	expect_none("6:freezer:/slurm_vm/uid_1001/job_-3/step_0\n");
	expect_none("6:freezer:/slurm_vm/uid_1001/job_0/step_0\n");
	expect_none("6:freezer:/slurm_vm/uid_1001/job_4294967296/step_0\n");
	expect_none("6:freezer:/slurm_vm/uid_1001/job_00000000001/step_0\n");
	expect_none("6:freezer:/slurm_vm/uid_1001/myjob_4/step_0\n");
	expect_none("6:freezer:/slurm_vm/uid_1001/job\n");
	/* a step name, not a step: none */
	expect_job("6:freezer:/slurm_vm/uid_1001/job_4/step_\n", 4, "");
	expect_job("6:freezer:/slurm_vm/uid_1001/job_4/other\n", 4, "");
	expect_job("6:freezer://slurm_vm//uid_1001//job_4//step_1//\n", 4, "1");
	/* truncated to the caller's buffer */
	assert_int_equal(job_cgroup_parse("0::/a/job_4/step_interactive", &job, step,
					  sizeof(step)),
			 1);
	assert_string_equal(step, "int");
}

static void test_malformed(void **state)
{
	uint32_t job;

	(void)state;
	expect_malformed("6:freezer\n");
	expect_malformed("garbage");
	expect_malformed("6:freezer:slurm_vm/uid_1001/job_4/step_0\n"); /* not absolute */
	expect_malformed("6:freezer:\n");
	expect_malformed(":freezer:/slurm/uid_1/job_4\n");
	expect_malformed("6:freezer:/slurm/uid_1/job_4/step_0\nbroken line\n");
	/* two jobs at once */
	expect_malformed("6:freezer:/slurm/uid_1/job_4/step_0\n3:cpuset:/slurm/uid_1/job_5\n");
	assert_int_equal(job_cgroup_parse(NULL, &job, NULL, 0), -EINVAL);
	assert_int_equal(job_cgroup_parse("0::/", NULL, NULL, 0), -EINVAL);
}

static void test_environ(void **state)
{
	static const char env[] = "HOME=/home/u\0SLURM_JOB_IDX=5\0SLURM_JOB_ID=123\0"
				  "SLURM_JOB_ID=456\0PATH=/bin";
	uint32_t job = 0;

	(void)state;
	assert_int_equal(job_environ_parse(env, sizeof(env), &job), 1);
	assert_int_equal(job, 123);
	/* the last string without its NUL */
	assert_int_equal(job_environ_parse("A=1\0SLURM_JOB_ID=9", 18, &job), 1);
	assert_int_equal(job, 9);
	/* a block cut inside the value: the value is what is in the block */
	assert_int_equal(job_environ_parse("SLURM_JOB_ID=91", 14, &job), 1);
	assert_int_equal(job, 9);
	job = 0;
	assert_int_equal(job_environ_parse("SLURM_JOB_ID=", 13, &job), 0);
	assert_int_equal(job_environ_parse("SLURM_JOB_ID=12a\0", 17, &job), 0);
	assert_int_equal(job_environ_parse("SLURM_JOB_ID=0\0", 15, &job), 0);
	assert_int_equal(job_environ_parse("SLURM_JOB_ID=-1\0", 16, &job), 0);
	assert_int_equal(job_environ_parse("SLURM_JOB_ID=99999999999\0", 25, &job), 0);
	/* the first occurrence counts, malformed or not */
	assert_int_equal(job_environ_parse("SLURM_JOB_ID=x\0SLURM_JOB_ID=5\0", 31, &job), 0);
	assert_int_equal(job_environ_parse("XSLURM_JOB_ID=5\0", 16, &job), 0);
	assert_int_equal(job_environ_parse("", 0, &job), 0);
	assert_int_equal(job_environ_parse(NULL, 0, &job), 0);
	assert_int_equal(job, 0);
}

/* a child sleeping with env (NULL: ours) until killed, in cgroup dir
 * (NULL: ours) */
static pid_t sleeper(const char *env_extra, const char *dir)
{
	pid_t pid = cg_exec_child(0, dir, "/bin/sleep", (char *[]){"sleep", "30", NULL},
				  env_extra ? (char *[]){(char *)env_extra, NULL} : NULL);

	usleep(20000); /* the new image's environment may read empty at first */
	return pid;
}

struct seen {
	pid_t want[4];
	int found[4];
	int others;
};

static int note(pid_t pid, void *ctx)
{
	struct seen *s = ctx;

	for (int i = 0; i < 4; i++)
		if (s->want[i] == pid) {
			s->found[i]++;
			return 0;
		}
	s->others++;
	return 0;
}

static int stop_at_first(pid_t pid, void *ctx)
{
	(void)pid;
	(*(int *)ctx)++;
	return 7;
}

/* a job id no process of this machine has */
#define FALLBACK_JOB 3999999001u

static void test_environ_fallback_and_scan(void **state)
{
	pid_t a, b, c;
	struct seen s = {0};
	uint32_t job = 0;
	char step[16] = "x";
	int calls = 0;

	(void)state;
	a = sleeper("SLURM_JOB_ID=3999999001", NULL);
	b = sleeper("SLURM_JOB_ID=3999999001", NULL);
	c = sleeper("SLURM_JOB_ID=3999999002", NULL);
	assert_int_equal(job_of_process(a, &job, step, sizeof(step)), 1);
	assert_int_equal(job, FALLBACK_JOB);
	assert_string_equal(step, "");
	s.want[0] = a;
	s.want[1] = b;
	s.want[2] = c;
	assert_int_equal(job_processes_for_each(FALLBACK_JOB, JOB_ANY_OWNER, note, &s), 0);
	assert_int_equal(s.found[0], 1);
	assert_int_equal(s.found[1], 1);
	assert_int_equal(s.found[2], 0);
	assert_int_equal(s.others, 0);
	assert_int_equal(job_processes_for_each(FALLBACK_JOB, JOB_ANY_OWNER, stop_at_first, &calls), 7);
	assert_int_equal(calls, 1);
	assert_int_equal(job_processes_for_each(0, JOB_ANY_OWNER, note, &s), -EINVAL);
	/* another owner's processes are not even read */
	memset(&s, 0, sizeof(s));
	s.want[0] = a;
	s.want[1] = b;
	assert_int_equal(job_processes_for_each(FALLBACK_JOB, 65534, note, &s), 0);
	assert_int_equal(s.found[0] + s.found[1] + s.others, 0);
	proc_kill(a);
	proc_kill(b);
	proc_kill(c);
	assert_int_equal(job_of_process(a, &job, NULL, 0), -ENOENT);
}

/* a job cgroup of the test's (v1 freezer): its processes (in a step, at
 * job level) are the job's by it, whatever their environment says */
static void test_cgroup_scan(void **state)
{
	char base[128], uid_dir[160], job_dir[192], step_dir[224];
	pid_t in, job_level;
	struct seen s = {0};
	uint32_t job = 0;
	char step[16];

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "making cgroups needs root");
	SKIP_UNLESS(!access("/sys/fs/cgroup/freezer/cgroup.procs", W_OK),
		    "no v1 freezer hierarchy at /sys/fs/cgroup/freezer");
	snprintf(base, sizeof(base), "/sys/fs/cgroup/freezer/nktest_jc_%d", (int)getpid());
	snprintf(uid_dir, sizeof(uid_dir), "%s/uid_0", base);
	snprintf(job_dir, sizeof(job_dir), "%s/job_3999999003", uid_dir);
	snprintf(step_dir, sizeof(step_dir), "%s/step_batch", job_dir);
	assert_int_equal(mkdir(base, 0755), 0);
	assert_int_equal(mkdir(uid_dir, 0755), 0);
	assert_int_equal(mkdir(job_dir, 0755), 0);
	assert_int_equal(mkdir(step_dir, 0755), 0);
	in = sleeper("SLURM_JOB_ID=3999999004", step_dir);
	job_level = sleeper("SLURM_JOB_ID=3999999004", job_dir); /* as slurmstepd */
	/* its cgroup, not its environment */
	assert_int_equal(job_of_process(in, &job, step, sizeof(step)), 1);
	assert_int_equal(job, 3999999003u);
	assert_string_equal(step, "batch");
	s.want[0] = in;
	s.want[1] = job_level;
	assert_int_equal(job_processes_for_each(3999999003u, JOB_ANY_OWNER, note, &s), 0);
	assert_int_equal(s.found[0], 1);
	assert_int_equal(s.found[1], 1);
	memset(&s, 0, sizeof(s));
	s.want[0] = in;
	assert_int_equal(job_processes_for_each(3999999004u, JOB_ANY_OWNER, note, &s), 0);
	assert_int_equal(s.found[0], 0);
	assert_int_equal(s.others, 0);
	proc_kill(in);
	proc_kill(job_level);
	usleep(100000);
	rmdir(step_dir);
	rmdir(job_dir);
	rmdir(uid_dir);
	assert_int_equal(rmdir(base), 0);
}

/* whether a node shows Slurm job cgroups, on fake cgroup roots */
static void test_cgroups_in_use(void **state)
{
	char root[64], path[192];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/nunatak-jc-XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_int_equal(job_cgroups_in_use(root), 0);
	snprintf(path, sizeof(path), "%s/cpu", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/cpu/slurmish", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/cpu/slurm_vm.txt", root);
	assert_int_equal(close(open(path, O_CREAT | O_WRONLY, 0644)), 0);
	assert_int_equal(job_cgroups_in_use(root), 0); /* neither slurm nor slurm_* dirs */
	snprintf(path, sizeof(path), "%s/freezer", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/freezer/slurm_vm", root);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(job_cgroups_in_use(root), 1); /* v1 */
	assert_int_equal(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/freezer/slurm", root);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(job_cgroups_in_use(root), 1);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(job_cgroups_in_use(root), 0);
	snprintf(path, sizeof(path), "%s/unified/system.slice/slurmstepd.scope", root);
	assert_int_equal(run_cmd("mkdir -p '%s'", path), 0);
	assert_int_equal(job_cgroups_in_use(root), 1); /* v2, hybrid mount */
	assert_int_equal(run_cmd("rm -rf '%s'", root), 0);
	assert_int_equal(job_cgroups_in_use(root), 0); /* no such root */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v1),
	    cmocka_unit_test(test_v2),
	    cmocka_unit_test(test_hybrid),
	    cmocka_unit_test(test_nested_and_names),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_environ),
	    cmocka_unit_test(test_environ_fallback_and_scan),
	    cmocka_unit_test(test_cgroup_scan),
	    cmocka_unit_test(test_cgroups_in_use),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
