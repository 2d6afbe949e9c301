/* test_bpf_helpers — the filtering and key building of the BPF programs,
 * run in the kernel through bpf_prog_test_run_opts (STYLE.md 9).
 *
 * bpf/selftest.bpf.c wraps the `static __always_inline` helpers that
 * sample.bpf.c, task.bpf.c and mpi.bpf.c use (bpf/X.bpf.h) in SEC("syscall")
 * programs; this test fills the selftest object's own maps, runs them and
 * reads what they decided: Target membership and fork inheritance (double
 * fork included), sample keys, the sample slots and their in-flight counts,
 * the per-process totals under a late thread and a reused pid, and the
 * outermost-MPI-call logic with a site's running totals. The Agent's wait
 * on the in-flight counts (sampler_wait_slot_quiet) is run on the same
 * counts. (MPI bytes are count × datatype size computed in userspace,
 * tests/unit/test_mpi_datatypes.c: nothing of it is in BPF.)
 *
 * Without root or kernel BTF every test is SKIPPED with the reason.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf/selftest.h"
#include "bpf/selftest.skel.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "userspace/agent/sampler.h"

#define SMALL_MAP 8 /* targets, task_totals and selftest_samples: to fill them */

static struct selftest_bpf *skel;
static const char *why_not;

static int setup(void **state)
{
	int err;

	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	skel = selftest_bpf__open();
	if (!skel)
		return -1;
	bpf_map__set_max_entries(skel->maps.targets, SMALL_MAP);
	bpf_map__set_max_entries(skel->maps.task_totals, SMALL_MAP);
	bpf_map__set_max_entries(skel->maps.selftest_samples, SMALL_MAP);
	err = selftest_bpf__load(skel);
	if (err) {
		print_error("loading bpf/selftest.bpf.c failed: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	selftest_bpf__destroy(skel);
	return 0;
}

/* empties every map and slot count between tests */
static int reset(void **state)
{
	struct bpf_map *maps[] = {
	    skel ? skel->maps.targets : NULL,	       skel ? skel->maps.task_totals : NULL,
	    skel ? skel->maps.selftest_samples : NULL, skel ? skel->maps.mpi_calls : NULL,
	    skel ? skel->maps.mpi_sites : NULL,	       skel ? skel->maps.mpi_processes : NULL,
	    skel ? skel->maps.task_threads : NULL,     skel ? skel->maps.mpi_gates : NULL};
	char key[64], next[64];
	size_t i;

	(void)state;
	if (!skel)
		return 0;
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		int fd = bpf_map__fd(maps[i]);

		while (!bpf_map_get_next_key(fd, NULL, next)) {
			memcpy(key, next, sizeof(key));
			if (bpf_map_delete_elem(fd, key))
				return -1;
		}
	}
	memset(skel->bss->sample_inflight, 0, sizeof(skel->bss->sample_inflight));
	skel->bss->active_slot = 0;
	return 0;
}

/* runs prog on *args: copied into the object's global, results back */
static void run_on(struct bpf_program *prog, void *global, void *args, size_t size)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	memcpy(global, args, size);
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(prog), &opts), 0);
	assert_int_equal(opts.retval, 0);
	memcpy(args, global, size);
}

#define run(prog, args, size) run_on(prog, run_global(prog), args, size)

static void *run_global(struct bpf_program *prog)
{
	if (prog == skel->progs.selftest_target)
		return &skel->bss->target_args;
	if (prog == skel->progs.selftest_sample)
		return &skel->bss->sample_args;
	if (prog == skel->progs.selftest_totals)
		return &skel->bss->totals_args;
	return &skel->bss->mpi_args;
}

static void add_target(__u32 tgid, __u32 target_id, __u32 exec_seq)
{
	struct target_info info = {.target_id = target_id, .root_tgid = tgid, .exec_seq = exec_seq};

	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &tgid, &info, 0), 0);
}

static int target_op(__u32 op, __u32 tgid, __u32 child, struct target_info *info)
{
	struct selftest_target_args a = {.op = op, .tgid = tgid, .child_tgid = child, .ret = -99};

	run(skel->progs.selftest_target, &a, sizeof(a));
	if (info)
		*info = a.info;
	return a.ret;
}

