/* batch_components — the Component entries of a Batch (see batch.h and
 * Component, ComponentCost, Step in userspace/wire/nunatak.proto). */
#ifndef NUNATAK_AGENT_BATCH_COMPONENTS_H
#define NUNATAK_AGENT_BATCH_COMPONENTS_H

#include <linux/types.h>
#include <stdint.h>

#include "bpf/components.h"

struct batch_builder;
struct batch_locus;

/* A Component; *index: its index in Batch.components. 0 or -ENOMEM. */
int batch_builder_add_component(struct batch_builder *b, const char *name, const char *pattern,
				int is_step, uint32_t *index);

struct batch_component_cost {
	unsigned int phase; /* enum component_phase */
	int32_t step;
	uint32_t component; /* index in Batch.components */
	int has_parent;
	uint32_t parent; /* index in Batch.components */
	uint64_t calls;
	struct component_cost self; /* peak_rss_increase inclusive */
};

/* running totals of one key on thread; 0, -EINVAL (phase), -ENOMEM */
int batch_builder_add_component_cost(struct batch_builder *b, const struct batch_locus *thread,
				     const struct batch_component_cost *cost);
/* Step step of process (its main-thread Locus); end_ns 0: not seen */
int batch_builder_add_step(struct batch_builder *b, const struct batch_locus *process,
			   uint32_t step, uint64_t start_ns, uint64_t end_ns);

#endif
