/* pivot_components — the reader of a Run's Component costs (pivot schema 5:
 * tables components, steps, component_costs; counters component_probe_ns,
 * empty_uprobe_pair_ns, component_calls_lost). The writer is
 * pivot_store_components.c (declared in pivot.h); the analysis is
 * analysis/components.h.
 *
 * Rows are handed over as stored: every cost but peak_rss_increase_bytes
 * is a self cost summed over the calls of its key; a NULL cost
 * (instructions, cycles on a machine without a PMU) is NAN, never 0.
 * Strings are borrowed for the duration of the callback. Every walk stops
 * at the first non-zero return of its callback and returns it; else 0,
 * -EINVAL, or the pivot's -errno (logged).
 */
#ifndef NUNATAK_PIVOT_COMPONENTS_H
#define NUNATAK_PIVOT_COMPONENTS_H

#include <stdint.h>

struct pivot;

/* the cost columns of component_costs, in this order */
enum pivot_cost_column {
	PIVOT_COST_WALL_NS,
	PIVOT_COST_CPU_NS,
	PIVOT_COST_MINOR_PAGE_FAULTS,
	PIVOT_COST_MAJOR_PAGE_FAULTS,
	PIVOT_COST_VOLUNTARY_CONTEXT_SWITCHES,
	PIVOT_COST_INVOLUNTARY_CONTEXT_SWITCHES,
	PIVOT_COST_PEAK_RSS_INCREASE_BYTES, /* inclusive of nested calls */
	PIVOT_COST_INSTRUCTIONS,	    /* NAN: unavailable */
	PIVOT_COST_CYCLES,		    /* NAN: unavailable */
	PIVOT_COST_COLUMNS,
};

/* 1 when the pivot has the schema-5 Component tables, 0 when not (an older
 * Run: it simply holds no Component), -errno */
int pivot_components_present(struct pivot *p);

struct pivot_component {
	int64_t id;
	const char *name;    /* demangled */
	const char *pattern; /* the --component PATTERN (or --step FUNC) it matched */
	int is_step;	     /* the --step function */
};

/* by id */
int pivot_for_each_component(struct pivot *p, int (*cb)(const struct pivot_component *c, void *ctx),
			     void *ctx);

/* one Step of one process (node, tgid) */
struct pivot_step {
	const char *node;
	int64_t tgid;
	int64_t step; /* 0 = the warm-up (with --step) */
	int64_t start_ns;
	int has_end; /* 0: its return was not seen (the process died) */
	int64_t end_ns;
};

/* by node, tgid, step */
int pivot_for_each_step(struct pivot *p, int (*cb)(const struct pivot_step *s, void *ctx),
			void *ctx);

/* one component_costs row, with its thread's process */
struct pivot_component_cost {
	const char *node;
	int64_t tgid, tid;
	const char *phase; /* "setup", "step", "between", "teardown" */
	int64_t step;	   /* -1 for setup */
	int64_t component;
	int64_t parent; /* 0: no enclosing Component */
	uint64_t calls;
	double cost[PIVOT_COST_COLUMNS]; /* NAN for NULL */
};

/* by node, tgid, tid, step, component */
int pivot_for_each_component_cost(struct pivot *p,
				  int (*cb)(const struct pivot_component_cost *c, void *ctx),
				  void *ctx);

/* The probe cost counters of the Run: NAN when a node did not record one;
 * with several nodes, the mean of those that did (probe_nodes of them);
 * calls_lost summed over the nodes. */
struct pivot_component_counters {
	double probe_ns;      /* component_probe_ns: one Component call's probe pair */
	double empty_pair_ns; /* empty_uprobe_pair_ns: an empty uprobe + uretprobe pair */
	uint64_t calls_lost;  /* component_calls_lost */
	int probe_nodes;
};

int pivot_component_counters(struct pivot *p, struct pivot_component_counters *out);

#endif
