/* sampler — see sampler.h. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "userspace/agent/sampler.h"
#include "userspace/agent/sampler_internal.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"


static int perf_open_cpu_clock(int cpu, long frequency)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = (uint64_t)frequency,
		.disabled = 1, /* sampler_set_active() enables it */
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int sampler_open_events(struct sampler *s, long frequency, char *err, size_t errlen)
{
	int cpu, fd, e;

	s->perf_fds = calloc(s->ncpu, sizeof(*s->perf_fds));
	s->links = calloc(s->ncpu, sizeof(*s->links));
	if (!s->perf_fds || !s->links)
		return -ENOMEM;
	/* before anything can fail: a 0 here would close our stdin */
	for (cpu = 0; cpu < s->ncpu; cpu++)
		s->perf_fds[cpu] = -1;
	for (cpu = 0; cpu < s->ncpu; cpu++) {
		fd = perf_open_cpu_clock(cpu, frequency);
		if (fd < 0) {
			e = -errno;
			if (e == -ENODEV) /* offline CPU */
				continue;
			snprintf(err, errlen, "perf_event_open on cpu %d refused: %s", cpu,
				 strerror(-e));
			return e;
		}
		s->perf_fds[cpu] = fd;
		s->links[cpu] = bpf_program__attach_perf_event(s->sample->progs.sample_cpu, fd);
		if (!s->links[cpu]) {
			e = -errno;
			snprintf(err, errlen, "attaching the sampling program on cpu %d failed: %s",
				 cpu, strerror(-e));
			return e;
		}
		/* libbpf enables the event it attaches to: idle until asked */
		if (ioctl(fd, PERF_EVENT_IOC_DISABLE, 0)) {
			e = -errno;
			snprintf(err, errlen, "disabling the sampling event on cpu %d failed: %s",
				 cpu, strerror(-e));
			return e;
		}
		s->n_events++;
	}
	return 0;
}

/* utime and stime scaled to the exact runtime, in their ratio, as the
 * kernel's cputime_adjust() does for getrusage */
static void task_event_adjust_cputime(struct task_event *e)
{
	uint64_t ticks = e->utime_ns + e->stime_ns;

	if (!e->runtime_ns)
		return;
	if (e->stime_ns == 0 || ticks == 0) {
		e->utime_ns = e->runtime_ns;
		e->stime_ns = 0;
	} else {
		e->stime_ns = (uint64_t)((unsigned __int128)e->runtime_ns * e->stime_ns / ticks);
		e->utime_ns = e->runtime_ns - e->stime_ns;
	}
}

static int task_event_dispatch(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	struct task_event e;

	if (size < sizeof(e))
		return 0;
	memcpy(&e, data, sizeof(e));
	if (e.kind == TASK_EVENT_EXIT) {
		/* a thread reported after the last one re-created the totals
		 * (bpf/task.h): its key dies with the process */
		struct task_totals_key key = { .tgid = e.tgid, .start_time_ns = e.start_time_ns };

		bpf_map_delete_elem(bpf_map__fd(s->task->maps.task_totals), &key);
		task_event_adjust_cputime(&e);
	}
	return s->task_event_fn ? s->task_event_fn(&e, s->task_event_ctx) : 0;
}

static void sampler_size_maps(struct sampler *s, long frequency)
{
	uint64_t per_drain = 2 * (uint64_t)frequency * (uint64_t)s->ncpu;
	uint32_t keys = per_drain < 8192 ? 8192 : per_drain > MAX_SAMPLE_KEYS ? MAX_SAMPLE_KEYS
									       : per_drain;
	uint32_t stacks = keys > MAX_STACKS ? MAX_STACKS : keys;

	/* Stacks are allocated as they come (BPF_F_NO_PREALLOC): room for
	 * one per sample of a drain costs nothing until used */
	bpf_map__set_max_entries(s->sample->maps.samples0, keys);
	bpf_map__set_max_entries(s->sample->maps.samples1, keys);
	bpf_map__set_max_entries(s->sample->maps.stacks0, stacks);
	bpf_map__set_max_entries(s->sample->maps.stacks1, stacks);
}

