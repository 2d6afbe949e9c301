/* mpi_probes — see mpi_probes.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/elf/elf_file.h"
#include "userspace/log/log.h"
#include "bpf/mpi.skel.h"

/* where each function's count, datatype and peer arguments are (1-based) */
struct mpi_function_layout {
	struct mpi_function_info info;
	int count_arg, type_arg, peer_arg;
};

#define FN(id, name, sends, vector, buffer, c, t, p) [id] = { { name, sends, vector, buffer }, c, t, p }
static const struct mpi_function_layout layouts[MPI_FUNCTIONS] = {
	FN(MPI_FN_INIT, "MPI_Init", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_INIT_THREAD, "MPI_Init_thread", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_FINALIZE, "MPI_Finalize", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_SEND, "MPI_Send", 1, 0, 1, 2, 3, 4),
	FN(MPI_FN_RECV, "MPI_Recv", 0, 0, 1, 2, 3, 4),
	FN(MPI_FN_ISEND, "MPI_Isend", 1, 0, 1, 2, 3, 4),
	FN(MPI_FN_IRECV, "MPI_Irecv", 0, 0, 1, 2, 3, 4),
	FN(MPI_FN_SENDRECV, "MPI_Sendrecv", 1, 0, 1, 2, 3, 4),
	FN(MPI_FN_WAIT, "MPI_Wait", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_WAITALL, "MPI_Waitall", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_WAITANY, "MPI_Waitany", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_WAITSOME, "MPI_Waitsome", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_TEST, "MPI_Test", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_TESTALL, "MPI_Testall", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_PROBE, "MPI_Probe", 0, 0, 0, 0, 0, 1),
	FN(MPI_FN_IPROBE, "MPI_Iprobe", 0, 0, 0, 0, 0, 1),
	FN(MPI_FN_BARRIER, "MPI_Barrier", 0, 0, 0, 0, 0, 0),
	FN(MPI_FN_BCAST, "MPI_Bcast", 1, 0, 1, 2, 3, 4),
	FN(MPI_FN_REDUCE, "MPI_Reduce", 1, 0, 1, 3, 4, 0),
	FN(MPI_FN_ALLREDUCE, "MPI_Allreduce", 1, 0, 1, 3, 4, 0),
	FN(MPI_FN_ALLGATHER, "MPI_Allgather", 1, 0, 1, 2, 3, 0),
	FN(MPI_FN_ALLGATHERV, "MPI_Allgatherv", 1, 0, 1, 2, 3, 0),
	FN(MPI_FN_ALLTOALL, "MPI_Alltoall", 1, 0, 1, 2, 3, 0),
	FN(MPI_FN_ALLTOALLV, "MPI_Alltoallv", 1, 1, 1, 0, 4, 0),
	FN(MPI_FN_GATHER, "MPI_Gather", 1, 0, 1, 2, 3, 0),
	FN(MPI_FN_GATHERV, "MPI_Gatherv", 1, 0, 1, 2, 3, 0),
	FN(MPI_FN_SCATTER, "MPI_Scatter", 1, 0, 1, 2, 3, 0),
	FN(MPI_FN_SCATTERV, "MPI_Scatterv", 1, 1, 1, 0, 4, 0),
	FN(MPI_FN_REDUCE_SCATTER, "MPI_Reduce_scatter", 1, 1, 1, 0, 4, 0),
};
#undef FN

struct probed_library {
	const struct module *module; /* owned by the module table */
};

/* BPF_LINK_CREATE for uprobe_multi (kernel 6.6+), which this libbpf and
 * these uapi headers predate: one link probes every function of a
 * library, and removing it waits for one grace period instead of one per
 * probe (seconds for the ~60 probes of an MPI library). */
#define TRACE_UPROBE_MULTI 48 /* enum bpf_attach_type BPF_TRACE_UPROBE_MULTI */
#define UPROBE_MULTI_RETURN 1u

