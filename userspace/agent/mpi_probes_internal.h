/* mpi_probes_internal — the MPI probes' state, shared by mpi_probes.c
 * (loading, the libraries, what the kernel counted) and
 * mpi_probes_attach.c (the probes of each process, attached and
 * released). Not for other modules: they use mpi_probes.h. */
#ifndef NUNATAK_AGENT_MPI_PROBES_INTERNAL_H
#define NUNATAK_AGENT_MPI_PROBES_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "userspace/agent/mpi_probes.h"
#include "bpf/mpi.skel.h"

#include "userspace/agent/uprobe_multi.h" /* TRACE_UPROBE_MULTI */
#include "userspace/agent/uprobe_set.h"

/* functions of one library: file offsets (one per address) and cookies */
struct probe_points {
	int fns[MPI_FUNCTIONS]; /* enum mpi_function of each */
	uint64_t offsets[MPI_FUNCTIONS];
	uint64_t cookies[MPI_FUNCTIONS];
	size_t n;
};

/* an MPI library, located once for every process. MPI_Init and
 * MPI_Init_thread are probed for every process that maps the library
 * (`once`: called once in a process' life, they cost a process outside
 * every Target one trap, and no Target process' MPI_Init is missed
 * however late its own probes come); MPI_Finalize per Target process,
 * always (`life`); every other function per Target process, detached and
 * re-attached by the cost budget (`each`, mpi_budget.h). */
struct probed_library {
	const struct module *module; /* owned by the module table */
	struct probe_points once, life, each;
	struct uprobe_set wide; /* the probes of `once`, pid filter none */
};

/* a process probed: sets[i] are the `life` probes of libraries[i],
 * wsets[i] their `each` probes while windowed is 1 (n_wsets 0 otherwise) */
struct probed_process {
	pid_t tgid;
	struct uprobe_set *sets;
	size_t n_sets;
	struct uprobe_set *wsets;
	size_t n_wsets;
	int windowed;
};

struct mpi_budget_proc;

struct mpi_releaser;

struct mpi_probes {
	struct mpi_bpf *skel;
	int multi; /* uprobe_multi links, else one perf event per probe */
	struct ring_buffer *events;
	mpi_event_fn event_fn;
	void *event_ctx;
	struct probed_library *libraries;
	size_t n_libraries;
	void *processes; /* tsearch tree of struct probed_process *, by tgid */
	size_t n_processes;
	struct mpi_releaser *releaser;
	/* the cost budget (mpi_budget.c) */
	uint64_t probe_cost_ns; /* 0: not calibrated */
	double (*budget_fn)(void *ctx, pid_t tgid);
	void *budget_ctx;
	struct mpi_budget_proc *budget;
	size_t n_budget;
};

/* mpi_probes_attach.c */
int mpi_probes_attach_new_library(struct mpi_probes *mp);
int mpi_probes_attach_wide(struct mpi_probes *mp, struct probed_library *lib);
struct mpi_releaser *mpi_releaser__new(void);
void mpi_probes_release_all(struct mpi_probes *mp);
/* the windowed (`each`) probes of tgid attached (on) or released (never
 * waits): 0, -ENOENT not probed, or what the kernel said */
int mpi_probes_windowed(struct mpi_probes *mp, pid_t tgid, int on);

#endif