struct sampler *sampler__new(const struct sampler_opts *opts, char *err, size_t errlen)
{
	struct sampler *s;
	int e;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->ncpu = libbpf_num_possible_cpus();
	if (s->ncpu < 0) {
		e = s->ncpu;
		snprintf(err, errlen, "cannot count the CPUs: %s", strerror(-e));
		goto fail;
	}

	/* 1. open */
	s->task = task_bpf__open();
	s->sample = sample_bpf__open();
	if (!s->task || !s->sample) {
		e = -errno;
		snprintf(err, errlen, "opening the BPF programs failed: %s", strerror(-e));
		goto fail;
	}
	/* 2. configure: both units share one Target set (below); the sample
	 * and stack maps hold what one drain interval can bring — at most
	 * one key per sample, frequency × CPUs a second — with a margin, so
	 * a small machine does not preallocate for a big one */
	sampler_size_maps(s, opts->frequency);
	s->sample->rodata->unwinder = opts->unwinder;
	sampler_pmu_configure(s, opts->pmu);
	/* 3. load */
	e = task_bpf__load(s->task);
	if (e) {
		snprintf(err, errlen, "loading bpf/task.bpf.c failed: %s", strerror(-e));
		goto fail;
	}
	e = bpf_map__reuse_fd(s->sample->maps.targets, bpf_map__fd(s->task->maps.targets));
	if (e) {
		snprintf(err, errlen, "sharing the target map failed: %s", strerror(-e));
		goto fail;
	}
	if (opts->targets_ready)
		opts->targets_ready(bpf_map__fd(s->task->maps.targets), opts->targets_ready_ctx);
	e = sample_bpf__load(s->sample);
	if (e) {
		snprintf(err, errlen, "loading bpf/sample.bpf.c failed: %s", strerror(-e));
		goto fail;
	}
	/* 4. attach */
	e = task_bpf__attach(s->task);
	if (e) {
		snprintf(err, errlen, "attaching the task tracepoints failed: %s", strerror(-e));
		goto fail;
	}
	s->task_events = ring_buffer__new(bpf_map__fd(s->task->maps.task_events),
					  task_event_dispatch, s, NULL);
	if (!s->task_events) {
		e = -errno;
		snprintf(err, errlen, "opening the task ring buffer failed: %s", strerror(-e));
		goto fail;
	}
	if (opts->netns_only) {
		e = sampler_set_netns_only(s, 1);
		if (e) {
			snprintf(err, errlen, "reading this process' network namespace failed: %s",
				 strerror(-e));
			goto fail;
		}
	}
	e = sampler_open_events(s, opts->frequency, err, errlen);
	e = e ?: sampler_pmu_open(s, err, errlen);
	if (e)
		goto fail;
	if (!s->n_events) {
		e = -ENODEV;
		snprintf(err, errlen, "no online CPU accepted a sampling event");
		goto fail;
	}
	return s;
fail:
	sampler__free(s);
	errno = -e;
	return NULL;
}

void sampler__free(struct sampler *s)
{
	int cpu;

	if (!s)
		return;
	for (cpu = 0; s->links && cpu < s->ncpu; cpu++)
		bpf_link__destroy(s->links[cpu]);
	for (cpu = 0; s->perf_fds && cpu < s->ncpu; cpu++)
		if (s->perf_fds[cpu] >= 0)
			close(s->perf_fds[cpu]);
	sampler_pmu_close(s);
	ring_buffer__free(s->task_events);
	sample_bpf__destroy(s->sample);
	task_bpf__destroy(s->task);
	free(s->links);
	free(s->perf_fds);
	free(s->keys);
	free(s);
}

int sampler_targets_fd(const struct sampler *s)
{
	return bpf_map__fd(s->task->maps.targets);
}

int sampler_cpus(const struct sampler *s)
{
	return s->n_events;
}