struct uprobe_multi_link_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad;
};

struct mpi_probes {
	struct mpi_bpf *skel;
	int multi;          /* uprobe_multi links, else one perf event per probe */
	int *multi_fds;
	size_t n_multi_fds;
	struct ring_buffer *events;
	mpi_event_fn event_fn;
	void *event_ctx;
	struct probed_library *libraries;
	size_t n_libraries;
	struct bpf_link **links;
	size_t n_links, cap_links;
};

const struct mpi_function_info *mpi_function_info(unsigned int function)
{
	return function < MPI_FUNCTIONS ? &layouts[function].info : NULL;
}

static int mpi_event_dispatch(void *ctx, void *data, size_t size)
{
	struct mpi_probes *mp = ctx;

	if (size < sizeof(struct mpi_event) || !mp->event_fn)
		return 0;
	return mp->event_fn(data, mp->event_ctx);
}

static struct mpi_bpf *mpi_skel_load(int targets_fd, int events_enabled, int multi, char *err,
				     size_t errlen)
{
	struct mpi_bpf *skel;
	int e;

	/* 1. open */
	skel = mpi_bpf__open();
	if (!skel) {
		e = -errno;
		snprintf(err, errlen, "opening bpf/mpi.bpf.c failed: %s", strerror(-e));
		goto fail;
	}
	/* 2. configure */
	skel->rodata->mpi_events_enabled = !!events_enabled;
	if (!events_enabled)
		bpf_map__set_max_entries(skel->maps.mpi_events, 4096);
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.mpi_entry, TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.mpi_return, TRACE_UPROBE_MULTI);
	}
	e = bpf_map__reuse_fd(skel->maps.targets, targets_fd);
	if (e) {
		snprintf(err, errlen, "sharing the target map with the MPI probes failed: %s",
			 strerror(-e));
		goto fail;
	}
	/* 3. load; 4. attach happens per library, in mpi_probes_consider() */
	e = mpi_bpf__load(skel);
	if (e) {
		snprintf(err, errlen, "loading bpf/mpi.bpf.c failed: %s", strerror(-e));
		goto fail;
	}
	return skel;
fail:
	mpi_bpf__destroy(skel);
	errno = -e;
	return NULL;
}

struct mpi_probes *mpi_probes__new_attach(int targets_fd, int events_enabled,
					  enum mpi_attach attach, char *err, size_t errlen)
{
	struct mpi_probes *mp = calloc(1, sizeof(*mp));
	int e;

	if (!mp)
		return NULL;
	mp->multi = attach != MPI_ATTACH_PERF_EVENT;
	mp->skel = mpi_skel_load(targets_fd, events_enabled, mp->multi, err, errlen);
	if (!mp->skel && attach == MPI_ATTACH_AUTO) { /* before 6.6: one perf event per probe */
		mp->multi = 0;
		mp->skel = mpi_skel_load(targets_fd, events_enabled, 0, err, errlen);
	}
	if (!mp->skel) {
		e = -errno;
		goto fail;
	}
	mp->events = ring_buffer__new(bpf_map__fd(mp->skel->maps.mpi_events), mpi_event_dispatch,
				      mp, NULL);
	if (!mp->events) {
		e = -errno;
		snprintf(err, errlen, "opening the MPI event ring buffer failed: %s", strerror(-e));
		goto fail;
	}
	return mp;
fail:
	mpi_probes__free(mp);
	errno = -e;
	return NULL;
}

struct mpi_probes *mpi_probes__new(int targets_fd, int events_enabled, char *err, size_t errlen)
{
	return mpi_probes__new_attach(targets_fd, events_enabled, MPI_ATTACH_AUTO, err, errlen);
}

int mpi_probes_multi(const struct mpi_probes *mp)
{
	return mp->multi;
}

#define RELEASE_THREADS 16

struct release_share {
	char *items;
	size_t n, size;
	void (*release)(void *item);
};

