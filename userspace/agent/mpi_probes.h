/* mpi_probes — uprobes on the MPI libraries, for Target processes only
 * (bpf/mpi.bpf.c).
 *
 * A library is an MPI library when it exports MPI_Init (Open MPI's
 * libmpi.so.40, MPICH's libmpich.so.12, or any other) or a Fortran
 * spelling of it (below); mpi_probes_consider
 * locates its functions once. Its probes are attached per Target process,
 * with the process' pid as the kernel's filter: the kernel installs the
 * breakpoints only in that process' memory, so a process outside every
 * Target that maps the same library does not trap at its MPI calls. The
 * probes follow the process, not its image: attached before its exec
 * (mpi_probes_process_exec at follow) they are in place when the new
 * image maps the library. Attached at the exec report of a process forked
 * inside a Target, they race its start-up: the report wakes the Agent at
 * once, but an attach waits for an RCU grace period (measured here: up to
 * ~30 ms for an isolated exec, < 1 ms amortized over a burst of execs),
 * while ld.so and main reach MPI_Init within a few ms. So MPI_Init and
 * MPI_Init_thread alone are probed for every process mapping the library
 * (called once in a process' life: one trap per process outside every
 * Target, ~2 us once), and a rank's MPI_Init is seen however late its own
 * probes come; its later calls are seen once they are attached, which
 * MPI_Init's own duration covers in practice (tests/unit/
 * test_mpi_probes_process.c). MPI_X and PMPI_X at the same address get
 * one probe; the BPF side counts only the outermost MPI call of a thread.
 *
 * The call site of a call is the return address of its outermost probed
 * function: the first frame outside the MPI libraries. So the Fortran
 * bindings are probed too: a library that exports a Fortran spelling of
 * MPI_Init (Open MPI's libmpi_mpifh and libmpi_usempif08, MPICH's
 * libmpichfort) gets a probe at each address of the table's functions'
 * Fortran spellings (mpi_send, mpi_send_, mpi_send__, MPI_SEND,
 * mpi_send_f08_, mpi_send_f08ts_, and their PMPI ones), cookie
 * MPI_COOKIE_FORTRAN_BINDING: the binding is the outermost call, its
 * return address the application's Fortran routine, its count, datatype
 * and peer those of the C call it makes (bpf/mpi.h); every function is
 * reported under its C name (mpi_function_info), whatever was probed.
 * A PMPI tool layer (a library that defines MPI_X and calls PMPI_X) is
 * probed as an MPI library when it exports MPI_Init: its MPI_X is then
 * the outermost call and the call site the application's. The limit: a
 * layer that wraps some functions but not MPI_Init is not recognized, and
 * the call sites of the functions it wraps are inside it; so are those of
 * MPICH's large-count f08 bindings (mpi_send_f08ts_large_: they reach
 * MPI_Send_c, not probed).
 */
#ifndef NUNATAK_AGENT_MPI_PROBES_H
#define NUNATAK_AGENT_MPI_PROBES_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bpf/mpi.h"

struct module;
struct mpi_probes;

struct mpi_function_info {
	const char *name; /* "MPI_Allreduce" */
	int sends;        /* its buffer leaves this rank */
	int vector;       /* counts are an array: bytes unavailable */
	int has_buffer;   /* it moves data at all */
};

const struct mpi_function_info *mpi_function_info(unsigned int function);

/* How the probes are attached: one uprobe_multi link per library and
 * direction (kernel 6.6+), or one perf-event uprobe per function and
 * direction; AUTO tries the first and falls back to the second when the
 * kernel refuses it. */
enum mpi_attach {
	MPI_ATTACH_AUTO = 0,
	MPI_ATTACH_MULTI,
	MPI_ATTACH_PERF_EVENT,
};

/* Loads bpf/mpi.bpf.c sharing targets_fd, attach AUTO. NULL + errno; err
 * says why. */
struct mpi_probes *mpi_probes__new(int targets_fd, int events_enabled, char *err, size_t errlen);
/* the same with the attach mode chosen (tests run both) */
struct mpi_probes *mpi_probes__new_attach(int targets_fd, int events_enabled,
					  enum mpi_attach attach, char *err, size_t errlen);
/* 1 when the probes are uprobe_multi links, 0 perf-event uprobes */
int mpi_probes_multi(const struct mpi_probes *mp);
void mpi_probes__free(struct mpi_probes *mp);

