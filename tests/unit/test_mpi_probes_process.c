/* test_mpi_probes_process — the MPI probes are per Target process, on
 * the real MPI libraries of Debian's openmpi and mpich
 * (tests/unit/mpi_probes_fixture.h builds the program):
 *  - a process forked inside a Target and probed only when its exec is
 *    reported, as the Agent does (the attach races its start-up), still
 *    has its MPI_Init and every call counted, EXEC_ROUNDS times;
 *  - the same program outside every Target, while a Target process has
 *    the library probed, runs the BPF entry program once (its MPI_Init,
 *    probed in every process) and never for its calls — the kernel's own
 *    count of the program's runs (BPF statistics) — where the probes of
 *    old (every function for every process) ran it at each call; the
 *    wall times say what that cost per call;
 *  - MPI Events asked for by one Target only are that Target's.
 *
 * Without root or kernel BTF every test is SKIPPED; without one MPI
 * family, its tests are.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>

#include <cmocka.h>

#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/mpi_probes_fixture.h"

struct exec_probe {
	struct mpi_probes *mp;
	pid_t pid;
	int probed; /* 1 at its exec report, -1 refused */
	uint64_t report_ns, attach_ns; /* exec to its report; the attach */
};

/* what the Agent does with an exec report of a Target process */
static int probe_on_exec(const struct task_event *e, void *ctx)
{
	struct exec_probe *x = ctx;

	if (e->kind == TASK_EVENT_EXEC && (pid_t)e->tgid == x->pid && !x->probed) {
		x->attach_ns = now_ns();
		x->report_ns = x->attach_ns - e->time_ns;
		x->probed = mpi_probes_process_exec(x->mp, (pid_t)e->tgid) ? -1 : 1;
		x->attach_ns = now_ns() - x->attach_ns;
	}
	return 0;
}

#define EXEC_ROUNDS 5

/* a process forked inside a Target is probed at its exec report, as
 * the Agent does, which races its start-up: MPI_Init and every call must
 * still be seen, EXEC_ROUNDS times out of EXEC_ROUNDS */
static void check_probed_at_exec_report(struct family *f)
{
	struct pollfd pfd = {.events = POLLIN};
	struct fixture fx;
	int round, init_seen = 0, complete = 0, status, i;
	uint64_t max_report_ns = 0, max_attach_ns = 0;

	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "this MPI family is not installed");
	fixture_init(&fx, 0);
	assert_int_equal(consider(&fx, f->lib), 1);
	pfd.fd = sampler_task_events_fd(fx.sampler);
	for (round = 0; round < EXEC_ROUNDS; round++) {
		struct exec_probe x = {.mp = fx.mp};
		struct site_tally st = {0};

		x.pid = launch_n(&fx, f, 0, N_ALLREDUCE, IN_TARGET);
		for (i = 0; i < 1000 && !x.probed; i++) {
			poll(&pfd, 1, 10);
			assert_int_equal(sampler_poll_task_events(fx.sampler, probe_on_exec, &x), 0);
		}
		assert_int_equal(x.probed, 1);
		max_report_ns = x.report_ns > max_report_ns ? x.report_ns : max_report_ns;
		max_attach_ns = x.attach_ns > max_attach_ns ? x.attach_ns : max_attach_ns;
		status = wait_bounded(x.pid);
		assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
		st.tgid = x.pid;
		assert_int_equal(mpi_probes_for_each_site(fx.mp, tally_site, &st), 0);
		init_seen += st.calls[MPI_FN_INIT] == 1;
		complete += st.calls[MPI_FN_ALLREDUCE] == N_ALLREDUCE + K_PMPI &&
			    st.calls[MPI_FN_FINALIZE] == 1;
		assert_int_equal(mpi_probes_process_exit(fx.mp, x.pid), 0);
		mpi_probes_forget(fx.mp, x.pid);
	}
	printf("%s, probed at the exec report (at most %.2f ms after the exec, the attach taking "
	       "at most %.2f ms): MPI_Init seen in %d of %d runs, every call in %d\n",
	       f->name, max_report_ns / 1e6, max_attach_ns / 1e6, init_seen, EXEC_ROUNDS, complete);
	assert_int_equal(init_seen, EXEC_ROUNDS);
	assert_int_equal(complete, EXEC_ROUNDS);
	fixture_release(&fx);
}

static void test_probed_at_exec_report_openmpi(void **state)
{
	(void)state;
	check_probed_at_exec_report(&openmpi);
}

static void test_probed_at_exec_report_mpich(void **state)
{
	(void)state;
	check_probed_at_exec_report(&mpich);
}

#define OUTSIDER_CALLS 200000

static uint64_t run_timed(struct fixture *fx, struct family *f, enum how how)
{
	uint64_t t0 = now_ns();
	int status = wait_bounded(launch_n(fx, f, 0, OUTSIDER_CALLS, how));

	assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return now_ns() - t0;
}