static void *release_share_run(void *arg)
{
	struct release_share *share = arg;
	size_t i;

	for (i = 0; i < share->n; i++)
		share->release(share->items + i * share->size);
	return NULL;
}

/* Removing a uprobe waits for a grace period (tens of ms each here, per
 * perf-event probe as per uprobe_multi link): releasing from several
 * threads lets the waits overlap. release gets a pointer to each item. */
static void release_all(void *items, size_t n, size_t size, void (*release)(void *item))
{
	struct release_share shares[RELEASE_THREADS];
	pthread_t threads[RELEASE_THREADS];
	size_t per = (n + RELEASE_THREADS - 1) / RELEASE_THREADS, i;
	int started[RELEASE_THREADS] = {};

	for (i = 0; i < RELEASE_THREADS && per; i++) {
		size_t first = i * per < n ? i * per : n;

		shares[i] = (struct release_share){ (char *)items + first * size,
						    n - first < per ? n - first : per, size, release };
		started[i] = !pthread_create(&threads[i], NULL, release_share_run, &shares[i]);
		if (!started[i])
			release_share_run(&shares[i]);
	}
	for (i = 0; i < RELEASE_THREADS; i++)
		if (started[i])
			pthread_join(threads[i], NULL);
}

static void release_link(void *item)
{
	bpf_link__destroy(*(struct bpf_link **)item);
}

static void release_fd(void *item)
{
	close(*(int *)item);
}

void mpi_probes__free(struct mpi_probes *mp)
{
	if (!mp)
		return;
	release_all(mp->multi_fds, mp->n_multi_fds, sizeof(*mp->multi_fds), release_fd);
	free(mp->multi_fds);
	release_all(mp->links, mp->n_links, sizeof(*mp->links), release_link);
	free(mp->links);
	free(mp->libraries);
	ring_buffer__free(mp->events);
	mpi_bpf__destroy(mp->skel);
	free(mp);
}

static int keep_link(struct mpi_probes *mp, struct bpf_link *link)
{
	if (mp->n_links == mp->cap_links) {
		size_t cap = mp->cap_links ? mp->cap_links * 2 : 64;
		struct bpf_link **links = realloc(mp->links, cap * sizeof(*links));

		if (!links)
			return -ENOMEM;
		mp->links = links;
		mp->cap_links = cap;
	}
	mp->links[mp->n_links++] = link;
	return 0;
}

/* the address of PMPI_name, else MPI_name */
static int function_vaddr(const struct elf_file *elf, const char *name, uint64_t *vaddr)
{
	struct elf_symbol sym;
	char pname[64];

	snprintf(pname, sizeof(pname), "P%s", name);
	if (!elf_file__lookup_name(elf, pname, &sym) || !elf_file__lookup_name(elf, name, &sym)) {
		*vaddr = sym.start;
		return 0;
	}
	return -ENOENT;
}

static int attach_function(struct mpi_probes *mp, const struct module *m, int fn, uint64_t offset)
{
	const struct mpi_function_layout *l = &layouts[fn];
	LIBBPF_OPTS(bpf_uprobe_opts, entry_opts,
		    .bpf_cookie = MPI_COOKIE(fn, l->count_arg, l->type_arg, l->peer_arg));
	LIBBPF_OPTS(bpf_uprobe_opts, return_opts, .retprobe = true);
	struct bpf_link *link;
	int err;

	link = bpf_program__attach_uprobe_opts(mp->skel->progs.mpi_entry, -1, m->path, offset,
					       &entry_opts);
	if (!link)
		return -errno;
	err = keep_link(mp, link);
	if (err) {
		bpf_link__destroy(link);
		return err;
	}
	link = bpf_program__attach_uprobe_opts(mp->skel->progs.mpi_return, -1, m->path, offset,
					       &return_opts);
	if (!link)
		return -errno;
	err = keep_link(mp, link);
	if (err)
		bpf_link__destroy(link);
	return err;
}

