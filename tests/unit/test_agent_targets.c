/* Tests of one Agent serving several Targets with real BPF (root): each
 * Target's Batches carry its own run_id and only the samples and exits
 * of its own processes; a Run token adopts an exec into its Target; a
 * Target's live processes, and the perf events on only while a Target
 * exists; are its own (a
 * followed process, the grandchild it double-forks, their exits). A
 * ROUTER in the test plays the Aggregator and acknowledges everything.
 * What needs root or BPF is SKIPPED with the reason. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/agent_fixture.h"

#define RUN_A "0123456789abcdef0123456789abcdef"
#define RUN_B "fedcba9876543210fedcba9876543210"

/* a child that waits for the gate, then burns CPU for ms and exits 0 */
static pid_t gated_spinner(int *gate_w, int ms)
{
	int gate[2];
	pid_t pid;
	char go;

	assert_int_equal(pipe(gate), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long long end;
		volatile unsigned long x = 0;

		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(2);
		end = fx_now_ms() + ms;
		while (fx_now_ms() < end)
			x++;
		_exit(0);
	}
	close(gate[0]);
	*gate_w = gate[1];
	return pid;
}

struct seen {
	pid_t own;
	uint64_t samples, foreign, exits, foreign_exits;
	int64_t next_seq;
};

/* counts what Batch b holds; a resent Batch (seq seen) counts once; its
 * samples_sent counter is the Σ of every Batch's samples so far */
static void account(struct seen *s, const Nunatak__Wire__Batch *b)
{
	size_t i;

	if ((int64_t)b->seq < s->next_seq)
		return;
	assert_int_equal(b->seq, s->next_seq);
	s->next_seq++;

	for (i = 0; i < b->n_samples; i++) {
		const Nunatak__Wire__Locus *l = b->loci[b->samples[i]->locus];

		if ((pid_t)l->tgid == s->own)
			s->samples += b->samples[i]->sample_count;
		else
			s->foreign += b->samples[i]->sample_count;
	}
	for (i = 0; i < b->n_exits; i++) {
		const Nunatak__Wire__Locus *l = b->loci[b->exits[i]->locus];

		if ((pid_t)l->tgid == s->own)
			s->exits++;
		else
			s->foreign_exits++;
	}
	for (i = 0; i < b->n_counters; i++)
		if (!strcmp(b->counters[i]->name, "samples_sent"))
			assert_int_equal(b->counters[i]->value, s->samples + s->foreign);
}

/* Two Targets in one Agent: Batches with their own run_id, the samples
 * and exit of their own process only. */
