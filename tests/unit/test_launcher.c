/* Unit tests for userspace/launch/launcher: a table of real command lines
 * (launchers, wrappers before and after them, options with one and two
 * values, joined forms, MPMD, unresolvable lines) with the expected
 * launcher, target, world size and Run name, each result also checked
 * against the invariants of launcher.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include "userspace/launch/launcher.h"

#define MAX_WORDS 64

struct split_case {
	const char *cmd; /* words separated by single spaces */
	int launcher_index;
	int target_index;
	long world_size;
	const char *name;     /* launcher_target_name() */
	const char *launcher; /* launcher[] */
};

static const struct split_case cases[] = {
    /* plain programs */
    {"./app", -1, 0, -1, "app", ""},
    {"/usr/bin/hostname -f", -1, 0, -1, "hostname", ""},
    {"FOO=1 ./app", -1, 1, -1, "app", ""},
    {"FOO=1 BAR_2=x=y ./app --n 3", -1, 2, -1, "app", ""},
    {"taskset -c 1 ./app", -1, 3, -1, "app", ""},
    {"taskset 0x3 ./app", -1, 2, -1, "app", ""},
    {"taskset -ac 0-3 ./app", -1, 3, -1, "app", ""},
    {"nohup setsid -w ./app", -1, 3, -1, "app", ""},
    {"nice -n 5 ionice -c 3 ./app", -1, 6, -1, "app", ""},
    {"nice -10 stdbuf -oL -e 0 ./app", -1, 6, -1, "app", ""},
    {"chrt -f 10 ./app", -1, 3, -1, "app", ""},
    {"chrt --other ./app", -1, 2, -1, "app", ""},
    {"/usr/bin/time -f %e -o t.log ./app", -1, 5, -1, "app", ""},
    /* Open MPI */
    {"mpirun -n 4 ./app", 0, 3, 4, "app", "mpirun"},
    {"mpirun -np 8 ./app x y", 0, 3, 8, "app", "mpirun"},
    {"time mpirun --np 8 --map-by core ./solver in.dat", 1, 6, 8, "solver", "mpirun"},
    {"mpirun --mca btl self,vader --mca pml ob1 -np 2 ./app", 0, 9, 2, "app", "mpirun"},
    {"mpirun -x OMP_NUM_THREADS -x LD_LIBRARY_PATH=/l -n 2 ./app", 0, 7, 2, "app", "mpirun"},
    {"mpirun --oversubscribe --report-bindings --bind-to core -n 3 ./app", 0, 7, 3, "app",
     "mpirun"},
    {"mpirun -H n1,n2 --hostfile hf -N 2 -np 4 ./app", 0, 9, 4, "app", "mpirun"},
    {"mpirun -n4 ./app", 0, 2, 4, "app", "mpirun"},
    {"mpirun -np=6 ./app", 0, 2, 6, "app", "mpirun"},
    {"mpirun -np4 --display-map ./app", 0, 3, 4, "app", "mpirun"},
    {"mpirun --n 5 ./app", 0, 3, 5, "app", "mpirun"},
    {"mpirun -c 2 ./app", 0, 3, 2, "app", "mpirun"},
    {"/opt/ompi/bin/mpirun --allow-run-as-root -np 2 --gmca a b ./app", 0, 7, 2, "app", "mpirun"},
    {"prterun --np 2 --prtemca x y ./app", 0, 6, 2, "app", "prterun"},
    {"mpirun --unknown-flag ./app", 0, 2, -1, "app", "mpirun"},
    {"mpirun ./app", 0, 1, -1, "app", "mpirun"},
    /* MPMD: first program, counts summed */
    {"mpirun -n 1 ./a : -n 2 ./b", 0, 3, 3, "a", "mpirun"},
    {"mpirun -n 1 ./a : ./b", 0, 3, -1, "a", "mpirun"},
    /* wrappers around and inside the launcher */
    {"env OMP_NUM_THREADS=2 mpiexec -np 4 numactl -C 0-3 ./app arg", 2, 8, 4, "app", "mpiexec"},
    {"env -i -u HOME PATH=/bin mpirun -n 2 ./app", 5, 8, 2, "app", "mpirun"},
    {"env - A=1 mpirun -n 2 ./app", 3, 6, 2, "app", "mpirun"},
    {"mpirun -n 2 numactl --interleave=all --localalloc ./app", 0, 6, 2, "app", "mpirun"},
    {"mpirun -n 2 numactl -l -N 0 -m 0 ./app", 0, 9, 2, "app", "mpirun"},
    {"mpirun -n 2 taskset -c 1 env X=1 ./app", 0, 8, 2, "app", "mpirun"},
    /* MPICH hydra */
    {"mpiexec.hydra -genv I_MPI_DEBUG 5 -n 4 -ppn 2 ./app", 0, 8, 4, "app", "mpiexec.hydra"},
    {"mpiexec -f hosts -env A B -genvall -np 3 ./app", 0, 9, 3, "app", "mpiexec"},
    {"mpiexec.mpich -bootstrap ssh -iface ib0 -n 2 ./app", 0, 7, 2, "app", "mpiexec.mpich"},
    {"mpiexec.hydra -launcher ssh -launcher-exec /x/rsh -hosts a,b -localhost 10.0.0.1 -n 2 -ppn 1 ./app",
     0, 13, 2, "app", "mpiexec.hydra"},
    /* Slurm */
    {"srun -n 4 --cpu-bind=cores ./app", 0, 4, 4, "app", "srun"},
    {"srun -n4 -c2 ./app", 0, 3, 4, "app", "srun"},
    {"srun --ntasks=16 --mpi=pmix ./app", 0, 3, 16, "app", "srun"},
    {"srun --ntasks 8 --cpus-per-task 2 --partition debug ./app", 0, 7, 8, "app", "srun"},
    {"srun -N 2 -p debug -t 10 -J job -c 4 ./app", 0, 11, -1, "app", "srun"},
    {"srun -ln2 -pdebug ./app", 0, 3, 2, "app", "srun"},
    {"srun --exclusive -n 2 ./app", 0, 4, 2, "app", "srun"},
    {"srun -n 2 /usr/bin/time -v ./app", 0, 5, 2, "app", "srun"},
    /* unresolvable */
    {"mpirun -n 4", 0, -1, 4, "mpirun", "mpirun"},
    {"mpirun", 0, -1, -1, "mpirun", "mpirun"},
    {"mpirun -n", 0, -1, -1, "mpirun", "mpirun"},
    {"mpirun --app appfile", 0, -1, -1, "mpirun", "mpirun"},
    {"env", -1, -1, -1, "env", ""},
    {"env A=1", -1, -1, -1, "env", ""},
    {"env -S A=1", -1, -1, -1, "env", ""},
    {"taskset -p 0x3 1234", -1, -1, -1, "taskset", ""},
    {"srun -n 2", 0, -1, 2, "srun", "srun"},
};