static void test_target_membership(void **state)
{
	struct target_info info;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(1000, 7, 3);
	assert_int_equal(target_op(SELFTEST_LOOKUP, 1000, 0, &info), 1);
	assert_int_equal(info.target_id, 7);
	assert_int_equal(info.root_tgid, 1000);
	assert_int_equal(info.exec_seq, 3);
	assert_int_equal(target_op(SELFTEST_LOOKUP, 1001, 0, NULL), 0);
	assert_int_equal(target_op(SELFTEST_LOOKUP, 0, 0, NULL), 0);
}

static void test_fork_inherits_and_double_fork_stays(void **state)
{
	struct target_info info;
	__u32 parent = 1001;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(1000, 7, 3);
	/* child: same Target, same root, a new image */
	assert_int_equal(target_op(SELFTEST_FORK, 1000, 1001, NULL), 1);
	assert_int_equal(target_op(SELFTEST_LOOKUP, 1001, 0, &info), 1);
	assert_int_equal(info.target_id, 7);
	assert_int_equal(info.root_tgid, 1000);
	assert_int_equal(info.exec_seq, 0);
	/* double fork: the grandchild stays when its parent exits (task_exit
	 * deletes the exiting tgid only) */
	assert_int_equal(target_op(SELFTEST_FORK, 1001, 1002, NULL), 1);
	assert_int_equal(bpf_map_delete_elem(bpf_map__fd(skel->maps.targets), &parent), 0);
	assert_int_equal(target_op(SELFTEST_LOOKUP, 1002, 0, &info), 1);
	assert_int_equal(info.target_id, 7);
	assert_int_equal(info.root_tgid, 1000);
	/* a new thread is no new process: its entry is untouched */
	assert_int_equal(target_op(SELFTEST_FORK, 1000, 1000, NULL), 0);
	assert_int_equal(target_op(SELFTEST_LOOKUP, 1000, 0, &info), 1);
	assert_int_equal(info.exec_seq, 3);
	/* outside every Target: the child is not followed */
	assert_int_equal(target_op(SELFTEST_FORK, 5000, 5001, NULL), 0);
	assert_int_equal(target_op(SELFTEST_LOOKUP, 5001, 0, NULL), 0);
}

static void test_fork_into_full_map_is_refused(void **state)
{
	__u32 child;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(1000, 1, 0);
	for (child = 2000; child < 2000 + SMALL_MAP - 1; child++)
		assert_int_equal(target_op(SELFTEST_FORK, 1000, child, NULL), 1);
	assert_true(target_op(SELFTEST_FORK, 1000, child, NULL) < 0);
	assert_int_equal(target_op(SELFTEST_LOOKUP, child, 0, NULL), 0);
}

static struct selftest_sample_args sample_key_of(__u64 pid_tgid, __u64 user_ip,
						 __u64 interrupted_ip)
{
	struct selftest_sample_args a = {.op = SELFTEST_SAMPLE_KEY,
					 .pid_tgid = pid_tgid,
					 .user_ip = user_ip,
					 .interrupted_ip = interrupted_ip,
					 .ret = -99};

	memset(&a.key, 0xa5, sizeof(a.key)); /* every field must be written */
	run(skel->progs.selftest_sample, &a, sizeof(a));
	return a;
}

static void test_sample_key(void **state)
{
	struct selftest_sample_args a;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(1000, 7, 3);
	a = sample_key_of((1000ull << 32) | 1234, 0x401000, 0x401000);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.key.tgid, 1000);
	assert_int_equal(a.key.tid, 1234);
	assert_int_equal(a.key.exec_seq, 3);
	assert_int_equal(a.key.leaf_ip, 0x401000);
	assert_int_equal(a.key.flags, 0);
	assert_int_equal(a.key.stack, 0);
	assert_int_equal(a.key.target_id, 7);
	/* interrupted elsewhere than the user ip: in the kernel */
	a = sample_key_of((1000ull << 32) | 1000, 0x401000, 0xffffffff81000000ull);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.key.tid, 1000);
	assert_int_equal(a.key.leaf_ip, 0x401000);
	assert_int_equal(a.key.flags, SAMPLE_FLAG_KERNEL);
	/* not a Target: no key */
	a = sample_key_of((1001ull << 32) | 1001, 0x401000, 0x401000);
	assert_int_equal(a.ret, 0);
}

