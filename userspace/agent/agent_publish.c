/* agent_publish — the Agent's half that turns what was drained into
 * Batches and publishes them (see agent.h, publish_queue.h). */
#include <errno.h>
#include <poll.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/mpi_report.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sideband.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/wire/wire.h"

static int agent_keep_sample(const struct sample_key *key, const struct sample_value *value,
			     const uint64_t *ips, int depth, int stack_lost, void *ctx)
{
	struct agent *a = ctx;
	struct drained_sample *ds;

	if (a->n_drained == a->cap_drained) {
		size_t cap = a->cap_drained ? a->cap_drained * 2 : 256;
		struct drained_sample *d = realloc(a->drained, cap * sizeof(*d));

		if (!d)
			return -ENOMEM;
		a->drained = d;
		a->cap_drained = cap;
	}
	ds = &a->drained[a->n_drained++];
	ds->key = *key;
	ds->value = *value;
	ds->depth = depth;
	ds->stack_lost = stack_lost;
	memcpy(ds->ips, ips, depth * sizeof(*ips));
	return 0;
}

static void agent_locus(struct agent *a, pid_t tgid, pid_t tid, struct batch_locus *l)
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

static int agent_add_mpi(struct agent *a, struct batch_builder *b)
{
	size_t i;
	int err;

	if (!a->mpi)
		return 0;
	err = mpi_report_sites(a->mpi, a->modules, b, agent_process_locus, agent_exit_ns, a);
	for (i = 0; i < a->n_mpi_events && !err; i++)
		err = mpi_report_event(a->mpi, a->modules, b, &a->mpi_events[i],
				       agent_process_locus, a);
	return err;
}

static int agent_add_drained(struct agent *a, struct batch_builder *b)
{
	struct module *mods[MAX_STACK_DEPTH];
	uint64_t offsets[MAX_STACK_DEPTH];
	struct batch_locus locus;
	size_t i;
	int f, err;

	for (i = 0; i < a->n_drained; i++) {
		const struct drained_sample *ds = &a->drained[i];

		for (f = 0; f < ds->depth; f++) {
			/* callers are return addresses: step back into the call */
			uint64_t ip = f == 0 ? ds->ips[f] : ds->ips[f] - 1;

			module_table_resolve(a->modules, ds->key.tgid, ds->key.exec_seq, ip,
					     &mods[f], &offsets[f]);
		}
		agent_locus(a, ds->key.tgid, ds->key.tid, &locus);
		err = batch_builder_add_sample(b, &locus, mods, offsets, ds->depth, ds->stack_lost,
					       !!(ds->key.flags & SAMPLE_FLAG_KERNEL), "cpu-clock",
					       ds->value.samples, ds->value.period_sum);
		if (err)
			return err;
	}
	return 0;
}

static int agent_add_exits(struct agent *a, struct batch_builder *b)
{
	struct batch_locus locus;
	size_t i;
	int err;

	for (i = 0; i < a->n_exits; i++) {
		const struct task_event *e = &a->exits[i];
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
		if (a->hw && !hardware_counters_finish(a->hw, e->tgid, &pe.cycles, &pe.instructions,
						       &hw_reason)) {
			pe.has_cycles = pe.has_instructions = 1;
		} else {
			pe.hardware_counters_reason =
			    (char *)(a->hw ? hw_reason : "hardware counters not set up");
		}
		agent_locus(a, e->tgid, e->tgid, &locus);
		if (!locus.comm)
			locus.comm = e->comm;
		err = batch_builder_add_exit(b, &locus, &pe);
		if (err)
			return err;
		if (locus.has_rank && WIFSIGNALED(e->exit_code)) {
			char name[64], message[256];

			snprintf(name, sizeof(name), "rank-%d-killed", locus.rank);
			snprintf(
			    message, sizeof(message),
			    "rank %d (pid %d) was killed by signal %d (%s): its data stops there",
			    locus.rank, e->tgid, WTERMSIG(e->exit_code),
			    strsignal(WTERMSIG(e->exit_code)));
			err = batch_builder_add_degradation(
			    b, name, message,
			    "find why the rank died; the other ranks' "
			    "data is complete");
			if (err)
				return err;
		}
		module_table_exit(a->modules, e->tgid);
	}
	return 0;
}