static int attach_multi_one(struct mpi_probes *mp, struct bpf_program *prog, const char *path,
			    const uint64_t *offsets, const uint64_t *cookies, size_t n,
			    unsigned int flags)
{
	struct uprobe_multi_link_attr attr = {
		.prog_fd = (__u32)bpf_program__fd(prog),
		.attach_type = TRACE_UPROBE_MULTI,
		.path = (__u64)(uintptr_t)path,
		.offsets = (__u64)(uintptr_t)offsets,
		.cookies = (__u64)(uintptr_t)cookies,
		.cnt = (__u32)n,
		.multi_flags = flags,
	};
	int *fds, fd;

	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	fds = realloc(mp->multi_fds, (mp->n_multi_fds + 1) * sizeof(*fds));
	if (!fds) {
		close(fd);
		return -ENOMEM;
	}
	mp->multi_fds = fds;
	mp->multi_fds[mp->n_multi_fds++] = fd;
	return 0;
}

/* every function of one library: one entry link and one return link */
static int attach_multi(struct mpi_probes *mp, const struct module *m, const int *fns,
			const uint64_t *offsets, size_t n)
{
	uint64_t cookies[MPI_FUNCTIONS];
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		const struct mpi_function_layout *l = &layouts[fns[i]];

		cookies[i] = MPI_COOKIE(fns[i], l->count_arg, l->type_arg, l->peer_arg);
	}
	err = attach_multi_one(mp, mp->skel->progs.mpi_entry, m->path, offsets, cookies, n, 0);
	return err ?: attach_multi_one(mp, mp->skel->progs.mpi_return, m->path, offsets, cookies,
					n, UPROBE_MULTI_RETURN);
}

int mpi_probes_consider(struct mpi_probes *mp, const struct module *m, char *err, size_t errlen)
{
	uint64_t vaddrs[MPI_FUNCTIONS], offsets[MPI_FUNCTIONS];
	int fns[MPI_FUNCTIONS];
	struct probed_library *libs;
	struct elf_symbol sym;
	int fn, other, e = 0;
	size_t i, n = 0;

	if (!m->elf || elf_file__lookup_name(m->elf, "MPI_Init", &sym))
		return 0;
	for (i = 0; i < mp->n_libraries; i++)
		if (mp->libraries[i].module == m)
			return 0;
	libs = realloc(mp->libraries, (mp->n_libraries + 1) * sizeof(*libs));
	if (!libs)
		return -ENOMEM;
	mp->libraries = libs;
	libs[mp->n_libraries].module = m;
	mp->n_libraries++;

	for (fn = 0; fn < MPI_FUNCTIONS; fn++) {
		if (function_vaddr(m->elf, layouts[fn].info.name, &vaddrs[fn])) {
			vaddrs[fn] = 0;
			continue;
		}
		/* one probe per address */
		for (other = 0; other < fn; other++)
			if (vaddrs[other] == vaddrs[fn])
				break;
		if (other < fn)
			continue;
		e = elf_file__vaddr_to_offset(m->elf, vaddrs[fn], &offsets[n]);
		if (!e && !mp->multi)
			e = attach_function(mp, m, fn, offsets[n]);
		if (e) {
			snprintf(err, errlen, "probing %s in '%s' failed: %s", layouts[fn].info.name,
				 m->path, strerror(-e));
			return e;
		}
		fns[n++] = fn;
	}
	if (mp->multi && n) {
		e = attach_multi(mp, m, fns, offsets, n);
		if (e) {
			snprintf(err, errlen, "probing the MPI functions of '%s' failed: %s", m->path,
				 strerror(-e));
			return e;
		}
	}
	pr_info("probing %zu MPI functions in '%s'%s", n, m->path,
		mp->multi ? " (uprobe_multi)" : "");
	return 1;
}

int mpi_probes_libraries(const struct mpi_probes *mp)
{
	return (int)mp->n_libraries;
}

