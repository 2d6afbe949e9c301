/* test_agent_job — an Agent's job Target (agent_job_attach) on real BPF
 * and a fake Slurm cgroup the test makes (v1 freezer
 * /nktest_aj_<pid>/uid_U/job_J/step_0), its Batches read by a ROUTER
 * playing the Aggregator:
 *   - a process of the owner running in the job's cgroup before the
 *     Target exists is adopted at once (a live process of the Target right
 *     after agent_target_start), its samples attributed to its own
 *     executable (its mappings read from /proc), its rank from its
 *     environment (PMIX_RANK);
 *   - one started in the cgroup later (its exec) and the child it forks
 *     join as well;
 *   - root's process and another user's in the cgroup, and the owner's
 *     outside it, never appear;
 *   - a job of 300 running processes is adopted within 500 ms (2 s
 *     under ASan).
 *
 * The same observation drives tests/integration/job_cgroup.sh with the
 * project's workloads: `test_agent_job observe JOB UID MS READY_FILE`
 * starts an Agent with a job Target of JOB owned by UID, writes
 * READY_FILE once the Target exists (the running processes adopted),
 * collects for MS milliseconds and prints one line per process seen:
 *   attached N
 *   proc TGID samples S unmapped U rank R mpi_calls C exe PATH
 * (exit 77 when BPF is unavailable, with the reason).
 *
 * Without root, kernel BTF or a v1 freezer hierarchy the tests are
 * SKIPPED with the reason.
 */
#include <errno.h>
#include <grp.h>
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
#include "tests/unit/cgroup_fixture.h"

#define RUN "00000000000000000000000000000a0b"
#define JOB 4343u
#define SPIN_MS "1500"

struct proc_seen {
	pid_t tgid;
	uint64_t samples, unmapped;
	uint64_t mpi_calls; /* of its MPI call sites */
	int rank;
	char exe[160];
};

struct job_seen {
	struct proc_seen p[256];
	int n;
	int attached; /* live processes of the Target right after its start */
};

static struct proc_seen *proc_of(struct job_seen *js, pid_t tgid)
{
	for (int i = 0; i < js->n; i++)
		if (js->p[i].tgid == tgid)
			return &js->p[i];
	if (js->n == (int)(sizeof(js->p) / sizeof(js->p[0])))
		return NULL;
	js->p[js->n] = (struct proc_seen){.tgid = tgid, .rank = -1};
	return &js->p[js->n++];
}

static void account_batch(struct job_seen *js, const Nunatak__Wire__Batch *b)
{
	for (size_t i = 0; i < b->n_samples; i++) {
		const Nunatak__Wire__SampleCount *sc = b->samples[i];
		const Nunatak__Wire__Locus *l = b->loci[sc->locus];
		const Nunatak__Wire__Stack *st = b->stacks[sc->stack];
		struct proc_seen *p = proc_of(js, (pid_t)l->tgid);

		if (!p)
			continue;
		p->samples += sc->sample_count;
		if (!st->n_frames ||
		    !strncmp(b->modules[st->frames[0]->module]->identity, "pseudo:", 7))
			p->unmapped += sc->sample_count;
		if (l->has_rank)
			p->rank = l->rank;
		if (l->exe)
			snprintf(p->exe, sizeof(p->exe), "%s", l->exe);
	}
	for (size_t i = 0; i < b->n_mpi_call_sites; i++) {
		const Nunatak__Wire__MpiCallSite *cs = b->mpi_call_sites[i];
		struct proc_seen *p = proc_of(js, (pid_t)b->loci[cs->locus]->tgid);

		if (p)
			p->mpi_calls += cs->calls;
	}
}

/* A job Target of job owned by uid in fx's Agent: what its Batches hold
 * over ms; ready (may be NULL) is called once it exists */
static void job_observe(struct fixture *fx, uint32_t job, uid_t uid, int ms,
			void (*ready)(void *ctx), void *ctx, struct job_seen *js)
{
	struct agent_target_opts o = {.run_id = RUN, .uid = uid, .gid = uid, .job_id = job};
	struct received r;
	long long end;

	memset(js, 0, sizeof(*js));
	assert_int_equal(agent_target_start(fx->agent, &o, NULL, NULL), 0);
	js->attached = agent_target_live_processes(fx->agent, RUN);
	if (ready)
		ready(ctx);
	end = fx_now_ms() + ms;
	while (fx_now_ms() < end) {
		if (!fx_recv_batch(fx, fx->agent, &r, 200))
			continue;
		if (!strcmp(r.env->batch->run_id, RUN))
			account_batch(js, r.env->batch);
		fx_ack(fx, &r, NULL);
		fx_release(&r);
	}
}

