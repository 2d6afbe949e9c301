/* agent_publish — one Target's Batch from what was drained for it (see
 * agent.h); its sending is agent_send.c's. */
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/kernel_symbols.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/mpi_report.h"
#include "userspace/agent/pmu_events.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sideband.h"
#include "userspace/agent/spool.h"
#include "userspace/log/log.h"
#include "userspace/wire/wire.h"

void agent_locus(struct agent *a, pid_t tgid, pid_t tid, struct batch_locus *l)
{
	struct process_info *pi = agent_process_info(a, tgid, 0);

	l->tgid = tgid;
	l->tid = tid;
	l->comm = module_table_comm(a->modules, tgid);
	l->exe = module_table_exe(a->modules, tgid);
	l->has_rank = pi && pi->identity.has_rank;
	l->rank = l->has_rank ? pi->identity.rank : 0;
	l->world_size = l->has_rank ? pi->identity.world_size : -1;
}

static void agent_process_locus(void *ctx, pid_t tgid, struct batch_locus *l)
{
	agent_locus(ctx, tgid, tgid, l);
}

static uint64_t agent_exit_ns(void *ctx, pid_t tgid)
{
	struct process_info *pi = agent_process_info(ctx, tgid, 0);

	return pi ? pi->exit_ns : 0;
}

static int agent_mpi_wanted(void *ctx, pid_t tgid)
{
	struct agent_target *t = ctx;

	return agent_target_of_tgid(t->a, tgid) == t;
}

/* what ctx of the locus and exit callbacks is: the Agent */
static void agent_target_locus(void *ctx, pid_t tgid, struct batch_locus *l)
{
	agent_process_locus(((struct agent_target *)ctx)->a, tgid, l);
}

static uint64_t agent_target_exit_ns(void *ctx, pid_t tgid)
{
	return agent_exit_ns(((struct agent_target *)ctx)->a, tgid);
}

/* t's MPI call sites and lifetimes (of its processes only), its Events */
static int agent_add_mpi(struct agent_target *t, struct batch_builder *b)
{
	struct agent *a = t->a;
	size_t i;
	int err;

	if (!a->mpi)
		return 0;
	err = mpi_report_sites_of(a->mpi, a->modules, b, agent_target_locus, agent_target_exit_ns,
				  agent_mpi_wanted, t);
	for (i = 0; i < t->n_mpi_events && !err; i++)
		err = mpi_report_event(a->mpi, a->modules, b, &t->mpi_events_buf[i],
				       agent_process_locus, a);
	return err;
}

/* a kernel frame: "[kernel]" and its offset from the text base, its
 * function named in the Batch (the Aggregator has no file to read) */
static int agent_kernel_frame(struct agent *a, struct batch_builder *b, uint64_t ip,
			      struct module **mod, uint64_t *offset)
{
	struct kernel_symbols *ks = agent_kernel_symbols(a);
	struct kernel_symbol sym;

	*mod = module_table_kernel(a->modules);
	*offset = 0;
	if (!ks || kernel_symbols_resolve(ks, ip, offset, &sym))
		return 0;
	return batch_builder_add_module_symbol(b, *mod, sym.start, sym.size, sym.name);
}

/* ds's frames as (module, offset), innermost first: its kernel frames,
 * then its user frames; a user frame that is a return address (all but
 * the leaf and signal frames: UNWIND_IP_NOT_RETURN) is looked up in its
 * call (- 1) */
static int agent_frames(struct agent_target *t, struct batch_builder *b,
			const struct drained_sample *ds, struct module **mods, uint64_t *offsets)
{
	const struct stack_value *st = &ds->stack;
	int f, n = st->n_kernel + st->n_user, err;

	for (f = 0; f < st->n_kernel; f++) {
		/* above the interrupted one, kernel frames are return addresses too */
		err = agent_kernel_frame(t->a, b, f ? st->ips[f] - 1 : st->ips[f], &mods[f],
					 &offsets[f]);
		if (err)
			return err;
	}
	for (; f < n; f++) {
		uint64_t ip = st->ips[f] & ~UNWIND_IP_NOT_RETURN;

		if (f > st->n_kernel && !(st->ips[f] & UNWIND_IP_NOT_RETURN))
			ip--;

		module_table_resolve(t->a->modules, ds->key.tgid, ds->key.exec_seq, ip, &mods[f],
				     &offsets[f]);
	}
	return n;
}

