/* test_mpi_probes — the MPI probes on the real MPI libraries of Debian's
 * openmpi and mpich: which modules are probed, and a small MPI program
 * counted exactly (tests/unit/mpi_probes_fixture.h builds it).
 *
 * The program is followed through the sampler's Target set from before
 * its exec, and probed (mpi_probes_process_exec) before it too, as the
 * Agent does at follow; its probes are removed after its exit. The
 * expected figures are the program's arguments; the counts must be exact,
 * the Events one per outermost call. A rank killed inside MPI_Recv keeps
 * its call in flight until forgotten. The Fortran binding libraries are
 * probed, but their handles are not the datatypes' (mpi_probes_library). The per-process attach at an exec
 * report and the cost to a process outside every Target are in
 * tests/unit/test_mpi_probes_process.c.
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
#include "tests/unit/mpi_probes_fixture.h"
#include "userspace/agent/mpi_probes_internal.h"

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

/* the Fortran bindings (name beside the C library f->lib): probed, but
 * not a library whose handles the datatypes are */
static void check_fortran_bindings(struct family *f, const char *name)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct fixture fx;
	const char *slash;

	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "this MPI family is not installed");
	slash = strrchr(f->lib, '/');
	snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - f->lib), f->lib, name);
	SKIP_UNLESS(access(path, R_OK) == 0, "its Fortran bindings are not installed");
	fixture_init(&fx, 0);
	assert_int_equal(consider(&fx, path), 1);
	assert_int_equal(consider(&fx, path), 0);
	assert_int_equal(mpi_probes_all_libraries(fx.mp), 1);
	assert_int_equal(mpi_probes_libraries(fx.mp), 0);
	assert_null(mpi_probes_library(fx.mp, 0));
	assert_int_equal(consider(&fx, f->lib), 1);
	assert_int_equal(mpi_probes_all_libraries(fx.mp), 2);
	assert_int_equal(mpi_probes_libraries(fx.mp), 1);
	assert_non_null(realpath(f->lib, real));
	assert_string_equal(mpi_probes_library(fx.mp, 0)->path, real);
	fixture_release(&fx);
}

static void test_fortran_bindings_openmpi(void **state)
{
	(void)state;
	check_fortran_bindings(&openmpi, "libmpi_mpifh.so.40");
	check_fortran_bindings(&openmpi, "libmpi_usempif08.so.40");
}

static void test_fortran_bindings_mpich(void **state)
{
	(void)state;
	check_fortran_bindings(&mpich, "libmpichfort.so.12");
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
	assert_int_equal(mpi_probes_processes(fx.mp), 1);
	status = wait_bounded(pid);
	assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(mpi_probes_process_exit(fx.mp, pid), 0);
	assert_int_equal(mpi_probes_process_exit(fx.mp, pid), -ENOENT);
	assert_int_equal(mpi_probes_processes(fx.mp), 0);

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
	struct fixture fx;
	pid_t pid;

	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "this MPI family is not installed");
	fixture_init(&fx, 0);
	assert_int_equal(consider(&fx, f->lib), 1);
	pid = launch(&fx, f, 1);
	/* MPI_Init returned, then one call (the MPI_Recv) stays in flight */
	wait_blocked(&fx, pid);
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

/* the budget's windowed probes attached off the caller's thread
 * (mpi_probes_window.c): asked for, they are under way or attached, then
 * attached within a bound; an attach still under way when its process
 * exits is abandoned (its thread releases what it attached; the probes'
 * release waits for it: ASan sees the rest) */
static void check_windowed_attach_async(struct family *f)
{
	struct fixture fx;
	uint64_t deadline;
	int r;
	pid_t pid;

	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "this MPI family is not installed");
	fixture_init(&fx, 0);
	assert_int_equal(consider(&fx, f->lib), 1);
	pid = launch(&fx, f, 1);
	wait_blocked(&fx, pid);
	assert_int_equal(mpi_probes_windowed(fx.mp, pid, 0), 0);
	assert_int_equal(mpi_probes_windowed_attached(fx.mp, pid), -ENOENT);
	r = mpi_probes_windowed_attach(fx.mp, pid);
	assert_true(r == 0);
	/* asked again while under way: still under way, or done */
	r = mpi_probes_windowed_attach(fx.mp, pid);
	assert_true(r == 0 || r == 1);
	deadline = now_ns() + 10ull * 1000000000ull;
	while ((r = mpi_probes_windowed_attached(fx.mp, pid)) == 0 && now_ns() < deadline)
		usleep(1000);
	assert_int_equal(r, 1);
	assert_int_equal(mpi_probes_windowed_attach(fx.mp, pid), 1);
	/* detached, asked for again, and the process gone before it is done */
	assert_int_equal(mpi_probes_windowed(fx.mp, pid, 0), 0);
	assert_int_equal(mpi_probes_windowed_attach(fx.mp, pid), 0);
	kill(pid, SIGKILL);
	assert_int_equal(wait_bounded(pid) & 0x7f, SIGKILL);
	assert_int_equal(mpi_probes_process_exit(fx.mp, pid), 0);
	assert_int_equal(mpi_probes_windowed_attached(fx.mp, pid), -ENOENT);
	mpi_probes_forget(fx.mp, pid);
	fixture_release(&fx);
}

static void test_windowed_attach_async_openmpi(void **state)
{
	(void)state;
	check_windowed_attach_async(&openmpi);
}

static void test_windowed_attach_async_mpich(void **state)
{
	(void)state;
	check_windowed_attach_async(&mpich);
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
	    cmocka_unit_test(test_fortran_bindings_openmpi),
	    cmocka_unit_test(test_fortran_bindings_mpich),
	    cmocka_unit_test(test_counted_exactly_openmpi),
	    cmocka_unit_test(test_counted_exactly_mpich),
	    cmocka_unit_test(test_counted_exactly_perf_event_openmpi),
	    cmocka_unit_test(test_counted_exactly_perf_event_mpich),
	    cmocka_unit_test(test_auto_selects_multi_when_available),
	    cmocka_unit_test(test_killed_inside_mpi_openmpi),
	    cmocka_unit_test(test_killed_inside_mpi_mpich),
	    cmocka_unit_test(test_windowed_attach_async_openmpi),
	    cmocka_unit_test(test_windowed_attach_async_mpich),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