static struct proc_seen *seen(struct job_seen *js, pid_t tgid)
{
	for (int i = 0; i < js->n; i++)
		if (js->p[i].tgid == tgid && js->p[i].samples)
			return &js->p[i];
	return NULL;
}

static uid_t user, other_user;
static char base[128], step_dir[256];

static int group_setup(void **state)
{
	char rel[128];

	(void)state;
	if (bpf_unavailable() || access(CG_FREEZER "/cgroup.procs", W_OK))
		return 0;
	user = 63000 + (uid_t)(getpid() % 1000);
	other_user = user + 1000;
	snprintf(base, sizeof(base), CG_FREEZER "/nktest_aj_%d", (int)getpid());
	snprintf(rel, sizeof(rel), "nktest_aj_%d/uid_%u/job_%u/step_0", (int)getpid(), user, JOB);
	return cg_mkdirs(CG_FREEZER, rel, step_dir, sizeof(step_dir));
}

static int group_teardown(void **state)
{
	(void)state;
	cg_rmdirs(step_dir, base);
	return 0;
}

/* this binary as uid (unless 0) in cgroup dir (NULL: the test's), env
 * its whole environment: "spin MS" or "fork MS" (forks a spinner too) */
static pid_t start_as(uid_t uid, const char *dir, const char *mode, const char *env)
{
	return cg_exec_child(uid, dir, "/proc/self/exe",
			     (char *[]){"test_agent_job", (char *)mode, SPIN_MS, NULL},
			     (char *[]){(char *)env, NULL});
}

struct later {
	pid_t pid;
};

static void start_later(void *ctx)
{
	struct later *l = ctx;

	l->pid = start_as(user, step_dir, "fork", "PMIX_RANK=2");
}

static void test_job_running_and_later(void **state)
{
	struct fixture *fx = *state;
	struct later later = {0};
	struct job_seen js;
	struct proc_seen *p;
	pid_t before, root, other, outside;
	int children = 0;

	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	SKIP_UNLESS(step_dir[0], "no v1 freezer hierarchy at " CG_FREEZER);
	fx_agent(fx, 0);
	SKIP_UNLESS(agent_sampling(fx->agent), "BPF sampling unavailable here");
	before = start_as(user, step_dir, "spin", "PMIX_RANK=1");
	root = start_as(0, step_dir, "spin", "PMIX_RANK=5");
	other = start_as(other_user, step_dir, "spin", "PMIX_RANK=6");
	outside = start_as(user, NULL, "spin", "PMIX_RANK=7");
	usleep(20000); /* their environments read as the new images' */
	job_observe(fx, JOB, user, 2500, start_later, &later, &js);
	for (int i = 0; i < js.n; i++)
		print_message("seen %d: %llu samples (%llu unmapped), rank %d, %s\n",
			      (int)js.p[i].tgid, (unsigned long long)js.p[i].samples,
			      (unsigned long long)js.p[i].unmapped, js.p[i].rank, js.p[i].exe);
	assert_int_equal(js.attached, 1);
	p = seen(&js, before);
	assert_non_null(p);
	assert_true(p->samples >= 20);
	assert_true(p->unmapped * 10 < p->samples); /* its mappings were read */
	assert_int_equal(p->rank, 1);
	assert_non_null(strstr(p->exe, "test_agent_job"));
	p = seen(&js, later.pid);
	assert_non_null(p);
	assert_int_equal(p->rank, 2);
	for (int i = 0; i < js.n; i++)
		if (js.p[i].tgid != before && js.p[i].tgid != later.pid && js.p[i].samples)
			children++; /* the fork of the later one */
	assert_int_equal(children, 1);
	assert_null(seen(&js, root));
	assert_null(seen(&js, other));
	assert_null(seen(&js, outside));
	proc_kill(before);
	proc_kill(root);
	proc_kill(other);
	proc_kill(outside);
	proc_kill(later.pid);
}