/* The growth of the sampling group's counters in ds's slices, beside its
 * cpu-clock count: sample_count 0, so that every total of samples counts
 * each sample once (the samples behind them are the cpu-clock row's). */
static int agent_add_group(const struct pmu_event_set *set, struct batch_builder *b,
			   const struct batch_locus *locus, struct module *const *mods,
			   const uint64_t *offsets, int n, int truncated,
			   const struct drained_sample *ds)
{
	int c, err;

	for (c = 0; c < PMU_COUNTERS; c++) {
		if (!pmu_event_set_has(set, c))
			continue;
		err = batch_builder_add_sample(b, locus, mods, offsets, n, truncated,
					       !!(ds->key.flags & SAMPLE_FLAG_KERNEL),
					       pmu_counter_name(c), 0, ds->value.pmu[c]);
		if (err)
			return err;
	}
	return 0;
}

static int agent_add_drained(struct agent_target *t, struct batch_builder *b)
{
	const struct pmu_event_set *set = sampler_pmu(t->a->sampler);
	struct module *mods[MAX_FRAMES];
	uint64_t offsets[MAX_FRAMES];
	struct batch_locus locus;
	size_t i;
	int n, err, truncated;

	for (i = 0; i < t->n_drained; i++) {
		const struct drained_sample *ds = &t->drained[i];

		n = agent_frames(t, b, ds, mods, offsets);
		if (n < 0)
			return n;
		agent_locus(t->a, ds->key.tgid, ds->key.tid, &locus);
		truncated = ds->stack_lost || ds->stack.user_end != UNWIND_END_COMPLETE ||
			    ds->stack.kernel_truncated;
		err = batch_builder_add_sample(b, &locus, mods, offsets, n, truncated,
					       !!(ds->key.flags & SAMPLE_FLAG_KERNEL), "cpu-clock",
					       ds->value.samples, ds->value.period_sum);
		if (!err && set)
			err = agent_add_group(set, b, &locus, mods, offsets, n, truncated, ds);
		if (err)
			return err;
	}
	return 0;
}

static int agent_add_killed(struct batch_builder *b, const struct batch_locus *locus,
			    const struct task_event *e)
{
	char name[64], message[256];

	if (!locus->has_rank || !WIFSIGNALED(e->exit_code))
		return 0;
	snprintf(name, sizeof(name), "rank-%d-killed", locus->rank);
	snprintf(message, sizeof(message),
		 "rank %d (pid %d) was killed by signal %d (%s): its data stops there",
		 locus->rank, e->tgid, WTERMSIG(e->exit_code), strsignal(WTERMSIG(e->exit_code)));
	return batch_builder_add_degradation(b, name, message,
					     "find why the rank died; the other ranks' data is "
					     "complete");
}

static int agent_add_exits(struct agent_target *t, struct batch_builder *b)
{
	struct agent *a = t->a;
	struct batch_locus locus;
	size_t i;
	int err;

	for (i = 0; i < t->n_exits; i++) {
		const struct task_event *e = &t->exits[i];
		const char *hw_reason = NULL;
		Nunatak__Wire__ProcessExit pe = NUNATAK__WIRE__PROCESS_EXIT__INIT;

		pe.exit_status = e->exit_code;
		pe.utime_ns = e->utime_ns;
		pe.stime_ns = e->stime_ns;
		pe.nvcsw = e->nvcsw;
		pe.nivcsw = e->nivcsw;
		pe.min_flt = e->min_flt;
		pe.maj_flt = e->maj_flt;
		pe.maxrss_bytes = e->maxrss_pages * (uint64_t)sysconf(_SC_PAGESIZE);
		pe.wall_ns = e->time_ns > e->start_time_ns ? e->time_ns - e->start_time_ns : 0;
		pe.has_run_delay_ns = e->has_run_delay;
		pe.run_delay_ns = e->run_delay_ns;
		if (a->hw && !hardware_counters_finish(a->hw, e->tgid, &pe.cycles, &pe.instructions,
						       &hw_reason))
			pe.has_cycles = pe.has_instructions = 1;
		else
			pe.hardware_counters_reason =
			    (char *)(a->hw ? hw_reason : "hardware counters not set up");
		agent_locus(a, e->tgid, e->tgid, &locus);
		if (!locus.comm)
			locus.comm = e->comm;
		err = batch_builder_add_exit(b, &locus, &pe);
		err = err ?: agent_add_killed(b, &locus, e);
		if (err)
			return err;
		module_table_exit(a->modules, e->tgid);
	}
	return 0;
}

