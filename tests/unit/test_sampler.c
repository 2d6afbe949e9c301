/* test_sampler — the sampler on real BPF: samples of a Target process and
 * of nothing else, the map flip losing nothing, a failed drain counted,
 * a double-forked process kept in the Target after its parents exit
 * (re-parented to init, or to this test as a subreaper), and
 * the exit reports (totals of the whole thread group, a reused pid,
 * threads killed by the process' exit).
 *
 * Each test builds its own sampler (its counters start at 0) and forks
 * the processes it observes: they wait on a pipe until they are in the
 * Target, then spin on a pinned CPU for a set CPU time. Expected figures
 * come from the kernel's own accounting (wait4's rusage, within 5 %) or from the
 * sampler's kernel counters, never from the code under test.
 *
 * Without root or kernel BTF every test is SKIPPED with the reason.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/sampler_fixture.h"
#include "userspace/agent/sampler.h"

#define FREQUENCY 999

static const char *why_not;
static struct sampler *s;

static int setup(void **state)
{
	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	s = sampler_fixture_new(FREQUENCY);
	if (!s)
		return -1;
	/* a new sampler is idle (tests/unit/test_sampler_targets.c) */
	if (sampler_active(s) || sampler_set_active(s, 1) || !sampler_active(s)) {
		print_error("sampler_set_active(1) failed\n");
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sampler__free(s);
	s = NULL;
	return 0;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* burns cpu_ms of this thread's CPU time (5 s of wall time at most) */
static void spin(int cpu_ms)
{
	uint64_t end = thread_cpu_ns() + (uint64_t)cpu_ms * 1000000ull;
	uint64_t wall_end = proc_now_ns() + 5000000000ull;
	volatile double x = 1.0;

	while (thread_cpu_ns() < end && proc_now_ns() < wall_end)
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 0.5 / (x + 1.0);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % (int)sysconf(_SC_NPROCESSORS_ONLN), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* a child that waits for one byte on *gate, then spins cpu_ms on cpu */
static pid_t spinner(int gate[2], int cpu, int cpu_ms)
{
	pid_t pid;
	char c;

	if (pipe(gate))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(gate[1]);
		pin(cpu);
		if (read(gate[0], &c, 1) != 1)
			_exit(2);
		spin(cpu_ms);
		_exit(0);
	}
	close(gate[0]);
	return pid;
}

static void release(int gate[2])
{
	assert_int_equal(write(gate[1], "g", 1), 1);
	close(gate[1]);
}

static void reap(pid_t pid, struct rusage *ru)
{
	int status;

	assert_int_equal(wait4(pid, &status, 0, ru), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

struct tally {
	pid_t tgid;	  /* the process counted apart */
	uint64_t samples; /* of tgid */
	uint64_t others;  /* of any other process */
	uint64_t all;	  /* every sample handed over */
	uint32_t target_id; /* of tgid's samples, when not 0 */
	int bad;	  /* a sample that breaks the contract */
	int fail;	  /* refuse every sample (-ENOMEM) */
};

static int tally_sample(const struct sample_key *key, const struct sample_value *value,
			const struct stack_value *stack, void *ctx)
{
	struct tally *t = ctx;

	if (t->fail)
		return -ENOMEM;
	/* the user leaf of the Stack is the key's; a lost Stack has no digest */
	if ((stack && (stack->n_user < 1 ||
		       (stack->ips[stack->n_kernel] & ~UNWIND_IP_NOT_RETURN) != key->leaf_ip)) ||
	    (!stack && key->stack) || value->samples == 0 || value->period_sum == 0)
		t->bad++;
	t->all += value->samples;
	if ((pid_t)key->tgid == t->tgid) {
		t->samples += value->samples;
		if (key->tid != key->tgid || key->exec_seq != 0 ||
		    (t->target_id && key->target_id != t->target_id))
			t->bad++;
	} else {
		t->others += value->samples;
	}
	return 0;
}

/* both maps, so that nothing stays behind */
static void drain_all(struct tally *t)
{
	assert_int_equal(sampler_drain(s, tally_sample, t), 0);
	assert_int_equal(sampler_drain(s, tally_sample, t), 0);
}

static void assert_nothing_lost(const struct tally *t)
{
	struct sampler_counters c;

	sampler_read_counters(s, &c);
	assert_int_equal(c.flip_timeouts, 0);
	assert_int_equal(t->all + c.drop_keys + c.drain_lost, c.seen);
}

static void test_samples_of_target_only(void **state)
{
	int gate_in[2], gate_out[2];
	struct tally t = {0};
	pid_t in, out;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	in = spinner(gate_in, 0, 300);
	out = spinner(gate_out, 1, 300);
	assert_true(in > 0 && out > 0);
	assert_int_equal(sampler_add_target(s, in, 42, TARGET_UID_ANY), 0);
	release(gate_in);
	release(gate_out);
	reap(in, NULL);
	reap(out, NULL);
	t.tgid = in;
	t.target_id = 42;
	drain_all(&t);
	/* 300 ms at 999 Hz: ~300 samples, fewer when the CPU is shared */
	assert_true(t.samples >= 60);
	assert_int_equal(t.others, 0);
	assert_int_equal(t.bad, 0);
	assert_nothing_lost(&t);
}

/* many flips while the Target runs: every sample the kernel saw is
 * either handed over or counted as dropped */
static void test_flip_loses_nothing(void **state)
{
	struct tally t = {0};
	int gate[2], drains = 0, status;
	uint64_t drain_ns = 0;
	pid_t pid;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	pid = spinner(gate, 0, 500);
	assert_true(pid > 0);
	assert_int_equal(sampler_add_target(s, pid, 1, TARGET_UID_ANY), 0);
	t.tgid = pid;
	release(gate);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		uint64_t t0 = proc_now_ns();

		assert_int_equal(sampler_drain(s, tally_sample, &t), 0);
		drain_ns += proc_now_ns() - t0;
		drains++;
		usleep(5000);
	}
	drain_all(&t);
	assert_true(drains >= 10);
	/* a figure, not a check: the flip used to sleep 2 ms */
	printf("drains: %d, %.3f ms each on average\n", drains, drain_ns / 1e6 / drains);
	assert_true(t.samples >= 100);
	assert_int_equal(t.bad, 0);
	assert_nothing_lost(&t);
}

static void test_failed_drain_counted(void **state)
{
	struct sampler_counters c;
	struct tally t = {0};
	int gate[2];
	pid_t pid;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	pid = spinner(gate, 0, 400);
	assert_true(pid > 0);
	assert_int_equal(sampler_add_target(s, pid, 1, TARGET_UID_ANY), 0);
	t.tgid = pid;
	release(gate);
	/* samples in the active map, however loaded the machine is */
	for (int i = 0; i < 500; i++) {
		sampler_read_counters(s, &c);
		if (c.seen >= 20)
			break;
		usleep(10000);
	}
	t.fail = 1;
	assert_int_equal(sampler_drain(s, tally_sample, &t), -ENOMEM);
	t.fail = 0;
	reap(pid, NULL);
	drain_all(&t);
	sampler_read_counters(s, &c);
	assert_true(c.drain_lost > 0);
	assert_true(t.samples > 0);
	assert_nothing_lost(&t);
}

struct exits {
	pid_t tgid[8];
	struct task_event e[8];
	int n;
};

static int keep_exit(const struct task_event *e, void *ctx)
{
	struct exits *x = ctx;

	if (e->kind == TASK_EVENT_EXIT && x->n < 8)
		x->e[x->n++] = *e;
	return 0;
}

/* the exit report of tgid, waiting up to 2 s for it */
static int exit_of(struct exits *x, pid_t tgid, struct task_event *out)
{
	uint64_t end = proc_now_ns() + 2000000000ull;

	do {
		assert_int_equal(sampler_poll_task_events(s, keep_exit, x), 0);
		for (int i = 0; i < x->n; i++)
			if ((pid_t)x->e[i].tgid == tgid) {
				*out = x->e[i];
				return 0;
			}
		usleep(2000);
	} while (proc_now_ns() < end);
	return -ETIMEDOUT;
}

static int in_target(pid_t tgid)
{
	struct target_info info;
	__u32 key = (__u32)tgid;

	return !bpf_map_lookup_elem(sampler_targets_fd(s), &key, &info);
}

/* one int from fd within 5 s: 0, or -1 */
static int read_bounded(int fd, pid_t *out)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (poll(&p, 1, 5000) != 1)
		return -1;
	return read(fd, out, sizeof(*out)) == sizeof(*out) ? 0 : -1;
}

/* G: once re-parented, says who it is and who its parent is now; spins
 * on "go"; says it is done; exits */
static void grandchild_main(pid_t x_pid, int report, int go)
{
	pid_t me = getpid(), parent;
	char c;

	while ((parent = getppid()) == x_pid)
		usleep(1000);
	if (write(report, &me, sizeof(me)) != sizeof(me) ||
	    write(report, &parent, sizeof(parent)) != sizeof(parent) || read(go, &c, 1) != 1)
		_exit(2);
	pin(0);
	spin(300);
	_exit(write(report, &me, sizeof(me)) == sizeof(me) ? 0 : 2);
}

/* the application forks X, X forks G and exits, the application exits:
 * G, re-parented to init or to a subreaper, stays in the Target and is
 * sampled until its own exit */
static void check_double_fork(int subreaper)
{
	int gate[2], report[2], go[2];
	struct exits x = {0};
	struct task_event e;
	struct tally t = {0};
	pid_t app, g, g_parent, done;

	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, subreaper), 0);
	assert_int_equal(pipe(gate), 0);
	assert_int_equal(pipe(report), 0);
	assert_int_equal(pipe(go), 0);
	app = fork();
	if (app == 0) {
		char c;

		if (read(gate[0], &c, 1) != 1)
			_exit(2);
		if (fork() == 0) { /* X */
			pid_t x_pid = getpid();

			if (fork() == 0)
				grandchild_main(x_pid, report[1], go[0]);
			_exit(0);
		}
		wait(NULL);
		_exit(0);
	}
	assert_int_equal(sampler_add_target(s, app, 9, TARGET_UID_ANY), 0);
	assert_int_equal(write(gate[1], "g", 1), 1);
	reap(app, NULL);
	assert_int_equal(read_bounded(report[0], &g), 0);
	assert_int_equal(read_bounded(report[0], &g_parent), 0);
	if (subreaper)
		assert_int_equal(g_parent, getpid());
	/* its parents are gone, G is not */
	assert_false(in_target(app));
	assert_true(in_target(g));
	drain_all(&t); /* what came before */
	t = (struct tally){.tgid = g};
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read_bounded(report[0], &done), 0);
	assert_int_equal(done, g);
	if (subreaper)
		reap(g, NULL);
	assert_int_equal(exit_of(&x, g, &e), 0);
	drain_all(&t);
	assert_true(t.samples >= 60);
	assert_int_equal(t.others, 0);
	assert_int_equal(t.bad, 0);
	assert_false(in_target(g));
	assert_int_equal(e.ppid, g_parent);
	assert_int_equal(e.target_id, 9);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
	for (int i = 0; i < 2; i++) {
		close(gate[i]);
		close(report[i]);
		close(go[i]);
	}
}

