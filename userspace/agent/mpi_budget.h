/* mpi_budget — the cost budget of the MPI probes: each rank process'
 * probes may cost it at most a share of its time (its Target's budget,
 * MPI_BUDGET_DEFAULT unless set; NAN: every call, --mpi-exact).
 *
 * A probed call costs its traps (~10-20 us on a VM) whatever the BPF
 * program does: only detaching the probes saves it. MPI_Init,
 * MPI_Init_thread and MPI_Finalize stay attached; the other functions'
 * probes of a process are its "windowed" ones. Every process starts with
 * every call probed, its trap cost measured from the end of its MPI_Init (the
 * calls MPI_Init makes inside trap too, and say nothing of the
 * application's rate) over MPI_BUDGET_FIRST_MEASURE_NS, then
 * MPI_BUDGET_MEASURE_NS intervals (calls that trapped × the cost of one probed call /
 * elapsed). While the share stays within the budget every call stays
 * probed: its totals are measured. Once an interval exceeds it, the
 * windowed probes are detached and re-attached for sampled windows: a
 * window every period (MPI_BUDGET_PERIOD_NS, longer when the window would
 * be shorter than MPI_BUDGET_MIN_WINDOW_NS), of a duty chosen from the
 * trap rate the last window measured so that the traps, the attach and
 * the drain cost at most MPI_BUDGET_SAFETY × the budget. A window's bounds
 * are the BPF gate's (struct mpi_gate, exact to the ns): the probes are
 * attached before it opens and detached after it closed and the calls
 * entered in it returned (at most MPI_BUDGET_DRAIN_NS). The Agent's loop
 * drives it (mpi_probes_tick at mpi_probes_next_ms) and never waits:
 * detaching happens on the releaser's threads, attaching (0.2-19 ms here,
 * a grace period of the kernel's) on a thread of its own
 * (mpi_probes_window.c), the gate opened at the first tick after it is
 * done (asked each ms): the window's bounds stay the gate's.
 *
 * What the windows saw is extrapolated (mpi_estimate.h) by
 * mpi_probes_probing; the totals counted before the switch stay exact.
 */
#ifndef NUNATAK_AGENT_MPI_BUDGET_H
#define NUNATAK_AGENT_MPI_BUDGET_H

#include <stdint.h>
#include <sys/types.h>

#include "userspace/agent/mpi_estimate.h"
#include "userspace/config/config.h"

/* the configuration's [mpi] budget unless set */
#define MPI_BUDGET_DEFAULT (CONFIG_DEFAULT_MPI_BUDGET_PCT / 100)
#define MPI_BUDGET_FIRST_MEASURE_NS 20000000ull /* the first interval: a latency-bound
							 * rank is seen over budget within it */
#define MPI_BUDGET_MEASURE_NS 250000000ull
#define MPI_BUDGET_PERIOD_NS 500000000ull
#define MPI_BUDGET_MAX_PERIOD_NS 10000000000ull
#define MPI_BUDGET_MIN_WINDOW_NS 2000000ull
#define MPI_BUDGET_DRAIN_NS 10000000ull
#define MPI_BUDGET_SAFETY 0.8
/* the cost of one probed call (entry and return traps) until this node's
 * calibration gives it: the measurement on these VMs */
#define MPI_PROBE_COST_DEFAULT_NS 15000

struct mpi_probes;

/* the budget of process tgid's Target: a share (0 < b < 1), 0 for
 * MPI_BUDGET_DEFAULT, NAN for every call */
typedef double (*mpi_budget_fn)(void *ctx, pid_t tgid);
void mpi_probes_set_budget_fn(struct mpi_probes *mp, mpi_budget_fn fn, void *ctx);

/* ns one probed call costs the rank: the node's calibration when known,
 * else MPI_PROBE_COST_DEFAULT_NS */
uint64_t mpi_probes_cost_ns(const struct mpi_probes *mp);

/* Moves every process' windows on (CLOCK_MONOTONIC now). Never waits. */
void mpi_probes_tick(struct mpi_probes *mp);
/* CLOCK_MONOTONIC ms when mpi_probes_tick is due next; -1 never */
long long mpi_probes_next_ms(const struct mpi_probes *mp);

/* how one rank process was probed, for its Batch */
struct mpi_probing {
	double budget;	     /* NAN: every call (--mpi-exact) */
	int sampled;	     /* 0: every call probed, its totals measured */
	double share;	     /* the share probing every call cost: at the switch when
			      * sampled, else the highest measured; NAN: not measured */
	int scale_valid;     /* sampled: a window closed, scale holds */
	struct mpi_scale scale;
	char probing[200];   /* how, in words (MpiProcess.probing) */
	char estimate[200];  /* sampled: why and how its sites are estimated */
};

/* 0 and *out, -ENOENT when tgid was never probed. end_ns: when the rank's
 * MPI phase ended (0: now / its exit). */
int mpi_probes_probing(struct mpi_probes *mp, pid_t tgid, uint64_t end_ns,
		       struct mpi_probing *out);

/* mpi_probes_attach.c and mpi_probes.c: a process probed, exited, forgotten */
void mpi_budget_process_new(struct mpi_probes *mp, pid_t tgid);
void mpi_budget_process_end(struct mpi_probes *mp, pid_t tgid);
void mpi_budget_forget(struct mpi_probes *mp, pid_t tgid);

#endif
