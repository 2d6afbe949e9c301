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
int batch_builder_add_exit(struct batch_builder *b, const struct batch_locus *locus,
			   const Nunatak__Wire__ProcessExit *exit_template);
int batch_builder_add_degradation(struct batch_builder *b, const char *name, const char *message,
				  const char *remedy);
int batch_builder_add_counter(struct batch_builder *b, const char *name, uint64_t value);

size_t batch_builder_samples(const struct batch_builder *b);
/* The Envelope to send; valid until batch_builder__free(). */
wire_envelope *batch_builder_envelope(struct batch_builder *b);

#endif
