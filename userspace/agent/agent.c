/* agent — see agent.h. */
#include <errno.h>
#include <poll.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/mpi_report.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sideband.h"
#include "userspace/launch/library_closure.h"
#include "userspace/launch/rank_identity.h"
#include "userspace/log/log.h"
#include "userspace/wire/wire.h"

#define AGENT_TARGET_ID 1

struct pending_degradation {
	char *name, *message, *remedy;
};

struct drained_sample {
	struct sample_key key;
	struct sample_value value;
	int depth;
	int stack_lost;
	uint64_t ips[MAX_STACK_DEPTH];
};

/* what the Agent knows of one observed process beyond its mappings */
struct process_info {
	pid_t tgid;
	struct rank_identity identity; /* read from its environment at exec */
	uint64_t exit_ns;	       /* 0: running */
};

struct agent {
	struct agent_opts opts;
	struct mpi_probes *mpi;
	struct hardware_counters *hw;
	void *processes; /* tsearch tree of struct process_info, by tgid */
	struct mpi_event *mpi_events;
	size_t n_mpi_events, cap_mpi_events;
	struct publish_queue *queue; /* Batches not acknowledged yet */
	int finished;		     /* agent_finish() done */
	char *run_id, *node, *endpoint;
	void *socket;
	struct sampler *sampler;
	struct module_table *modules;
	struct sideband *sideband;
	int epoll_fd;
	uint64_t seq;
	struct pending_degradation *degradations;
	size_t n_degradations;
	struct task_event *exits;
	size_t n_exits, cap_exits;
	struct drained_sample *drained;
	size_t n_drained, cap_drained;
};