static struct selftest_sample_args sample_add_on(__u32 cpu, __u32 tid, __u64 period)
{
	struct selftest_sample_args a = {
	    .op = SELFTEST_SAMPLE_ADD, .cpu = cpu, .period = period, .ret = -99, .slot = -99};

	a.key.tgid = 1000;
	a.key.tid = tid;
	a.key.leaf_ip = 0x401000;
	run(skel->progs.selftest_sample, &a, sizeof(a));
	return a;
}

static void test_sample_slots_and_inflight(void **state)
{
	struct selftest_sample_args a;
	struct sample_key key = {.tgid = 1000, .tid = 1, .leaf_ip = 0x401000};
	struct sample_value v;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	/* inside the active slot while adding, out of it after */
	a = sample_add_on(1, 1, 100);
	assert_int_equal(a.ret, 0);
	assert_int_equal(a.slot, 0);
	assert_int_equal(a.inflight, 1);
	assert_int_equal(skel->bss->sample_inflight[1].count[0], 0);
	skel->bss->active_slot = 1;
	a = sample_add_on(1, 1, 250);
	assert_int_equal(a.slot, 1);
	assert_int_equal(a.inflight, 1);
	assert_int_equal(skel->bss->sample_inflight[1].count[1], 0);
	/* a CPU beyond MAX_SAMPLE_CPUS shares the last entry */
	a = sample_add_on(MAX_SAMPLE_CPUS + 5, 1, 50);
	assert_int_equal(a.slot, 1);
	assert_int_equal(a.inflight, 1);
	skel->bss->sample_inflight[MAX_SAMPLE_CPUS - 1].count[1] = 2; /* two others inside */
	a = sample_add_on(MAX_SAMPLE_CPUS + 5, 1, 0);
	assert_int_equal(a.inflight, 3);
	assert_int_equal(skel->bss->sample_inflight[MAX_SAMPLE_CPUS - 1].count[1], 2);
	/* one key: 4 samples, Σ period */
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.selftest_samples), &key, &v),
			 0);
	assert_int_equal(v.samples, 4);
	assert_int_equal(v.period_sum, 400);
}

/* the sampling group's growth rides on the sample: summed per key, and
 * untouched by a sample without a group */
static void test_sample_group_growth(void **state)
{
	struct selftest_sample_args a = {.op = SELFTEST_SAMPLE_ADD, .cpu = 0, .period = 10,
					 .has_pmu = 1, .pmu = {7, 0, 640}};
	struct sample_key key = {.tgid = 1000, .tid = 1, .leaf_ip = 0x401000};
	struct sample_value v;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	a.key = key;
	run(skel->progs.selftest_sample, &a, sizeof(a));
	assert_int_equal(a.ret, 0);
	a.pmu[0] = 5;
	a.pmu[1] = 3;
	a.pmu[2] = 64;
	run(skel->progs.selftest_sample, &a, sizeof(a));
	a.has_pmu = 0; /* no group: the growth given is not added */
	a.pmu[0] = 1000;
	run(skel->progs.selftest_sample, &a, sizeof(a));
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.selftest_samples), &key, &v),
			 0);
	assert_int_equal(v.samples, 3);
	assert_int_equal(v.period_sum, 30);
	assert_int_equal(v.pmu[0], 12);
	assert_int_equal(v.pmu[1], 3);
	assert_int_equal(v.pmu[2], 704);
}

static __u64 pmu_scale_of(__u64 counter, __u64 enabled, __u64 running)
{
	struct selftest_sample_args a = {.op = SELFTEST_PMU_SCALE,
					 .pmu = {counter, enabled, running}};

	run(skel->progs.selftest_sample, &a, sizeof(a));
	return a.pmu[0];
}

