/* pivot — the measured pivot of a Run (pivot.sqlite, DESIGN.md section 7).
 *
 * One SQLite file per Run, schema version in PRAGMA user_version
 * (PIVOT_SCHEMA_VERSION), WAL journal while the Run is written, foreign
 * keys on. It holds measured data only: no absolute address, no cross-Locus
 * aggregate, no conclusion. Once finalized it is sealed (pivot_seal()):
 * journal_mode DELETE, one plain file that any SQLite reader opens from a
 * read-only copy.
 *
 * Files: pivot.sqlite and the -wal/-shm/-journal SQLite adds beside it are
 * 0600 (SQLite gives them the main file's mode). A pivot made or opened
 * under a directory descriptor (pivot__create_at, pivot__open_at) reaches
 * every one of its files through that descriptor
 * ("/proc/self/fd/N/pivot.sqlite", with SQLite's resolution of symbolic
 * links turned off), so replacing the directory by a link while the Run is
 * written changes nothing.
 *
 * Invariants kept by this module:
 *  - every Batch is stored exactly once: (node, incarnation, seq) in
 *    `batches` (incarnation 0 for a Batch without one) is written
 *    in the same transaction as the Batch's content, so a Batch received
 *    twice (Agent retry, Aggregator restart) counts once;
 *  - a Batch is stored whole or not at all (one transaction; a Batch with
 *    an out-of-range index is an Invalidity and writes nothing);
 *  - modules are keyed by identity, Loci by (node, tgid, tid), stacks by
 *    their exact content (digest), addresses by (module, offset);
 *  - sampling Measurements are derived from samples, never accumulated, so
 *    deriving them again gives the same rows.
 *
 * Threading: one struct pivot per thread. Every function returns 0 or a
 * negative errno unless stated; -EIO stands for an SQLite failure (logged
 * with pr_warn), -EROFS for a write on a pivot opened read-only.
 */
#ifndef NUNATAK_PIVOT_H
#define NUNATAK_PIVOT_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "userspace/attribution/attribution.h"
#include "userspace/wire/nunatak.pb-c.h"

#define PIVOT_SCHEMA_VERSION 6 /* 2: batches by (node, incarnation, seq), degradations
				 * by (node, name); 3: module_symbols; 4: hotspots.start_line,
				 * sources and extracts by source; 5: components, steps,
				 * component_costs; 6: MPI estimates and probe costs
				 * (mpi_calls, mpi_processes); an older pivot is
				 * migrated when opened to write, read as it is otherwise */
#define PIVOT_FILE "pivot.sqlite"

struct pivot;

/* Creates a new pivot named name in the directory dirfd (AT_FDCWD: name is
 * a path), 0600, O_EXCL|O_NOFOLLOW: fails with EEXIST when anything is
 * there; applies the schema. shown_as names it in messages (NULL: name).
 * On failure the half-made files are removed. NULL + errno. */
struct pivot *pivot__create_at(int dirfd, const char *name, const char *shown_as);
/* pivot__create_at(AT_FDCWD, path, path) */
struct pivot *pivot__create(const char *path);

/* Opens an existing pivot. NULL + errno: ENOENT (no file), EBADMSG (not an
 * SQLite file, or not a nunatak pivot), EPROTONOSUPPORT (written by a newer
 * nunatak: user_version above PIVOT_SCHEMA_VERSION), EIO. read_only: a
 * sealed pivot opens read-only from a read-only place. */
struct pivot *pivot__open_at(int dirfd, const char *name, int read_only, const char *shown_as);
/* pivot__open_at(AT_FDCWD, path, read_only, path) */
struct pivot *pivot__open(const char *path, int read_only);

/* Seals a finalized pivot: the WAL checkpointed into the main file and the
 * journal mode set to DELETE, so no -wal/-shm is left and any reader can
 * open it without writing. Waits a bounded time (seconds) for readers that
 * hold it open. 0, -EROFS, -EBUSY (still in WAL: another connection kept
 * it), -EIO. Writing after it is still possible (rollback journal). */
int pivot_seal(struct pivot *p);
/* 1 when the pivot is sealed (not in WAL mode), 0 when not, -errno. */
int pivot_is_sealed(struct pivot *p);

/* NULL-safe. */
void pivot__free(struct pivot *p);

/* The underlying connection, borrowed (for readers of later issues and
 * tests); do not close it. */
