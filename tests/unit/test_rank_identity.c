/* Unit tests for userspace/launch/rank_identity: each family alone, the
 * precedence when several are present (the measured mpirun-in-sbatch and
 * srun --mpi=pmix cases), malformed numbers, blocks without a final NUL,
 * and one end-to-end read of a spawned child's /proc/PID/environ. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include "userspace/launch/rank_identity.h"

#define MAX_VARS 16
#define SLEEP_PATH "/bin/sleep"

struct identity_case {
	const char *vars[MAX_VARS]; /* NULL-ended */
	int has_rank, rank, world_size, local_rank;
	const char *family;
};

static const struct identity_case cases[] = {
    /* each family alone */
    {{"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=1"},
     1,
     3,
     8,
     1,
     "OMPI_COMM_WORLD"},
    {{"MV2_COMM_WORLD_RANK=5", "MV2_COMM_WORLD_SIZE=6", "MV2_COMM_WORLD_LOCAL_RANK=2"},
     1,
     5,
     6,
     2,
     "MV2_COMM_WORLD"},
    {{"PMI_RANK=0", "PMI_SIZE=4", "MPI_LOCALRANKID=0"}, 1, 0, 4, 0, "PMI"},
    {{"PMIX_RANK=7", "PMIX_SIZE=16"}, 1, 7, 16, -1, "PMIX"},
    {{"PMIX_RANK=7"}, 1, 7, -1, -1, "PMIX"},
    {{"PALS_RANKID=11", "PALS_LOCAL_RANKID=3"}, 1, 11, -1, 3, "PALS"},
    {{"PALS_RANKID=11", "PALS_SIZE=12"}, 1, 11, 12, -1, "PALS"},
    {{"FLUX_TASK_RANK=2", "FLUX_JOB_SIZE=3", "FLUX_TASK_LOCAL_ID=0"}, 1, 2, 3, 0, "FLUX_TASK"},
    {{"SLURM_PROCID=9", "SLURM_NTASKS=10", "SLURM_LOCALID=1"}, 1, 9, 10, 1, "SLURM"},
    /* precedence: mpirun inside sbatch, every rank has SLURM_PROCID=0 */
    {{"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_LOCALID=0", "PMIX_RANK=2",
      "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=2"},
     1,
     2,
     4,
     2,
     "OMPI_COMM_WORLD"},
    /* srun --mpi=pmix: no OMPI_COMM_WORLD_RANK, PMIX_RANK beats SLURM */
    {{"SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_LOCALID=0", "PMIX_RANK=3"}, 1, 3, -1, -1, "PMIX"},
    {{"SLURM_PROCID=3", "PMIX_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "PMIX_SIZE=5", "PMIX_LOCAL_RANK=1",
      "OMPI_COMM_WORLD_LOCAL_RANK=0"},
     1,
     3,
     4,
     1,
     "PMIX"},
    {{"PMIX_RANK=3", "OMPI_COMM_WORLD_LOCAL_RANK=3"}, 1, 3, -1, 3, "PMIX"},
    {{"PMI_RANK=1", "PMIX_RANK=2", "MV2_COMM_WORLD_RANK=3"}, 1, 3, -1, -1, "MV2_COMM_WORLD"},
    {{"PMI_RANK=1", "PMIX_RANK=2", "FLUX_TASK_RANK=4"}, 1, 1, -1, -1, "PMI"},
    {{"FLUX_TASK_RANK=4", "PALS_RANKID=5"}, 1, 5, -1, -1, "PALS"},
    {{"SLURM_PROCID=1", "FLUX_TASK_RANK=4"}, 1, 4, -1, -1, "FLUX_TASK"},
    /* malformed ranks: that family does not count */
    {{"OMPI_COMM_WORLD_RANK=abc", "SLURM_PROCID=2"}, 1, 2, -1, -1, "SLURM"},
    {{"OMPI_COMM_WORLD_RANK=-1", "PMI_RANK=", "PMIX_RANK=3x", "SLURM_PROCID=1"},
     1,
     1,
     -1,
     -1,
     "SLURM"},
    {{"OMPI_COMM_WORLD_RANK=+2"}, 0, -1, -1, -1, NULL},
    {{"OMPI_COMM_WORLD_RANK= 2"}, 0, -1, -1, -1, NULL},
    {{"OMPI_COMM_WORLD_RANK=2147483648"}, 0, -1, -1, -1, NULL},
    {{"OMPI_COMM_WORLD_RANK=2147483647"}, 1, 2147483647, -1, -1, "OMPI_COMM_WORLD"},
    {{"OMPI_COMM_WORLD_RANK=99999999999999999999999"}, 0, -1, -1, -1, NULL},
    {{"OMPI_COMM_WORLD_RANK=007"}, 1, 7, -1, -1, "OMPI_COMM_WORLD"},
    /* malformed or contradicting size and local rank: unknown */
    {{"PMI_RANK=1", "PMI_SIZE=abc", "MPI_LOCALRANKID=-3"}, 1, 1, -1, -1, "PMI"},
    {{"PMI_RANK=1", "PMI_SIZE=0"}, 1, 1, -1, -1, "PMI"},
    {{"PMI_RANK=4", "PMI_SIZE=4"}, 1, 4, -1, -1, "PMI"},
    {{"PMIX_RANK=1", "OMPI_COMM_WORLD_SIZE=x", "PMIX_SIZE=2"}, 1, 1, 2, -1, "PMIX"},
    /* names must match whole */
    {{"XOMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_RANKS=1", "OMPI_COMM_WORLD_RANK",
      "OMPI_COMM_WORLD_RAN=1", "=1"},
     0,
     -1,
     -1,
     -1,
     NULL},
    /* the first occurrence counts, as getenv(3) */
    {{"SLURM_PROCID=1", "SLURM_PROCID=2"}, 1, 1, -1, -1, "SLURM"},
    /* none */
    {{"PATH=/bin", "HOME=/root", "SLURM_JOB_ID=12"}, 0, -1, -1, -1, NULL},
    {{NULL}, 0, -1, -1, -1, NULL},
};