/* a multiplexed event's count scaled to its enabled time, without overflow */
static void test_pmu_scale(void **state)
{
	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(pmu_scale_of(1000, 500, 500), 1000);  /* never multiplexed */
	assert_int_equal(pmu_scale_of(1000, 500, 0), 0);       /* never ran: nothing */
	assert_int_equal(pmu_scale_of(1000, 1000, 250), 4000); /* ran a quarter of the time */
	assert_int_equal(pmu_scale_of(999, 3000, 1000), 2997);
	/* 10^13 FLOP over 1000 s enabled, ran half: no overflow of the products */
	assert_int_equal(pmu_scale_of(10000000000000ull, 1000000000000ull, 500000000000ull),
			 20000000000000ull);
}

static void test_sample_map_full(void **state)
{
	__u32 tid;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	for (tid = 1; tid <= SMALL_MAP; tid++)
		assert_int_equal(sample_add_on(0, tid, 1).ret, 0);
	assert_true(sample_add_on(0, tid, 1).ret < 0);
	/* a key already there is still counted */
	assert_int_equal(sample_add_on(0, 1, 1).ret, 0);
	assert_int_equal(skel->bss->sample_inflight[0].count[0], 0);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* the Agent's wait, on the counts the programs keep */
static void test_wait_slot_quiet(void **state)
{
	struct sample_inflight *in;
	uint64_t t0;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	in = skel->bss->sample_inflight;
	assert_int_equal(sampler_wait_slot_quiet(in, MAX_SAMPLE_CPUS, 0, 0), 0);
	in[3].count[1] = 1; /* a program inside slot 1 on CPU 3 */
	assert_int_equal(sampler_wait_slot_quiet(in, MAX_SAMPLE_CPUS, 0, 0), 0);
	t0 = now_ns();
	assert_int_equal(sampler_wait_slot_quiet(in, MAX_SAMPLE_CPUS, 1, 5000000), -ETIMEDOUT);
	assert_true(now_ns() - t0 >= 5000000);
	assert_true(now_ns() - t0 < 500000000);
	/* counted only up to n CPUs */
	assert_int_equal(sampler_wait_slot_quiet(in, 3, 1, 0), 0);
	in[3].count[1] = 0;
	assert_int_equal(sampler_wait_slot_quiet(in, MAX_SAMPLE_CPUS, 1, 0), 0);
	/* a real add leaves the counts at 0 */
	assert_int_equal(sample_add_on(3, 1, 1).ret, 0);
	assert_int_equal(sampler_wait_slot_quiet(in, MAX_SAMPLE_CPUS, 0, 0), 0);
}

static int totals_op(__u32 op, struct task_totals_key *key, struct task_totals *t)
{
	struct selftest_totals_args a = {.op = op, .ret = -99};

	a.key = *key;
	if (t)
		a.totals = *t;
	run(skel->progs.selftest_totals, &a, sizeof(a));
	*key = a.key;
	if (t)
		*t = a.totals;
	return a.ret;
}

static struct task_totals share_of(uint64_t n)
{
	return (struct task_totals){n, 2 * n, 3 * n, 4 * n, 5 * n, 6 * n, 7 * n, 8 * n};
}

static void assert_totals(const struct task_totals *t, uint64_t n)
{
	struct task_totals want = share_of(n);

	assert_memory_equal(t, &want, sizeof(want));
}

/* the interleaving of a late thread, made deterministic: the last thread
 * takes the totals, then a thread that left the group before it adds its
 * share, then a new process gets the same pid */
static void test_totals_late_thread_and_reused_pid(void **state)
{
	struct task_totals_key old = {.tgid = 1000, .start_time_ns = 111};
	struct task_totals_key reused = {.tgid = 1000, .start_time_ns = 222};
	struct task_totals_key k;
	struct task_totals t;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	t = share_of(1);
	assert_int_equal(totals_op(SELFTEST_TOTALS_ADD, &old, &t), 0);
	t = share_of(10);
	assert_int_equal(totals_op(SELFTEST_TOTALS_ADD, &old, &t), 0);
	assert_int_equal(totals_op(SELFTEST_TOTALS_TAKE, &old, &t), 0);
	assert_totals(&t, 11);
	/* the late thread re-creates the old process' entry... */
	t = share_of(100);
	assert_int_equal(totals_op(SELFTEST_TOTALS_ADD, &old, &t), 0);
	/* ...which the process with the reused pid never sees */
	t = share_of(5);
	assert_int_equal(totals_op(SELFTEST_TOTALS_ADD, &reused, &t), 0);
	assert_int_equal(totals_op(SELFTEST_TOTALS_TAKE, &reused, &t), 0);
	assert_totals(&t, 5);
	assert_int_equal(totals_op(SELFTEST_TOTALS_TAKE, &reused, &t), -ENOENT);
	/* the leftover, as the sampler deletes it on the exit report */
	k = old;
	assert_int_equal(bpf_map_delete_elem(bpf_map__fd(skel->maps.task_totals), &k), 0);
	assert_int_equal(totals_op(SELFTEST_TOTALS_TAKE, &old, &t), -ENOENT);
}

static int threads_op(__u32 op, struct task_totals_key key, __s64 live)
{
	struct selftest_totals_args a = {.op = op, .ret = -99, .key = key, .live = live};

	run(skel->progs.selftest_totals, &a, sizeof(a));
	return a.ret;
}

/* the exit is reported by the thread that added the last share, whatever
 * signal->live said: two threads counted from their creation (live 2),
 * then a third; the first two to leave are not the last; a process with
 * no count falls back (-ENOENT); an exec counts from 1 again; a process
 * out of every Target loses its count */
static void test_threads_last_share(void **state)
{
	struct task_totals_key k = {.tgid = 2000, .start_time_ns = 333};
	struct task_totals_key other = {.tgid = 2000, .start_time_ns = 444};

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(threads_op(SELFTEST_THREADS_EXIT, k, 0), -ENOENT);
	assert_int_equal(threads_op(SELFTEST_THREADS_NEW, k, 2), 0);
	assert_int_equal(threads_op(SELFTEST_THREADS_NEW, k, 99), 0); /* counted: +1 */
	assert_int_equal(threads_op(SELFTEST_THREADS_EXIT, k, 0), 0);
	assert_int_equal(threads_op(SELFTEST_THREADS_EXIT, other, 0), -ENOENT);
	assert_int_equal(threads_op(SELFTEST_THREADS_EXIT, k, 0), 0);
	assert_int_equal(threads_op(SELFTEST_THREADS_EXIT, k, 0), 1);
	/* removed with its last thread */
	assert_int_equal(threads_op(SELFTEST_THREADS_EXIT, k, 0), -ENOENT);
	/* a process that exec'd with 2 threads counted: 1 from then on */
	assert_int_equal(threads_op(SELFTEST_THREADS_NEW, k, 2), 0);
	assert_int_equal(threads_op(SELFTEST_THREADS_SET, k, 1), 0);
	assert_int_equal(threads_op(SELFTEST_THREADS_EXIT, k, 0), 1);
	assert_int_equal(threads_op(SELFTEST_THREADS_NEW, k, 3), 0);
	assert_int_equal(threads_op(SELFTEST_THREADS_FORGET, other, 0), 0);
	assert_int_equal(threads_op(SELFTEST_THREADS_FORGET, k, 0), 0);
	assert_int_equal(threads_op(SELFTEST_THREADS_EXIT, k, 0), -ENOENT);
}

static void test_totals_map_full(void **state)
{
	struct task_totals_key k = {.start_time_ns = 1};
	struct task_totals t = share_of(1);

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	for (k.tgid = 1; k.tgid <= SMALL_MAP; k.tgid++)
		assert_int_equal(totals_op(SELFTEST_TOTALS_ADD, &k, &t), 0);
	assert_true(totals_op(SELFTEST_TOTALS_ADD, &k, &t) < 0);
}

static struct task_totals_key key_of_caller(void)
{
	struct task_totals_key k = {0};

	assert_int_equal(totals_op(SELFTEST_TOTALS_KEY, &k, NULL), 0);
	return k;
}

static void *key_in_thread(void *arg)
{
	*(struct task_totals_key *)arg = key_of_caller();
	return NULL;
}

/* the key of a real task: the process' identity, the same for each of
 * its threads, another for a new process */
static void test_totals_key_of_task(void **state)
{
	struct task_totals_key main_key, thread_key, child_key;
	pthread_t th;
	int fds[2], status;
	pid_t child;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	main_key = key_of_caller();
	assert_int_equal(main_key.tgid, getpid());
	assert_true(main_key.start_time_ns > 0);
	assert_true(main_key.start_time_ns < now_ns());
	assert_int_equal(pthread_create(&th, NULL, key_in_thread, &thread_key), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_memory_equal(&main_key, &thread_key, sizeof(main_key));

	assert_int_equal(pipe(fds), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct task_totals_key k = key_of_caller();

		_exit(write(fds[1], &k, sizeof(k)) == sizeof(k) ? 0 : 1);
	}
	assert_int_equal(read(fds[0], &child_key, sizeof(child_key)), sizeof(child_key));
	assert_int_equal(waitpid(child, &status, 0), child);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(child_key.tgid, child);
	assert_true(child_key.start_time_ns > main_key.start_time_ns);
}

static struct selftest_mpi_args mpi_op(__u32 op, __u32 tid, __u32 tgid, __u64 cookie, __u64 now)
{
	struct selftest_mpi_args a = {.op = op,
				      .tid = tid,
				      .tgid = tgid,
				      .cookie = cookie,
				      .now_ns = now,
				      .ret = -99,
				      .call_site = 0x4011aa,
				      /* garbage in the undefined upper halves of int args */
				      .count_arg = 0xdeadbeef00000010ull,
				      .type_arg = 0x4c00080bull,
				      .peer_arg = 0xdeadbeef00000003ull};

	run(skel->progs.selftest_mpi, &a, sizeof(a));
	return a;
}

static void test_mpi_outermost_call(void **state)
{
	__u64 send = MPI_COOKIE(MPI_FN_SEND, 2, 3, 4);
	struct mpi_site_key key = {
	    .tgid = 1000, .function = MPI_FN_SEND, .call_site = 0x4011aa, .datatype = 0x4c00080b};
	struct selftest_mpi_args a;
	struct mpi_site_value v;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(1000, 1, 0);
	a = mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send, 1000);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.state.function, MPI_FN_SEND);
	assert_int_equal(a.state.count, 16);
	assert_int_equal(a.state.datatype, 0x4c00080b);
	assert_int_equal(a.state.peer, 3);
	assert_int_equal(a.state.depth, 1);
	/* PMPI_Send reached from MPI_Send: nested, not a call */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send, 1100).ret, 2);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 1200).ret, 0);
	a = mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 1500);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.state.start_ns, 1000);
	/* nothing in flight any more */
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 1600).ret, 0);
	/* a second call at the same site, longer */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send, 2000).ret, 1);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 4000).ret, 1);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.mpi_sites), &key, &v), 0);
	assert_int_equal(v.calls, 2);
	assert_int_equal(v.total_ns, 500 + 2000);
	assert_int_equal(v.min_ns, 500);
	assert_int_equal(v.max_ns, 2000);
	assert_int_equal(v.count_sum, 32);
}