sqlite3 *pivot_sqlite(struct pivot *p);

/* Stores one Batch in one transaction.
 * Returns 0 when stored, 1 when (node, incarnation, seq) was already stored (nothing
 * written), -EINVAL for a malformed Batch (index out of range, missing
 * required string: nothing written), -EROFS, -EIO, -ENOMEM.
 * Batch-local indices are mapped to rows: modules by identity, Loci by
 * (node, tgid, tid) (comm, exe, rank, world_size updated when given),
 * stacks by content. Samples add sample_count and value; Degradations are
 * kept by (Batch.node, name) (first wins); Counters keep their maximum (they are running
 * totals); a ProcessExit becomes Locus-level Measurements (quality
 * measured) replacing earlier ones of the same counter on that Locus:
 * cpu_time_user, cpu_time_system, wall_time (ns), context_switches_voluntary,
 * context_switches_involuntary, page_faults_minor, page_faults_major
 * (count), peak_rss (bytes), run_delay (ns: Σ over its threads of the
 * time runnable but waiting for a CPU; unavailable with the reason when
 * the ProcessExit has none), cycles and instructions (count; unavailable
 * with hardware_counters_reason when absent).
 * MPI: an MpiCallSite is a running total per (Locus, function, call site):
 * its call site enters `addresses` like a sampled address, and the row with
 * the larger `calls` is kept (a repeated or older report never lowers it;
 * equal calls keep the stored row). An MpiProcess fills the NULL fields of
 * its Locus' row and never turns a present one to NULL (init and finalize
 * keep the first value, last_seen the latest). An MpiEvent becomes an Event
 * (name = function).
 * Components (pivot_store_components.c): a Component is kept by name (the
 * first pattern stored wins); a ComponentCost replaces the row of its key
 * (Locus, phase, step, component, parent) unless that row has more calls
 * (a repeated or older report never lowers it); a Step keeps its first
 * start and takes an end when one is given.
 * A Module's symbols (a pseudo module's functions) are kept by (module,
 * start), the first stored winning.
 * A Batch bringing a new address, or a new symbol, into an already
 * attributed module marks the module as not attributed again. */
int pivot_store_batch(struct pivot *p, const Nunatak__Wire__Batch *batch);

/* A module as the pivot knows it; strings borrowed for the callback. */
struct pivot_module {
	int64_t id;
	const char *identity, *path, *display_name;
	int has_build_id;
};

/* Calls cb for each module not yet attributed (modules.attribution NULL),
 * by id, with its distinct offsets sorted ascending. cb may call
 * pivot_store_attribution(); a non-zero return of cb stops the walk and is
 * returned. */
int pivot_for_each_module_to_attribute(struct pivot *p,
				       int (*cb)(const struct pivot_module *m,
						 const uint64_t *offsets, size_t n, void *ctx),
				       void *ctx);

/* Calls cb for each symbol of module (a pseudo module's functions, sent
 * with its Batches), by start. A pivot older than schema 3 has none (0). */
int pivot_for_each_module_symbol(struct pivot *p, int64_t module,
				 int (*cb)(uint64_t start, uint64_t size, const char *name,
					   void *ctx),
				 void *ctx);

/* Stores the attribution of aa[0..n) in module_id, one transaction:
 * upserts each Hotspot (module, function_start) — its name and source file
 * are the first stored, its Resolution level the best of its addresses —,
 * sets each address' Hotspot, level, source file and line (the innermost
 * frame's), replaces its inline frames, and sets the module's attribution
 * to status ("done", "missing", "stale", "pseudo", "no-symbolizer") and
 * reason (NULL or "" for none).
 * -EINVAL (bad status, NULL name, bad level), -ENOENT (no such module),
 * -EROFS, -EIO. */
int pivot_store_attribution(struct pivot *p, int64_t module_id, const struct attributed_address *aa,
			    size_t n, const char *status, const char *reason);

/* Derives the sampling Measurements: one per (Hotspot of the stack's leaf
 * address, Locus, counter) with value = Σ value, sample_count = Σ
 * sample_count, unit "ns" for cpu-clock ("cycles" for cycles, "count"
 * otherwise), quality measured. Replaces the earlier derived ones, so it is
 * idempotent. Samples whose leaf has no Hotspot yet are left out (logged).
 * It also derives the MPI Measurements (pivot_derive_mpi_measurements) in
 * the same transaction. -EROFS, -EIO. */
