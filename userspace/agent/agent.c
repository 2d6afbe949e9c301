/* agent — see agent.h: the node level (BPF, mappings, MPI probes,
 * hardware counters, kernel reports and the processes they name). Targets
 * are in agent_target.c, Batches in agent_publish.c, the Aggregators in
 * agent_send.c. */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/agent_internal.h"
#include "userspace/agent/hardware_counters.h"
#include "userspace/agent/kernel_symbols.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_budget.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/sampler.h"
#include "userspace/agent/sideband.h"
#include "userspace/agent/spool.h"
#include "userspace/agent/unwinder.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/machine/machine.h"

int degradation_list_add(struct degradation_list *l, const char *name, const char *message,
			 const char *remedy)
{
	struct pending_degradation *d;
	size_t i;

	for (i = 0; i < l->n; i++) /* said once: a repeated cause is the same Degradation */
		if (!strcmp(l->items[i].name, name) && !strcmp(l->items[i].message, message))
			return 0;
	d = realloc(l->items, (l->n + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	l->items = d;
	d = &l->items[l->n];
	d->name = strdup(name);
	d->message = strdup(message);
	d->remedy = strdup(remedy);
	if (!d->name || !d->message || !d->remedy) {
		free(d->name);
		free(d->message);
		free(d->remedy);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

void degradation_list_free(struct degradation_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->items[i].name);
		free(l->items[i].message);
		free(l->items[i].remedy);
	}
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

int agent_add_node_degradation(struct agent *a, const char *name, const char *message,
			       const char *remedy)
{
	return degradation_list_add(&a->degradations, name, message, remedy);
}

int agent_for_each_degradation(const struct agent *a,
			       int (*cb)(const char *name, const char *message, const char *remedy,
					 void *ctx),
			       void *ctx)
{
	size_t i;
	int err = 0;

	for (i = 0; i < a->degradations.n && !err; i++)
		err = cb(a->degradations.items[i].name, a->degradations.items[i].message,
			 a->degradations.items[i].remedy, ctx);
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

void agent_process_info_delete(struct agent *a, pid_t tgid)
{
	struct process_info key = {.tgid = tgid}, *pi;
	void *node = tfind(&key, &a->processes, agent_process_info_cmp);

	if (!node)
		return;
	pi = *(struct process_info **)node;
	tdelete(pi, &a->processes, agent_process_info_cmp);
	free(pi);
}

struct agent_target *agent_target_by_id(struct agent *a, uint32_t id)
{
	struct agent_target *t;

	for (t = a->targets; t; t = t->next)
		if (t->id == id && t->state != TARGET_DONE)
			return t;
	return NULL;
}

/* The Target of a process: what its reports said, else the kernel's
 * Target set (a forked child nothing was reported of yet). */
struct agent_target *agent_target_of_tgid(struct agent *a, pid_t tgid)
{
	struct process_info *pi = agent_process_info(a, tgid, 0);
	struct target_info info;
	__u32 key = (__u32)tgid;

	if (pi && pi->target_id)
		return agent_target_by_id(a, pi->target_id);
	if (!a->sampler || bpf_map_lookup_elem(sampler_targets_fd(a->sampler), &key, &info))
		return NULL;
	pi = agent_process_info(a, tgid, 1);
	if (pi)
		pi->target_id = info.target_id;
	return agent_target_by_id(a, info.target_id);
}

static void agent_on_new_module(struct module *m, void *ctx)
{
	struct agent *a = ctx;
	char err[512];

	if (a->mpi && mpi_probes_consider(a->mpi, m, err, sizeof(err)) < 0)
		agent_add_node_degradation(a, "mpi-probes-failed", err,
					   "MPI statistics are missing for this library; run as "
					   "root on a kernel with BTF");
}

/* the cost budget of process tgid's MPI probes: its Target's, else the
 * configuration's */
static double agent_mpi_budget(void *ctx, pid_t tgid)
{
	struct agent_target *t = agent_target_of_tgid(ctx, tgid);
	struct agent *a = ctx;

	if (t && t->mpi_budget != 0)
		return t->mpi_budget;
	return a->opts.mpi_budget;
}

/* the MPI probes' load (0.02-0.05 s: BTF, the verifier), beside the
 * sampling program's: it needs the Target set's map only */
static void *load_mpi(void *arg)
{
	struct agent *a = arg;

	/* loaded with Events; each Target that asks turns its own on */
	a->mpi_loaded = mpi_probes__new(a->mpi_targets_fd, 1, a->mpi_err, sizeof(a->mpi_err));
	close(a->mpi_targets_fd); /* the probes hold their own */
	a->mpi_targets_fd = -1;
	return NULL;
}

/* the loading thread ended: its result, or NULL with a->mpi_err. The join
 * waits on nothing a user holds: the thread loads BPF objects (the
 * verifier's time, bounded by the programs' size) and calibrates the
 * probe cost on a function of this process (3 x 150 calls); the
 * calibration's probes are released by a thread of their own. */
static struct mpi_probes *agent_join_mpi(struct agent *a)
{
	struct mpi_probes *mp;

	if (a->mpi_loading)
		pthread_join(a->mpi_thread, NULL);
	a->mpi_loading = 0;
	mp = a->mpi_loaded;
	a->mpi_loaded = NULL;
	return mp;
}

/* sampler_opts.targets_ready: the MPI probes load from now on, on a
 * descriptor of their own (the sampler may fail and close its own
 * meanwhile); here without a thread; a second call (the sampler made
 * again) starts over */
static void agent_targets_ready(int targets_fd, void *ctx)
{
	struct agent *a = ctx;

	mpi_probes__free(agent_join_mpi(a));
	a->mpi_err[0] = '\0';
	a->mpi_targets_fd = fcntl(targets_fd, F_DUPFD_CLOEXEC, 0);
	if (a->mpi_targets_fd < 0) {
		snprintf(a->mpi_err, sizeof(a->mpi_err), "cannot share the target map with the "
			 "MPI probes: %s", strerror(errno));
		return;
	}
	if (pthread_create(&a->mpi_thread, NULL, load_mpi, a))
		load_mpi(a);
	else
		a->mpi_loading = 1;
}

static void agent_start_mpi(struct agent *a)
{
	struct epoll_event ev = {.events = EPOLLIN};

	/* the MPI libraries and the Components, when they are mapped */
	module_table_on_new_module(a->modules, agent_on_new_module, a);
	module_table_on_mapping(a->modules, agent_components_mapped, a);
	a->mpi = agent_join_mpi(a);
	if (!a->mpi) {
		agent_add_node_degradation(
		    a, "mpi-probes-unavailable", a->mpi_err[0] ? a->mpi_err : strerror(ENOMEM),
		    "MPI calls will not be counted; use a kernel with uprobes and BTF");
		return;
	}
	mpi_probes_set_events(a->mpi, 0, 0); /* from now on only the Targets turned on */
	mpi_probes_set_budget_fn(a->mpi, agent_mpi_budget, a);
	ev.data.fd = mpi_probes_events_fd(a->mpi);
	epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
}

static void agent_sampler_refused(struct agent *a, const char *err)
{
	if (!strncmp(err, "perf_event_open", 15))
		agent_add_node_degradation(a, "perf-events-refused", err,
					   "lower --frequency under "
					   "/proc/sys/kernel/perf_event_max_sample_rate, or run as root");
	else if (errno == EPERM || errno == EACCES)
		agent_add_node_degradation(a, "bpf-denied", err,
					   "run as root, or grant CAP_BPF and CAP_PERFMON");
	else
		agent_add_node_degradation(a, "bpf-unavailable", err,
					   "use a kernel with BPF and BTF (/sys/kernel/btf/vmlinux)");
}

/* the runtime libraries nearly every process maps, by file name */
static const char *const common_runtime[] = {
	"libc.so.6", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libm.so.6",
	"libgcc_s.so.1", "libstdc++.so.6", "libpthread.so.0",
};

static int prepare_common(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct agent *a = ctx;
	const char *base = strrchr(info->dlpi_name, '/');
	struct module *m;
	size_t i;

	(void)size;
	if (!base)
		return 0;
	for (i = 0; i < sizeof(common_runtime) / sizeof(common_runtime[0]); i++) {
		if (strcmp(base + 1, common_runtime[i]))
			continue;
		m = module_table_open_file(a->modules, info->dlpi_name);
		if (m)
			unwinder_prepare(a->unwinder, m);
	}
	return 0;
}

void agent_unwinder_sync(struct agent *a)
{
	int err;

	if (!a->unwinder)
		return;
	err = unwinder_sync(a->unwinder, a->modules);
	if (err)
		pr_debug("unwind tables not up to date: %s", strerror(-err));
}

/* the unwind tables (none when frame pointers were asked for) and the
 * names of kernel frames: what is missing is a node Degradation */
static void agent_start_stacks(struct agent *a)
{
	struct sampler_unwind_maps maps;
	char msg[512];

	if (!sampler_unwind_maps(a->sampler, &maps)) {
		a->unwinder = unwinder__new(&maps);
		if (a->unwinder) {
			struct epoll_event ev = {.events = EPOLLIN, .data.fd = unwinder_fd(a->unwinder)};

			epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
			/* the same files as the applications': tables ready first */
			dl_iterate_phdr(prepare_common, a);
		} else {
			snprintf(msg, sizeof(msg), "the unwind tables cannot be loaded: %s",
				 strerror(errno));
			agent_add_node_degradation(a, "unwinder-unavailable", msg,
						   "call paths end at the sampled function; run "
						   "as root on a kernel with BTF (6.1 or later)");
		}
	}
}

/* the kernel's symbols, read beside the Agent's start (~100 ms: neither
 * in the Run's start nor in the middle of the application's work), from
 * before the BPF programs load */
static void *read_kernel_symbols(void *arg)
{
	struct agent *a = arg;

	a->kernel_symbols = kernel_symbols__new(NULL);
	a->kernel_symbols_err = a->kernel_symbols ? 0 : -errno;
	return NULL;
}

static void agent_start_kernel_symbols(struct agent *a)
{
	if (pthread_create(&a->kernel_symbols_thread, NULL, read_kernel_symbols, a))
		read_kernel_symbols(a); /* no thread: here */
	else
		a->kernel_symbols_reading = 1;
}

/* the reading thread ended; NULL-safe as to the thread */
static void agent_join_kernel_symbols(struct agent *a)
{
	if (a->kernel_symbols_reading)
		pthread_join(a->kernel_symbols_thread, NULL);
	a->kernel_symbols_reading = 0;
}

struct kernel_symbols *agent_kernel_symbols(struct agent *a)
{
	char msg[512];
	int err;

	if (a->kernel_symbols_read)
		return a->kernel_symbols;
	agent_join_kernel_symbols(a);
	a->kernel_symbols_read = 1;
	err = a->kernel_symbols_err;
	if (err || kernel_symbols_hidden(a->kernel_symbols))
		agent_add_node_degradation(a, KERNEL_SYMBOLS_DEGRADATION,
					   kernel_symbols_degradation_message(err, msg, sizeof(msg)),
					   kernel_symbols_degradation_remedy(err));
	return a->kernel_symbols;
}

static void agent_start_sampling(struct agent *a)
{
	struct sampler_opts so = {.frequency = a->opts.frequency, .netns_only = a->opts.netns_only,
				  .unwinder = a->opts.unwinder, .pmu = agent_pmu_choose(a),
				  .targets_ready = agent_targets_ready, .targets_ready_ctx = a};
	struct epoll_event ev = {.events = EPOLLIN};
	char err[256] = "";

	/* first: done while the BPF programs load, not in the application's
	 * first second (its Run starts 0.2 s after this now) */
	agent_start_kernel_symbols(a);
	a->sampler = sampler__new(&so, err, sizeof(err));
	if (!a->sampler && so.pmu && agent_pmu_refused(a, err, errno)) {
		so.pmu = NULL; /* time only rather than nothing */
		a->sampler = sampler__new(&so, err, sizeof(err));
	}
	if (!a->sampler) {
		mpi_probes__free(agent_join_mpi(a)); /* its map is gone with the sampler */
		agent_sampler_refused(a, err);
		return;
	}
	a->modules = module_table__new();
	if (a->modules)
		a->sideband = sideband__new(a->modules);
	if (!a->sideband) {
		snprintf(err, sizeof(err), "cannot follow code mappings: %s", strerror(errno));
		agent_add_node_degradation(
		    a, "mappings-unavailable", err,
		    "run as root (perf_event_paranoid allows no system-wide events)");
		mpi_probes__free(agent_join_mpi(a));
		sampler__free(a->sampler);
		a->sampler = NULL;
		return;
	}
	agent_pmu_degradations(a);
	ev.data.fd = sideband_fd(a->sideband);
	epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	ev.data.fd = sampler_task_events_fd(a->sampler);
	epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	agent_start_stacks(a);
	agent_start_mpi(a);
	a->hw = hardware_counters__new();
	a->active = 0; /* sampler__new opens them disabled: on with the first Target */
}

/* nonzero, never reused: the wall clock in ns XOR 64 random bits */
static uint64_t agent_new_incarnation(void)
{
	struct timespec ts;
	uint64_t r = 0, inc;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint64_t)getpid() << 32 ^ (uint64_t)clock_monotonic_ns();
	clock_gettime(CLOCK_REALTIME, &ts);
	inc = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ r;
	return inc ? inc : 1;
}

static int agent_open_spool(struct agent *a, char *err, size_t errlen)
{
	if (!a->opts.spool_dir)
		return 0;
	a->spool = spool__open(a->opts.spool_dir, a->opts.spool_cap_bytes, err, errlen);
	return a->spool ? 0 : -errno;
}

static int agent_machine_json(struct agent *a)
{
	json_t *m = machine_snapshot();

	a->machine_json = m ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	return a->machine_json ? 0 : -ENOMEM;
}

struct agent *agent__new(const struct agent_opts *o, char *err, size_t errlen)
{
	struct agent *a = calloc(1, sizeof(*a));
	int e = -ENOMEM;

	snprintf(err, errlen, "out of memory creating the agent");
	if (!a)
		goto fail;
	a->opts = *o;
	a->incarnation = agent_new_incarnation();
	a->next_target_id = 1;
	if (a->opts.drain_interval_ms <= 0)
		a->opts.drain_interval_ms = AGENT_DRAIN_DEFAULT_MS;
	a->node = strdup(o->node ? o->node : "");
	a->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (!a->node || a->epoll_fd < 0 || agent_machine_json(a))
		goto fail;
	a->opts.node = a->node;
	if (!o->n_endpoints || !o->endpoints) {
		snprintf(err, errlen, "the agent needs at least one aggregator endpoint");
		e = -EINVAL;
		goto fail;
	}
	e = agent_open_spool(a, err, errlen);
	e = e ?: agent_conns_open(a, err, errlen);
	if (e)
		goto fail;
	agent_start_sampling(a);
	/* the first drain a quarter sooner: the sampler's load takes 0.16 s
	 * more than before the unwinder, and a Run cut short 1.5 s in (nunatak
	 * killed) should still hold what was sampled */
	a->next_drain_ms = clock_monotonic_ms() + a->opts.drain_interval_ms * 3 / 4;
	err[0] = '\0';
	return a;
fail:
	agent__free(a);
	errno = -e;
	return NULL;
}

void agent__free(struct agent *a)
{
	struct agent_target *t;

	if (!a)
		return;
	while ((t = a->targets)) {
		a->targets = t->next;
		agent_target_report_loss(t);
		agent_target_free(t);
	}
	agent_requests_free(a);
	agent_orphans_free(a);
	agent_conns_close(a);
	if (a->epoll_fd >= 0)
		close(a->epoll_fd);
	mpi_probes__free(agent_join_mpi(a));
	mpi_probes__free(a->mpi);
	component_probes__free(a->components);
	hardware_counters__free(a->hw);
	tdestroy(a->processes, free);
	sideband__free(a->sideband);
	unwinder__free(a->unwinder);
	agent_join_kernel_symbols(a);
	kernel_symbols__free(a->kernel_symbols);
	sampler__free(a->sampler);
	module_table__free(a->modules);
	spool__free(a->spool);
	degradation_list_free(&a->degradations);
	free(a->machine_json);
	free(a->node);
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

uint64_t agent_incarnation(const struct agent *a)
{
	return a->incarnation;
}

int agent_fd(const struct agent *a)
{
	return a->epoll_fd;
}

size_t agent_route(const char *run_id, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const unsigned char *p;

	if (!n)
		return 0;
	for (p = (const unsigned char *)run_id; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return (size_t)(h % n);
}

void agent_update_active(struct agent *a)
{
	struct agent_target *t;
	int want = 0;

	for (t = a->targets; t && !want; t = t->next)
		want = t->state != TARGET_DONE;
	if (!a->sampler || want == a->active)
		return;
	if (sampler_set_active(a->sampler, want))
		pr_warn("cannot %s the sampling perf events: %s", want ? "enable" : "disable",
			strerror(errno));
	a->active = want;
}

int agent_sampler_add_target(struct agent *a, pid_t tgid, struct agent_target *t)
{
	struct process_info *pi;

	if (!a->sampler)
		return 0;
	pi = agent_process_info(a, tgid, 1);
	if (pi)
		pi->target_id = t->id;
	return sampler_add_target(a->sampler, tgid, t->id, agent_target_uid(t));
}

void agent_sampler_remove_target(struct agent *a, struct agent_target *t)
{
	int err;

	if (!a->sampler)
		return;
	err = sampler_remove_target(a->sampler, t->id); /* its tokens too */
	if (err)
		pr_warn("run %s: its processes could not all leave the kernel's Target set: %s",
			t->run_id, strerror(-err));
}

uint32_t agent_target_uid(const struct agent_target *t)
{
	return t->uid ? (uint32_t)t->uid : TARGET_UID_ANY;
}