/* a Fortran binding (mpi_send_) is the outermost call: its call site is
 * kept, its registers (references) are not read; the first nested C call
 * of the same function gives count, datatype and peer, later ones do not */
static void test_mpi_fortran_binding(void **state)
{
	__u64 send_f = MPI_COOKIE_FORTRAN_BINDING(MPI_FN_SEND), send = MPI_COOKIE(MPI_FN_SEND, 2, 3, 4),
	      bcast = MPI_COOKIE(MPI_FN_BCAST, 2, 3, 4);
	struct mpi_site_key key = {
	    .tgid = 1000, .function = MPI_FN_SEND, .call_site = 0x4011aa, .datatype = 0x4c00080b};
	struct selftest_mpi_args a;
	struct mpi_site_value v;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(1000, 1, 0);
	a = mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send_f, 1000);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.state.function, MPI_FN_SEND);
	assert_int_equal(a.state.count, 0);
	assert_int_equal(a.state.datatype, 0);
	assert_int_equal(a.state.peer, -1);
	assert_int_equal(a.state.args_pending, 1);
	/* Open MPI's f08 binding reaches its mpif.h one: Fortran, no arguments */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send_f, 1010).ret, 2);
	/* another C function inside: not the binding's call */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, bcast, 1020).ret, 2);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 1030).ret, 0);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 1040).ret, 0);
	/* PMPI_Send, the binding's own C call: its arguments */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send, 1100).ret, 2);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 1200).ret, 0);
	a = mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 1500);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.state.count, 16);
	assert_int_equal(a.state.datatype, 0x4c00080b);
	assert_int_equal(a.state.peer, 3);
	assert_int_equal(a.state.args_pending, 0);
	assert_int_equal(a.state.call_site, 0x4011aa);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.mpi_sites), &key, &v), 0);
	assert_int_equal(v.calls, 1);
	assert_int_equal(v.total_ns, 500);
	assert_int_equal(v.count_sum, 16);
	/* a C call is never pending: a nested one does not overwrite it */
	a = mpi_op(SELFTEST_MPI_ENTRY, 1002, 1000, send, 2000);
	assert_int_equal(a.state.args_pending, 0);
}

