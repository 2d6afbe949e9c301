/* agent_events — the kernel's reports (exec, exit, mappings, MPI Events)
 * and drained samples, each handed to the Target of its process. */
#include <errno.h>
#include <search.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sideband.h"
#include "userspace/launch/rank_identity.h"

static int agent_keep_exit(struct agent_target *t, const struct task_event *e)
{
	if (t->n_exits == t->cap_exits) {
		size_t cap = t->cap_exits ? t->cap_exits * 2 : 64;
		struct task_event *exits = realloc(t->exits, cap * sizeof(*exits));

		if (!exits)
			return -ENOMEM;
		t->exits = exits;
		t->cap_exits = cap;
	}
	t->exits[t->n_exits++] = *e;
	return 0;
}

/* A process out of its Target: exited, or left at a setuid exec (no
 * exit report will come): its counters and mappings go. */
static void agent_forget_process(struct agent *a, pid_t tgid)
{
	uint64_t c, i;
	const char *why;

	if (a->hw)
		hardware_counters_finish(a->hw, tgid, &c, &i, &why);
	if (a->mpi) {
		mpi_probes_process_exit(a->mpi, tgid);
		mpi_probes_forget(a->mpi, tgid);
	}
	module_table_exit(a->modules, tgid);
	agent_process_info_delete(a, tgid);
}

/* Process tgid has a new image (its exec) or joined Target t with an
 * image the Agent did not see start (a Run token or a job adopted it at
 * its exec or fork, or agent_job_attach found it running). */
static void agent_on_image(struct agent *a, struct process_info *pi, struct agent_target *t,
			   pid_t tgid)
{
	/* the first the Agent hears of an adopted process */
	if (t && !module_table_has_process(a->modules, tgid))
		module_table_load_proc(a->modules, tgid, 0);
	/* the environment names the rank; none is no rank, never 0 */
	if (pi && rank_identity_read(tgid, &pi->identity))
		pi->identity.has_rank = 0;
	if (a->hw && t)
		hardware_counters_start(a->hw, tgid);
	/* after its mappings: an MPI library it maps is known by now */
	if (a->mpi && t)
		mpi_probes_process_exec(a->mpi, tgid);
}

void agent_adopt_running(struct agent *a, struct agent_target *t, pid_t tgid)
{
	struct process_info *pi = agent_process_info(a, tgid, 1);

	if (pi)
		pi->target_id = t->id;
	agent_on_image(a, pi, t, tgid);
}

/* the execs of Target processes one agent_process_events() read */
struct events_round {
	struct agent *a;
	struct {
		pid_t tgid;
		uint32_t exec_seq;
	} *execs;
	size_t n_execs, cap_execs;
};

static void round_note_exec(struct events_round *r, pid_t tgid, uint32_t exec_seq)
{
	if (r->n_execs == r->cap_execs) {
		size_t cap = r->cap_execs ? r->cap_execs * 2 : 16;
		void *grown = realloc(r->execs, cap * sizeof(*r->execs));

		if (!grown)
			return; /* its samples may go to "[unmapped]" */
		r->execs = grown;
		r->cap_execs = cap;
	}
	r->execs[r->n_execs].tgid = tgid;
	r->execs[r->n_execs++].exec_seq = exec_seq;
}

/* The kernel's record of an exec reaches the sideband before its report
 * (it is written first): once both are read, a process whose mapping
 * table is behind its kernel image count had its records come before the
 * Agent knew it (adopted, then exec'd at once): its mappings are read
 * again from /proc as that image. */
static void round_catch_up(struct events_round *r)
{
	size_t i;

	for (i = 0; i < r->n_execs; i++)
		module_table_catch_up(r->a->modules, r->execs[i].tgid, r->execs[i].exec_seq);
	free(r->execs);
}

static int agent_on_task_event(const struct task_event *e, void *ctx)
{
	struct events_round *round = ctx;
	struct agent *a = round->a;
	struct process_info *pi = agent_process_info(a, e->tgid, 1);
	struct agent_target *t;

	if (pi && e->target_id)
		pi->target_id = e->target_id;
	t = e->target_id ? agent_target_by_id(a, e->target_id) : agent_target_of_tgid(a, e->tgid);
	switch (e->kind) {
	case TASK_EVENT_EXEC:
		agent_on_image(a, pi, t, e->tgid);
		if (t)
			round_note_exec(round, e->tgid, e->exec_seq);
		return 0;
	case TASK_EVENT_LEFT:
		agent_forget_process(a, e->tgid); /* pi is gone */
		return 0;
	case TASK_EVENT_EXIT:
		break;
	default:
		return 0;
	}
	if (!t) { /* of a Target that ended */
		agent_forget_process(a, e->tgid);
		return 0;
	}
	if (pi)
		pi->exit_ns = e->time_ns;
	if (a->mpi) /* its totals stay until its exit is published */
		mpi_probes_process_exit(a->mpi, e->tgid);
	return agent_keep_exit(t, e);
}

