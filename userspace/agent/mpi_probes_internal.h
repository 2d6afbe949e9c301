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

/* the probe points of one library at most: each function at a few
 * addresses (Open MPI's mpi_f08 has mpi_send_f08_ and pmpi_send_f08_
 * apart; MPICH's Fortran library the mpif.h binding and the f08ts one) */
#define MPI_PROBE_POINTS (4 * MPI_FUNCTIONS)

/* functions of one library: file offsets (one per address) and cookies */
struct probe_points {
	int fns[MPI_PROBE_POINTS]; /* enum mpi_function of each */
	uint64_t offsets[MPI_PROBE_POINTS];
	uint64_t cookies[MPI_PROBE_POINTS];
	size_t n;
};

/* what a library is to MPI (bits; a library may be several) */
enum {
	MPI_LIBRARY_C = 1,		/* exports MPI_Init */
	MPI_LIBRARY_IMPLEMENTATION = 2, /* exports PMPI_Init: the handles are its */
	MPI_LIBRARY_FORTRAN = 4,	/* exports a Fortran MPI_Init (mpi_init_, ...) */
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
	int kind;		     /* MPI_LIBRARY_* */
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
	struct mpi_attach_job *attaching; /* its `each` probes being attached
					   * (mpi_probes_window.c), NULL none */
};

struct mpi_budget_proc;
struct mpi_attach_job;

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
	uint64_t cost_ns; /* one probed call, calibrated at load; 0: not measured */
	uint64_t cost_in_window_ns; /* the part of it inside the call's timed window */
	char cost_why[160]; /* why not */
	/* the cost budget (mpi_budget.c) */
	double (*budget_fn)(void *ctx, pid_t tgid);
	void *budget_ctx;
	struct mpi_budget_proc *budget;
	size_t n_budget;
};

/* mpi_probe_cost.c: cost_ns (0 and cost_why on failure). 0 or -errno. */
int mpi_probes_calibrate(struct mpi_probes *mp);

/* mpi_probes_attach.c */
int mpi_probes_attach_new_library(struct mpi_probes *mp);
int mpi_probes_attach_wide(struct mpi_probes *mp, struct probed_library *lib);
struct mpi_releaser *mpi_releaser__new(void);
/* releases sets[0..n) (taken: freed) in a thread of r: never waits */
void mpi_probes_release_async(struct mpi_releaser *r, struct uprobe_set *sets, size_t n);
void mpi_probes_release_all(struct mpi_probes *mp);
/* a job of r's (a thread that releases or attaches probes): counted
 * as under way until done; mpi_probes_release_all waits for it */
void mpi_releaser_job_start(struct mpi_releaser *r);
void mpi_releaser_job_done(struct mpi_releaser *r);
/* the windowed (`each`) probes of tgid attached synchronously (on: the
 * Agent waits for the kernel's grace period) or released (never waits):
 * 0, -ENOENT not probed, or what the kernel said */
int mpi_probes_windowed(struct mpi_probes *mp, pid_t tgid, int on);
/* the windowed probes of tgid asked for, attached by a thread of their
 * own (never waits): 1 attached already, 0 under way, -errno */
int mpi_probes_windowed_attach(struct mpi_probes *mp, pid_t tgid);
/* whether they are attached: 1 yes (p->wsets hold them), 0 still under
 * way, -errno the attach failed (what it attached is released) or none
 * was asked for (-ENOENT) */
int mpi_probes_windowed_attached(struct mpi_probes *mp, pid_t tgid);
/* the `each` probes of the libraries p->wsets lacks, synchronously */
int mpi_probes_attach_missing_windowed(struct mpi_probes *mp, struct probed_process *p);

/* mpi_probes_window.c: the attach thread of p's windowed probes (started,
 * asked whether done and taken, abandoned with its process: never waits) */
int mpi_probes_windowed_start(struct mpi_probes *mp, struct probed_process *p);
int mpi_probes_windowed_ready(struct mpi_probes *mp, struct probed_process *p);
void mpi_probes_windowed_abandon(struct mpi_probes *mp, struct probed_process *p);

#endif