static void test_mpi_filter_reuse_and_layout(void **state)
{
	__u64 barrier = MPI_COOKIE(MPI_FN_BARRIER, 0, 0, 0),
	      init = MPI_COOKIE(MPI_FN_INIT, 0, 0, 0);
	struct selftest_mpi_args a;
	struct mpi_process proc;
	__u32 tgid = 1000;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(1000, 1, 0);
	add_target(2000, 1, 0);
	/* outside every Target: nothing kept */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 3001, 3000, barrier, 10).ret, 0);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 3001, 3000, 0, 20).ret, 0);
	/* a function without arguments ignores the registers */
	a = mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, barrier, 10);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.state.count, 0);
	assert_int_equal(a.state.datatype, 0);
	assert_int_equal(a.state.peer, -1);
	/* tid 1001 reused by another process while the first call is known:
	 * a new outermost call, not a nested one */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1001, 2000, barrier, 30).ret, 1);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 40).ret, 0);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 2000, 0, 40).ret, 1);
	/* MPI_Init's return is the process' init end */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1002, 1000, init, 50).ret, 1);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1002, 1000, 0, 70).ret, 1);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.mpi_processes), &tgid, &proc),
			 0);
	assert_int_equal(proc.init_end_ns, 70);
	assert_int_equal(proc.finalize_start_ns, 0);
}

