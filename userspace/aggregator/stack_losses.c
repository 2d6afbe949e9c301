/* stack_losses — see stack_losses.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "userspace/aggregator/stack_losses.h"
#include "userspace/pivot/pivot.h"

/* what: the cause, in the message; cause: the same, short, in the remedy
 * ("N samples CAUSE: REMEDY"); remedy: the way forward for that cause
 * alone (one line: the remedy has one line per cause) */
struct truncation_cause {
	const char *counter, *what, *cause, *remedy;
};

static const struct truncation_cause causes[] = {
	{ "stacks_ended_no_process", "before the Agent knew the process' code mappings",
	  "before the process' mappings were known", "none, the first milliseconds of a process" },
	{ "stacks_ended_no_table", "in a module whose unwind table is not loaded",
	  "in a module without its unwind table",
	  "see the unwind-tables-* Degradations if any, else none: the first milliseconds of a "
	  "library (its table is compiled when it is first mapped)" },
	{ "stacks_ended_no_mapping", "at code outside every known mapping (JIT code)", "in JIT code",
	  "none, JIT code has no unwind tables: its callers are not shown" },
	{ "stacks_ended_no_cfi",
	  "at code without unwind information (hand-written assembly) or with a rule the "
	  "unwinder does not handle",
	  "at code without unwind information",
	  "build with unwind tables (-fasynchronous-unwind-tables, the default of gcc on x86-64)" },
	{ "stacks_ended_unreadable", "at stack memory that could not be read (not present)",
	  "at unreadable stack memory", "none, the kernel cannot fault pages in while it samples" },
	{ "stacks_ended_depth", "deeper than 128 frames (kept, truncated)", "deeper than 128 frames",
	  "none, deep recursion: the innermost 128 frames are shown" },
	{ "stacks_ended_bad_frame", "at a frame that did not look like one (corrupt stack or wrong "
				    "unwind information)",
	  "at a frame that did not look like one", "report it with the module named by the summary" },
};

int stack_losses_truncated(struct pivot *p, const char *node, stack_losses_counter_fn counter)
{
	uint64_t complete = counter(p, node, "stacks_complete"), truncated = 0, n;
	char message[1600], remedy[1600];
	size_t i, len, rlen = 0;

	remedy[0] = '\0';
	for (i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
		truncated += counter(p, node, causes[i].counter);
	if (truncated < STACK_LOSSES_TRUNCATED_MIN ||
	    truncated * 1000 <= (truncated + complete) * STACK_LOSSES_TRUNCATED_PERMILLE)
		return 0;
	len = (size_t)snprintf(message, sizeof(message),
			       "%llu of %llu samples (%.1f%%) have an incomplete call path (node %s):",
			       (unsigned long long)truncated,
			       (unsigned long long)(truncated + complete),
			       100.0 * (double)truncated / (double)(truncated + complete), node);
	for (i = 0; i < sizeof(causes) / sizeof(causes[0]); i++) {
		n = counter(p, node, causes[i].counter);
		if (!n || len >= sizeof(message))
			continue;
		len += (size_t)snprintf(message + len, sizeof(message) - len, " %llu %s;",
					(unsigned long long)n, causes[i].what);
		/* one line per cause that occurred: its count, its remedy */
		if (rlen < sizeof(remedy))
			rlen += (size_t)snprintf(remedy + rlen, sizeof(remedy) - rlen,
						 "%s%llu sample%s %s: %s", rlen ? "\n" : "",
						 (unsigned long long)n, n == 1 ? "" : "s", causes[i].cause,
						 causes[i].remedy);
	}
	if (len && len < sizeof(message) && message[len - 1] == ';')
		message[len - 1] = '\0';
	return pivot_add_node_degradation(p, node, "stacks-truncated", message, remedy);
}
