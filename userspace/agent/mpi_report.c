/* mpi_report — see mpi_report.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/batch.h"
#include "userspace/agent/mpi_budget.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_datatypes.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/mpi_report.h"
#include "userspace/elf/elf_file.h"

static const char *const reason_derived = "derived datatype: its size is not read";
static const char *const reason_vector = "vector counts are not read";
static const char *const reason_no_library = "no MPI library known in this process";

int64_t mpi_datatype_bytes(struct mpi_probes *mp, struct module_table *table, pid_t tgid,
			   uint64_t handle, const char **reason)
{
	const struct module *lib;
	struct elf_symbol sym;
	uint64_t bias;
	int i, size;

	for (i = 0; (lib = mpi_probes_library(mp, i)); i++) {
		if (module_table_bias(table, tgid, lib, &bias))
			continue;
		if (!elf_file__lookup_name(lib->elf, "ompi_mpi_double", &sym)) {
			/* Open MPI: the handle is the datatype object's address, in
			 * libmpi or, copy-relocated, in a PIE executable */
			const char *name;

			if (!module_table_find_object(table, tgid, handle, &name)) {
				size = mpi_datatype_size_openmpi(name);
				if (size >= 0)
					return size;
			}
		} else {
			/* MPICH family: an int handle, upper register bits undefined */
			size = mpi_datatype_size_mpich((uint32_t)handle);
			if (size >= 0)
				return size;
		}
		*reason = reason_derived;
		return -1;
	}
	*reason = reason_no_library;
	return -1;
}

struct site_total {
	pid_t tgid;
	unsigned int function;
	uint64_t call_site;
	uint64_t calls, total_ns, min_ns, max_ns, bytes;
	/* of those, counted in sampled windows (the cost budget) */
	uint64_t win_calls, win_total_ns, win_bytes;
	const char *bytes_reason;
};

/* the sites of one publish, found by (tgid, function, call site) through
 * an open-addressing index: a lookup per kernel entry, not a walk of up
 * to MAX_MPI_SITES sites */
struct collect_ctx {
	struct mpi_probes *mp;
	struct module_table *table;
	struct site_total *sites;
	size_t n, cap;
	uint32_t *index; /* n_index slots (a power of 2 >= 2 cap): site + 1, 0 empty */
	size_t n_index;
	int (*want)(void *ctx, pid_t tgid); /* NULL: every process */
	void *ctx;
};

