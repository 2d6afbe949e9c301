/* stack_losses — the Degradations of a node's Stacks, from the counters
 * its Agent sent (userspace/agent/agent_publish.c): samples whose Stack
 * was lost (the stack map was full, or digests collided beyond what the
 * kernel tries), and samples whose call path is incomplete, by cause
 * (bpf/unwind.h enum unwind_end), each with its own remedy: the remedy
 * of stacks-truncated is one clause per cause that occurred, "N samples
 * CAUSE: REMEDY", one line each (separated by '\n'), and no other.
 *
 * An incomplete call path is a Degradation when it concerns more than
 * STACK_LOSSES_TRUNCATED_PERMILLE of the node's samples, and at least
 * STACK_LOSSES_TRUNCATED_MIN of them: the first
 * milliseconds of every process are sampled before the Agent has loaded
 * its unwind tables, and a Run is not degraded by that alone; the counts
 * are in the pivot's counters table all the same.
 */
#ifndef NUNATAK_AGGREGATOR_STACK_LOSSES_H
#define NUNATAK_AGGREGATOR_STACK_LOSSES_H

#include <stdint.h>

struct pivot;

#define STACK_LOSSES_TRUNCATED_PERMILLE 10
#define STACK_LOSSES_TRUNCATED_MIN 30 /* the statistical floor: 2 samples of `true` say nothing */

/* value of counter name of node in the pivot; 0 when absent */
typedef uint64_t (*stack_losses_counter_fn)(struct pivot *p, const char *node, const char *name);

/* The stacks-truncated Degradation of node (the caller calls it once per
 * node). 0 or -errno. */
int stack_losses_truncated(struct pivot *p, const char *node, stack_losses_counter_fn counter);

#endif