/* the call site by the architecture's convention, from registers laid
 * out as the kernel's pt_regs: x86-64 reads the return address the call
 * pushed at *sp (user memory: here, this test's), arm64 takes lr */
static void set_gate(__u32 tgid, __u64 open_ns, __u64 close_ns)
{
	struct mpi_gate g = {.open_ns = open_ns, .close_ns = close_ns};

	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.mpi_gates), &tgid, &g, BPF_ANY),
			 0);
}

/* the cost budget's sampled windows: a call counts as windowed by its
 * entry inside the gate, not at all outside it; Finalize always counts; a
 * call whose return was lost to a detach is replaced, not nesting */
static void test_mpi_gate(void **state)
{
	__u64 send = MPI_COOKIE(MPI_FN_SEND, 2, 3, 4), fin = MPI_COOKIE(MPI_FN_FINALIZE, 0, 0, 0);
	struct mpi_site_key key = {
	    .tgid = 1000, .function = MPI_FN_SEND, .call_site = 0x4011aa, .datatype = 0x4c00080b};
	struct selftest_mpi_args a;
	struct mpi_site_value v;
	struct mpi_process proc;
	__u32 tgid = 1000;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(1000, 1, 0);
	/* every call probed: counted, not windowed */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send, 100).state.gated, MPI_COUNTED);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 200).ret, 1);
	/* probing every call stops at 1000: a call entered after it is not counted */
	set_gate(1000, 0, 1000);
	a = mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send, 1500);
	assert_int_equal(a.state.gated, MPI_UNCOUNTED);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 1600).ret, 1);
	/* a window [2000, 3000): a call entered in it counts as windowed */
	set_gate(1000, 2000, ~0ull);
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1001, 1000, send, 2100).state.gated,
			 MPI_WINDOWED);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1001, 1000, 0, 2400).ret, 1);
	/* entered in the window, its return lost to the detach */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1002, 1000, send, 2900).ret, 1);
	set_gate(1000, 2000, 3000);
	/* a call entered in the window still nests other calls until it closes */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1002, 1000, send, 2950).ret, 2);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1002, 1000, 0, 2960).ret, 0);
	/* Finalize after the window closed: the lost call is stale, Finalize counts */
	a = mpi_op(SELFTEST_MPI_ENTRY, 1002, 1000, fin, 3500);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.state.gated, MPI_COUNTED);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1002, 1000, 0, 3600).ret, 1);
	/* the next window: a state from the last one is stale, replaced */
	assert_int_equal(mpi_op(SELFTEST_MPI_ENTRY, 1003, 1000, send, 2990).ret, 1);
	set_gate(1000, 4000, ~0ull);
	a = mpi_op(SELFTEST_MPI_ENTRY, 1003, 1000, send, 4100);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.state.gated, MPI_WINDOWED);
	assert_int_equal(mpi_op(SELFTEST_MPI_RETURN, 1003, 1000, 0, 4300).ret, 1);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.mpi_sites), &key, &v), 0);
	/* 100-200 counted, 2100-2400 and 4100-4300 windowed; 1500 not */
	assert_int_equal(v.calls, 3);
	assert_int_equal(v.total_ns, 100 + 300 + 200);
	assert_int_equal(v.win_calls, 2);
	assert_int_equal(v.win_total_ns, 300 + 200);
	assert_int_equal(v.win_count_sum, 32);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.mpi_processes), &tgid, &proc),
			 0);
	assert_int_equal(proc.windowed_calls, 2);
	assert_int_equal(proc.windowed_ns, 300 + 200);
}

