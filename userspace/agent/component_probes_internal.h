/* component_probes_internal — the Component probes' state, shared by
 * component_probes.c (loading, Targets, symbols), component_probes_maps.c
 * (attaching, what the kernel counted) and component_probe_cost.c. Not
 * for other modules: they use component_probes.h. */
#ifndef NUNATAK_AGENT_COMPONENT_PROBES_INTERNAL_H
#define NUNATAK_AGENT_COMPONENT_PROBES_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "userspace/agent/component_probes.h"
#include "userspace/agent/uprobe_set.h"

struct components_bpf;
struct bpf_link;

/* one Target's patterns; with a step function, it is patterns[n - 1] */
struct component_target {
	uint32_t target_id;
	uint32_t owner; /* uid, TARGET_UID_ANY: any file */
	char **patterns;
	int *matched; /* per pattern: named a function */
	size_t n;
	size_t unprobed; /* functions named past MAX_COMPONENT_FUNCTIONS */
	const struct module **considered; /* searched already for this Target */
	size_t n_considered;
	int has_step;
};

/* a function to probe: its file offset and cookie */
struct component_point {
	uint64_t offset, cookie;
	uint32_t id;
};

struct component_probed {
	const struct module *module; /* owned by the module table */
	uint64_t offset;
};

struct component_probes {
	struct components_bpf *skel;
	int multi;
	size_t max_functions; /* MAX_COMPONENT_FUNCTIONS, lower in tests */
	struct component_target *targets;
	size_t n_targets;
	struct component_def *defs; /* id = index + 1 */
	size_t n_defs;
	struct component_probed *probed;
	size_t n_probed;
	struct uprobe_set *sets; /* one per module probed (and call of consider) */
	size_t n_sets;
	struct bpf_link *switch_link; /* sched_switch: off-CPU time */
	void *sent;		      /* tsearch tree: what was last published of each key */
	int cost_measured, cost_err;
	uint64_t probe_ns, empty_ns;
	char cost_why[256];
};

/* bpf/components.bpf.c loaded (targets_fd < 0: a map of its own) */
struct components_bpf *component_probes_load(int targets_fd, int multi, char *err, size_t errlen);
/* component_probes_maps.c */
/* pts[0..n) of m probed; *failed: how many could not be (found by
 * bisecting a set the kernel refused). 0: all probed; -errno: the first
 * failure (n - *failed of them are probed, ENOMEM aside). */
int component_probes_attach(struct component_probes *cp, const struct module *m,
			    const struct component_point *pts, size_t n, size_t *failed);
void component_probes_release(struct component_probes *cp);
/* 1 when key's running totals (calls) changed since last asked */
int component_sent_changed(struct component_probes *cp, const struct component_cost_key *key,
			   uint64_t calls);
void component_sent_free(struct component_probes *cp);

#endif
