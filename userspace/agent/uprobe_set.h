/* uprobe_set — an entry and a return program attached at some functions
 * of one file, with a cookie each: one uprobe_multi link per direction
 * (kernel 6.6+: removing it waits for one grace period, not one per
 * probe), or one perf-event uprobe per function and direction. Used by the
 * MPI probes and the Component probes.
 */
#ifndef NUNATAK_AGENT_UPROBE_SET_H
#define NUNATAK_AGENT_UPROBE_SET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_link;
struct bpf_program;

struct uprobe_set {
	int multi_fds[2];	 /* entry, return uprobe_multi links; -1 none */
	struct bpf_link **links; /* perf-event uprobes */
	size_t n_links;
};

#define UPROBE_SET_EMPTY ((struct uprobe_set){.multi_fds = {-1, -1}})

/* entry and ret (loaded with the expected attach type TRACE_UPROBE_MULTI
 * when multi) at offsets[0..n) of path with cookies[0..n), for process pid
 * (-1: every process), into *set (made empty first). 0, or -errno: what
 * was attached stays in *set, for the caller to release. */
int uprobe_set_attach(struct uprobe_set *set, struct bpf_program *entry, struct bpf_program *ret,
		      int multi, const char *path, const uint64_t *offsets, const uint64_t *cookies,
		      size_t n, pid_t pid);
/* removes every probe of set (each waits for a grace period); set empty */
void uprobe_set_release(struct uprobe_set *set);

#endif
