/* test_mpi_probes — the MPI probes on the real MPI libraries of Debian's
 * openmpi and mpich: which modules are probed, and a small MPI program
 * counted exactly.
 *
 * The group setup builds one program with mpicc.openmpi and mpicc.mpich
 * in a mkdtemp directory; its MPI library is the one ldd names. The
 * program, run as a singleton (no mpirun), calls MPI_Allreduce N times
 * with D doubles, PMPI_Allreduce K times (the profiling entry: the same
 * function, counted once per call), MPI_Barrier once, between MPI_Init and
 * MPI_Finalize. It is followed through the sampler's Target set from before
 * its exec; the probes are attached to the library before it runs. The
 * expected figures are the program's arguments; the counts must be exact,
 * the Events one per outermost call. Given a fifth argument, it blocks in
 * an MPI_Recv no message answers, and is killed there.
 *
 * Both ways of attaching are run: uprobe_multi links (kernel 6.6+, what
 * AUTO picks here) and the perf-event uprobes of older kernels.
 *
 * Without root or kernel BTF every test is SKIPPED; without one MPI
 * family, its tests are.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/sampler.h"

#define N_ALLREDUCE 37
#define K_PMPI 5
#define D_DOUBLES 10

static const char prog_src[] =
    "#include <mpi.h>\n"
    "#include <stdlib.h>\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "	int n = atoi(argv[1]), k = atoi(argv[2]), d = atoi(argv[3]);\n"
    "	double *in = calloc(d, sizeof(*in)), *out = calloc(d, sizeof(*out));\n"
    "	MPI_Init(&argc, &argv);\n"
    "	if (argc > 4) { /* block in MPI_Recv: no message ever comes */\n"
    "		MPI_Recv(in, d, MPI_DOUBLE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
    "		return 1;\n"
    "	}\n"
    "	for (int i = 0; i < n; i++)\n"
    "		MPI_Allreduce(in, out, d, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n"
    "	for (int i = 0; i < k; i++)\n"
    "		PMPI_Allreduce(in, out, d, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n"
    "	MPI_Barrier(MPI_COMM_WORLD);\n"
    "	MPI_Finalize();\n"
    "	return 0;\n"
    "}\n";

struct family {
	const char *name, *compiler, *lib_needle;
	char exe[PATH_MAX], lib[PATH_MAX];
	int available;
};

static struct family openmpi = {
    .name = "openmpi", .compiler = "mpicc.openmpi", .lib_needle = "/libmpi.so"};
static struct family mpich = {
    .name = "mpich", .compiler = "mpicc.mpich", .lib_needle = "/libmpich.so"};
static char dir[PATH_MAX];
static const char *why_not;

/* the MPI library of exe as ldd resolves it */
static int ldd_library(struct family *f)
{
	char cmd[PATH_MAX + 32], line[PATH_MAX + 64], path[PATH_MAX];
	int found = -ENOENT;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ldd '%s'", f->exe);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, f->lib_needle) && sscanf(line, " %*s => %4095s", path) == 1) {
			snprintf(f->lib, sizeof(f->lib), "%s", path);
			found = 0;
		}
	pclose(p);
	return found;
}

static int build(struct family *f)
{
	f->available = have_command(f->compiler);
	if (!f->available)
		return 0;
	snprintf(f->exe, sizeof(f->exe), "%s/prog.%s", dir, f->name);
	if (run_cmd("%s -O1 -g '%s' -o '%s'", f->compiler, path_in(dir, "prog.c"), f->exe))
		return -1;
	return ldd_library(f);
}

static int setup(void **state)
{
	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	if (make_tmpdir(dir, sizeof(dir), "mpi-probes") ||
	    write_file(path_in(dir, "prog.c"), prog_src))
		return -1;
	return build(&openmpi) || build(&mpich) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(dir);
}

struct fixture {
	struct sampler *sampler;
	struct module_table *table;
	struct mpi_probes *mp;
};

