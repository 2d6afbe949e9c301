/* mpi_report — turns what the MPI probes counted into Batch entries:
 * per (rank process, function, call site) running totals with bytes, per
 * process MPI lifetimes, and MPI Events.
 *
 * Bytes = Σ count × datatype size. The size comes from the handle: an
 * MPICH builtin handle encodes it; an Open MPI predefined datatype is an
 * object of libmpi whose address is resolved through the library's load
 * bias in that process. Anything else (a derived datatype, a vector
 * collective) gives bytes unavailable with the reason — never a guess.
 */
#ifndef NUNATAK_AGENT_MPI_REPORT_H
#define NUNATAK_AGENT_MPI_REPORT_H

#include <stdint.h>
#include <sys/types.h>

struct batch_builder;
struct batch_locus;
struct module_table;
struct mpi_probes;
struct mpi_event;

typedef void (*mpi_locus_fn)(void *ctx, pid_t tgid, struct batch_locus *l);

/* Adds every call site's totals and the lifetime of every process seen in
 * them; exit_ns(tgid) gives the time a process exited (0: running). */
int mpi_report_sites(struct mpi_probes *mp, struct module_table *table, struct batch_builder *b,
		     mpi_locus_fn locus, uint64_t (*exit_ns)(void *ctx, pid_t tgid), void *ctx);
/* The same for the processes want(ctx, tgid) says 1 of (one Target's);
 * want NULL: every process. */
int mpi_report_sites_of(struct mpi_probes *mp, struct module_table *table,
			struct batch_builder *b, mpi_locus_fn locus,
			uint64_t (*exit_ns)(void *ctx, pid_t tgid), int (*want)(void *ctx, pid_t tgid),
			void *ctx);

/* One Event. */
int mpi_report_event(struct mpi_probes *mp, struct module_table *table, struct batch_builder *b,
		     const struct mpi_event *e, mpi_locus_fn locus, void *ctx);

/* Size of one element of datatype `handle` in process tgid: bytes >= 0, or
 * -1 with *reason set. */
int64_t mpi_datatype_bytes(struct mpi_probes *mp, struct module_table *table, pid_t tgid,
			   uint64_t handle, const char **reason);

#endif
