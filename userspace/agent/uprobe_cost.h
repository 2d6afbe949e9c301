/* uprobe_cost — what a pair of probes (an entry uprobe and a return
 * uprobe) costs per call on this machine, measured in this process on a
 * function of its own: calls of it, bare, then with the
 * pair attached; the cost is the time per call above the bare call, the
 * fastest of several rounds (the others were disturbed). Shared by the
 * Components' calibration (component_probe_cost.c) and the MPI probes'
 * (mpi_probe_cost.c), which attach their own programs with
 * uprobe_cost_attach and time them with uprobe_cost_time. */
#ifndef NUNATAK_AGENT_UPROBE_COST_H
#define NUNATAK_AGENT_UPROBE_COST_H

#include <stdint.h>

#include "userspace/agent/proc_maps.h"

struct bpf_link;
struct bpf_program;

/* The functions probed: not inlined, not folded, not optimized away.
 * What a probe costs depends on the instruction it replaces: uprobes
 * emulate some (x86-64: push, jumps) and single-step the others out of
 * line, one more trap. uprobe_cost_leaf starts as a leaf function
 * compiled without frame does (x86-64: lea, single-stepped);
 * uprobe_cost_framed with the push of a frame, as the MPI libraries'
 * functions do (Open MPI's and MPICH's MPI_Send: push %r15). */
typedef int (*uprobe_cost_fn)(int x);
int uprobe_cost_leaf(int x);
int uprobe_cost_framed(int x);

/* where a function of this process is in its file */
struct uprobe_cost_site {
	uint64_t offset;
	char path[PROC_MAP_PATH_MAX];
};

/* where fn is: 0, or -ENOENT: the mapping of our own code was not found */
int uprobe_cost_locate(uprobe_cost_fn fn, struct uprobe_cost_site *site);

/* ns per call of fn, the fastest of rounds of calls each */
uint64_t uprobe_cost_time(uprobe_cost_fn fn, int calls, int rounds);

/* entry at site's function (uprobe) and ret (uretprobe), for this process
 * only, with cookie: links[0] and links[1], which the caller destroys
 * (NULL where not attached). 0 or -errno. */
int uprobe_cost_attach(struct bpf_program *entry, struct bpf_program *ret,
		       const struct uprobe_cost_site *site, uint64_t cookie, struct bpf_link **links);

#endif