/* Knows module if it is an MPI library not known yet, and probes it for
 * every process probed already: 1 known now, 0 not an MPI library or
 * known already, -errno (err says why). */
int mpi_probes_consider(struct mpi_probes *mp, const struct module *m, char *err, size_t errlen);

/* Probes process tgid (a Target process) for every MPI library known,
 * now and later; again at each of its execs (the libraries known since
 * are added; the probes it has stay). Call it when a process is followed
 * (before it execs) and at every exec report of a Target process. 0, or
 * -errno: -ESRCH it is gone (forgotten), else the kernel refused a probe
 * (logged; the libraries probed before the failure stay probed). */
int mpi_probes_process_exec(struct mpi_probes *mp, pid_t tgid);
/* Removes the probes of tgid (its exit, or it left its Target): 0, or
 * -ENOENT when it was not probed. Never waits: the kernel's grace
 * periods are waited for by a thread of the probes' own. */
int mpi_probes_process_exit(struct mpi_probes *mp, pid_t tgid);
/* number of processes probed */
int mpi_probes_processes(const struct mpi_probes *mp);
/* How many times the entry program ran, all processes together: the
 * kernel counts it only while BPF statistics are enabled (sysctl
 * kernel.bpf_stats_enabled, or bpf_enable_stats(BPF_STATS_RUN_TIME)).
 * 0 and *runs, or -errno. */
int mpi_probes_entry_runs(const struct mpi_probes *mp, uint64_t *runs);
/* number of library files probed that implement MPI (export PMPI_Init:
 * the handles of the C calls are theirs; not the Fortran bindings, not a
 * PMPI tool layer) */
int mpi_probes_libraries(const struct mpi_probes *mp);
/* the i-th of them, NULL past the end */
const struct module *mpi_probes_library(const struct mpi_probes *mp, int i);
/* number of library files probed, of every kind */
int mpi_probes_all_libraries(const struct mpi_probes *mp);

typedef int (*mpi_site_fn)(const struct mpi_site_key *key, const struct mpi_site_value *value,
			   void *ctx);
/* Running totals of every call site; stops at cb's first non-zero return. */
int mpi_probes_for_each_site(struct mpi_probes *mp, mpi_site_fn fn, void *ctx);
/* the kernel's map of call sites (key struct mpi_site_key, value struct
 * mpi_site_value), what mpi_probes_for_each_site reads: tests fill it */
int mpi_probes_sites_fd(const struct mpi_probes *mp);
/* 0 and *out, or -ENOENT when tgid never reached an MPI function */
int mpi_probes_process(struct mpi_probes *mp, pid_t tgid, struct mpi_process *out);
/* Forget an exited process once its last totals were published: its
 * sites, its MPI state, and the calls its threads never returned from (a
 * rank killed inside MPI), which would otherwise fill the thread map of a
 * long-lived Agent. */
void mpi_probes_forget(struct mpi_probes *mp, pid_t tgid);
/* the MPI calls of tgid in flight: threads inside an MPI function now
 * (or, once it exited, when it died) */
int mpi_probes_in_flight(const struct mpi_probes *mp, pid_t tgid);

/* Events (loaded with events_enabled) of Target target_id on or off.
 * Until the first call every Target's calls are Events; from then on
 * only those of the Targets turned on. 0, -ENOSPC (MAX_MPI_EVENT_TARGETS),
 * -EINVAL (loaded without Events), or -errno. */
int mpi_probes_set_events(struct mpi_probes *mp, uint32_t target_id, int on);

typedef int (*mpi_event_fn)(const struct mpi_event *e, void *ctx);
int mpi_probes_events_fd(const struct mpi_probes *mp);
int mpi_probes_poll_events(struct mpi_probes *mp, mpi_event_fn fn, void *ctx);

/* What one probed MPI call costs a rank on this node (trap, programs,
 * return trampoline), calibrated when the probes loaded
 * (mpi_probe_cost.c), and *in_window_ns the part of it the probes' own
 * clock counts inside the call: 0, or -ENODATA and *why says why not. */
int mpi_probes_cost(const struct mpi_probes *mp, uint64_t *ns, uint64_t *in_window_ns,
		    const char **why);

void mpi_probes_read_counters(const struct mpi_probes *mp, uint64_t out[MPI_COUNTERS]);

#endif