static void fixture_init_attach(struct fixture *fx, int events, enum mpi_attach attach)
{
	struct sampler_opts opts = {.frequency = 99};
	char err[256] = "";

	fx->sampler = sampler__new(&opts, err, sizeof(err));
	if (!fx->sampler)
		fail_msg("sampler__new: %s", err);
	fx->table = module_table__new();
	assert_non_null(fx->table);
	fx->mp = mpi_probes__new_attach(sampler_targets_fd(fx->sampler), events, attach, err,
					sizeof(err));
	if (!fx->mp)
		fail_msg("mpi_probes__new: %s", err);
}

static void fixture_init(struct fixture *fx, int events)
{
	fixture_init_attach(fx, events, MPI_ATTACH_AUTO);
}

static void fixture_release(struct fixture *fx)
{
	mpi_probes__free(fx->mp);
	module_table__free(fx->table);
	sampler__free(fx->sampler);
}

/* probe f's library: 1 probed now */
static int consider(struct fixture *fx, const char *path)
{
	char err[256] = "";
	struct module *m = module_table_open_file(fx->table, path);
	int r;

	assert_non_null(m);
	r = mpi_probes_consider(fx->mp, m, err, sizeof(err));
	if (r < 0)
		fail_msg("mpi_probes_consider('%s'): %s", path, err);
	return r;
}

static void check_which_modules(struct family *f)
{
	struct fixture fx;

	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "this MPI family is not installed");
	fixture_init(&fx, 0);
	/* not an MPI library: left alone */
	assert_int_equal(consider(&fx, "/bin/sh"), 0);
	assert_int_equal(mpi_probes_libraries(fx.mp), 0);
	/* the MPI library: probed once */
	assert_int_equal(consider(&fx, f->lib), 1);
	assert_int_equal(consider(&fx, f->lib), 0);
	assert_int_equal(mpi_probes_libraries(fx.mp), 1);
	assert_non_null(mpi_probes_library(fx.mp, 0));
	assert_null(mpi_probes_library(fx.mp, 1));
	fixture_release(&fx);
}

static void test_which_modules_openmpi(void **state)
{
	(void)state;
	check_which_modules(&openmpi);
}

static void test_which_modules_mpich(void **state)
{
	(void)state;
	check_which_modules(&mpich);
}

static void test_function_info(void **state)
{
	(void)state;
	assert_string_equal(mpi_function_info(MPI_FN_SEND)->name, "MPI_Send");
	assert_true(mpi_function_info(MPI_FN_SEND)->sends);
	assert_false(mpi_function_info(MPI_FN_RECV)->sends);
	assert_true(mpi_function_info(MPI_FN_ALLTOALLV)->vector);
	assert_false(mpi_function_info(MPI_FN_BARRIER)->has_buffer);
	assert_null(mpi_function_info(MPI_FUNCTIONS));
	for (unsigned int fn = 0; fn < MPI_FUNCTIONS; fn++)
		assert_non_null(mpi_function_info(fn)->name);
}

struct site_tally {
	pid_t tgid;
	uint64_t calls[MPI_FUNCTIONS], count_sum[MPI_FUNCTIONS];
	int zero_site;
};

static int tally_site(const struct mpi_site_key *key, const struct mpi_site_value *v, void *ctx)
{
	struct site_tally *t = ctx;

	if ((pid_t)key->tgid != t->tgid || key->function >= MPI_FUNCTIONS)
		return 0;
	t->calls[key->function] += v->calls;
	t->count_sum[key->function] += v->count_sum;
	if (!key->call_site || v->min_ns > v->max_ns || v->total_ns < v->max_ns)
		t->zero_site++;
	return 0;
}

struct event_tally {
	pid_t tgid;
	uint64_t allreduce, bad;
};

