/* run_model — what a Run says, built once from its pivot and manifest and
 * handed to every renderer: the terminal summary and its JSON twin
 * (report/summary.h), and the HTML report's payload (report/payload.h),
 * so that they cannot drift apart and nothing is computed twice.
 *
 * It holds the diagnosis (analysis/diagnose.h: Hotspots, shares,
 * Diagnostics against the manifest's Machine), the balance of the ranks
 * (analysis/balance.h), the processes and threads (analysis/processes.h),
 * whether the Run spans several nodes, the number of Degradations, and,
 * with RUN_MODEL_COMPONENTS, the Component costs (analysis/components_run.h)
 * with the tables the report shows (wall_s and cpu_s, self and inclusive,
 * the warm-up left out as `nunatak components` does by default) when the
 * Run has Components.
 *
 * Without a pivot (p NULL) the model has the diagnosis only: balance,
 * processes and components NULL, the renderers print empty sections.
 * The pivot and the manifest are borrowed: they must outlive the model.
 */
#ifndef NUNATAK_REPORT_RUN_MODEL_H
#define NUNATAK_REPORT_RUN_MODEL_H

#include <stddef.h>

#include <jansson.h>

struct balance;
struct component_table;
struct components_run;
struct diagnosis;
struct pivot;
struct processes;

#define RUN_MODEL_COMPONENTS 0x1u /* also the Component tables */
/* never read a source line's text (`nunatak report --no-source`): every
 * extract then says status "disabled", reason RUN_MODEL_NO_SOURCE_REASON */
#define RUN_MODEL_NO_SOURCE 0x2u
#define RUN_MODEL_NO_SOURCE_REASON "the report was made with --no-source"

enum { RUN_MODEL_WALL_S = 0, RUN_MODEL_CPU_S, RUN_MODEL_METRICS };
enum { RUN_MODEL_SELF = 0, RUN_MODEL_INCLUSIVE, RUN_MODEL_VIEWS };

struct run_model {
	struct pivot *p;	/* borrowed; NULL: none */
	const json_t *manifest; /* borrowed; NULL: none */
	const char *run_dir;	/* borrowed, set by the caller for the report; NULL */
	int no_source;		/* RUN_MODEL_NO_SOURCE */
	const struct diagnosis *d;
	struct balance *b;    /* NULL without a pivot */
	struct processes *ps; /* NULL without a pivot */
	int several_nodes;    /* the Run has more than one node */
	size_t n_degradations;
	/* RUN_MODEL_COMPONENTS and the Run has Components; else NULL */
	struct components_run *components;
	struct component_table *component_tables[RUN_MODEL_METRICS][RUN_MODEL_VIEWS];
	/* private */
	struct diagnosis *owned_d;
};

/* Builds m from p (may be NULL) and manifest (its `machine` gives the
 * Ceilings; may be NULL). 0, or -EINVAL, -ENOMEM, -EIO, the pivot's
 * error: m is then released. Release with run_model_release(). */
int run_model_build(struct run_model *m, struct pivot *p, const json_t *manifest,
		    unsigned flags);

/* The same around a diagnosis d the caller made (and frees, after m):
 * for tests and tools that already have one. */
int run_model_build_on(struct run_model *m, const struct diagnosis *d, struct pivot *p,
		       const json_t *manifest, unsigned flags);

/* NULL-safe, twice-safe */
void run_model_release(struct run_model *m);

#endif