static uint64_t since(uint64_t now, uint64_t base)
{
	return now > base ? now - base : 0;
}

/* the names of enum unwind_end's counters (bpf/unwind.h) */
static const char *const unwind_end_counters[UNWIND_END_COUNT] = {
	[UNWIND_END_COMPLETE] = "stacks_complete",
	[UNWIND_END_NO_PROCESS] = "stacks_ended_no_process",
	[UNWIND_END_NO_MAPPING] = "stacks_ended_no_mapping",
	[UNWIND_END_NO_TABLE] = "stacks_ended_no_table",
	[UNWIND_END_NO_CFI] = "stacks_ended_no_cfi",
	[UNWIND_END_READ_FAILED] = "stacks_ended_unreadable",
	[UNWIND_END_DEPTH] = "stacks_ended_depth",
	[UNWIND_END_BAD_FRAME] = "stacks_ended_bad_frame",
	[UNWIND_END_KERNEL_THREAD] = "stacks_ended_kernel_thread",
};

/* how the Stacks of the samples ended, and the Stacks lost, by cause */
static int agent_add_stack_counters(const struct sampler_counters *c,
				    const struct sampler_counters *o, struct batch_builder *b)
{
	int i, err = 0;

	err = err ?: batch_builder_add_counter(b, "stacks_dropped",
					       since(c->drop_stacks, o->drop_stacks));
	err = err ?: batch_builder_add_counter(b, "stacks_dropped_collisions",
					       since(c->drop_collisions, o->drop_collisions));
	err = err ?: batch_builder_add_counter(b, "stack_digest_collisions",
					       since(c->stack_collisions, o->stack_collisions));
	err = err ?: batch_builder_add_counter(b, "kernel_stacks_truncated",
					       since(c->kernel_truncated, o->kernel_truncated));
	for (i = 0; i < UNWIND_END_COUNT; i++)
		err = err ?: batch_builder_add_counter(b, unwind_end_counters[i],
						       since(c->unwind_end[i], o->unwind_end[i]));
	return err;
}

/* what the unwinder could not give the kernel, since t started */
static int agent_add_unwinder_counters(struct agent *a, const struct unwinder_stats *o,
				       struct batch_builder *b)
{
	struct unwinder_stats u;
	int err = 0;

	if (!a->unwinder)
		return 0;
	unwinder_stats(a->unwinder, &u);
	err = err ?: batch_builder_add_counter(b, "unwind_tables_refused",
					       since(u.tables_refused, o->tables_refused));
	err = err ?: batch_builder_add_counter(b, "unwind_tables_failed",
					       since(u.tables_failed, o->tables_failed));
	err = err ?: batch_builder_add_counter(b, "unwind_mappings_dropped",
					       since(u.mappings_dropped, o->mappings_dropped));
	err = err ?: batch_builder_add_counter(b, "unwind_processes_refused",
					       since(u.procs_refused, o->procs_refused));
	return err;
}

/* Node-level kernel counters as the growth since t started (another
 * Target's losses during t's life are reported to t too: a Run is told
 * it may have lost samples rather than not). samples_seen = what t got
 * + what the node lost meanwhile, so seen = stored + dropped + lost. */