static int tally_event(const struct mpi_event *e, void *ctx)
{
	struct event_tally *t = ctx;

	if ((pid_t)e->tgid != t->tgid || e->function != MPI_FN_ALLREDUCE)
		return 0;
	t->allreduce++;
	if (e->count != D_DOUBLES || !e->datatype || !e->duration_ns || e->tid != e->tgid)
		t->bad++;
	return 0;
}

/* waits for pid, 60 s at most; its wait status */
static int wait_bounded(pid_t pid)
{
	int status, i;

	for (i = 0; i < 6000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* runs f's program in the Target of fx's sampler, from before its exec;
 * block: it stays in an MPI_Recv */
static pid_t launch(struct fixture *fx, struct family *f, int block)
{
	int gate[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(gate), 0);
	pid = fork();
	if (pid == 0) {
		char n[16], k[16], d[16];

		close(gate[1]);
		if (read(gate[0], &c, 1) != 1)
			_exit(120);
		snprintf(n, sizeof(n), "%d", N_ALLREDUCE);
		snprintf(k, sizeof(k), "%d", K_PMPI);
		snprintf(d, sizeof(d), "%d", D_DOUBLES);
		setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
		setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
		execl(f->exe, f->exe, n, k, d, block ? "block" : (char *)NULL, (char *)NULL);
		_exit(121);
	}
	close(gate[0]);
	assert_true(pid > 0);
	assert_int_equal(sampler_add_target(fx->sampler, pid, 1, TARGET_UID_ANY), 0);
	assert_int_equal(write(gate[1], "g", 1), 1);
	close(gate[1]);
	return pid;
}

static void check_counted_exactly(struct family *f, enum mpi_attach attach)
{
	struct site_tally st = {0};
	struct event_tally et = {0};
	struct mpi_process proc;
	struct fixture fx;
	int status;
	pid_t pid;

	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "this MPI family is not installed");
	fixture_init_attach(&fx, 1, attach);
	if (attach != MPI_ATTACH_AUTO)
		assert_int_equal(mpi_probes_multi(fx.mp), attach == MPI_ATTACH_MULTI);
	assert_int_equal(consider(&fx, f->lib), 1);
	pid = launch(&fx, f, 0);
	status = wait_bounded(pid);
	assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);

	st.tgid = et.tgid = pid;
	assert_int_equal(mpi_probes_for_each_site(fx.mp, tally_site, &st), 0);
	assert_int_equal(st.calls[MPI_FN_ALLREDUCE], N_ALLREDUCE + K_PMPI);
	assert_int_equal(st.count_sum[MPI_FN_ALLREDUCE], (N_ALLREDUCE + K_PMPI) * D_DOUBLES);
	assert_int_equal(st.calls[MPI_FN_BARRIER], 1);
	assert_int_equal(st.calls[MPI_FN_INIT], 1);
	assert_int_equal(st.calls[MPI_FN_FINALIZE], 1);
	assert_int_equal(st.calls[MPI_FN_SEND] + st.calls[MPI_FN_RECV], 0);
	assert_int_equal(st.zero_site, 0);
	assert_int_equal(mpi_probes_process(fx.mp, pid, &proc), 0);
	assert_true(proc.init_end_ns > 0);
	assert_true(proc.finalize_start_ns > proc.init_end_ns);
	assert_int_equal(mpi_probes_poll_events(fx.mp, tally_event, &et), 0);
	assert_int_equal(et.allreduce, N_ALLREDUCE + K_PMPI);
	assert_int_equal(et.bad, 0);
	/* forgotten once published */
	mpi_probes_forget(fx.mp, pid);
	memset(st.calls, 0, sizeof(st.calls));
	assert_int_equal(mpi_probes_for_each_site(fx.mp, tally_site, &st), 0);
	assert_int_equal(st.calls[MPI_FN_ALLREDUCE], 0);
	assert_int_equal(mpi_probes_process(fx.mp, pid, &proc), -ENOENT);
	fixture_release(&fx);
}

