/* test_machine_allocation — the allocation shape from cgroup v1 and v2
 * fixture trees built here (quota, ancestors' limits, "no limit" spelled
 * each hierarchy's way, a cgroup namespace), allocation_threads, and
 * allocation_read on this machine against sched_getaffinity. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
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
#include "userspace/machine/allocation.h"

static char root[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(root, sizeof(root), "allocation");
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(root);
	return 0;
}

/* mkdir -p root/rel */
static void mkdirs(const char *rel)
{
	char path[PATH_MAX], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0700);
		*p = '/';
	}
	mkdir(path, 0700);
}

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(write_file(path, text), 0);
}

static cpu_set_t cpus(int n)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < n; i++)
		CPU_SET(i * 2, &set); /* not contiguous: the count is what matters */
	return set;
}

static void test_v1_quota_and_memory(void **state)
{
	cpu_set_t set = cpus(4);
	struct allocation a;

	(void)state;
	mkdirs("cpu,cpuacct/slurm/job1");
	put("cpu,cpuacct/slurm/job1/cpu.cfs_quota_us", "150000\n");
	put("cpu,cpuacct/slurm/job1/cpu.cfs_period_us", "100000\n");
	mkdirs("memory/slurm/job1");
	put("memory/slurm/job1/memory.limit_in_bytes", "1073741824\n");
	assert_int_equal(allocation_parse(root,
					  "12:memory:/slurm/job1\n4:cpu,cpuacct:/slurm/job1\n0::/\n",
					  &set, &a),
			 0);
	assert_int_equal(a.visible_cores, 4);
	assert_true(CPU_EQUAL(&a.mask, &set));
	assert_near(a.cpu_quota, 1.5, 1e-12);
	assert_int_equal(a.memory_limit_bytes, 1073741824);
	assert_int_equal(allocation_threads(&a), 2); /* ceil(1.5) < 4 */
}

static void test_v1_ancestor_binds_and_unlimited(void **state)
{
	cpu_set_t set = cpus(8);
	struct allocation a;

	(void)state;
	/* the job has no quota (-1) nor limit (v1's page-counter maximum) but
	 * its parent is held to half a core */
	mkdirs("cpu/batch/job2");
	put("cpu/batch/cpu.cfs_quota_us", "50000\n");
	put("cpu/batch/cpu.cfs_period_us", "100000\n");
	put("cpu/batch/job2/cpu.cfs_quota_us", "-1\n");
	put("cpu/batch/job2/cpu.cfs_period_us", "100000\n");
	mkdirs("memory/batch/job2");
	put("memory/batch/job2/memory.limit_in_bytes", "9223372036854771712\n");
	assert_int_equal(allocation_parse(root, "5:memory:/batch/job2\n3:cpu:/batch/job2\n", &set,
					  &a),
			 0);
	assert_near(a.cpu_quota, 0.5, 1e-12);
	assert_int_equal(a.memory_limit_bytes, -1);
	assert_int_equal(allocation_threads(&a), 1);
}

static void test_v2_unified(void **state)
{
	cpu_set_t set = cpus(8);
	struct allocation a;

	(void)state;
	put("cgroup.controllers", "cpuset cpu io memory pids\n");
	mkdirs("user.slice/job3");
	put("user.slice/job3/cpu.max", "200000 100000\n");
	put("user.slice/job3/memory.max", "max\n");
	put("user.slice/memory.max", "4294967296\n");
	assert_int_equal(allocation_parse(root, "0::/user.slice/job3\n", &set, &a), 0);
	assert_near(a.cpu_quota, 2.0, 1e-12);
	assert_int_equal(a.memory_limit_bytes, 4294967296LL); /* the parent's */
	assert_int_equal(allocation_threads(&a), 2);
}

static void test_v2_no_limit(void **state)
{
	cpu_set_t set = cpus(3);
	struct allocation a;

	(void)state;
	mkdirs("unified/svc");
	put("unified/cgroup.controllers", "\n"); /* hybrid: v2 under unified/ */
	put("unified/svc/cpu.max", "max 100000\n");
	put("unified/svc/memory.max", "max\n");
	assert_int_equal(allocation_parse(root, "0::/svc\n", &set, &a), 0);
	assert_true(isnan(a.cpu_quota));
	assert_int_equal(a.memory_limit_bytes, -1);
	assert_int_equal(allocation_threads(&a), 3);
}

static void test_v2_hybrid_reads_unified(void **state)
{
	cpu_set_t set = cpus(4);
	struct allocation a;

	(void)state;
	mkdirs("unified/svc");
	put("unified/cgroup.controllers", "\n");
	put("unified/svc/cpu.max", "100000 100000\n");
	/* a decoy at the root that must not be read in hybrid mode */
	mkdirs("svc");
	put("svc/cpu.max", "10000 100000\n");
	assert_int_equal(allocation_parse(root, "0::/svc\n", &set, &a), 0);
	assert_near(a.cpu_quota, 1.0, 1e-12);
}

static void test_namespace_sees_its_root(void **state)
{
	cpu_set_t set = cpus(4);
	struct allocation a;

	(void)state;
	/* inside a cgroup namespace the path may be "/" or "/../x": the mount
	 * root is the cgroup itself */
	put("cgroup.controllers", "cpu memory\n");
	put("cpu.max", "300000 100000\n");
	mkdirs("x");
	put("x/cpu.max", "10000 100000\n");
	assert_int_equal(allocation_parse(root, "0::/../x\n", &set, &a), 0);
	assert_near(a.cpu_quota, 3.0, 1e-12);
	assert_int_equal(allocation_threads(&a), 3);
}

static void test_threads_rule(void **state)
{
	struct allocation a = { .visible_cores = 2, .cpu_quota = NAN, .memory_limit_bytes = -1 };

	(void)state;
	assert_int_equal(allocation_threads(&a), 2);
	a.cpu_quota = 0.3;
	assert_int_equal(allocation_threads(&a), 1);
	a.cpu_quota = 1.01;
	assert_int_equal(allocation_threads(&a), 2);
	a.cpu_quota = 16;
	assert_int_equal(allocation_threads(&a), 2);
	assert_int_equal(allocation_parse(NULL, "", &a.mask, &a), -EINVAL);
}

static void test_read_here(void **state)
{
	struct allocation a;
	cpu_set_t set;

	(void)state;
	CPU_ZERO(&set);
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_int_equal(allocation_read(&a), 0);
	assert_int_equal(a.visible_cores, CPU_COUNT(&set));
	assert_true(CPU_EQUAL(&a.mask, &set));
	assert_true(allocation_threads(&a) >= 1 && allocation_threads(&a) <= a.visible_cores);
	assert_true(isnan(a.cpu_quota) || a.cpu_quota > 0);
	assert_true(a.memory_limit_bytes == -1 || a.memory_limit_bytes > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v1_quota_and_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1_ancestor_binds_and_unlimited, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_v2_unified, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v2_no_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v2_hybrid_reads_unified, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespace_sees_its_root, setup, teardown),
		cmocka_unit_test(test_threads_rule),
		cmocka_unit_test(test_read_here),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
