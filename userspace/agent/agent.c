/* agent — see agent.h: starting, following processes and their kernel
 * reports; Batches and publishing are in agent_publish.c. */
#include <errno.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <zmq.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/publish_queue.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sideband.h"
#include "userspace/launch/library_closure.h"
#include "userspace/launch/rank_identity.h"
#include "userspace/log/log.h"

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

int agent_process_info_cmp(const void *a, const void *b)
{
	const struct process_info *pa = a, *pb = b;

	return (pa->tgid > pb->tgid) - (pa->tgid < pb->tgid);
}

struct process_info *agent_process_info(struct agent *a, pid_t tgid, int create)
{
	struct process_info key = {.tgid = tgid}, *pi;
	void *node = tfind(&key, &a->processes, agent_process_info_cmp);

	if (node || !create)
		return node ? *(struct process_info **)node : NULL;
	pi = calloc(1, sizeof(*pi));
	if (!pi)
		return NULL;
	pi->tgid = tgid;
	if (!tsearch(pi, &a->processes, agent_process_info_cmp)) {
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
	err = sampler_set_active(a->sampler, 1); /* i7-bpf: idle until a Target */
	err = err ?: sampler_add_target(a->sampler, pid, AGENT_TARGET_ID, TARGET_UID_ANY);
	if (!err && a->mpi) /* i7-bpf: MPI probes per Target process, from before its exec */
		mpi_probes_process_exec(a->mpi, pid);
	return err;
}

int agent_fd(const struct agent *a)
{
	return a->epoll_fd;
}

static int agent_on_task_event(const struct task_event *e, void *ctx)
{
	struct agent *a = ctx;
	struct process_info *pi;

	if (a->mpi && e->kind == TASK_EVENT_EXEC) /* i7-bpf: probes per Target process */
		mpi_probes_process_exec(a->mpi, e->tgid);
	else if (a->mpi) /* EXIT, LEFT */
		mpi_probes_process_exit(a->mpi, e->tgid);
	if (e->kind == TASK_EVENT_EXEC) {
		pi = agent_process_info(a, e->tgid, 1);
		/* the environment names the rank; none is no rank, never 0 */
		if (pi && rank_identity_read(e->tgid, &pi->identity))
			pi->identity.has_rank = 0;
		if (a->hw)
			hardware_counters_start(a->hw, e->tgid);
		return 0;
	}
	if (e->kind != TASK_EVENT_EXIT)
		return 0;
	pi = agent_process_info(a, e->tgid, 1);
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
