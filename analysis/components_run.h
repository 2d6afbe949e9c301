/* components_run — a Run's Component rows read from its pivot into the
 * input of analysis/components.h, with what the report needs beside them:
 * the probe cost (measured on the Run's machine, never subtracted from the
 * costs) and the Degradations that remove Component costs.
 *
 * A process is a (node, tgid); its Steps are the `steps` rows of its main
 * thread. has_step is set when a Component is the step function.
 */
#ifndef NUNATAK_ANALYSIS_COMPONENTS_RUN_H
#define NUNATAK_ANALYSIS_COMPONENTS_RUN_H

#include <stdint.h>

#include "analysis/components.h"
#include "analysis/derived.h"

struct pivot;

struct components_run {
	struct component_input in; /* its arrays owned by the run */
	struct pivot_component_counters counters;
	/* the message of the hardware-counters-unavailable Degradation: why
	 * instructions and cycles are NULL; NULL when there is none */
	char *counters_reason;
	/* "name: message" of the Degradations named component-*, in order */
	char **degradations;
	size_t n_degradations;
	/* private */
	struct component_def *defs;
	struct component_row *rows;
	int64_t *process_steps;
	char **process_node;
	int64_t *process_tgid;
	size_t rows_cap, processes_cap;
};

/* Reads p. A pivot without the Component tables (an older Run) gives a run
 * with no Component. NULL + errno (ENOMEM, EINVAL, the pivot's). Free with
 * components_run__free(). */
struct components_run *components_run__load(struct pivot *p);

/* NULL-safe */
void components_run__free(struct components_run *r);

/* The probe cost next to the costs it inflates: per_call (ns), the empty
 * uprobe pair (ns), ratio = per_call / empty pair, total (ns) = per_call x
 * calls (every Component call of the Run). Unavailable with the reason
 * when the Run did not record the counter. */
struct component_overhead {
	struct derived per_call, empty_pair, ratio, total;
};

void component_overhead_of(const struct pivot_component_counters *c, uint64_t calls,
			   struct component_overhead *out);

#endif
