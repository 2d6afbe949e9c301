/* batch — builds one Batch (userspace/wire/nunatak.proto) from drained
 * samples, exits, counters and Degradations.
 *
 * Modules, Loci and Stacks are deduplicated inside the Batch and referred
 * to by index, so the Batch is self-contained. The builder owns every
 * string and array it puts in the message; batch_builder__free() releases
 * them all.
 */
#ifndef NUNATAK_AGENT_BATCH_H
#define NUNATAK_AGENT_BATCH_H

#include <stdint.h>
#include <sys/types.h>

#include "userspace/wire/wire.h"

struct module;
struct batch_builder;

struct batch_locus {
	pid_t tgid, tid;
	const char *comm; /* NULL unknown */
	const char *exe;  /* NULL unknown */
	int has_rank;     /* 0: no rank identity (never rank 0 by default) */
	int rank;
	int world_size;   /* -1 unknown */
};

/* an MPI call site's running totals; bytes_reason NULL when bytes known;
 * estimate NULL when every call was probed, else how the totals were
 * estimated, with one standard error of calls and total_ns */
struct batch_mpi_site {
	const char *function;
	struct module *module;
	uint64_t offset;
	uint64_t calls, total_ns, min_ns, max_ns, bytes;
	const char *bytes_reason;
	int sends;
	const char *estimate;
	double calls_error, total_ns_error;
};

/* an MPI rank process: its lifetime (times 0 when not reached) and what
 * the probes cost it: probe_cost_ns 0 when not calibrated (then
 * probe_cost_reason says why), probe_budget NAN when every call is probed,
 * probing NULL when unknown */
struct batch_mpi_process {
	uint64_t init_end_ns, finalize_start_ns, last_seen_ns;
	uint64_t probe_cost_ns, probed_calls;
	uint64_t probe_cost_in_window_ns; /* the part of probe_cost_ns inside the call */
	const char *probe_cost_reason;
	double probe_budget;
	const char *probing;
};

/* NULL + errno (ENOMEM) */
struct batch_builder *batch_builder__new(const char *run_id, const char *node, uint64_t seq);
void batch_builder__free(struct batch_builder *b);

/* One aggregated sample: frames[0..depth) innermost first, as (module,
 * offset). 0 or -ENOMEM. */
int batch_builder_add_sample(struct batch_builder *b, const struct batch_locus *locus,
			     struct module *const *modules, const uint64_t *offsets, int depth,
			     int truncated, int in_kernel, const char *counter, uint64_t samples,
			     uint64_t value);
/* Names [offset, offset + size) of pseudo module m ("[kernel]") in this
 * Batch, for the Aggregator that has no file to symbolize it from; m
 * enters the Batch if it was not in it. The first symbol given at one
 * offset of m is kept, later ones are ignored (0). 0, -EINVAL (NULL m or
 * name, size 0), -ENOMEM. */
int batch_builder_add_module_symbol(struct batch_builder *b, struct module *m, uint64_t offset,
				    uint64_t size, const char *name);
int batch_builder_add_exit(struct batch_builder *b, const struct batch_locus *locus,
			   const Nunatak__Wire__ProcessExit *exit_template);
int batch_builder_add_degradation(struct batch_builder *b, const char *name, const char *message,
				  const char *remedy);
int batch_builder_add_counter(struct batch_builder *b, const char *name, uint64_t value);

int batch_builder_add_mpi_site(struct batch_builder *b, const struct batch_locus *locus,
			       const struct batch_mpi_site *site);
int batch_builder_add_mpi_process(struct batch_builder *b, const struct batch_locus *locus,
				  const struct batch_mpi_process *proc);
/* has_bytes 0: bytes unavailable; peer -1: unknown */
int batch_builder_add_mpi_event(struct batch_builder *b, const struct batch_locus *locus,
				const char *function, uint64_t start_ns, uint64_t duration_ns,
				int has_bytes, uint64_t bytes, int peer);

/* What other builders of Batch entries (batch_components.c) need: the
 * index of a Locus in the Batch (added when new), memory and strings owned
 * by the builder, and the lists of Component entries. 0 or -ENOMEM; NULL
 * on ENOMEM. */
int batch_builder_locus(struct batch_builder *b, const struct batch_locus *l, uint32_t *index);
void *batch_builder_alloc(struct batch_builder *b, size_t size);
char *batch_builder_strdup(struct batch_builder *b, const char *s);
enum batch_component_list {
	BATCH_COMPONENTS = 0, /* Nunatak__Wire__Component */
	BATCH_COMPONENT_COSTS, /* Nunatak__Wire__ComponentCost */
	BATCH_STEPS,           /* Nunatak__Wire__Step */
	BATCH_COMPONENT_LISTS,
};
/* msg (owned by the builder) appended to list; *index (may be NULL): its
 * position */
int batch_builder_push_component(struct batch_builder *b, enum batch_component_list list,
				 void *msg, uint32_t *index);

size_t batch_builder_samples(const struct batch_builder *b);
/* The Envelope to send; valid until batch_builder__free(). */
wire_envelope *batch_builder_envelope(struct batch_builder *b);

#endif