#define MANY 300
#if defined(__SANITIZE_ADDRESS__)
#define MANY_MS 2000 /* ASan's cost, not the Agent's */
#else
#define MANY_MS 500
#endif

/* a job of MANY running processes: all adopted by agent_target_start,
 * well within a second (design: "well under 1 s for a few hundred") */
static void test_attach_many(void **state)
{
	struct fixture *fx = *state;
	struct agent_target_opts o = {.run_id = RUN, .uid = user, .gid = user, .job_id = JOB};
	pid_t pids[MANY];
	long long t0, took;
	int i, n;

	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	SKIP_UNLESS(step_dir[0], "no v1 freezer hierarchy at " CG_FREEZER);
	fx_agent(fx, 0);
	SKIP_UNLESS(agent_sampling(fx->agent), "BPF sampling unavailable here");
	/* they sleep long enough to outlive starting the others (300 ASan
	 * processes take more than SPIN_MS to start on a busy machine); killed
	 * below */
	for (i = 0; i < MANY; i++)
		pids[i] = cg_exec_child(user, step_dir, "/proc/self/exe",
					(char *[]){ "test_agent_job", "sleep", "30000", NULL },
					(char *[]){ "PMIX_RANK=0", NULL });
	t0 = fx_now_ms();
	assert_int_equal(agent_target_start(fx->agent, &o, NULL, NULL), 0);
	took = fx_now_ms() - t0;
	n = agent_target_live_processes(fx->agent, RUN);
	print_message("%d running processes of the job adopted in %lld ms\n", n, took);
	for (i = 0; i < MANY; i++)
		proc_kill(pids[i]);
	assert_int_equal(n, MANY);
	assert_true(took < MANY_MS);
}

/* the exec'd workload: spin MS, fork MS, sleep MS */
static int workload(char **argv)
{
	pid_t pid;

	if (!strcmp(argv[1], "sleep")) {
		usleep((useconds_t)atoi(argv[2]) * 10000u); /* 15 s: killed first */
		return 0;
	}
	if (!strcmp(argv[1], "fork")) {
		pid = fork();
		if (pid < 0)
			return 125;
		proc_spin(atoi(argv[2]));
		if (pid > 0)
			waitpid(pid, NULL, 0);
		return 0;
	}
	proc_spin(atoi(argv[2]));
	return 0;
}

static void touch(void *ctx)
{
	FILE *f = fopen(ctx, "w");

	if (f)
		fclose(f);
}

/* for tests/integration/job_cgroup.sh (see the top) */
static int observe_main(char **argv)
{
	struct fixture *fx;
	struct job_seen *js;
	const char *why = bpf_unavailable();

	if (why) {
		printf("SKIPPED: %s\n", why);
		return 77;
	}
	js = calloc(1, sizeof(*js));
	fx = fx_new(0);
	fx_bind(fx);
	fx_agent(fx, 0);
	if (!agent_sampling(fx->agent)) {
		printf("SKIPPED: BPF sampling unavailable here\n");
		return 77;
	}
	job_observe(fx, (uint32_t)strtoul(argv[2], NULL, 10), (uid_t)strtoul(argv[3], NULL, 10),
		    atoi(argv[4]), touch, argv[5], js);
	printf("attached %d\n", js->attached);
	for (int i = 0; i < js->n; i++)
		printf("proc %d samples %llu unmapped %llu rank %d mpi_calls %llu exe %s\n",
		       (int)js->p[i].tgid, (unsigned long long)js->p[i].samples,
		       (unsigned long long)js->p[i].unmapped, js->p[i].rank,
		       (unsigned long long)js->p[i].mpi_calls, js->p[i].exe[0] ? js->p[i].exe : "-");
	fx_free(fx);
	free(js);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_job_running_and_later, fx_setup_inproc,
					    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_attach_many, fx_setup_inproc, fx_teardown),
	};

	if (argc == 3 && (!strcmp(argv[1], "spin") || !strcmp(argv[1], "fork") ||
			  !strcmp(argv[1], "sleep")))
		return workload(argv);
	if (argc == 6 && !strcmp(argv[1], "observe"))
		return observe_main(argv);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