/* NUL-separated block of vars, as /proc/PID/environ; returns its length */
static size_t build_block(const char *const vars[], char *buf, size_t cap)
{
	size_t len = 0;

	for (size_t k = 0; k < MAX_VARS && vars[k]; k++) {
		size_t n = strlen(vars[k]) + 1;

		assert_true(len + n <= cap);
		memcpy(buf + len, vars[k], n);
		len += n;
	}
	return len;
}

static void assert_identity(const struct rank_identity *got, const struct identity_case *c,
			    size_t index, const char *variant)
{
	if (got->has_rank != c->has_rank || got->rank != c->rank ||
	    got->world_size != c->world_size || got->local_rank != c->local_rank ||
	    (got->family == NULL) != (c->family == NULL) ||
	    (c->family && strcmp(got->family, c->family)))
		fail_msg("case %zu (%s, first var '%s'): got %d rank %d size %d local %d '%s', "
			 "expected %d %d %d %d '%s'",
			 index, variant, c->vars[0] ? c->vars[0] : "", got->has_rank, got->rank,
			 got->world_size, got->local_rank, got->family ? got->family : "(null)",
			 c->has_rank, c->rank, c->world_size, c->local_rank,
			 c->family ? c->family : "(null)");
	/* invariants */
	if (!got->has_rank)
		assert_true(got->rank == -1 && got->family == NULL);
	else
		assert_true(got->rank >= 0 && got->family != NULL);
	assert_true(got->world_size == -1 || got->world_size > got->rank);
	assert_true(got->local_rank >= -1);
}

static void test_families(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char buf[1024];
		struct rank_identity id;
		size_t len = build_block(cases[k].vars, buf, sizeof(buf));
		char *exact;

		memset(&id, 0x5a, sizeof(id));
		assert_int_equal(rank_identity_from_environ(buf, len, &id), 0);
		assert_identity(&id, &cases[k], k, "with final NUL");

		/* without the final NUL, in a buffer of exactly that size for ASan */
		if (len) {
			exact = malloc(len - 1 ? len - 1 : 1);
			assert_non_null(exact);
			memcpy(exact, buf, len - 1);
			memset(&id, 0x5a, sizeof(id));
			assert_int_equal(rank_identity_from_environ(exact, len - 1, &id), 0);
			assert_identity(&id, &cases[k], k, "without final NUL");
			free(exact);
		}
	}
}

/* the last variable's value is not cut when the final NUL is missing */
static void test_value_at_block_end(void **state)
{
	static const char block[] = "A=1\0PMI_RANK=12";
	struct rank_identity id;

	(void)state;
	assert_int_equal(rank_identity_from_environ(block, sizeof(block) - 1, &id), 0);
	assert_int_equal(id.rank, 12);
	/* a truncated block: PMI_RANK=1 only */
	assert_int_equal(rank_identity_from_environ(block, sizeof(block) - 2, &id), 0);
	assert_int_equal(id.rank, 1);
	/* cut inside the name: nothing */
	assert_int_equal(rank_identity_from_environ(block, 10, &id), 0);
	assert_int_equal(id.has_rank, 0);
	/* empty entries are skipped */
	assert_int_equal(rank_identity_from_environ("\0\0PMI_RANK=3\0", 14, &id), 0);
	assert_int_equal(id.rank, 3);
}