int pivot_derive_measurements(struct pivot *p);

/* 1 when function is one of the calls that frame the application time
 * (MPI_Init, MPI_Init_thread, MPI_Finalize): never part of mpi_time. */
int pivot_mpi_is_lifetime(const char *function);

/* Derives the Locus-level MPI Measurements (hotspot NULL) of every Locus
 * with an mpi_processes row, replacing the earlier ones (idempotent):
 *  - app_time (ns): finalize_start - init_end, measured; without finalize,
 *    last_seen - init_end, estimated ("MPI_Finalize not reached"); without
 *    init (or without any end), unavailable with the reason;
 *  - mpi_time (ns): Σ total_ns of its mpi_calls but MPI_Init,
 *    MPI_Init_thread and MPI_Finalize, measured;
 *  - mpi_sent_bytes (bytes): Σ bytes of its sending rows, measured; when one
 *    of them has no bytes: unavailable, value NULL, reason
 *    "FUNCTION: bytes_reason" (several joined by "; ");
 *  - cpu_time (ns): cpu_time_user + cpu_time_system when both exist, the
 *    worst of their qualities.
 * -EINVAL, -EROFS, -EIO. */
int pivot_derive_mpi_measurements(struct pivot *p);

/* 1 when the Run was never finalized (a module is not attributed yet:
 * the Aggregator stopped before the end), 0 when it was, -errno. */
int pivot_needs_finalize(struct pivot *p);

/* Records a Degradation of node ("" for the Run as a whole); a (node,
 * name) already recorded is kept as it is. -EINVAL on NULL strings,
 * -EROFS, -EIO. pivot_add_degradation(): node "". */
int pivot_add_node_degradation(struct pivot *p, const char *node, const char *name,
			       const char *message, const char *remedy);
int pivot_add_degradation(struct pivot *p, const char *name, const char *message,
			  const char *remedy);

/* Readers. Each walks rows in a stable order (by name, node, ...) and stops
 * at the first non-zero return of cb, which it returns; strings are
 * borrowed for the duration of the callback. */
/* Degradations by name, then node ("" for the Run as a whole) */
int pivot_for_each_degradation(struct pivot *p,
			       int (*cb)(const char *name, const char *message, const char *remedy,
					 void *ctx),
			       void *ctx);
int pivot_for_each_node_degradation(struct pivot *p,
				    int (*cb)(const char *node, const char *name,
					      const char *message, const char *remedy, void *ctx),
				    void *ctx);
int pivot_for_each_counter(struct pivot *p,
			   int (*cb)(const char *node, const char *name, uint64_t value, void *ctx),
			   void *ctx);
/* the nodes that sent Batches, sorted: how many each, and whether its
 * last one (Batch.last) is among them */
int pivot_for_each_batch_node(struct pivot *p,
			      int (*cb)(const char *node, uint64_t batches, int last, void *ctx),
			      void *ctx);
/* Σ sample_count of the samples stored */
int pivot_sample_total(struct pivot *p, uint64_t *samples);
/* the nodes whose samples (or MPI call sites) have an address in module,
 * sorted */
int pivot_for_each_module_node(struct pivot *p, int64_t module,
			       int (*cb)(const char *node, void *ctx), void *ctx);
/* distinct nodes of the Run (that sent a Batch, or of a Locus), sorted */
int pivot_nodes(struct pivot *p, int (*cb)(const char *node, void *ctx), void *ctx);

/* Totals of one Hotspot for one counter, from the sampling Measurements,
 * one row per command name of its Loci (so readers can leave launcher
 * processes out), rows of one Hotspot consecutive. */
struct pivot_hotspot_total {
	int64_t id;
	const char *name;
	const char *module;	      /* display name */
	const char *module_path;      /* the file sampled ("[kernel]" for pseudo modules) */
	const char *module_identity;  /* build-id, or "pseudo:kernel", "pseudo:vdso", ... */
	const char *source_file;      /* NULL when unknown */
	const char *resolution_level; /* "line", "function", "symbol", "unresolved" */
	uint64_t sample_count;
	double value;	  /* Σ value, in the counter's unit */
	const char *comm; /* the command name of the Loci of this row */
};