/* splits a case's command line in place into argv */
static int split_words(char *buf, char *argv[])
{
	int argc = 0;

	for (char *w = strtok(buf, " "); w && argc < MAX_WORDS - 1; w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc] = NULL;
	return argc;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* the invariants launcher.h promises for every filled split */
static void assert_sane_split(int argc, char *const argv[], const struct launcher_split *s)
{
	assert_true(s->launcher_index >= -1 && s->launcher_index < argc);
	assert_true(s->target_index >= -1 && s->target_index < argc);
	if (s->launcher_index >= 0 && s->target_index >= 0)
		assert_true(s->launcher_index < s->target_index);
	assert_true(s->world_size == -1 || s->world_size >= 1);
	assert_non_null(memchr(s->launcher, '\0', sizeof(s->launcher)));
	if (s->launcher_index < 0) {
		assert_string_equal(s->launcher, "");
	} else {
		assert_string_equal(s->launcher, basename_of(argv[s->launcher_index]));
		assert_true(launcher_is_launcher_process(s->launcher));
	}
	if (s->target_index >= 0)
		assert_false(launcher_is_launcher_process(argv[s->target_index]));
}

static void test_command_lines(void **state)
{
	int failures = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct split_case *c = &cases[k];
		char buf[512], *argv[MAX_WORDS];
		struct launcher_split s;
		int argc;

		snprintf(buf, sizeof(buf), "%s", c->cmd);
		argc = split_words(buf, argv);
		memset(&s, 0x5a, sizeof(s));
		assert_int_equal(launcher_split(argc, argv, &s), 0);
		if (s.launcher_index != c->launcher_index || s.target_index != c->target_index ||
		    s.world_size != c->world_size || strcmp(s.launcher, c->launcher) ||
		    strcmp(launcher_target_name(argc, argv, &s), c->name))
			print_error("'%s': got launcher %d '%s' target %d world %ld name '%s', "
				    "expected %d '%s' %d %ld '%s'\n",
				    c->cmd, s.launcher_index, s.launcher, s.target_index,
				    s.world_size, launcher_target_name(argc, argv, &s),
				    c->launcher_index, c->launcher, c->target_index, c->world_size,
				    c->name),
			    failures++;
		assert_sane_split(argc, argv, &s);
	}
	assert_int_equal(failures, 0);
	assert_true(sizeof(cases) / sizeof(cases[0]) >= 25);
}

