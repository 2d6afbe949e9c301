/* mpi_probes — see mpi_probes.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "userspace/agent/map_walk.h"
#include "userspace/agent/mpi_budget.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/mpi_probes_internal.h"
#include "userspace/attribution/mpi_library.h"
#include "userspace/elf/elf_file.h"
#include "userspace/log/log.h"

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

const struct mpi_function_info *mpi_function_info(unsigned int function)
{
	return function < MPI_FUNCTIONS ? &layouts[function].info : NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
	uint64_t t0;
	int e;

	if (!mp)
		return NULL;
	mp->multi = attach != MPI_ATTACH_PERF_EVENT;
	mp->releaser = mpi_releaser__new();
	if (!mp->releaser) {
		e = -ENOMEM;
		snprintf(err, errlen, "no memory for the MPI probes");
		goto fail;
	}
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
	/* before any application runs: reported with every rank it costs */
	t0 = now_ns();
	if (mpi_probes_calibrate(mp))
		pr_info("MPI probe cost not measured: %s", mp->cost_why);
	else
		pr_info("MPI probe cost: %llu ns per call, %llu ns of it inside the call's timed "
			"window (calibrated in %.1f ms)",
			(unsigned long long)mp->cost_ns, (unsigned long long)mp->cost_in_window_ns,
			(double)(now_ns() - t0) / 1e6);
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

void mpi_probes__free(struct mpi_probes *mp)
{
	if (!mp)
		return;
	mpi_probes_release_all(mp);
	free(mp->libraries);
	free(mp->budget);
	ring_buffer__free(mp->events);
	mpi_bpf__destroy(mp->skel);
	free(mp);
}

/* Which function of the table the symbol name spells, into *fn, and its
 * binding (mpi_library_function_spelled: MPI_Send, PMPI_Send a C function;
 * mpi_send_, MPI_SEND, mpi_send_f08_, pmpi_send__... its Fortran binding),
 * 0 none. MPICH's mpi_send_f08ts_large_ (MPI_Count arguments) reaches
 * MPI_Send_c, not probed. */
static enum mpi_binding function_spelled(const char *name, int *fn)
{
	char std[64];
	enum mpi_binding binding;

	if (mpi_library_function_spelled(name, std, sizeof(std), &binding))
		return 0;
	for (*fn = 0; *fn < MPI_FUNCTIONS; (*fn)++)
		if (!strcmp(layouts[*fn].info.name, std))
			return binding;
	return 0;
}

struct locate {
	struct probed_library *lib;
	uint64_t vaddrs[2 * MPI_PROBE_POINTS];
	size_t n;
	int kind; /* MPI_LIBRARY_* seen */
	int err;
	char *errbuf;
	size_t errlen;
};

/* one function symbol of the library: a probe point when it spells a
 * function of the table at an address not probed yet */
static int locate_symbol(const struct elf_symbol *sym, void *ctx)
{
	struct locate *lc = ctx;
	struct probed_library *lib = lc->lib;
	struct probe_points *pts;
	enum mpi_binding how;
	int fn;
	size_t i;

	how = function_spelled(sym->name, &fn);
	if (!how)
		return 0;
	if (how == MPI_BINDING_C && !strcmp(sym->name, "MPI_Init"))
		lc->kind |= MPI_LIBRARY_C;
	if (how == MPI_BINDING_C && !strcmp(sym->name, "PMPI_Init"))
		lc->kind |= MPI_LIBRARY_IMPLEMENTATION;
	if (how == MPI_BINDING_FORTRAN && fn == MPI_FN_INIT)
		lc->kind |= MPI_LIBRARY_FORTRAN;
	for (i = 0; i < lc->n; i++)
		if (lc->vaddrs[i] == sym->start)
			return 0;
	pts = fn == MPI_FN_INIT || fn == MPI_FN_INIT_THREAD ? &lib->once
	      : fn == MPI_FN_FINALIZE			  ? &lib->life
							  : &lib->each;
	if (pts->n == MPI_PROBE_POINTS || lc->n == sizeof(lc->vaddrs) / sizeof(lc->vaddrs[0]))
		return 0; /* more spellings at distinct addresses than any library has */
	lc->err = elf_file__vaddr_to_offset(lib->module->elf, sym->start, &pts->offsets[pts->n]);
	if (lc->err) {
		snprintf(lc->errbuf, lc->errlen, "locating %s in '%s' failed: %s", sym->name,
			 lib->module->path, strerror(-lc->err));
		return lc->err;
	}
	pts->fns[pts->n] = fn;
	pts->cookies[pts->n] = how == MPI_BINDING_FORTRAN ? MPI_COOKIE_FORTRAN_BINDING(fn)
					: MPI_COOKIE(fn, layouts[fn].count_arg,
						     layouts[fn].type_arg, layouts[fn].peer_arg);
	pts->n++;
	lc->vaddrs[lc->n++] = sym->start;
	return 0;
}

/* Where m's functions are, in one walk of its symbols: one probe per
 * address (MPI_X and PMPI_X at one address share it, as do the Fortran
 * spellings of one binding); MPI_Init and MPI_Init_thread apart. 0 and
 * lib->kind (0: not an MPI library), or -errno (err says why). */
