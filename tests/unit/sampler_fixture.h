/* sampler_fixture — what the tests of a real sampler (real BPF) share: a
 * sampler made for a test, the task reports about one process collected
 * for a while, and the samples of one process tallied by the Target they
 * carry. Expected figures come from the test's own processes, never from
 * the sampler. Header-only, static inline (each test is one translation
 * unit); include after cmocka.h and test_helpers.h.
 */
#ifndef NUNATAK_TESTS_SAMPLER_FIXTURE_H
#define NUNATAK_TESTS_SAMPLER_FIXTURE_H

#include <stdint.h>
#include <unistd.h>

#include "tests/unit/process_fixture.h"
#include "userspace/agent/sampler.h"

/* how many task reports sampler_reports_of looks at, at most */
#define SAMPLER_FIXTURE_REPORTS 64
/* how long it collects them */
#define SAMPLER_FIXTURE_REPORTS_NS 300000000ull

/* a new sampler at frequency (idle, as every new one is), or NULL with
 * the reason said (print_error) */
static inline struct sampler *sampler_fixture_new(unsigned frequency)
{
	struct sampler_opts opts = {.frequency = frequency};
	char err[256] = "";
	struct sampler *s = sampler__new(&opts, err, sizeof(err));

	if (!s)
		print_error("sampler__new failed: %s\n", err);
	return s;
}

struct sampler_fixture_reports {
	struct task_event e[SAMPLER_FIXTURE_REPORTS];
	int n;
};

static inline int sampler_fixture_keep_report(const struct task_event *e, void *ctx)
{
	struct sampler_fixture_reports *r = ctx;

	if (r->n < SAMPLER_FIXTURE_REPORTS)
		r->e[r->n++] = *e;
	return 0;
}

/* the reports about pid within 300 ms, in order: how many (<= max) in out */
static inline int sampler_reports_of(struct sampler *s, pid_t pid, struct task_event *out,
				     int max)
{
	struct sampler_fixture_reports r = {0};
	uint64_t end = proc_now_ns() + SAMPLER_FIXTURE_REPORTS_NS;
	int n = 0;

	do {
		assert_int_equal(sampler_poll_task_events(s, sampler_fixture_keep_report, &r), 0);
		usleep(5000);
	} while (proc_now_ns() < end);
	for (int i = 0; i < r.n; i++)
		if ((pid_t)r.e[i].tgid == pid && n < max)
			out[n++] = r.e[i];
	return n;
}

struct sampler_tally {
	pid_t tgid;
	uint64_t samples;      /* of tgid */
	uint64_t exec_samples; /* of tgid after its first exec (exec_seq > 0): a
				* sample of a child before it, in the Target
				* already, is legitimate */
	uint32_t target_id;    /* expected of them */
	int wrong_target;      /* samples of tgid under another target_id */
};

static inline int sampler_tally_sample(const struct sample_key *key,
				       const struct sample_value *value,
				       const struct stack_value *stack, void *ctx)
{
	struct sampler_tally *t = ctx;

	(void)stack;
	if ((pid_t)key->tgid != t->tgid)
		return 0;
	t->samples += value->samples;
	if (key->exec_seq > 0)
		t->exec_samples += value->samples;
	if (key->target_id != t->target_id)
		t->wrong_target++;
	return 0;
}

/* the samples of pid, drained twice (both maps of the flip) */
static inline struct sampler_tally sampler_samples_of(struct sampler *s, pid_t pid,
						      uint32_t target_id)
{
	struct sampler_tally t = {.tgid = pid, .target_id = target_id};

	assert_int_equal(sampler_drain(s, sampler_tally_sample, &t), 0);
	assert_int_equal(sampler_drain(s, sampler_tally_sample, &t), 0);
	return t;
}

#endif