static void test_invalid_arguments(void **state)
{
	char *argv[] = {"mpirun", "-n", "2", "./app", NULL};
	struct launcher_split s;

	(void)state;
	assert_int_equal(launcher_split(0, argv, &s), -EINVAL);
	assert_int_equal(launcher_split(-1, argv, &s), -EINVAL);
	assert_int_equal(launcher_split(1, NULL, &s), -EINVAL);
	assert_int_equal(launcher_split(4, argv, NULL), -EINVAL);
	assert_string_equal(launcher_target_name(0, argv, &s), "");
	assert_string_equal(launcher_target_name(4, argv, NULL), "mpirun");
}

/* argc larger than the words present: the NULL ends the line */
static void test_null_inside_argv(void **state)
{
	char *argv[] = {"mpirun", "-n", "2", NULL, "./app", NULL};
	struct launcher_split s;

	(void)state;
	assert_int_equal(launcher_split(5, argv, &s), 0);
	assert_int_equal(s.launcher_index, 0);
	assert_int_equal(s.target_index, -1);
	assert_int_equal(s.world_size, 2);
}

/* odd words never crash nor leave the bounds */
static void test_odd_words(void **state)
{
	char *argv[] = {"", "-", "--", "=", "A=", "mpirun", "-np", "x", "--mca", "a", NULL};
	char longname[200];
	char *argv2[] = {longname, "./app", NULL};
	struct launcher_split s;

	(void)state;
	for (int argc = 1; argc <= 10; argc++) {
		assert_int_equal(launcher_split(argc, argv + 0, &s), 0);
		assert_sane_split(argc, argv, &s);
		assert_int_equal(launcher_split(argc, argv + (10 - argc), &s), 0);
		assert_sane_split(argc, argv + (10 - argc), &s);
	}
	/* the first word "" is the program: it is no option, no assignment */
	assert_int_equal(launcher_split(10, argv, &s), 0);
	assert_int_equal(s.target_index, 0);

	/* "-np x" declares nothing */
	assert_int_equal(launcher_split(5, argv + 5, &s), 0);
	assert_int_equal(s.world_size, -1);

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(launcher_split(2, argv2, &s), 0);
	assert_int_equal(s.target_index, 0);
	assert_string_equal(s.launcher, "");
}

static void test_launcher_processes(void **state)
{
	static const char *const yes[] = {
	    "mpirun",	       "mpiexec",      "mpiexec.hydra",	  "mpiexec.mpich",
	    "mpirun.openmpi",  "mpirun.mpich", "mpiexec.openmpi", "orterun",
	    "prterun",	       "prte",	       "prted",		  "orted",
	    "hydra_pmi_proxy", "srun",	       "slurmstepd",	  "/usr/bin/mpirun",
	};
	static const char *const no[] = {
	    "app", "",	      "mpirun2", "mpi",	      "sbatch",	 "bash",
	    "env", "numactl", "slurmd",	 "/usr/bin/", "mpirun/", "xmpirun",
	};

	(void)state;
	for (size_t k = 0; k < sizeof(yes) / sizeof(yes[0]); k++)
		if (!launcher_is_launcher_process(yes[k]))
			fail_msg("'%s' should be a launcher process", yes[k]);
	for (size_t k = 0; k < sizeof(no) / sizeof(no[0]); k++)
		if (launcher_is_launcher_process(no[k]))
			fail_msg("'%s' should not be a launcher process", no[k]);
	assert_false(launcher_is_launcher_process(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_command_lines),      cmocka_unit_test(test_invalid_arguments),
	    cmocka_unit_test(test_null_inside_argv),   cmocka_unit_test(test_odd_words),
	    cmocka_unit_test(test_launcher_processes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
