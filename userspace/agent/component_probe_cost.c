/* component_probe_cost — what a Component's probes cost per call on this
 * machine, measured in this process at the start of each Run with
 * Components (component_probes.h): N calls of
 * a function of our own (uprobe_cost.h), bare, then with an empty uprobe pair
 * (bpf/empty.bpf.c), then with the Component programs (a skeleton of its
 * own, this process counted as a Target process through
 * component_calibration_tgid, so the whole measured path runs: frame push,
 * snapshot, pop, running totals). Each cost is the time per call above the
 * bare call. The costs are reported, never subtracted from what was
 * measured. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bpf/components.skel.h"
#include "bpf/empty.skel.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/component_probes_internal.h"
#include "userspace/agent/uprobe_cost.h"

#define COST_CALLS 2000 /* ~15 ms a round at ~7 us a pair: the Run waits for it */
#define COST_ROUNDS 3	/* the fastest round: the others were disturbed */

static uint64_t time_calls(void)
{
	return uprobe_cost_time(uprobe_cost_leaf, COST_CALLS, COST_ROUNDS);
}

static int measure(struct component_probes *cp, const struct uprobe_cost_site *w, uint64_t bare)
{
	struct bpf_link *links[4] = {};
	struct components_bpf *comp = NULL;
	struct empty_bpf *empty;
	char err[256];
	int e, i;

	empty = empty_bpf__open_and_load();
	if (!empty) {
		snprintf(cp->cost_why, sizeof(cp->cost_why), "loading bpf/empty.bpf.c failed");
		return -errno;
	}
	e = uprobe_cost_attach(empty->progs.empty_uprobe, empty->progs.empty_uretprobe, w, 0, links);
	if (!e)
		cp->empty_ns = time_calls() - bare;
	comp = e ? NULL : component_probes_load(-1, 0, err, sizeof(err));
	if (!e && !comp) {
		e = -errno;
		snprintf(cp->cost_why, sizeof(cp->cost_why), "%s", err);
	}
	if (!e) {
		comp->bss->component_calibration_tgid = (__u32)getpid();
		e = uprobe_cost_attach(comp->progs.component_entry, comp->progs.component_return, w,
				COMPONENT_COOKIE(1, 0), links + 2);
	}
	if (!e)
		cp->probe_ns = time_calls() - bare;
	else if (!cp->cost_why[0])
		snprintf(cp->cost_why, sizeof(cp->cost_why), "probing our own function failed: %s",
			 strerror(-e));
	for (i = 0; i < 4; i++)
		bpf_link__destroy(links[i]);
	components_bpf__destroy(comp);
	empty_bpf__destroy(empty);
	return e;
}

int component_probes_cost(struct component_probes *cp, uint64_t *probe_ns, uint64_t *empty_ns,
			  const char **why)
{
	struct uprobe_cost_site w;
	uint64_t bare;

	if (!cp->cost_measured) {
		cp->cost_measured = 1;
		cp->cost_why[0] = '\0';
		cp->probe_ns = cp->empty_ns = 0;
		bare = time_calls();
		if (uprobe_cost_locate(uprobe_cost_leaf, &w)) {
			cp->cost_err = -ENOENT;
			snprintf(cp->cost_why, sizeof(cp->cost_why),
				 "the mapping of our own code was not found");
		} else {
			cp->cost_err = measure(cp, &w, bare);
		}
	}
	*probe_ns = cp->probe_ns;
	*empty_ns = cp->empty_ns;
	*why = cp->cost_why;
	return cp->cost_err;
}