int sampler_set_active(struct sampler *s, int on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
	int cpu, err = 0;

	/* the counting events first on, last off: every sample reads them */
	if (on)
		err = sampler_pmu_set_active(s, 1);
	for (cpu = 0; cpu < s->ncpu; cpu++)
		if (s->perf_fds[cpu] >= 0 && ioctl(s->perf_fds[cpu], req, 0) && !err)
			err = -errno;
	if (!on) {
		int e = sampler_pmu_set_active(s, 0);

		err = err ?: e;
	}
	if (!err)
		s->active = !!on;
	return err;
}

int sampler_active(const struct sampler *s)
{
	return s->active;
}

int sampler_task_events_fd(const struct sampler *s)
{
	return ring_buffer__epoll_fd(s->task_events);
}

int sampler_poll_task_events(struct sampler *s, sampler_task_event_fn fn, void *ctx)
{
	int err;

	s->task_event_fn = fn;
	s->task_event_ctx = ctx;
	err = ring_buffer__consume(s->task_events);
	return err < 0 ? err : 0;
}

static int sampler_collect_keys(struct sampler *s, int map_fd, size_t *n)
{
	struct sample_key *prev = NULL;

	*n = 0;
	for (;;) {
		if (*n == s->cap_keys) {
			size_t cap = s->cap_keys ? s->cap_keys * 2 : 1024;
			struct sample_key *keys = realloc(s->keys, cap * sizeof(*keys));

			if (!keys)
				return -ENOMEM;
			s->keys = keys;
			s->cap_keys = cap;
			prev = *n ? &s->keys[*n - 1] : NULL;
		}
		if (bpf_map_get_next_key(map_fd, prev, &s->keys[*n]))
			return errno == ENOENT ? 0 : -errno;
		prev = &s->keys[*n];
		(*n)++;
	}
}

/* one pass over the ids, then the deletes: a walk restarted after each
 * delete would cost the map's size per stack */
static void sampler_empty_stacks(int stacks_fd)
{
	__u64 *ids = NULL, *grown, id, last;
	size_t n = 0, cap = 0, i;

	while (!bpf_map_get_next_key(stacks_fd, n ? &last : NULL, &id)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			grown = realloc(ids, cap * sizeof(*ids));
			if (!grown)
				break; /* the rest waits for the next drain */
			ids = grown;
		}
		ids[n++] = id;
		last = id;
	}
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(stacks_fd, &ids[i]);
	free(ids);
}

int sampler_wait_slot_quiet(const struct sample_inflight *inflight, int n, unsigned int slot,
			    uint64_t timeout_ns)
{
	const struct timespec pause = { .tv_nsec = 20 * 1000 };
	uint64_t deadline = clock_monotonic_ns() + timeout_ns, sum;
	int i, round;

	for (round = 0;; round++) {
		sum = 0;
		for (i = 0; i < n; i++)
			sum += __atomic_load_n(&inflight[i].count[slot & 1], __ATOMIC_ACQUIRE);
		if (!sum)
			return 0;
		if (clock_monotonic_ns() >= deadline)
			return -ETIMEDOUT;
		/* a program runs for microseconds: yield first, then sleep */
		if (round < 16)
			sched_yield();
		else
			nanosleep(&pause, NULL);
	}
}

/* Makes the other pair active and waits for the programs still writing
 * to the old one (bpf/sample.h): the old slot. */