static int library_locate(struct probed_library *lib, const struct module *m, char *err,
			  size_t errlen)
{
	struct locate *lc = calloc(1, sizeof(*lc));
	int e;

	if (!lc)
		return -ENOMEM;
	memset(lib, 0, sizeof(*lib));
	lib->module = m;
	lib->wide = UPROBE_SET_EMPTY;
	*lc = (struct locate){.lib = lib, .errbuf = err, .errlen = errlen};
	e = elf_file__for_each_function(m->elf, locate_symbol, lc);
	/* a C library is one that exports MPI_Init; a Fortran binding library
	 * one that exports a Fortran spelling of it */
	lib->kind = lc->kind & (MPI_LIBRARY_C | MPI_LIBRARY_FORTRAN) ? lc->kind : 0;
	free(lc);
	return e;
}

int mpi_probes_consider(struct mpi_probes *mp, const struct module *m, char *err, size_t errlen)
{
	struct probed_library *libs, *lib;
	size_t i;
	int e;

	if (!m->elf)
		return 0;
	for (i = 0; i < mp->n_libraries; i++)
		if (mp->libraries[i].module == m)
			return 0;
	libs = realloc(mp->libraries, (mp->n_libraries + 1) * sizeof(*libs));
	if (!libs)
		return -ENOMEM;
	mp->libraries = libs;
	lib = &libs[mp->n_libraries];
	e = library_locate(lib, m, err, errlen);
	if (e)
		return e;
	if (!lib->kind)
		return 0;
	e = mpi_probes_attach_wide(mp, lib);
	if (e) {
		snprintf(err, errlen, "probing MPI_Init in '%s' failed: %s", m->path, strerror(-e));
		return e;
	}
	mp->n_libraries++;
	pr_info("MPI %s '%s': MPI_Init probed in every process, %zu functions in each Target "
		"process%s",
		lib->kind & MPI_LIBRARY_C ? "library" : "Fortran bindings", m->path,
		lib->each.n + lib->life.n,
		mp->multi ? " (uprobe_multi)" : "");
	/* the processes probed already get this one too */
	e = mpi_probes_attach_new_library(mp);
	if (e) {
		snprintf(err, errlen, "probing the MPI functions of '%s' failed: %s", m->path,
			 strerror(-e));
		return e;
	}
	return 1;
}

/* the i-th library that implements MPI (exports PMPI_Init): its handles
 * are the ones a C call passes; NULL past the last */
static const struct probed_library *implementation(const struct mpi_probes *mp, int i)
{
	size_t k;

	for (k = 0; k < mp->n_libraries; k++)
		if ((mp->libraries[k].kind & MPI_LIBRARY_IMPLEMENTATION) && i-- == 0)
			return &mp->libraries[k];
	return NULL;
}

int mpi_probes_libraries(const struct mpi_probes *mp)
{
	int n = 0;

	while (implementation(mp, n))
		n++;
	return n;
}

const struct module *mpi_probes_library(const struct mpi_probes *mp, int i)
{
	const struct probed_library *lib = i >= 0 ? implementation(mp, i) : NULL;

	return lib ? lib->module : NULL;
}

int mpi_probes_all_libraries(const struct mpi_probes *mp)
{
	return (int)mp->n_libraries;
}

struct site_walk {
	mpi_site_fn fn;
	void *ctx;
};

static int site_entry(const void *key, const void *value, void *ctx)
{
	struct site_walk *w = ctx;

	return w->fn(key, value, w->ctx);
}

/* a full map (MAX_MPI_SITES) is read at every publish: in batches */
int mpi_probes_for_each_site(struct mpi_probes *mp, mpi_site_fn fn, void *ctx)
{
	struct site_walk w = {fn, ctx};

	return map_walk(bpf_map__fd(mp->skel->maps.mpi_sites), sizeof(struct mpi_site_key),
			sizeof(struct mpi_site_value), site_entry, &w);
}

int mpi_probes_sites_fd(const struct mpi_probes *mp)
{
	return bpf_map__fd(mp->skel->maps.mpi_sites);
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
	mpi_budget_forget(mp, tgid);
}

int mpi_probes_set_events(struct mpi_probes *mp, uint32_t target_id, int on)
{
	int fd = bpf_map__fd(mp->skel->maps.mpi_event_targets);
	__u8 one = 1;

	if (!mp->skel->rodata->mpi_events_enabled)
		return -EINVAL;
	mp->skel->bss->mpi_events_per_target = 1;
	if (on && bpf_map_update_elem(fd, &target_id, &one, BPF_ANY))
		return errno == E2BIG ? -ENOSPC : -errno;
	if (!on && bpf_map_delete_elem(fd, &target_id) && errno != ENOENT)
		return -errno;
	return 0;
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

int mpi_probes_entry_runs(const struct mpi_probes *mp, uint64_t *runs)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(mp->skel->progs.mpi_entry), &info, &len))
		return -errno;
	*runs = info.run_cnt;
	return 0;
}

void mpi_probes_read_counters(const struct mpi_probes *mp, uint64_t out[MPI_COUNTERS])
{
	int i;

	for (i = 0; i < MPI_COUNTERS; i++)
		out[i] = mp->skel->bss->mpi_counters[i];
}