static void test_invalid_arguments(void **state)
{
	struct rank_identity id;

	(void)state;
	assert_int_equal(rank_identity_from_environ("PMI_RANK=1", 10, NULL), -EINVAL);
	assert_int_equal(rank_identity_from_environ(NULL, 4, &id), -EINVAL);
	assert_int_equal(rank_identity_from_environ(NULL, 0, &id), 0);
	assert_int_equal(id.has_rank, 0);
	memset(&id, 0x5a, sizeof(id));
	assert_int_equal(rank_identity_read(0, &id), -EINVAL);
	assert_int_equal(id.has_rank, 0);
	assert_int_equal(id.rank, -1);
	assert_int_equal(rank_identity_read(-5, &id), -EINVAL);
	assert_int_equal(rank_identity_read(getpid(), NULL), -EINVAL);
}

static pid_t spawn_sleep(char *const envp[])
{
	char *argv[] = {"sleep", "5", NULL};
	pid_t pid;
	int err;

	err = posix_spawn(&pid, SLEEP_PATH, NULL, NULL, argv, envp);
	if (err)
		fail_msg("posix_spawn %s: %s", SLEEP_PATH, strerror(err));
	return pid;
}

/*
 * glibc's posix_spawn returns once the child's exec has replaced its
 * memory, but the kernel fills in where the environment lies a little
 * later: /proc/PID/environ may read empty for that moment. Waits for it.
 */
static void wait_environ_ready(pid_t pid)
{
	char path[64], c;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	for (int tries = 0; tries < 2000; tries++) {
		FILE *f = fopen(path, "r");
		int got = f && fread(&c, 1, 1, f) == 1;

		if (f)
			fclose(f);
		if (got)
			return;
		usleep(1000);
	}
	fail_msg("%s stayed empty", path);
}

static void reap(pid_t pid)
{
	int status;

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* end to end: a real child's /proc/PID/environ, larger than one read chunk */
static void test_read_spawned_child(void **state)
{
	static char big[40000];
	char *envp[] = {"PATH=/usr/bin:/bin",
			big,
			"SLURM_PROCID=0",
			"SLURM_NTASKS=1",
			"PMIX_RANK=5",
			"OMPI_COMM_WORLD_SIZE=8",
			"OMPI_COMM_WORLD_LOCAL_RANK=1",
			NULL};
	char *no_rank_envp[] = {"PATH=/usr/bin:/bin", "SLURM_JOB_ID=42", NULL};
	struct rank_identity id;
	pid_t pid;
	int err;

	(void)state;
	if (access(SLEEP_PATH, X_OK)) {
		print_message("SKIPPED: no %s to spawn\n", SLEEP_PATH);
		skip();
	}
	memset(big, 'x', sizeof(big) - 1);
	memcpy(big, "BIG=", 4);

	pid = spawn_sleep(envp);
	wait_environ_ready(pid);
	memset(&id, 0x5a, sizeof(id));
	err = rank_identity_read(pid, &id);
	reap(pid);
	assert_int_equal(err, 0);
	assert_int_equal(id.has_rank, 1);
	assert_int_equal(id.rank, 5);
	assert_int_equal(id.world_size, 8);
	assert_int_equal(id.local_rank, 1);
	assert_string_equal(id.family, "PMIX");

	/* the process is gone once reaped */
	memset(&id, 0x5a, sizeof(id));
	err = rank_identity_read(pid, &id);
	assert_true(err == -ENOENT || err == -ESRCH);
	assert_int_equal(id.has_rank, 0);

	pid = spawn_sleep(no_rank_envp);
	wait_environ_ready(pid);
	memset(&id, 0x5a, sizeof(id));
	err = rank_identity_read(pid, &id);
	reap(pid);
	assert_int_equal(err, 0);
	assert_int_equal(id.has_rank, 0);
	assert_int_equal(id.rank, -1);
	assert_null(id.family);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_families),
	    cmocka_unit_test(test_value_at_block_end),
	    cmocka_unit_test(test_invalid_arguments),
	    cmocka_unit_test(test_read_spawned_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