static __u32 sampler_flip(struct sampler *s)
{
	__u32 old = s->sample->bss->active_slot & 1;
	int n = s->ncpu < MAX_SAMPLE_CPUS ? s->ncpu : MAX_SAMPLE_CPUS;

	/* a sequentially consistent store, then the counts are read: a
	 * program either sees the new slot or is seen here */
	__atomic_store_n(&s->sample->bss->active_slot, !old, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (sampler_wait_slot_quiet(s->sample->bss->sample_inflight, n, old,
				    SAMPLER_FLIP_TIMEOUT_NS)) {
		s->flip_timeouts++;
		pr_warn("sampling programs still inside sample map %u after %llu ms: draining it "
			"anyway, samples they add now are lost",
			old, SAMPLER_FLIP_TIMEOUT_NS / 1000000);
	}
	return old;
}

/* one drained key with its Stack, or NULL when the Stack was lost */
static int sampler_deliver(int stacks_fd, const struct sample_key *key,
			   const struct sample_value *value, sampler_sample_fn fn, void *ctx)
{
	struct stack_value stack;

	if (key->stack && !bpf_map_lookup_elem(stacks_fd, &key->stack, &stack) &&
	    (uint32_t)stack.n_kernel + stack.n_user <= MAX_FRAMES &&
	    stack.n_kernel <= MAX_KERNEL_FRAMES && stack.n_user <= MAX_USER_FRAMES)
		return fn(key, value, &stack, ctx);
	return fn(key, value, NULL, ctx);
}

int sampler_drain(struct sampler *s, sampler_sample_fn fn, void *ctx)
{
	struct sample_value value;
	int map_fd, stacks_fd, err = 0;
	__u32 drained_slot;
	size_t i, n;

	drained_slot = sampler_flip(s);
	map_fd = bpf_map__fd(drained_slot ? s->sample->maps.samples1 : s->sample->maps.samples0);
	stacks_fd = bpf_map__fd(drained_slot ? s->sample->maps.stacks1 : s->sample->maps.stacks0);

	/* a failure here deletes nothing: the keys wait for the next drain
	 * of this pair */
	err = sampler_collect_keys(s, map_fd, &n);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(map_fd, &s->keys[i], &value))
			continue;
		if (!err)
			err = sampler_deliver(stacks_fd, &s->keys[i], &value, fn, ctx);
		/* refused by fn, or after it refused one: deleted below, lost */
		if (err)
			s->drain_lost += value.samples;
	}
	/* empty the pair: nothing writes to it until the next flip, and a
	 * stack map never emptied fills for good in a long Run — including
	 * the stacks of samples the full sample map did not keep */
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(map_fd, &s->keys[i]);
	sampler_empty_stacks(stacks_fd);
	return err;
}

void sampler_read_counters(const struct sampler *s, struct sampler_counters *out)
{
	const __u64 *sc = s->sample->bss->sample_counters;
	const __u64 *tc = s->task->bss->task_counters;

	out->seen = sc[SAMPLE_SEEN];
	out->drop_keys = sc[SAMPLE_DROP_KEYS];
	out->drop_stacks = sc[SAMPLE_DROP_STACKS];
	out->drop_collisions = sc[SAMPLE_DROP_COLLISIONS];
	out->stack_collisions = sc[SAMPLE_STACK_COLLISIONS];
	out->kernel_truncated = sc[SAMPLE_KERNEL_TRUNCATED];
	out->pmu_unread = sc[SAMPLE_PMU_UNREAD];
	memcpy(out->unwind_end, &sc[SAMPLE_UNWIND_END], sizeof(out->unwind_end));
	out->drop_targets = tc[TASK_DROP_TARGETS];
	out->drop_events = tc[TASK_DROP_EVENTS];
	out->drop_totals = tc[TASK_DROP_TOTALS];
	out->drain_lost = s->drain_lost + sc[SAMPLE_DROP_FLIP];
	out->flip_timeouts = s->flip_timeouts;
	out->skipped_credentials = sc[SAMPLE_SKIP_CREDENTIALS];
	out->adopted = tc[TASK_ADOPTED];
	out->left = tc[TASK_LEFT];
}

int sampler_unwind_maps(const struct sampler *s, struct sampler_unwind_maps *out)
{
	out->rules_fd = bpf_map__fd(s->sample->maps.unwind_rules);
	out->rows_fd = bpf_map__fd(s->sample->maps.unwind_rows);
	out->tables_fd = bpf_map__fd(s->sample->maps.unwind_tables);
	out->procs_fd = bpf_map__fd(s->sample->maps.unwind_procs);
	out->max_rules = bpf_map__max_entries(s->sample->maps.unwind_rules);
	out->max_rows = bpf_map__max_entries(s->sample->maps.unwind_rows);
	out->max_tables = bpf_map__max_entries(s->sample->maps.unwind_tables);
	return s->sample->rodata->unwinder == SAMPLE_UNWINDER_TABLES ? 0 : -ENOENT;
}