/* a rank killed inside MPI_Recv: its call stays in flight until the
 * process is forgotten, and is never counted as a call */
static void check_killed_inside_mpi(struct family *f)
{
	struct site_tally st = {0};
	struct mpi_process proc;
	struct fixture fx;
	pid_t pid;
	int i;

	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "this MPI family is not installed");
	fixture_init(&fx, 0);
	assert_int_equal(consider(&fx, f->lib), 1);
	pid = launch(&fx, f, 1);
	/* MPI_Init returned, then one call (the MPI_Recv) stays in flight */
	for (i = 0; i < 3000 && !(mpi_probes_process(fx.mp, pid, &proc) == 0 && proc.init_end_ns &&
				  mpi_probes_in_flight(fx.mp, pid) == 1);
	     i++)
		usleep(10000);
	assert_int_equal(mpi_probes_in_flight(fx.mp, pid), 1);
	kill(pid, SIGKILL);
	assert_int_equal(wait_bounded(pid) & 0x7f, SIGKILL);
	st.tgid = pid;
	assert_int_equal(mpi_probes_for_each_site(fx.mp, tally_site, &st), 0);
	assert_int_equal(st.calls[MPI_FN_RECV], 0);
	assert_int_equal(st.calls[MPI_FN_INIT], 1);
	assert_int_equal(mpi_probes_in_flight(fx.mp, pid), 1);
	mpi_probes_forget(fx.mp, pid);
	assert_int_equal(mpi_probes_in_flight(fx.mp, pid), 0);
	fixture_release(&fx);
}

static void test_killed_inside_mpi_openmpi(void **state)
{
	(void)state;
	check_killed_inside_mpi(&openmpi);
}

static void test_killed_inside_mpi_mpich(void **state)
{
	(void)state;
	check_killed_inside_mpi(&mpich);
}

static void test_counted_exactly_openmpi(void **state)
{
	(void)state;
	check_counted_exactly(&openmpi, MPI_ATTACH_AUTO);
}

static void test_counted_exactly_mpich(void **state)
{
	(void)state;
	check_counted_exactly(&mpich, MPI_ATTACH_AUTO);
}

/* the fallback of kernels before 6.6, run here on purpose */
static void test_counted_exactly_perf_event_openmpi(void **state)
{
	(void)state;
	check_counted_exactly(&openmpi, MPI_ATTACH_PERF_EVENT);
}

static void test_counted_exactly_perf_event_mpich(void **state)
{
	(void)state;
	check_counted_exactly(&mpich, MPI_ATTACH_PERF_EVENT);
}

/* AUTO takes uprobe_multi where the kernel has it (6.6+), and only there */
static void test_auto_selects_multi_when_available(void **state)
{
	struct fixture fx;
	struct mpi_probes *multi;
	char err[256] = "";
	int chosen;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	fixture_init_attach(&fx, 0, MPI_ATTACH_AUTO);
	chosen = mpi_probes_multi(fx.mp);
	/* what this kernel accepts, asked directly */
	multi = mpi_probes__new_attach(sampler_targets_fd(fx.sampler), 0, MPI_ATTACH_MULTI, err,
				       sizeof(err));
	assert_int_equal(chosen, multi != NULL);
	mpi_probes__free(multi);
	fixture_release(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_function_info),
	    cmocka_unit_test(test_which_modules_openmpi),
	    cmocka_unit_test(test_which_modules_mpich),
	    cmocka_unit_test(test_counted_exactly_openmpi),
	    cmocka_unit_test(test_counted_exactly_mpich),
	    cmocka_unit_test(test_counted_exactly_perf_event_openmpi),
	    cmocka_unit_test(test_counted_exactly_perf_event_mpich),
	    cmocka_unit_test(test_auto_selects_multi_when_available),
	    cmocka_unit_test(test_killed_inside_mpi_openmpi),
	    cmocka_unit_test(test_killed_inside_mpi_mpich),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