int pivot_for_each_hotspot_total(struct pivot *p, const char *counter,
				 int (*cb)(const struct pivot_hotspot_total *t, void *ctx),
				 void *ctx);

/* One Locus-level Measurement as read: value NAN when NULL, quality NULL
 * when the Measurement does not exist. */
struct pivot_locus_value {
	double value;
	const char *quality;
	const char *reason;
};

/* What one Locus (a thread) was sampled for one counter, with the CPU time
 * its process' exit left on it. */
struct pivot_locus_total {
	int64_t locus; /* loci.id */
	const char *node;
	int64_t tgid, tid;
	const char *comm, *exe; /* NULL when unknown */
	uint64_t sample_count;	/* Σ of its sampling Measurements (attributed samples) */
	double value;		/* Σ value of those, in the counter's unit */
	uint64_t stack_samples; /* Σ sample_count of its rows in `samples` */
	/* of those, the samples whose leaf (stack_frames position 0) is in the
	 * module "pseudo:kernel", and those flagged in_kernel by the sampler */
	uint64_t kernel_leaf_samples, in_kernel_samples;
	/* ProcessExit Measurements on this Locus (quality NULL: none) */
	struct pivot_locus_value cpu_time_user, cpu_time_system; /* ns */
};

/* Walks every Locus (node, tgid, tid order) with its totals for counter.
 * A Locus with nothing sampled is walked too (its process' exit may be
 * there). */
int pivot_for_each_locus_total(struct pivot *p, const char *counter,
			       int (*cb)(const struct pivot_locus_total *t, void *ctx), void *ctx);

/* One frame of a Stack as read: its module (display name, and modules.id),
 * module-relative offset, the name of its Hotspot (NULL when the address
 * has none), the Hotspot's source file (NULL when unknown) and the
 * address' line (0 when unknown). */
struct pivot_stack_frame {
	const char *module;
	uint64_t offset;
	const char *hotspot;
	int64_t hotspot_id; /* 0 when the address has no Hotspot */
	int64_t module_id;
	const char *source_file;
	int line;
};

/* A Stack with the samples of counter taken on it, summed over every
 * Locus (and in_kernel flag); frames innermost first (frames[0] is the
 * leaf), truncated as the sampler stored it. */
struct pivot_stack_total {
	int64_t id;
	int truncated;
	uint64_t sample_count;
	double value;
	size_t n_frames;
	const struct pivot_stack_frame *frames;
};

/* Walks the Stacks that have samples of counter, by id; strings and frames
 * are borrowed for the callback. -ENOMEM, -EIO, or cb's non-zero return. */
int pivot_for_each_stack_total(struct pivot *p, const char *counter,
			       int (*cb)(const struct pivot_stack_total *s, void *ctx), void *ctx);

/* The samples of counter on one Stack by the command name of its Loci
 * (comm NULL when unknown), by Stack id then comm: so that a reader of
 * pivot_for_each_stack_total() can leave launcher processes out. */
int pivot_for_each_stack_comm(struct pivot *p, const char *counter,
			      int (*cb)(int64_t stack, const char *comm, uint64_t sample_count,
					double value, void *ctx),
			      void *ctx);

/* The samples of counter of each rank process, per Stack: every Locus of
 * the process (the mpi_processes row's node and tgid: all its threads),
 * by rank Locus (mpi_processes.locus) then Stack id. A pivot without the
 * MPI tables has none. -ENOMEM, -EIO, or cb's non-zero return. */
int pivot_for_each_rank_stack(struct pivot *p, const char *counter,
			      int (*cb)(int64_t rank_locus, int64_t stack, uint64_t sample_count,
					void *ctx),
			      void *ctx);

/* A Locus with an mpi_processes row and its derived MPI Measurements. */
struct pivot_mpi_locus {
	int64_t locus;
	const char *node;
	int has_rank, rank, world_size;
	struct pivot_locus_value app_time, mpi_time, cpu_time; /* ns */
	struct pivot_locus_value sent_bytes;		       /* bytes */
	/* what the probes cost it (mpi_processes): has_probe_cost 0 when not
	 * calibrated (probe_cost_reason says why, NULL when not recorded);
	 * has_probe_budget 0 when every call was probed; probing NULL */
	int has_probe_cost, has_probed_calls, has_probe_budget;
	uint64_t probe_cost_ns, probe_cost_in_window_ns, probed_calls;
	const char *probe_cost_reason, *probing;
	double probe_budget;
	/* its outermost calls counted (mpi_calls), lifetime ones among them */
	uint64_t calls, lifetime_calls;
	/* its process' exit (ns; quality NULL: no exit stored): wall_time
	 * from start to exit, run_delay the time its threads were runnable
	 * but waiting for a CPU (cpu_time above is its threads' CPU time) */
	struct pivot_locus_value wall_time, run_delay;
};