static void test_mpi_return_address(void **state)
{
	struct selftest_mpi_args a = {.op = SELFTEST_MPI_RETURN_ADDRESS, .ret = -99};
	static volatile uint64_t stack_top[2] = {0x7f00004011aaull, 0};

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
#if defined(__x86_64__)
	a.regs[offsetof(struct user_regs_struct, rsp) / 8] = (uint64_t)(uintptr_t)stack_top;
	a.regs[offsetof(struct user_regs_struct, rip) / 8] = 0x7f0000500000ull;
#elif defined(__aarch64__)
	a.regs[30] = 0x7f00004011aaull; /* lr */
	a.regs[31] = (uint64_t)(uintptr_t)&stack_top[1]; /* sp: not where it is */
#else
	skip();
#endif
	run(skel->progs.selftest_mpi, &a, sizeof(a));
	assert_int_equal(a.ret, 0);
	assert_int_equal(a.call_site, 0x7f00004011aaull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_target_membership, reset),
	    cmocka_unit_test_setup(test_fork_inherits_and_double_fork_stays, reset),
	    cmocka_unit_test_setup(test_fork_into_full_map_is_refused, reset),
	    cmocka_unit_test_setup(test_sample_key, reset),
	    cmocka_unit_test_setup(test_sample_slots_and_inflight, reset),
	    cmocka_unit_test_setup(test_sample_map_full, reset),
	    cmocka_unit_test_setup(test_sample_group_growth, reset),
	    cmocka_unit_test_setup(test_pmu_scale, reset),
	    cmocka_unit_test_setup(test_wait_slot_quiet, reset),
	    cmocka_unit_test_setup(test_totals_late_thread_and_reused_pid, reset),
	    cmocka_unit_test_setup(test_threads_last_share, reset),
	    cmocka_unit_test_setup(test_totals_map_full, reset),
	    cmocka_unit_test_setup(test_totals_key_of_task, reset),
	    cmocka_unit_test_setup(test_mpi_outermost_call, reset),
	    cmocka_unit_test_setup(test_mpi_fortran_binding, reset),
	    cmocka_unit_test_setup(test_mpi_filter_reuse_and_layout, reset),
	    cmocka_unit_test_setup(test_mpi_gate, reset),
	    cmocka_unit_test_setup(test_mpi_return_address, reset),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