/* The same MPI program outside every Target, while a Target process has
 * the library probed: the entry program runs for it once, at MPI_Init
 * (probed in every process: mpi_probes.h), and never for its calls (the
 * kernel's own count of the program's runs: its other calls never
 * trapped); probed the old way (every function for every process mapping
 * the library), it runs at every call. The wall times say what each MPI
 * call of a process outside paid before. */
static void check_outsider_pays_nothing(struct family *f)
{
	uint64_t runs0, runs1, runs2, plain_ns, trapped_ns;
	struct fixture fx;
	pid_t target;
	int stats_fd;

	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "this MPI family is not installed");
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	SKIP_UNLESS(stats_fd >= 0, "the kernel does not count BPF program runs");
	fixture_init(&fx, 0);
	assert_int_equal(consider(&fx, f->lib), 1);
	target = launch(&fx, f, 1); /* probed, inside MPI_Recv */
	assert_int_equal(wait_blocked(&fx, target), 0);

	assert_int_equal(mpi_probes_entry_runs(fx.mp, &runs0), 0);
	plain_ns = run_timed(&fx, f, OUTSIDE);
	assert_int_equal(mpi_probes_entry_runs(fx.mp, &runs1), 0);
	trapped_ns = run_timed(&fx, f, OUTSIDE_PROBED);
	assert_int_equal(mpi_probes_entry_runs(fx.mp, &runs2), 0);
	printf("%s outside every Target, %d MPI calls: %.0f ms, the entry program ran %llu times; "
	       "probed the old way: %.0f ms, it ran %llu times (%.2f us per call)\n",
	       f->name, OUTSIDER_CALLS + K_PMPI + 3, plain_ns / 1e6,
	       (unsigned long long)(runs1 - runs0), trapped_ns / 1e6,
	       (unsigned long long)(runs2 - runs1),
	       ((double)trapped_ns - (double)plain_ns) / 1e3 / OUTSIDER_CALLS);
	assert_int_equal(runs1 - runs0, 1); /* its MPI_Init */
	assert_true(runs2 - runs1 >= OUTSIDER_CALLS);

	kill(target, SIGKILL);
	assert_int_equal(wait_bounded(target) & 0x7f, SIGKILL);
	close(stats_fd);
	fixture_release(&fx);
}

static void test_outsider_pays_nothing_openmpi(void **state)
{
	(void)state;
	check_outsider_pays_nothing(&openmpi);
}

static void test_outsider_pays_nothing_mpich(void **state)
{
	(void)state;
	check_outsider_pays_nothing(&mpich);
}

struct events_of {
	pid_t tgid[2];
	uint64_t n[2];
};

static int count_event(const struct mpi_event *e, void *ctx)
{
	struct events_of *x = ctx;

	for (int i = 0; i < 2; i++)
		if ((pid_t)e->tgid == x->tgid[i])
			x->n[i]++;
	return 0;
}

/* Events asked for by one Target only: the other Target's calls make
 * none (they are counted at their sites all the same) */
static void test_events_per_target(void **state)
{
	struct family *f = openmpi.available ? &openmpi : &mpich;
	struct events_of x = {0};
	struct site_tally st = {0};
	struct fixture fx;
	int i, status;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	SKIP_UNLESS(f->available, "no MPI family is installed");
	fixture_init(&fx, 1);
	assert_int_equal(consider(&fx, f->lib), 1);
	assert_int_equal(mpi_probes_set_events(fx.mp, 7, 1), 0);
	assert_int_equal(mpi_probes_set_events(fx.mp, 8, 1), 0);
	assert_int_equal(mpi_probes_set_events(fx.mp, 8, 0), 0);
	for (i = 0; i < 2; i++) {
		fx.target_id = 7 + (uint32_t)i;
		x.tgid[i] = launch(&fx, f, 0);
		status = wait_bounded(x.tgid[i]);
		assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
		assert_int_equal(mpi_probes_process_exit(fx.mp, x.tgid[i]), 0);
	}
	assert_int_equal(mpi_probes_poll_events(fx.mp, count_event, &x), 0);
	/* every outermost call of Target 7's process; none of Target 8's */
	assert_int_equal(x.n[0], N_ALLREDUCE + K_PMPI + 3);
	assert_int_equal(x.n[1], 0);
	st.tgid = x.tgid[1];
	assert_int_equal(mpi_probes_for_each_site(fx.mp, tally_site, &st), 0);
	assert_int_equal(st.calls[MPI_FN_ALLREDUCE], N_ALLREDUCE + K_PMPI);
	fixture_release(&fx);
	/* without Events loaded, there is nothing to choose */
	fixture_init(&fx, 0);
	assert_int_equal(mpi_probes_set_events(fx.mp, 7, 1), -EINVAL);
	fixture_release(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probed_at_exec_report_openmpi),
	    cmocka_unit_test(test_probed_at_exec_report_mpich),
	    cmocka_unit_test(test_outsider_pays_nothing_openmpi),
	    cmocka_unit_test(test_outsider_pays_nothing_mpich),
	    cmocka_unit_test(test_events_per_target),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