static void test_two_targets_own_samples(void **state)
{
	struct fixture *fx = *state;
	struct seen a = {0}, b = {0};
	struct received r;
	int ga, gb;
	long long end;

	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	fx_agent(fx, 0);
	SKIP_UNLESS(agent_sampling(fx->agent), "BPF sampling unavailable here");
	fx_target(fx->agent, RUN_A);
	fx_target(fx->agent, RUN_B);
	a.own = gated_spinner(&ga, 600);
	b.own = gated_spinner(&gb, 600);
	assert_int_equal(agent_target_follow(fx->agent, RUN_A, a.own), 0);
	assert_int_equal(agent_target_follow(fx->agent, RUN_B, b.own), 0);
	assert_int_equal(agent_target_follow(fx->agent, "nope", b.own), -ENOENT);
	assert_int_equal(write(ga, "g", 1), 1);
	assert_int_equal(write(gb, "g", 1), 1);
	close(ga);
	close(gb);
	end = fx_now_ms() + 4000;
	while (fx_now_ms() < end && (!a.exits || !b.exits) &&
	       fx_recv_batch(fx, fx->agent, &r, 1000)) {
		const Nunatak__Wire__Batch *batch = r.env->batch;

		if (!strcmp(batch->run_id, RUN_A))
			account(&a, batch);
		else if (!strcmp(batch->run_id, RUN_B))
			account(&b, batch);
		else
			fail_msg("a Batch of unknown run '%s'", batch->run_id);
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	assert_int_equal(waitpid(a.own, NULL, 0), a.own);
	assert_int_equal(waitpid(b.own, NULL, 0), b.own);
	print_message("A: %llu samples, B: %llu samples\n", (unsigned long long)a.samples,
		      (unsigned long long)b.samples);
	assert_true(a.samples > 0);
	assert_true(b.samples > 0);
	assert_int_equal(a.foreign, 0);
	assert_int_equal(b.foreign, 0);
	assert_int_equal(a.exits, 1);
	assert_int_equal(b.exits, 1);
	assert_int_equal(a.foreign_exits, 0);
	assert_int_equal(b.foreign_exits, 0);
}


/* A Target with a Run token: a process that is not followed but execs
 * with NUNATAK_RUN=<token> in its environment joins it (BPF adopts it at
 * the exec); its exit is in that Target's Batches, not the other's. */
static void test_token_adopts_exec(void **state)
{
	struct fixture *fx = *state;
	struct agent_target_opts o = {.run_id = RUN_A, .token = "00112233445566778899aabbccddeeff"};
	struct seen a = {0}, b = {0};
	struct received r;
	long long end;
	pid_t child;

	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	fx_agent(fx, 0);
	SKIP_UNLESS(agent_sampling(fx->agent), "BPF sampling unavailable here");
	assert_int_equal(agent_target_start(fx->agent, &o, NULL, NULL), 0);
	fx_target(fx->agent, RUN_B);
	o.run_id = "0000000000000000000000000000000a";
	o.token = "NOT-HEX";
	assert_int_equal(agent_target_start(fx->agent, &o, NULL, NULL), -EINVAL);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char *const env[] = {"NUNATAK_RUN=00112233445566778899aabbccddeeff", NULL};

		execle("/bin/sh", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
		       (char *)NULL, env);
		_exit(3);
	}
	a.own = b.own = child;
	end = fx_now_ms() + 5000;
	while (fx_now_ms() < end && !a.exits && fx_recv_batch(fx, fx->agent, &r, 1000)) {
		account(!strcmp(r.env->batch->run_id, RUN_A) ? &a : &b, r.env->batch);
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	assert_int_equal(waitpid(child, NULL, 0), child);
	print_message("adopted: %llu samples, exit %llu\n", (unsigned long long)a.samples,
		      (unsigned long long)a.exits);
	assert_int_equal(a.exits, 1);
	assert_int_equal(b.exits, 0);
	assert_int_equal(b.samples, 0);
}

static int status_active(struct agent *a)
{
	json_t *st = agent_status(a);
	int on = json_is_true(json_object_get(st, "sampling_active"));

	json_decref(st);
	return on;
}

/* Runs the Agent until its Target's live processes are want (5 s). */
static int wait_live(struct agent *a, const char *run_id, int want)
{
	long long end = fx_now_ms() + 5000;
	int n;

	do {
		fx_pump(a, 10);
		n = agent_target_live_processes(a, run_id);
		if (n == want)
			return n;
	} while (fx_now_ms() < end);
	return n;
}

static int count_comm(pid_t pid, const char *comm, void *ctx)
{
	(void)pid;
	if (!strcmp(comm, "sleep"))
		(*(int *)ctx)++;
	return 0;
}

/* A followed process, the grandchild it double-forks (which outlives it)
 * and their exits, as the kernel reports them; the other Target sees
 * none of them. */
static void test_live_processes_follow_fork_and_exit(void **state)
{
	struct fixture *fx = *state;
	struct agent *a;
	int gate[2], sleeping = 0;
	struct received r;
	long long end;
	siginfo_t si;
	pid_t child;
	char go;

	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	a = fx_agent(fx, 0);
	SKIP_UNLESS(agent_sampling(a), "BPF sampling unavailable here");
	assert_false(status_active(a)); /* no Target: no perf event enabled */
	fx_target(a, RUN_A);
	assert_true(status_active(a));
	fx_target(a, RUN_B);
	assert_int_equal(agent_target_live_processes(a, RUN_A), 0);
	assert_int_equal(agent_target_live_processes(a, "nope"), -ENOENT);
	assert_int_equal(pipe(gate), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(2);
		/* double fork: the grandchild sleeps 1 s after its parent is gone */
		if (fork() == 0) {
			execl("/bin/sleep", "sleep", "1", (char *)NULL);
			_exit(3);
		}
		usleep(200000);
		_exit(0);
	}
	close(gate[0]);
	assert_int_equal(agent_target_follow(a, RUN_A, child), 0);
	assert_int_equal(agent_target_live_processes(a, RUN_A), 1);
	assert_int_equal(write(gate[1], "g", 1), 1);
	close(gate[1]);
	assert_int_equal(wait_live(a, RUN_A, 2), 2); /* child and grandchild */
	assert_int_equal(agent_target_live_processes(a, RUN_B), 0);
	/* the child exited but is not reaped (a zombie the kernel still
	 * knows): only its exit report can take it off */
	assert_int_equal(waitid(P_PID, child, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(wait_live(a, RUN_A, 1), 1); /* the grandchild outlives it */
	assert_int_equal(waitpid(child, NULL, 0), child);
	agent_target_for_each_live_process(a, RUN_A, count_comm, &sleeping);
	assert_int_equal(sleeping, 1);
	assert_int_equal(wait_live(a, RUN_A, 0), 0); /* reaped by init, seen exit */
	assert_int_equal(agent_target_end(a, RUN_A, NULL, NULL, NULL), 0);
	assert_int_equal(agent_target_end(a, RUN_B, NULL, NULL, NULL), 0);
	end = fx_now_ms() + 10000;
	while ((agent_target_exists(a, RUN_A) || agent_target_exists(a, RUN_B)) &&
	       fx_now_ms() < end) {
		if (!fx_recv_batch(fx, a, &r, 500))
			continue;
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
	assert_false(agent_target_exists(a, RUN_A) || agent_target_exists(a, RUN_B));
	assert_false(status_active(a)); /* the last Target ended: perf events off */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_two_targets_own_samples, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_token_adopts_exec, fx_setup_inproc, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_live_processes_follow_fork_and_exit,
					    fx_setup_inproc, fx_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