int agent_add_degradation(struct agent *a, const char *name, const char *message,
			  const char *remedy)
{
	struct pending_degradation *d;

	d = realloc(a->degradations, (a->n_degradations + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	a->degradations = d;
	d = &a->degradations[a->n_degradations];
	d->name = strdup(name);
	d->message = strdup(message);
	d->remedy = strdup(remedy);
	if (!d->name || !d->message || !d->remedy) {
		free(d->name);
		free(d->message);
		free(d->remedy);
		return -ENOMEM;
	}
	a->n_degradations++;
	return 0;
}

int agent_for_each_degradation(const struct agent *a,
			       int (*cb)(const char *name, const char *message, const char *remedy,
					 void *ctx),
			       void *ctx)
{
	size_t i;
	int err = 0;

	for (i = 0; i < a->n_degradations && !err; i++)
		err = cb(a->degradations[i].name, a->degradations[i].message,
			 a->degradations[i].remedy, ctx);
	return err;
}

static int process_info_cmp(const void *a, const void *b)
{
	const struct process_info *pa = a, *pb = b;

	return (pa->tgid > pb->tgid) - (pa->tgid < pb->tgid);
}

static struct process_info *process_info_get(struct agent *a, pid_t tgid, int create)
{
	struct process_info key = {.tgid = tgid}, *pi;
	void *node = tfind(&key, &a->processes, process_info_cmp);

	if (node || !create)
		return node ? *(struct process_info **)node : NULL;
	pi = calloc(1, sizeof(*pi));
	if (!pi)
		return NULL;
	pi->tgid = tgid;
	if (!tsearch(pi, &a->processes, process_info_cmp)) {
		free(pi);
		return NULL;
	}
	return pi;
}

static void agent_on_new_module(struct module *m, void *ctx)
{
	struct agent *a = ctx;
	char err[512];

	if (a->mpi && mpi_probes_consider(a->mpi, m, err, sizeof(err)) < 0)
		agent_add_degradation(a, "mpi-probes-failed", err,
				      "MPI statistics are missing for this library; run as root on "
				      "a kernel with BTF");
}

static void agent_open_library(const char *path, void *ctx)
{
	struct agent *a = ctx;

	module_table_open_file(a->modules, path); /* the hook probes an MPI one */
}

/* Probe the MPI libraries the application can load before it starts:
 * probing a library when a rank maps it would miss MPI_Init and the first
 * calls. The libraries of the target program when it can be read (an
 * ELF program: its DT_NEEDED closure); else every MPI library installed
 * (those ldconfig knows and those in LD_LIBRARY_PATH). */
static void agent_probe_installed_mpi(struct agent *a)
{
	if (a->opts.target_exe && !library_closure(a->opts.target_exe, agent_open_library, a))
		return;
	library_installed("mpi", agent_open_library, a);
}

static void agent_start_mpi(struct agent *a)
{
	struct epoll_event ev = {.events = EPOLLIN};
	char err[256] = "";

	a->mpi =
	    mpi_probes__new(sampler_targets_fd(a->sampler), a->opts.mpi_events, err, sizeof(err));
	if (!a->mpi) {
		agent_add_degradation(
		    a, "mpi-probes-unavailable", err,
		    "MPI calls will not be counted; use a kernel with uprobes and BTF");
		return;
	}
	module_table_on_new_module(a->modules, agent_on_new_module, a);
	agent_probe_installed_mpi(a);
	ev.data.fd = mpi_probes_events_fd(a->mpi);
	epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
}

static void agent_start_sampling(struct agent *a)
{
	struct sampler_opts so = {.frequency = a->opts.frequency};
	struct epoll_event ev = {.events = EPOLLIN};
	char err[256] = "";

	a->sampler = sampler__new(&so, err, sizeof(err));
	if (!a->sampler) {
		if (!strncmp(err, "perf_event_open", 15))
			agent_add_degradation(
			    a, "perf-events-refused", err,
			    "lower --frequency under "
			    "/proc/sys/kernel/perf_event_max_sample_rate, or run as root");
		else if (errno == EPERM || errno == EACCES)
			agent_add_degradation(a, "bpf-denied", err,
					      "run as root, or grant CAP_BPF and CAP_PERFMON");
		else
			agent_add_degradation(
			    a, "bpf-unavailable", err,
			    "use a kernel with BPF and BTF (/sys/kernel/btf/vmlinux)");
		return;
	}
	a->modules = module_table__new();
	if (a->modules)
		a->sideband = sideband__new(a->modules);
	if (!a->sideband) {
		snprintf(err, sizeof(err), "cannot follow code mappings: %s", strerror(errno));
		agent_add_degradation(
		    a, "mappings-unavailable", err,
		    "run as root (perf_event_paranoid allows no system-wide events)");
		sampler__free(a->sampler);
		a->sampler = NULL;
		return;
	}
	a->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (a->epoll_fd < 0)
		return;
	ev.data.fd = sideband_fd(a->sideband);
	epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	ev.data.fd = sampler_task_events_fd(a->sampler);
	epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	agent_start_mpi(a);
	a->hw = hardware_counters__new();
}

static void agent_report_loss(struct agent *a);

struct agent *agent__new(const struct agent_opts *opts)
{
	struct agent *a = calloc(1, sizeof(*a));
	int linger = 0, err;

	if (!a)
		return NULL;
	a->opts = *opts;
	a->epoll_fd = -1;
	a->run_id = strdup(opts->run_id);
	a->node = strdup(opts->node);
	a->endpoint = strdup(opts->endpoint);
	if (!a->run_id || !a->node || !a->endpoint) {
		err = -ENOMEM;
		goto fail;
	}
	a->socket = zmq_socket(opts->zmq_ctx, ZMQ_DEALER);
	if (!a->socket) {
		err = -zmq_errno();
		goto fail;
	}
	zmq_setsockopt(a->socket, ZMQ_LINGER, &linger, sizeof(linger));
	a->queue = publish_queue__new(a->socket, opts->queue_cap_bytes);
	if (!a->queue) {
		err = -ENOMEM;
		goto fail;
	}
	if (a->opts.ack_timeout_ms <= 0)
		a->opts.ack_timeout_ms = AGENT_ACK_WAIT_DEFAULT_MS;
	if (a->opts.ack_timeout_ms > AGENT_ACK_WAIT_MAX_MS)
		a->opts.ack_timeout_ms = AGENT_ACK_WAIT_MAX_MS;
	if (zmq_connect(a->socket, opts->endpoint)) {
		err = -zmq_errno();
		pr_warn("cannot connect to the aggregator at '%s': %s", opts->endpoint,
			zmq_strerror(-err));
		goto fail;
	}
	agent_start_sampling(a);
	a->opts.target_exe = NULL; /* borrowed: used while starting only */
	return a;
fail:
	agent__free(a);
	errno = -err;
	return NULL;
}

void agent__free(struct agent *a)
{
	size_t i;

	if (!a)
		return;
	if (a->epoll_fd >= 0)
		close(a->epoll_fd);
	mpi_probes__free(a->mpi);
	hardware_counters__free(a->hw);
	tdestroy(a->processes, free);
	free(a->mpi_events);
	if (a->queue && !a->finished)
		agent_report_loss(a);
	publish_queue__free(a->queue);
	sideband__free(a->sideband);
	sampler__free(a->sampler);
	module_table__free(a->modules);
	if (a->socket)
		zmq_close(a->socket);
	for (i = 0; i < a->n_degradations; i++) {
		free(a->degradations[i].name);
		free(a->degradations[i].message);
		free(a->degradations[i].remedy);
	}
	free(a->degradations);
	free(a->exits);
	free(a->drained);
	free(a->run_id);
	free(a->node);
	free(a->endpoint);
	free(a);
}

int agent_sampling(const struct agent *a)
{
	return a->sampler != NULL;
}

int agent_cpus(const struct agent *a)
{
	return a->sampler ? sampler_cpus(a->sampler) : 0;
}

int agent_follow(struct agent *a, pid_t pid)
{
	int err;

	if (!a->sampler)
		return 0;
	/* until it execs, the child runs our own image */
	err = module_table_load_proc(a->modules, pid, 0);
	if (err)
		return err;
	return sampler_add_target(a->sampler, pid, AGENT_TARGET_ID);
}

int agent_fd(const struct agent *a)
{
	return a->epoll_fd;
}

static int agent_on_task_event(const struct task_event *e, void *ctx)
{
	struct agent *a = ctx;
	struct process_info *pi;

	if (e->kind == TASK_EVENT_EXEC) {
		pi = process_info_get(a, e->tgid, 1);
		/* the environment names the rank; none is no rank, never 0 */
		if (pi && rank_identity_read(e->tgid, &pi->identity))
			pi->identity.has_rank = 0;
		if (a->hw)
			hardware_counters_start(a->hw, e->tgid);
		return 0;
	}
	if (e->kind != TASK_EVENT_EXIT)
		return 0;
	pi = process_info_get(a, e->tgid, 1);
	if (pi)
		pi->exit_ns = e->time_ns;
	if (a->n_exits == a->cap_exits) {
		size_t cap = a->cap_exits ? a->cap_exits * 2 : 64;
		struct task_event *exits = realloc(a->exits, cap * sizeof(*exits));

		if (!exits)
			return -ENOMEM;
		a->exits = exits;
		a->cap_exits = cap;
	}
	a->exits[a->n_exits++] = *e;
	return 0;
}

static int agent_keep_mpi_event(const struct mpi_event *e, void *ctx);

int agent_process_events(struct agent *a)
{
	size_t i, first = a->n_exits;
	int err;

	if (!a->sampler)
		return 0;
	err = sideband_poll(a->sideband);
	if (!err && a->mpi)
		err = mpi_probes_poll_events(a->mpi, agent_keep_mpi_event, a);
	if (!err)
		err = sampler_poll_task_events(a->sampler, agent_on_task_event, a);
	/* a child's FORK record is written before its exit is reported: read
	 * the records again, so that no exit is applied before its fork */
	if (!err)
		err = sideband_poll(a->sideband);
	for (i = first; i < a->n_exits; i++)
		module_table_exit(a->modules, a->exits[i].tgid);
	return err;
}

struct live_ctx {
	int (*cb)(pid_t pid, const char *comm, void *ctx);
	void *ctx;
};

/* A process whose exit report was lost (ring buffer full: counted as
 * task_reports_dropped) is gone all the same: the kernel says so. */
static int agent_visit_live(pid_t pid, const char *comm, void *ctx)
{
	struct live_ctx *lc = ctx;

	if (kill(pid, 0) && errno == ESRCH)
		return 0;
	return lc->cb(pid, comm, lc->ctx);
}

int agent_for_each_live_process(const struct agent *a,
				int (*cb)(pid_t pid, const char *comm, void *ctx), void *ctx)
{
	struct live_ctx lc = {cb, ctx};

	return a->modules ? module_table_for_each_live(a->modules, agent_visit_live, &lc) : 0;
}

static int agent_count_live(pid_t pid, const char *comm, void *ctx)
{
	(void)pid;
	(void)comm;
	(*(int *)ctx)++;
	return 0;
}

int agent_live_processes(const struct agent *a)
{
	int n = 0;

	agent_for_each_live_process(a, agent_count_live, &n);
	return n;
}

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
	struct process_info *pi = process_info_get(a, tgid, 0);

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
	struct process_info *pi = process_info_get(ctx, tgid, 0);

	return pi ? pi->exit_ns : 0;
}

static int agent_keep_mpi_event(const struct mpi_event *e, void *ctx)
{
	struct agent *a = ctx;

	if (a->n_mpi_events == a->cap_mpi_events) {
		size_t cap = a->cap_mpi_events ? a->cap_mpi_events * 2 : 1024;
		struct mpi_event *ev = realloc(a->mpi_events, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		a->mpi_events = ev;
		a->cap_mpi_events = cap;
	}
	a->mpi_events[a->n_mpi_events++] = *e;
	return 0;
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
		void *node = tfind(&key, &a->processes, process_info_cmp);

		if (a->mpi)
			mpi_probes_forget(a->mpi, a->exits[i].tgid);
		if (node) {
			pi = *(struct process_info **)node;
			tdelete(pi, &a->processes, process_info_cmp);
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
			return err;
	}
	b = batch_builder__new(a->run_id, a->node, a->seq);
	if (!b)
		return -ENOMEM;
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
		return err;
	if (with_data)
		agent_forget_published(a);
	a->seq++;
	return 0;
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
static void agent_report_loss(struct agent *a)
{
	const struct publish_loss *l;
	char message[512];

	publish_queue_abandon(a->queue);
	l = publish_queue_loss(a->queue);
	if (l->failed_batches) {
		wire_storage_failed_message(message, sizeof(message), l->failed_samples,
					    l->failed_batches, l->code);
		pr_warn("degradation storage-failed: %s; %s", message, WIRE_STORAGE_FAILED_REMEDY);
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
	struct timespec ts, end;
	int err = 0;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000;
	for (;;) {
		long long left;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		left = (end.tv_sec - ts.tv_sec) * 1000 + (end.tv_nsec - ts.tv_nsec) / 1000000;
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
