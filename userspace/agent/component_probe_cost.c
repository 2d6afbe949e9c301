/* component_probe_cost — what a Component's probes cost per call on this
 * machine, measured in this process at the start of each Run with
 * Components (component_probes.h): N calls of
 * a function of our own, bare, then with an empty uprobe pair
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
#include <time.h>
#include <unistd.h>

#include "bpf/components.skel.h"
#include "bpf/empty.skel.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/component_probes_internal.h"
#include "userspace/agent/proc_maps.h"

#define COST_CALLS 2000 /* ~15 ms a round at ~7 us a pair: the Run waits for it */
#define COST_ROUNDS 3	/* the fastest round: the others were disturbed */

/* the function probed: not inlined, not folded, not optimized away */
__attribute__((noinline, used)) int component_probe_cost_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ns per call of component_probe_cost_target, the fastest of the rounds */
static uint64_t time_calls(void)
{
	uint64_t best = UINT64_MAX, t0, dt;
	int r, i, x = 0;

	for (r = 0; r < COST_ROUNDS; r++) {
		t0 = now_ns();
		for (i = 0; i < COST_CALLS; i++)
			x = component_probe_cost_target(x);
		dt = now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	return best / COST_CALLS;
}

struct where {
	uint64_t addr, offset;
	char path[PROC_MAP_PATH_MAX];
};

static int find_mapping(const struct proc_map *m, void *ctx)
{
	struct where *w = ctx;

	if (w->addr < m->start || w->addr >= m->end)
		return 0;
	w->offset = w->addr - m->start + m->pgoff;
	snprintf(w->path, sizeof(w->path), "%s", m->path);
	return 1;
}

/* the two links of an entry and a return program at w, cookie */
static int attach_pair(struct bpf_program *entry, struct bpf_program *ret, const struct where *w,
		       uint64_t cookie, struct bpf_link **links)
{
	LIBBPF_OPTS(bpf_uprobe_opts, e, .bpf_cookie = cookie);
	LIBBPF_OPTS(bpf_uprobe_opts, r, .bpf_cookie = cookie, .retprobe = true);

	links[0] = bpf_program__attach_uprobe_opts(entry, getpid(), w->path, w->offset, &e);
	if (!links[0])
		return -errno;
	links[1] = bpf_program__attach_uprobe_opts(ret, getpid(), w->path, w->offset, &r);
	return links[1] ? 0 : -errno;
}

static int measure(struct component_probes *cp, const struct where *w, uint64_t bare)
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
	e = attach_pair(empty->progs.empty_uprobe, empty->progs.empty_uretprobe, w, 0, links);
	if (!e)
		cp->empty_ns = time_calls() - bare;
	comp = e ? NULL : component_probes_load(-1, 0, err, sizeof(err));
	if (!e && !comp) {
		e = -errno;
		snprintf(cp->cost_why, sizeof(cp->cost_why), "%s", err);
	}
	if (!e) {
		comp->bss->component_calibration_tgid = (__u32)getpid();
		e = attach_pair(comp->progs.component_entry, comp->progs.component_return, w,
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
	struct where w = {.addr = (uint64_t)(uintptr_t)component_probe_cost_target};
	uint64_t bare;

	if (!cp->cost_measured) {
		cp->cost_measured = 1;
		cp->cost_why[0] = '\0';
		cp->probe_ns = cp->empty_ns = 0;
		bare = time_calls();
		if (proc_maps_for_each_exec(getpid(), find_mapping, &w) != 1) {
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
