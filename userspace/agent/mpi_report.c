/* mpi_report — see mpi_report.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/batch.h"
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
	const char *bytes_reason;
};

struct collect_ctx {
	struct mpi_probes *mp;
	struct module_table *table;
	struct site_total *sites;
	size_t n, cap;
};

static int collect_site(const struct mpi_site_key *key, const struct mpi_site_value *v, void *ctx)
{
	const struct mpi_function_info *info = mpi_function_info(key->function);
	struct collect_ctx *cc = ctx;
	struct site_total *s = NULL;
	const char *reason = NULL;
	int64_t size = 0;
	size_t i;

	if (!info || !v->calls)
		return 0;
	for (i = 0; i < cc->n; i++) {
		s = &cc->sites[i];
		if (s->tgid == (pid_t)key->tgid && s->function == key->function &&
		    s->call_site == key->call_site)
			break;
	}
	if (i == cc->n) {
		if (cc->n == cc->cap) {
			size_t cap = cc->cap ? cc->cap * 2 : 64;
			struct site_total *sites = realloc(cc->sites, cap * sizeof(*sites));

			if (!sites)
				return -ENOMEM;
			cc->sites = sites;
			cc->cap = cap;
		}
		s = &cc->sites[cc->n++];
		*s = (struct site_total){ .tgid = key->tgid, .function = key->function,
					  .call_site = key->call_site, .min_ns = UINT64_MAX };
	}
	s->calls += v->calls;
	s->total_ns += v->total_ns;
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
	else if (!reason)
		s->bytes += v->count_sum * (uint64_t)size;
	return 0;
}

static int seen_before(const struct site_total *sites, size_t n, pid_t tgid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (sites[i].tgid == tgid)
			return 1;
	return 0;
}

int mpi_report_sites(struct mpi_probes *mp, struct module_table *table, struct batch_builder *b,
		     mpi_locus_fn locus, uint64_t (*exit_ns)(void *ctx, pid_t tgid), void *ctx)
{
	struct collect_ctx cc = { .mp = mp, .table = table };
	struct batch_locus l;
	struct mpi_process proc;
	size_t i;
	int err;

	err = mpi_probes_for_each_site(mp, collect_site, &cc);
	for (i = 0; i < cc.n && !err; i++) {
		const struct site_total *s = &cc.sites[i];
		struct batch_mpi_site site = {
			.function = mpi_function_info(s->function)->name,
			.calls = s->calls,
			.total_ns = s->total_ns,
			.min_ns = s->min_ns,
			.max_ns = s->max_ns,
			.bytes = s->bytes,
			.bytes_reason = s->bytes_reason,
			.sends = mpi_function_info(s->function)->sends,
		};

		/* the call site is a return address: step back into the call */
		module_table_resolve(table, s->tgid, module_table_exec_seq(table, s->tgid),
				     s->call_site - 1, &site.module, &site.offset);
		locus(ctx, s->tgid, &l);
		err = batch_builder_add_mpi_site(b, &l, &site);
		if (err || seen_before(cc.sites, i, s->tgid))
			continue;
		if (mpi_probes_process(mp, s->tgid, &proc))
			continue;
		err = batch_builder_add_mpi_process(b, &l, proc.init_end_ns, proc.finalize_start_ns,
						    exit_ns(ctx, s->tgid));
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