const struct module *mpi_probes_library(const struct mpi_probes *mp, int i)
{
	return i >= 0 && (size_t)i < mp->n_libraries ? mp->libraries[i].module : NULL;
}

int mpi_probes_for_each_site(struct mpi_probes *mp, mpi_site_fn fn, void *ctx)
{
	int fd = bpf_map__fd(mp->skel->maps.mpi_sites);
	struct mpi_site_key key, next, *prev = NULL;
	struct mpi_site_value value;
	int err;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &value))
			continue;
		err = fn(&key, &value, ctx);
		if (err)
			return err;
	}
	return 0;
}

int mpi_probes_process(struct mpi_probes *mp, pid_t tgid, struct mpi_process *out)
{
	__u32 key = (__u32)tgid;

	if (bpf_map_lookup_elem(bpf_map__fd(mp->skel->maps.mpi_processes), &key, out))
		return -ENOENT;
	return 0;
}

/* Calls fn(fd, key) for every key of map fd: the next key is read before
 * fn runs, so fn may delete the one it gets. */
static void for_each_key(int fd, void *key, void *next,
			 void (*fn)(int fd, const void *key, void *ctx), void *ctx, size_t key_size)
{
	int have = 0;

	while (!bpf_map_get_next_key(fd, have ? key : NULL, next)) {
		if (have)
			fn(fd, key, ctx);
		memcpy(key, next, key_size);
		have = 1;
	}
	if (have)
		fn(fd, key, ctx);
}

static void forget_site(int fd, const void *key, void *ctx)
{
	if (((const struct mpi_site_key *)key)->tgid == *(const __u32 *)ctx)
		bpf_map_delete_elem(fd, key);
}

struct call_sweep {
	__u32 tgid;
	int delete, count;
};

/* a thread that died inside an MPI call (a killed rank) leaves its state */
static void sweep_call(int fd, const void *key, void *ctx)
{
	struct call_sweep *sw = ctx;
	struct mpi_call_state st;

	if (bpf_map_lookup_elem(fd, key, &st) || st.tgid != sw->tgid || !st.depth)
		return;
	sw->count++;
	if (sw->delete)
		bpf_map_delete_elem(fd, key);
}

int mpi_probes_in_flight(const struct mpi_probes *mp, pid_t tgid)
{
	struct call_sweep sw = { .tgid = (__u32)tgid };
	__u32 key, next;

	for_each_key(bpf_map__fd(mp->skel->maps.mpi_calls), &key, &next, sweep_call, &sw,
		     sizeof(key));
	return sw.count;
}

void mpi_probes_forget(struct mpi_probes *mp, pid_t tgid)
{
	struct mpi_site_key key, next;
	struct call_sweep sw = { .tgid = (__u32)tgid, .delete = 1 };
	__u32 pkey = (__u32)tgid, tkey, tnext;

	for_each_key(bpf_map__fd(mp->skel->maps.mpi_sites), &key, &next, forget_site, &pkey,
		     sizeof(key));
	for_each_key(bpf_map__fd(mp->skel->maps.mpi_calls), &tkey, &tnext, sweep_call, &sw,
		     sizeof(tkey));
	bpf_map_delete_elem(bpf_map__fd(mp->skel->maps.mpi_processes), &pkey);
}

int mpi_probes_events_fd(const struct mpi_probes *mp)
{
	return ring_buffer__epoll_fd(mp->events);
}

int mpi_probes_poll_events(struct mpi_probes *mp, mpi_event_fn fn, void *ctx)
{
	int err;

	mp->event_fn = fn;
	mp->event_ctx = ctx;
	err = ring_buffer__consume(mp->events);
	return err < 0 ? err : 0;
}

void mpi_probes_read_counters(const struct mpi_probes *mp, uint64_t out[MPI_COUNTERS])
{
	int i;

	for (i = 0; i < MPI_COUNTERS; i++)
		out[i] = mp->skel->bss->mpi_counters[i];
}