static int agent_keep_mpi_event(const struct mpi_event *e, void *ctx)
{
	struct agent *a = ctx;
	struct agent_target *t = agent_target_of_tgid(a, e->tgid);

	if (!t || !t->mpi_events)
		return 0;
	if (t->n_mpi_events == t->cap_mpi_events) {
		size_t cap = t->cap_mpi_events ? t->cap_mpi_events * 2 : 1024;
		struct mpi_event *ev = realloc(t->mpi_events_buf, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		t->mpi_events_buf = ev;
		t->cap_mpi_events = cap;
	}
	t->mpi_events_buf[t->n_mpi_events++] = *e;
	return 0;
}

int agent_process_events(struct agent *a)
{
	struct events_round round = {.a = a};
	struct agent_target *t;
	size_t *first, i, n = 0;
	int err;

	if (!a->sampler)
		return 0;
	for (t = a->targets; t; t = t->next)
		n++;
	first = calloc(n + 1, sizeof(*first));
	if (!first)
		return -ENOMEM;
	for (i = 0, t = a->targets; t; t = t->next)
		first[i++] = t->n_exits;
	err = sideband_poll(a->sideband);
	if (!err && a->mpi)
		err = mpi_probes_poll_events(a->mpi, agent_keep_mpi_event, a);
	if (!err)
		err = sampler_poll_task_events(a->sampler, agent_on_task_event, &round);
	/* a child's FORK record is written before its exit is reported: read
	 * the records again, so that no exit is applied before its fork */
	if (!err)
		err = sideband_poll(a->sideband);
	round_catch_up(&round);
	for (i = 0, t = a->targets; t; t = t->next, i++) {
		size_t j;

		for (j = first[i]; j < t->n_exits; j++)
			module_table_exit(a->modules, t->exits[j].tgid);
	}
	free(first);
	agent_unwinder_sync(a);
	return err;
}

static int agent_keep_sample(const struct sample_key *key, const struct sample_value *value,
			     const struct stack_value *stack, void *ctx)
{
	struct agent *a = ctx;
	struct agent_target *t = agent_target_by_id(a, key->target_id);
	struct drained_sample *ds;

	if (!t)
		return 0; /* of a Target that ended: nobody's anymore */
	if (t->n_drained == t->cap_drained) {
		size_t cap = t->cap_drained ? t->cap_drained * 2 : 256;
		struct drained_sample *d = realloc(t->drained, cap * sizeof(*d));

		if (!d) {
			t->drained_lost += value->samples;
			return 0;
		}
		t->drained = d;
		t->cap_drained = cap;
	}
	ds = &t->drained[t->n_drained++];
	ds->key = *key;
	ds->value = *value;
	ds->stack_lost = !stack;
	if (stack) {
		ds->stack = *stack;
	} else { /* the leaf alone */
		memset(&ds->stack, 0, offsetof(struct stack_value, ips));
		ds->stack.n_user = 1;
		ds->stack.ips[0] = key->leaf_ip;
	}
	return 0;
}

/* drain first, then apply the mapping records: every mapping a drained
 * sample refers to was recorded before the drain */
int agent_drain_all(struct agent *a)
{
	int err;

	if (!a->sampler)
		return 0;
	err = sampler_drain(a->sampler, agent_keep_sample, a);
	return err ?: agent_process_events(a);
}

int agent_target_follow(struct agent *a, const char *run_id, pid_t pid)
{
	struct agent_target *t = agent_target_find(a, run_id);
	int err;

	if (!t)
		return -ENOENT;
	if (!a->sampler)
		return 0;
	/* until it execs, the child runs our own image */
	err = module_table_load_proc(a->modules, pid, 0);
	if (err)
		return err;
	err = agent_sampler_add_target(a, pid, t);
	agent_unwinder_sync(a);
	/* probed before it execs: its MPI_Init is seen */
	if (!err && a->mpi)
		mpi_probes_process_exec(a->mpi, pid);
	return err;
}

struct live_ctx {
	struct agent *a;
	struct agent_target *t;
	int (*cb)(pid_t pid, const char *comm, void *ctx);
	void *ctx;
};

/* A process whose exit report was lost (ring buffer full: counted as
 * task_reports_dropped) is gone all the same: the kernel says so. */
static int agent_visit_live(pid_t pid, const char *comm, void *ctx)
{
	struct live_ctx *lc = ctx;

	if (agent_target_of_tgid(lc->a, pid) != lc->t)
		return 0;
	if (kill(pid, 0) && errno == ESRCH)
		return 0;
	return lc->cb(pid, comm, lc->ctx);
}

int agent_target_for_each_live_process(struct agent *a, const char *run_id,
				       int (*cb)(pid_t pid, const char *comm, void *ctx),
				       void *ctx)
{
	struct live_ctx lc = {a, agent_target_find(a, run_id), cb, ctx};

	if (!lc.t)
		return -ENOENT;
	return a->modules ? module_table_for_each_live(a->modules, agent_visit_live, &lc) : 0;
}

static int agent_count_live(pid_t pid, const char *comm, void *ctx)
{
	(void)pid;
	(void)comm;
	(*(int *)ctx)++;
	return 0;
}

int agent_target_live_processes(struct agent *a, const char *run_id)
{
	int n = 0, err = agent_target_for_each_live_process(a, run_id, agent_count_live, &n);

	return err < 0 ? err : n;
}