static int agent_add_counters(struct agent *a, struct batch_builder *b)
{
	struct sampler_counters c;
	int err = 0;

	if (!a->sampler)
		return 0;
	sampler_read_counters(a->sampler, &c);
	err = err ?: batch_builder_add_counter(b, "samples_seen", c.seen);
	err = err ?: batch_builder_add_counter(b, "samples_dropped", c.drop_keys);
	err = err ?: batch_builder_add_counter(b, "samples_lost_in_drain",
					       c.drain_lost + a->drained_lost);
	err = err ?: batch_builder_add_counter(b, "sample_flip_timeouts", c.flip_timeouts);
	err = err ?: batch_builder_add_counter(b, "stacks_dropped", c.drop_stacks);
	/* counted, not a Degradation: nothing was lost that could be read */
	err = err ?: batch_builder_add_counter(b, "stacks_unreadable", c.stacks_unreadable);
	err = err ?: batch_builder_add_counter(b, "processes_not_followed", c.drop_targets);
	err = err ?: batch_builder_add_counter(b, "task_reports_dropped", c.drop_events);
	err = err ?: batch_builder_add_counter(b, "process_totals_partial", c.drop_totals);
	err =
	    err ?: batch_builder_add_counter(b, "mapping_records_lost", sideband_lost(a->sideband));
	if (a->mpi) {
		uint64_t mc[MPI_COUNTERS];

		mpi_probes_read_counters(a->mpi, mc);
		err = err ?: batch_builder_add_counter(b, "mpi_calls_seen", mc[MPI_CALLS_SEEN]);
		err = err ?: batch_builder_add_counter(b, "mpi_sites_dropped", mc[MPI_DROP_SITES]);
		err =
		    err ?: batch_builder_add_counter(b, "mpi_calls_untimed", mc[MPI_DROP_THREADS]);
		err =
		    err ?: batch_builder_add_counter(b, "mpi_events_dropped", mc[MPI_DROP_EVENTS]);
	}
	return err;
}

/* What the Batch just built holds is the Batch's now: the Agent forgets
 * it (exited processes, their MPI totals, sent Events). */
static void agent_forget_published(struct agent *a)
{
	size_t i;

	/* the last totals of exited processes are published: forget them */
	for (i = 0; i < a->n_exits; i++) {
		struct process_info key = {.tgid = a->exits[i].tgid}, *pi;
		void *node = tfind(&key, &a->processes, agent_process_info_cmp);

		if (a->mpi)
			mpi_probes_forget(a->mpi, a->exits[i].tgid);
		if (node) {
			pi = *(struct process_info **)node;
			tdelete(pi, &a->processes, agent_process_info_cmp);
			free(pi);
		}
	}
	a->n_exits = 0;
	a->n_mpi_events = 0;
	if (a->modules)
		module_table_reap(a->modules);
}


static int agent_add_loss_counters(struct agent *a, struct batch_builder *b)
{
	const struct publish_loss *l = publish_queue_loss(a->queue);
	int err = 0;

	if (!l->failed_batches && !l->refused_batches)
		return 0;
	err = err ?: batch_builder_add_counter(b, "storage_failed_samples", l->failed_samples);
	err = err ?: batch_builder_add_counter(b, "storage_failed_batches", l->failed_batches);
	err = err ?: batch_builder_add_counter(b, "storage_failed_errno", (uint64_t)l->code);
	err = err ?: batch_builder_add_counter(b, "storage_refused_samples", l->refused_samples);
	err = err ?: batch_builder_add_counter(b, "storage_refused_batches", l->refused_batches);
	return err;
}

/* Samples drained (gone from the kernel's maps) that no Batch will hold:
 * lost between the kernel and a Batch, as the sampler's drain losses are,
 * and counted with them (samples_lost_in_drain of the next Batch). */
static void agent_lose_drained(struct agent *a)
{
	size_t i;

	for (i = 0; i < a->n_drained; i++)
		a->drained_lost += a->drained[i].value.samples;
	a->n_drained = 0;
}

/* Builds the next Batch and queues it. with_data 0: counters and
 * Degradations only (the final Batch: small enough for the Aggregator's
 * reserve when the disk is full). */
