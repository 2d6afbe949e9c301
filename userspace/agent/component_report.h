/* component_report — what the Component probes measured of one Target's
 * processes, as Batch entries: the running totals of each (thread, phase,
 * Step, Component, parent) that changed since the last Batch (a later
 * report of a key replaces the earlier one, so one not sent again is
 * unchanged), the Components they name, and the Steps: one begun is sent
 * once until it ends; with a step function an ended Step is final and
 * forgotten by the kernel once sent; without one, the process' only Step
 * (step 0, first call to last return) is sent while it grows. */
#ifndef NUNATAK_AGENT_COMPONENT_REPORT_H
#define NUNATAK_AGENT_COMPONENT_REPORT_H

#include <stdint.h>
#include <sys/types.h>

struct batch_builder;
struct batch_locus;
struct component_probes;

typedef void (*component_locus_fn)(void *ctx, pid_t tgid, pid_t tid, struct batch_locus *l);

/* The entries of the processes want(ctx, tgid) says 1 of, for Target
 * target_id (which says whether it has a step function). 0 or -errno. */
int component_report_of(struct component_probes *cp, struct batch_builder *b, uint32_t target_id,
			int (*want)(void *ctx, pid_t tgid), component_locus_fn locus, void *ctx);

#endif