static uint64_t site_hash(pid_t tgid, unsigned int function, uint64_t call_site)
{
	uint64_t h = call_site ^ ((uint64_t)(uint32_t)tgid << 32 | function);

	/* splitmix64's finalizer */
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static int site_same(const struct site_total *s, const struct mpi_site_key *key)
{
	return s->tgid == (pid_t)key->tgid && s->function == key->function &&
	       s->call_site == key->call_site;
}

/* the slot of key's site, or of the empty slot where it goes */
static uint32_t *site_slot(struct collect_ctx *cc, pid_t tgid, unsigned int function,
			   uint64_t call_site)
{
	size_t mask = cc->n_index - 1, i = site_hash(tgid, function, call_site) & mask;
	struct mpi_site_key key = {.tgid = (__u32)tgid, .function = function,
				   .call_site = call_site};

	while (cc->index[i] && !site_same(&cc->sites[cc->index[i] - 1], &key))
		i = (i + 1) & mask;
	return &cc->index[i];
}

/* room for one more site, the index twice as large as the sites */
static int sites_grow(struct collect_ctx *cc)
{
	size_t cap = cc->cap ? cc->cap * 2 : 64, i;
	struct site_total *sites;
	uint32_t *index;

	if (cap > UINT32_MAX / 2)
		return -ENOMEM;
	sites = realloc(cc->sites, cap * sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	cc->sites = sites;
	index = calloc(2 * cap, sizeof(*index));
	if (!index)
		return -ENOMEM;
	free(cc->index);
	cc->index = index;
	cc->n_index = 2 * cap;
	cc->cap = cap;
	for (i = 0; i < cc->n; i++)
		*site_slot(cc, sites[i].tgid, sites[i].function, sites[i].call_site) =
		    (uint32_t)(i + 1);
	return 0;
}

/* the site of key, created when new; NULL when out of memory */
static struct site_total *site_of(struct collect_ctx *cc, const struct mpi_site_key *key)
{
	uint32_t *slot;

	if (cc->n == cc->cap && sites_grow(cc))
		return NULL;
	slot = site_slot(cc, (pid_t)key->tgid, key->function, key->call_site);
	if (*slot)
		return &cc->sites[*slot - 1];
	cc->sites[cc->n] = (struct site_total){.tgid = (pid_t)key->tgid,
					       .function = key->function,
					       .call_site = key->call_site,
					       .min_ns = UINT64_MAX};
	*slot = (uint32_t)++cc->n;
	return &cc->sites[cc->n - 1];
}

static int collect_site(const struct mpi_site_key *key, const struct mpi_site_value *v, void *ctx)
{
	const struct mpi_function_info *info = mpi_function_info(key->function);
	struct collect_ctx *cc = ctx;
	const char *reason = NULL;
	struct site_total *s;
	int64_t size = 0;

	if (!info || !v->calls || (cc->want && !cc->want(cc->ctx, (pid_t)key->tgid)))
		return 0;
	s = site_of(cc, key);
	if (!s)
		return -ENOMEM;
	s->calls += v->calls;
	s->total_ns += v->total_ns;
	s->win_calls += v->win_calls;
	s->win_total_ns += v->win_total_ns;
	if (v->min_ns < s->min_ns)
		s->min_ns = v->min_ns;
	if (v->max_ns > s->max_ns)
		s->max_ns = v->max_ns;
	if (info->vector)
		reason = reason_vector;
	else if (info->has_buffer)
		size = mpi_datatype_bytes(cc->mp, cc->table, key->tgid, key->datatype, &reason);
	if (reason && !s->bytes_reason)
		s->bytes_reason = reason;
	else if (!reason) {
		s->bytes += v->count_sum * (uint64_t)size;
		s->win_bytes += v->win_count_sum * (uint64_t)size;
	}
	return 0;
}

/* by process, then as found: a process' lifetime once, at its first site */
static int site_cmp(const void *a, const void *b)
{
	const struct site_total *sa = a, *sb = b;

	if (sa->tgid != sb->tgid)
		return (sa->tgid > sb->tgid) - (sa->tgid < sb->tgid);
	if (sa->function != sb->function)
		return (sa->function > sb->function) - (sa->function < sb->function);
	return (sa->call_site > sb->call_site) - (sa->call_site < sb->call_site);
}

int mpi_report_sites(struct mpi_probes *mp, struct module_table *table, struct batch_builder *b,
		     mpi_locus_fn locus, uint64_t (*exit_ns)(void *ctx, pid_t tgid), void *ctx)
{
	return mpi_report_sites_of(mp, table, b, locus, exit_ns, NULL, ctx);
}

/* A site of a rank probed in sampled windows: its totals extrapolated
 * (MPI_Init and MPI_Finalize are probed on every call: measured) */
static void site_estimate(const struct site_total *s, const struct mpi_probing *pr,
			  struct batch_mpi_site *site)
{
	double est, err;

	if (!pr->sampled || s->function == MPI_FN_INIT || s->function == MPI_FN_INIT_THREAD ||
	    s->function == MPI_FN_FINALIZE)
		return;
	site->estimate = pr->estimate;
	if (!pr->scale_valid) {
		site->calls_error = NAN;
		site->total_ns_error = NAN;
		return;
	}
	mpi_estimate_total(&pr->scale, (double)(s->calls - s->win_calls), (double)s->win_calls,
			   (double)s->win_calls, 1, &est, &err);
	site->calls = (uint64_t)llround(est);
	site->calls_error = err;
	mpi_estimate_time(&pr->scale, (double)(s->total_ns - s->win_total_ns),
			   (double)s->win_total_ns, (double)s->win_calls,
			   s->calls ? (double)s->total_ns / (double)s->calls : 0, &est, &err);
	site->total_ns = (uint64_t)llround(est);
	site->total_ns_error = err;
	if (!s->bytes_reason) {
		mpi_estimate_total(&pr->scale, (double)(s->bytes - s->win_bytes),
				   (double)s->win_bytes, (double)s->win_calls, 0, &est, &err);
		site->bytes = (uint64_t)llround(est);
	}
}

/* One rank process: its lifetime and what the probes cost it. */
static int report_process(struct mpi_probes *mp, struct batch_builder *b,
			  const struct batch_locus *l, const struct mpi_process *proc,
			  const struct mpi_probing *pr, uint64_t last_seen_ns)
{
	struct batch_mpi_process bp = {
		.init_end_ns = proc->init_end_ns,
		.finalize_start_ns = proc->finalize_start_ns,
		.last_seen_ns = last_seen_ns,
		.probed_calls = proc->probed_calls,
		.probe_budget = NAN,
	};

	if (mpi_probes_cost(mp, &bp.probe_cost_ns, &bp.probe_cost_in_window_ns,
			    &bp.probe_cost_reason))
		bp.probe_cost_ns = bp.probe_cost_in_window_ns = 0;
	else
		bp.probe_cost_reason = NULL;
	if (pr) {
		bp.probe_budget = pr->budget;
		bp.probing = pr->probing;
	}
	return batch_builder_add_mpi_process(b, l, &bp);
}

int mpi_report_sites_of(struct mpi_probes *mp, struct module_table *table,
			struct batch_builder *b, mpi_locus_fn locus,
			uint64_t (*exit_ns)(void *ctx, pid_t tgid), int (*want)(void *ctx, pid_t tgid),
			void *ctx)
{
	struct collect_ctx cc = {.mp = mp, .table = table, .want = want, .ctx = ctx};
	struct batch_locus l;
	struct mpi_process proc;
	struct mpi_probing pr;
	int have_proc = 0, have_pr = 0;
	size_t i;
	int err;

	err = mpi_probes_for_each_site(mp, collect_site, &cc);
	free(cc.index);
	if (!err && cc.n)
		qsort(cc.sites, cc.n, sizeof(*cc.sites), site_cmp);
	for (i = 0; i < cc.n && !err; i++) {
		const struct site_total *s = &cc.sites[i];
		int first = i == 0 || cc.sites[i - 1].tgid != s->tgid;
		struct batch_mpi_site site;

		if (first) {
			have_proc = !mpi_probes_process(mp, s->tgid, &proc);
			have_pr = !mpi_probes_probing(mp, s->tgid,
						      have_proc ? proc.finalize_start_ns : 0, &pr);
		}
		site = (struct batch_mpi_site){
			.function = mpi_function_info(s->function)->name,
			.calls = s->calls,
			.total_ns = s->total_ns,
			.min_ns = s->min_ns,
			.max_ns = s->max_ns,
			.bytes = s->bytes,
			.bytes_reason = s->bytes_reason,
			.sends = mpi_function_info(s->function)->sends,
		};
		if (have_pr)
			site_estimate(s, &pr, &site);

		/* the call site is a return address: step back into the call */
		module_table_resolve(table, s->tgid, module_table_exec_seq(table, s->tgid),
				     s->call_site - 1, &site.module, &site.offset);
		locus(ctx, s->tgid, &l);
		err = batch_builder_add_mpi_site(b, &l, &site);
		if (err || !first || !have_proc)
			continue;
		err = report_process(mp, b, &l, &proc, have_pr ? &pr : NULL, exit_ns(ctx, s->tgid));
	}
	free(cc.sites);
	return err;
}

int mpi_report_event(struct mpi_probes *mp, struct module_table *table, struct batch_builder *b,
		     const struct mpi_event *e, mpi_locus_fn locus, void *ctx)
{
	const struct mpi_function_info *info = mpi_function_info(e->function);
	const char *reason = NULL;
	struct batch_locus l;
	int64_t size = 0;

	if (!info)
		return 0;
	if (info->vector)
		reason = reason_vector;
	else if (info->has_buffer)
		size = mpi_datatype_bytes(mp, table, e->tgid, e->datatype, &reason);
	locus(ctx, e->tgid, &l);
	return batch_builder_add_mpi_event(b, &l, info->name, e->start_ns, e->duration_ns, !reason,
					   reason ? 0 : e->count * (uint64_t)size, e->peer);
}