static void test_double_fork_to_init(void **state)
{
	(void)state;
	check_double_fork(0);
}

static void test_double_fork_to_subreaper(void **state)
{
	(void)state;
	check_double_fork(1);
}

static void *spin_thread(void *arg)
{
	int ms = (int)(intptr_t)arg;

	spin(ms);
	if (ms > 100)
		_exit(0); /* the last one: exit() would run the sanitizers' checks */
	return NULL;
}

/* a process of 3 threads, started cpu_ms into its life; the main thread
 * exits first (pthread_exit), so the last thread to leave is not the
 * group leader, and started later than the process */
static int threaded_child(int gate_fd, int cpu_ms)
{
	pthread_t th[2];
	char c;

	if (read(gate_fd, &c, 1) != 1)
		return 2;
	spin(cpu_ms);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, spin_thread, (void *)(intptr_t)(cpu_ms * (i + 1)));
	spin(cpu_ms);
	pthread_exit(NULL);
}

static uint64_t rusage_cpu_ns(const struct rusage *ru)
{
	return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ull;
}

/* a new process given the pid of one that exited (clone3 set_tid) */
static pid_t fork_with_pid(pid_t pid)
{
	pid_t tids[1] = {pid};
	struct clone_args args = {
	    .exit_signal = SIGCHLD, .set_tid = (uint64_t)(uintptr_t)tids, .set_tid_size = 1};

	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

static void test_exit_totals_and_reused_pid(void **state)
{
	struct task_event first, second;
	struct exits x = {0};
	struct rusage ru;
	uint64_t cpu_ns, reported;
	uint64_t forked_ns;
	int gate[2];
	pid_t pid, again;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(pipe(gate), 0);
	forked_ns = proc_now_ns();
	pid = fork();
	if (pid == 0) {
		close(gate[1]);
		threaded_child(gate[0], 100);
		_exit(3);
	}
	assert_int_equal(sampler_add_target(s, pid, 1, TARGET_UID_ANY), 0);
	release(gate);
	reap(pid, &ru);
	assert_int_equal(exit_of(&x, pid, &first), 0);
	/* the whole group: 100 + 100 + 100 + 200 ms, as the kernel accounted it */
	cpu_ns = rusage_cpu_ns(&ru);
	reported = first.utime_ns + first.stime_ns;
	assert_true(cpu_ns >= 400000000ull);
	if (reported + reported / 20 + 5000000ull < cpu_ns ||
	    reported > cpu_ns + cpu_ns / 20 + 5000000ull)
		fail_msg("exit report: %llu ns of CPU, wait4: %llu ns",
			 (unsigned long long)reported, (unsigned long long)cpu_ns);
	/* the process' start (its leader's), not the last thread's */
	assert_true(first.start_time_ns >= forked_ns);
	assert_true(first.start_time_ns < forked_ns + 50000000ull);

	/* the same pid for a new process that only sleeps */
	again = fork_with_pid(pid);
	if (again == 0) {
		usleep(100000);
		_exit(0);
	}
	SKIP_UNLESS(again == pid, "clone3 could not reuse the pid (set_tid)");
	assert_int_equal(sampler_add_target(s, again, 1, TARGET_UID_ANY), 0);
	reap(again, NULL);
	x.n = 0;
	assert_int_equal(exit_of(&x, again, &second), 0);
	assert_true(second.start_time_ns > first.time_ns);
	assert_true(second.utime_ns + second.stime_ns < 50000000ull);
}

/* a thread still there when the process ends, as an OpenMP runtime's
 * worker is: spinning on after its work (as a worker waits for the next
 * parallel region), on the other CPU while the main thread calls _exit
 * (exit_group). Both exit at once: each may pass its signal->live
 * decrement before the other reaches the exit tracepoint */
static int threads_done;

static void *spinning_after_work(void *arg)
{
	volatile unsigned long n = 0;

	spin((int)(intptr_t)arg);
	__atomic_add_fetch(&threads_done, 1, __ATOMIC_SEQ_CST);
	for (;;)
		n++;
	return NULL;
}

static int killed_threads_child(int gate_fd, int cpu_ms)
{
	pthread_t th;
	char c;

	if (read(gate_fd, &c, 1) != 1)
		return 2;
	if (pthread_create(&th, NULL, spinning_after_work, (void *)(intptr_t)cpu_ms))
		return 2;
	spin(cpu_ms);
	while (!__atomic_load_n(&threads_done, __ATOMIC_SEQ_CST))
		;
	_exit(0);
}

/* a process' CPU time counts the threads its exit kills (issue 9: an
 * OpenMP process had half its CPU time, now and then: the thread that saw
 * the group dead reported before another one had added its share), every
 * time: a few processes in a row (before the fix, 1 in 3 to 10 lost its
 * worker's share) */
static void test_exit_totals_killed_threads(void **state)
{
	struct task_event e;
	struct rusage ru;
	uint64_t cpu_ns, reported;
	int gate[2];
	pid_t pid;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	for (int round = 0; round < 8; round++) {
		struct exits x = {0};

		assert_int_equal(pipe(gate), 0);
		pid = fork();
		if (pid == 0) {
			close(gate[1]);
			_exit(killed_threads_child(gate[0], 250));
		}
		close(gate[0]);
		assert_int_equal(sampler_add_target(s, pid, 1, TARGET_UID_ANY), 0);
		release(gate);
		reap(pid, &ru);
		assert_int_equal(exit_of(&x, pid, &e), 0);
		/* 2 * 250 ms, and what the spinning thread added meanwhile;
		 * what the last thread spends after the exit tracepoint
		 * (exit_mm: 15 ms for ASan's shadow memory) is not reported */
		cpu_ns = rusage_cpu_ns(&ru);
		reported = e.utime_ns + e.stime_ns;
		assert_true(cpu_ns >= 450000000ull);
		if (reported + reported / 20 + 5000000ull < cpu_ns ||
		    reported > cpu_ns + cpu_ns / 20 + 5000000ull)
			fail_msg("round %d: exit report: %llu ns of CPU, wait4: %llu ns", round,
				 (unsigned long long)reported, (unsigned long long)cpu_ns);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_samples_of_target_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flip_loses_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_drain_counted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_double_fork_to_init, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_double_fork_to_subreaper, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_totals_and_reused_pid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_totals_killed_threads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