static int agent_add_counters(struct agent_target *t, struct batch_builder *b)
{
	struct agent *a = t->a;
	const struct counter_base *o = &t->base;
	struct sampler_counters c;
	uint64_t lost, dropped;
	int err = 0;

	err = err ?: batch_builder_add_counter(b, "samples_sent", t->samples_sent);
	err = err ?: batch_builder_add_counter(b, "batches_sent", t->batches_sent);
	if (!a->sampler)
		return err;
	sampler_read_counters(a->sampler, &c);
	dropped = since(c.drop_keys, o->s.drop_keys);
	lost = since(c.drain_lost, o->s.drain_lost) + t->drained_lost;
	err = err ?: batch_builder_add_counter(b, "samples_seen", t->samples_sent + dropped + lost);
	err = err ?: batch_builder_add_counter(b, "samples_dropped", dropped);
	err = err ?: batch_builder_add_counter(b, "samples_lost_in_drain", lost);
	err = err ?: batch_builder_add_counter(b, "sample_flip_timeouts",
					       since(c.flip_timeouts, o->s.flip_timeouts));
	err = err ?: agent_add_stack_counters(&c, &o->s, b);
	err = err ?: agent_add_unwinder_counters(a, &o->u, b);
	err = err ?: batch_builder_add_counter(b, "processes_not_followed",
					       since(c.drop_targets, o->s.drop_targets));
	err = err ?: batch_builder_add_counter(b, "task_reports_dropped",
					       since(c.drop_events, o->s.drop_events));
	err = err ?: batch_builder_add_counter(b, "process_totals_partial",
					       since(c.drop_totals, o->s.drop_totals));
	err = err ?: batch_builder_add_counter(b, "samples_skipped_credentials",
					       since(c.skipped_credentials, o->s.skipped_credentials));
	err = err ?: batch_builder_add_counter(b, "processes_adopted", since(c.adopted, o->s.adopted));
	err = err ?: batch_builder_add_counter(b, "processes_left", since(c.left, o->s.left));
	err = err ?: batch_builder_add_counter(b, "mapping_records_lost",
					       since(sideband_lost(a->sideband), o->mapping_lost));
	/* slices whose group growth was lost: the kernel refused a reading */
	if (sampler_pmu(a->sampler))
		err = err ?: batch_builder_add_counter(b, "group_readings_refused",
						       since(c.pmu_unread, o->s.pmu_unread));
	if (a->mpi) {
		uint64_t mc[MPI_COUNTERS];

		mpi_probes_read_counters(a->mpi, mc);
		err = err ?: batch_builder_add_counter(b, "mpi_calls_seen",
						       since(mc[MPI_CALLS_SEEN], o->mpi[MPI_CALLS_SEEN]));
		err = err ?: batch_builder_add_counter(b, "mpi_sites_dropped",
						       since(mc[MPI_DROP_SITES], o->mpi[MPI_DROP_SITES]));
		err = err ?: batch_builder_add_counter(
				  b, "mpi_calls_untimed",
				  since(mc[MPI_DROP_THREADS], o->mpi[MPI_DROP_THREADS]));
		/* only the Runs that asked for Events have any to lose */
		if (t->mpi_events)
			err = err ?: batch_builder_add_counter(
					  b, "mpi_events_dropped",
					  since(mc[MPI_DROP_EVENTS], o->mpi[MPI_DROP_EVENTS]));
	}
	return err;
}

/* What the Batch just built holds is the Batch's now: forget it (exited
 * processes, their MPI totals, sent Events). */
void agent_target_forget_published(struct agent_target *t)
{
	size_t i;

	for (i = 0; i < t->n_exits; i++) { /* its last totals are published */
		if (t->a->mpi)
			mpi_probes_forget(t->a->mpi, t->exits[i].tgid);
		if (t->a->components)
			component_probes_forget(t->a->components, t->exits[i].tgid);
		agent_process_info_delete(t->a, t->exits[i].tgid);
	}
	t->n_exits = 0;
	t->n_mpi_events = 0;
	t->n_drained = 0;
	if (t->a->modules)
		module_table_reap(t->a->modules);
}

static int agent_add_loss_counters(struct agent_target *t, struct batch_builder *b)
{
	const struct publish_loss *l = publish_queue_loss(t->queue);
	int err = 0;

	if (t->spool_dropped_batches) {
		char message[256];

		snprintf(message, sizeof(message),
			 "the spool of node '%s' was full: %llu samples in %llu Batches were "
			 "dropped",
			 t->a->node, (unsigned long long)t->spool_dropped_samples,
			 (unsigned long long)t->spool_dropped_batches);
		err = batch_builder_add_degradation(
		    b, "spool-full", message,
		    "make the Aggregator reachable sooner, or raise [service].spool_max_bytes");
		err = err ?: batch_builder_add_counter(b, "spool_dropped_samples",
						       t->spool_dropped_samples);
		err = err ?: batch_builder_add_counter(b, "spool_dropped_batches",
						       t->spool_dropped_batches);
	}
	if (err || (!l->failed_batches && !l->refused_batches))
		return err;
	err = err ?: batch_builder_add_counter(b, "storage_failed_samples", l->failed_samples);
	err = err ?: batch_builder_add_counter(b, "storage_failed_batches", l->failed_batches);
	err = err ?: batch_builder_add_counter(b, "storage_failed_errno", (uint64_t)l->code);
	err = err ?: batch_builder_add_counter(b, "storage_refused_samples", l->refused_samples);
	err = err ?: batch_builder_add_counter(b, "storage_refused_batches", l->refused_batches);
	return err;
}