/* Walks them by rank (Loci without a rank last), then node, tgid, tid.
 * A pivot written before the MPI tables existed walks no row (0), as do
 * pivot_for_each_mpi_call() and the MPI derivation. */
int pivot_for_each_mpi_locus(struct pivot *p, int (*cb)(const struct pivot_mpi_locus *l, void *ctx),
			     void *ctx);

/* One mpi_calls row with its call site resolved as far as attribution
 * went: source_file NULL / line 0 when unknown, containing_function (the
 * call site's Hotspot name) NULL when not attributed. */
struct pivot_mpi_call {
	int64_t locus;
	int has_rank, rank;
	const char *function;
	int64_t call_site;  /* addresses.id */
	const char *module; /* display name */
	uint64_t offset;
	const char *source_file;
	int line;
	const char *containing_function;
	uint64_t calls, total_ns, min_ns, max_ns;
	int has_bytes;
	uint64_t bytes;
	const char *bytes_reason;
	int sends;
	/* a rank probed in sampled windows: calls, total_ns and bytes are
	 * extrapolated, estimate says why and how (NULL: measured), with one
	 * standard error each (NAN: not stated) */
	const char *estimate;
	double calls_error, total_ns_error;
};

/* Walks them by function, call site, then rank (Loci without a rank
 * last): the rows of one (function, call site) are consecutive. */
int pivot_for_each_mpi_call(struct pivot *p, int (*cb)(const struct pivot_mpi_call *c, void *ctx),
			    void *ctx);

/* ---- source extracts (schema 4; pivot_sources.c) ---- */

/* A Hotspot an extract is made for: a source file, lines sampled in that
 * file (the leaf addresses of its samples of the time counter: cpu-clock,
 * else cycles); strings borrowed for the callback. */
struct pivot_source_candidate {
	int64_t hotspot;
	const char *name, *source_file;	 /* source_file as the debug information names it */
	const char *module_path, *module_identity;
	uint32_t start_line;		 /* the function's first line, 0 when unknown */
	uint32_t first_sampled, last_sampled;
	uint64_t samples;
};

/* Walks at most max of them by decreasing samples (then id). A pivot
 * older than schema 4 walks none. */
int pivot_for_each_source_candidate(struct pivot *p, size_t max,
				    int (*cb)(const struct pivot_source_candidate *c, void *ctx),
				    void *ctx);

/* The extract of one Hotspot. status: "embedded", "not-verified",
 * "stale", "missing", "ambiguous", "disabled" (userspace/source/source.h);
 * first_line..last_line the lines kept (0, 0: none). */
struct pivot_source {
	int64_t hotspot;
	const char *dwarf_path, *resolved_path; /* resolved_path NULL when none was found */
	const char *status, *reason;		/* reason NULL or "" for none */
	uint32_t first_line, last_line;
	int truncated;
};

/* Stores s and lines[0..n_lines) (the texts of first_line.. in order), in
 * one transaction, replacing the Hotspot's earlier extract. -EINVAL (bad
 * status, n_lines not the span), -EROFS, -EIO. */
int pivot_store_source(struct pivot *p, const struct pivot_source *s, const char *const *lines,
		       size_t n_lines);

/* Calls cb with the extract of hotspot: its return, or -ENOENT when it has
 * none (a pivot older than schema 4 has none). */
int pivot_source_of_hotspot(struct pivot *p, int64_t hotspot,
			    int (*cb)(const struct pivot_source *s, void *ctx), void *ctx);

/* Walks the lines of hotspot's extract and the lines sampled in its source
 * file, by line: text NULL for a sampled line the extract does not hold,
 * samples the leaf samples of counter on that line (0: not sampled). */
int pivot_for_each_source_line(struct pivot *p, int64_t hotspot, const char *counter,
			       int (*cb)(uint32_t line, const char *text, uint64_t samples,
					 void *ctx),
			       void *ctx);

#endif
