/* components — what each Component costs per Step (GLOSSARY: Step,
 * Component, Self cost, Inclusive cost), computed from the recorded rows on
 * demand, never stored. Pure: it takes rows built by hand or read from a
 * pivot (analysis/components_run.h) and touches nothing else.
 *
 * Rules:
 *  - rows are summed per (process, Step, Component) over threads and
 *    parents; across processes each value is the MEAN per process: the
 *    sum over the processes divided by the processes that reached that
 *    Step (table->n_processes says how many there were); calls are summed
 *    over the processes, not averaged;
 *  - slots: Step k holds the rows of phase 'step' with step k and those of
 *    phase 'between' after Step k (the calls between Step k's return and
 *    Step k+1's entry), except after the process' last Step, where they
 *    are teardown; phase 'setup' (step -1) is the setup, before Step 0;
 *  - with a step function (has_step) Step 0 is the warm-up and is left out
 *    of the totals unless keep_warm_up; without one, the whole run is one
 *    Step 0, which is not a warm-up;
 *  - a Component that did not run in a Step (no call) has NAN there, never
 *    0; a NAN cost of a call that ran (instructions without a PMU) stays
 *    NAN in every sum it enters (unavailable, not zero);
 *  - parent: among the enclosing Components recorded for its calls, the
 *    one with the most calls (no enclosing Component is a candidate too;
 *    ties: none first, then the first Component); the Component itself
 *    (recursion) is never its own parent; the other parents are listed
 *    with their calls. A cycle of chosen parents (a -> b -> a) cannot be a
 *    nesting: the table is refused (-ELOOP, the cycle named in err);
 *  - inclusive (on request) = self + the inclusive costs of the Components
 *    whose parent it is, Step by Step: a child that did not run there
 *    counts 0, one that ran with a NAN value makes the total NAN; a child
 *    seen under several parents adds all its calls to its chosen parent
 *    and nothing to the others. peak_rss_increase is recorded inclusive
 *    already: its inclusive value is the recorded one;
 *  - over the Steps left (Steps 1..N-1, or 0..N-1): seconds = Σ of the
 *    Steps it ran in (0 when none), steps = their number, executed_steps =
 *    those with a call, coverage = executed_steps / steps, seconds_per_step
 *    = seconds / steps (skipped Steps included: they add up across
 *    Components), seconds_when_run = seconds / executed_steps (NAN when
 *    0); "seconds" is in the metric's unit (counts, MB) for every metric;
 *    with no Step left every one of them is NAN.
 */
#ifndef NUNATAK_ANALYSIS_COMPONENTS_H
#define NUNATAK_ANALYSIS_COMPONENTS_H

#include <stddef.h>
#include <stdint.h>

#include "userspace/pivot/pivot_components.h"

#define COMPONENT_NONE SIZE_MAX /* no parent */

enum component_phase {
	COMPONENT_PHASE_SETUP,
	COMPONENT_PHASE_STEP,
	COMPONENT_PHASE_BETWEEN,
	COMPONENT_PHASE_TEARDOWN,
};

/* "setup", "step", "between", "teardown": 0, or -EINVAL */
int component_phase_parse(const char *text, enum component_phase *phase);

/* a metric of --metric: the column it reads, times scale, in unit */
struct component_metric {
	const char *name; /* "wall_s", ... */
	enum pivot_cost_column column;
	double scale;	  /* recorded unit -> unit */
	const char *unit; /* "s", "count", "MB" (2^20 bytes) */
};

/* NULL when name is none of them */
const struct component_metric *component_metric_find(const char *name);
/* "wall_s, cpu_s, ...": the names, for usage messages */
const char *component_metric_names(void);

struct component_def {
	int64_t id;
	const char *name; /* borrowed */
	int is_step;
};

struct component_row {
	size_t process; /* index < n_processes */
	int64_t tid;
	enum component_phase phase;
	int64_t step;		   /* -1 for setup */
	int64_t component, parent; /* ids; parent 0 = none */
	uint64_t calls;
	double cost[PIVOT_COST_COLUMNS]; /* NAN: unavailable */
};

struct component_input {
	const struct component_def *components;
	size_t n_components;
	const struct component_row *rows;
	size_t n_rows;
	/* per process, the Steps recorded (rows of `steps`); a row of a later
	 * Step raises it */
	const int64_t *process_steps;
	size_t n_processes;
	int has_step; /* a step function was given: Step 0 is the warm-up */
};

struct component_options {
	const struct component_metric *metric;
	int inclusive;
	int keep_warm_up;
};

struct component_other_parent {
	size_t parent; /* index in the table, COMPONENT_NONE: none */
	uint64_t calls;
};

struct component_cost {
	const char *name; /* borrowed from the input */
	int is_step;
	size_t parent; /* index in the table, COMPONENT_NONE */
	struct component_other_parent *others;
	size_t n_others;
	uint64_t calls;	    /* over the Steps left, all processes */
	uint64_t all_calls; /* over the whole run, all processes */
	double seconds;
	size_t executed_steps;
	double coverage, seconds_per_step, seconds_when_run;
	double *per_step;   /* [n_steps]: Step k at k (the warm-up too); NAN: did not run */
	unsigned char *ran; /* [n_steps]: 1 when it ran in Step k (its NAN is then unavailable) */
	double setup, teardown;
	double warm_up; /* NAN unless Step 0 was left out */
	int ran_setup, ran_teardown, ran_warm_up;
	int unavailable; /* a Step or phase it ran in has a NAN value */
};

struct component_table {
	const struct component_metric *metric;
	int inclusive, keep_warm_up, has_step;
	int warm_up_left_out; /* Step 0 not in the totals */
	int several_threads;  /* a process ran Components on several threads */
	size_t n_processes;
	size_t n_steps;	   /* Steps 0..n_steps-1 */
	size_t first_step; /* the first Step in the totals */
	size_t steps;	   /* Steps left: n_steps - first_step */
	uint64_t total_calls;
	size_t n;
	struct component_cost *c; /* preorder of the nesting tree: roots, each followed by its
				     children; siblings: the step function, then by name */
};

/* The table of in under opt. NULL + errno: EINVAL (a row naming an
 * unknown Component or process, no metric), ELOOP (a parent cycle), ENOMEM;
 * err (may be NULL) then says why. Free with component_table__free(). */
struct component_table *component_table__new(const struct component_input *in,
					     const struct component_options *opt, char *err,
					     size_t errlen);

/* NULL-safe */
void component_table__free(struct component_table *t);

#endif