static int agent_add_degradations(struct agent_target *t, struct batch_builder *b)
{
	const struct degradation_list *lists[2] = {&t->a->degradations, &t->degradations};
	size_t i, k;
	int err = 0;

	for (k = 0; k < 2; k++)
		for (i = 0; i < lists[k]->n && !err; i++)
			err = batch_builder_add_degradation(b, lists[k]->items[i].name,
							    lists[k]->items[i].message,
							    lists[k]->items[i].remedy);
	return err;
}

/* Samples drained (gone from the kernel's maps) that no Batch will hold:
 * counted with the drain's losses (samples_lost_in_drain). */
static void agent_lose_drained(struct agent_target *t)
{
	size_t i;

	for (i = 0; i < t->n_drained; i++)
		t->drained_lost += t->drained[i].value.samples;
	t->n_drained = 0;
}

static int agent_target_build(struct agent_target *t, struct batch_builder *b, int last)
{
	wire_envelope *env = batch_builder_envelope(b);
	int err = 0;

	env->batch->has_incarnation = 1;
	env->batch->incarnation = t->a->incarnation;
	if (t->a->sampler && !last) {
		err = agent_add_drained(t, b);
		err = err ?: agent_add_mpi(t, b);
		err = err ?: agent_add_exits(t, b);
	}
	if (!err) { /* the counters say this Batch too */
		size_t i;

		env = batch_builder_envelope(b); /* its arrays as they are now */
		for (i = 0; i < env->batch->n_samples; i++)
			t->samples_sent += env->batch->samples[i]->sample_count;
		t->batches_sent++;
	}
	err = err ?: agent_add_counters(t, b);
	err = err ?: agent_add_components(t, b, last);
	err = err ?: agent_add_loss_counters(t, b);
	err = err ?: agent_add_degradations(t, b);
	if (!err && last)
		env->batch->has_last = env->batch->last = 1;
	return err;
}

int agent_target_queue_batch(struct agent_target *t, int last)
{
	uint64_t samples_before = t->samples_sent, batches_before = t->batches_sent;
	struct batch_builder *b;
	int err;

	b = batch_builder__new(t->run_id, t->a->node, t->seq);
	if (!b) {
		agent_lose_drained(t);
		return -ENOMEM;
	}
	err = agent_target_build(t, b, last);
	err = err ?: publish_queue_push(t->queue, batch_builder_envelope(b));
	batch_builder__free(b);
	if (err) {
		t->samples_sent = samples_before;
		t->batches_sent = batches_before;
		agent_lose_drained(t);
		return err;
	}
	if (!last)
		agent_target_forget_published(t);
	t->seq++;
	/* while t has Batches in the spool, the newer ones go after them; the
	 * last one stays in memory (sent after them): it is never dropped */
	while ((t->spooling && !last) || publish_queue_over_cap(t->queue)) {
		struct queued_batch qb;

		if (!t->a->spool) {
			if (!publish_queue_over_cap(t->queue))
				break;
			if (!publish_queue_loss(t->queue)->failed_batches)
				pr_warn("batches not acknowledged exceed the memory cap: dropping "
					"the oldest of run %s, counted as storage-failed",
					t->run_id);
			publish_queue_drop_oldest(t->queue);
			continue;
		}
		if (publish_queue_take_oldest(t->queue, &qb))
			break;
		agent_spool_batch(t, &qb);
	}
	return 0;
}

void agent_target_report_loss(struct agent_target *t)
{
	const struct publish_loss *l;
	char message[512];

	publish_queue_abandon(t->queue);
	l = publish_queue_loss(t->queue);
	if (l->failed_batches) {
		wire_storage_failed_message(message, sizeof(message), l->failed_samples,
					    l->failed_batches, l->code);
		pr_warn("run %s: degradation storage-failed: %s; %s", t->run_id, message,
			wire_storage_failed_remedy(l->code));
	}
	if (l->refused_batches)
		pr_warn("run %s: degradation batches-refused: %llu samples in %llu Batches were "
			"refused by the aggregator: %s",
			t->run_id, (unsigned long long)l->refused_samples,
			(unsigned long long)l->refused_batches, l->reason);
}