static int agent_queue_batch(struct agent *a, int with_data)
{
	struct batch_builder *b;
	size_t i;
	int err = 0;

	a->n_drained = 0;
	if (a->sampler && with_data) {
		/* drain first, then apply the mapping records: every mapping a
		 * drained sample refers to was recorded before the drain */
		err = sampler_drain(a->sampler, agent_keep_sample, a);
		if (!err)
			err = agent_process_events(a);
		if (err)
			goto lost;
	}
	b = batch_builder__new(a->run_id, a->node, a->seq);
	if (!b) {
		err = -ENOMEM;
		goto lost;
	}
	if (a->sampler && with_data) {
		err = agent_add_drained(a, b);
		err = err ?: agent_add_mpi(a, b);
		err = err ?: agent_add_exits(a, b);
	}
	err = err ?: agent_add_counters(a, b);
	err = err ?: agent_add_loss_counters(a, b);
	for (i = 0; i < a->n_degradations && !err; i++)
		err = batch_builder_add_degradation(b, a->degradations[i].name,
						    a->degradations[i].message,
						    a->degradations[i].remedy);
	if (!err && !with_data) {
		batch_builder_envelope(b)->batch->has_last = 1;
		batch_builder_envelope(b)->batch->last = 1;
	}
	err = err ?: publish_queue_push(a->queue, batch_builder_envelope(b));
	batch_builder__free(b);
	if (err)
		goto lost;
	if (with_data)
		agent_forget_published(a);
	a->seq++;
	return 0;
lost:
	agent_lose_drained(a);
	return err;
}

int agent_publish(struct agent *a)
{
	int err = agent_queue_batch(a, 1);

	if (err)
		return err;
	err = publish_queue_flush(a->queue, a->opts.ack_timeout_ms);
	/* kept for the next call: not a failure of this one */
	if (err == -ETIMEDOUT || wire_storage_error_transient(-err))
		err = 0;
	return err;
}

size_t agent_unacknowledged(const struct agent *a)
{
	return publish_queue_length(a->queue);
}

const struct publish_loss *agent_loss(const struct agent *a)
{
	return publish_queue_loss(a->queue);
}

/* Says on stderr what never reached the Run: the Degradation the Run
 * could not record. */
void agent_report_loss(struct agent *a)
{
	const struct publish_loss *l;
	char message[512];

	publish_queue_abandon(a->queue);
	l = publish_queue_loss(a->queue);
	if (l->failed_batches) {
		wire_storage_failed_message(message, sizeof(message), l->failed_samples,
					    l->failed_batches, l->code);
		pr_warn("degradation storage-failed: %s; %s", message,
			wire_storage_failed_remedy(l->code));
	}
	if (l->refused_batches)
		pr_warn("degradation batches-refused: %llu samples in %llu Batches were refused by "
			"the aggregator: %s",
			(unsigned long long)l->refused_samples,
			(unsigned long long)l->refused_batches, l->reason);
}

/* Flushes for up to ms; a storage error is retried after a short pause. */
static int agent_flush_for(struct agent *a, long long ms)
{
	long long end = clock_monotonic_ms() + ms;
	int err = 0;

	for (;;) {
		long long left = end - clock_monotonic_ms();

		if (left <= 0)
			return err ? err : (publish_queue_length(a->queue) ? -ETIMEDOUT : 0);
		err = publish_queue_flush(a->queue, (int)left);
		if (!err || !wire_storage_error_transient(-err))
			return err;
		if (err != -ETIMEDOUT)
			poll(NULL, 0, left < 200 ? (int)left : 200);
	}
}

int agent_finish(struct agent *a, int wait_ms)
{
	const struct publish_loss *l;
	int err;

	if (a->finished)
		return 0;
	if (wait_ms <= 0)
		wait_ms = AGENT_FINISH_WAIT_DEFAULT_MS;
	err = agent_queue_batch(a, 1);
	if (!err)
		err = agent_flush_for(a, wait_ms / 2);
	/* what is still not stored is lost: counted, then said in a last
	 * small Batch (the Aggregator's reserve holds it on a full disk) */
	publish_queue_abandon(a->queue);
	err = agent_queue_batch(a, 0);
	if (!err)
		err = agent_flush_for(a, wait_ms - wait_ms / 2);
	a->finished = 1;
	l = publish_queue_loss(a->queue);
	if (err || publish_queue_length(a->queue)) {
		agent_report_loss(a); /* the Run could not record it */
		return err ? err : -ETIMEDOUT;
	}
	if (l->failed_batches)
		return l->code > 0 ? -l->code : -EIO;
	return 0;
}
