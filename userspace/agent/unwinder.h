/* unwinder — the Agent's half of bpf/unwind.h: each module's unwind table
 * compiled once (userspace/unwind/unwind_table.h) into the kernel's row
 * pool, keyed by the module's identity (build-id) and so shared by every
 * process and Run of the Agent; and each followed process' code mappings
 * kept in the kernel, so the sampling program walks its Stacks.
 *
 * The row pool is one array (bpf/unwind.h unwind_rows) filled like a bump
 * allocator: a table that does not fit in what is left is not loaded, and
 * that module's frames end their Stacks (UNWIND_END_NO_TABLE), counted
 * here (tables_refused). Tables are never unloaded while the Agent runs.
 * Tables are compiled by a worker thread the first time a module is
 * mapped by a followed process (libLLVM-14 in ~0.4 s: never on the
 * Agent's thread, which meanwhile follows execs and attaches MPI probes);
 * until its table is loaded, a module's frames end their Stacks
 * (UNWIND_END_NO_TABLE, counted).
 *
 * The functions below are for one thread, the Agent's loop; the worker
 * is the unwinder's own.
 */
#ifndef NUNATAK_AGENT_UNWINDER_H
#define NUNATAK_AGENT_UNWINDER_H

#include <stdint.h>
#include <sys/types.h>

#include "userspace/agent/sampler.h"

struct module;
struct module_table;
struct unwinder;

struct unwinder_stats {
	uint64_t tables_loaded;   /* modules whose table is in the kernel */
	uint64_t tables_empty;    /* modules with no CFI at all (their code ends Stacks) */
	uint64_t tables_refused;  /* modules not tabled: the row pool or the rules were full */
	uint64_t tables_failed;   /* modules that could not be read or compiled */
	uint64_t rows_used, rows_max;
	uint64_t rules_used, rules_max;
	uint64_t compile_ns;      /* time spent compiling and loading tables */
	uint64_t mappings_dropped; /* code mappings beyond MAX_PROC_MAPPINGS of a process */
	uint64_t procs_refused;   /* processes the kernel's process map refused (full) */
};

/* NULL + errno (ENOMEM, or the errno of mapping the row pool) */
struct unwinder *unwinder__new(const struct sampler_unwind_maps *maps);
void unwinder__free(struct unwinder *u); /* NULL-safe */

/* Brings the kernel up to date with every process whose mappings changed
 * in table since the previous call (module_table_take_changed): loads
 * the tables of modules mapped for the first time, writes or removes
 * each process' entry. 0, or the first -errno met (the other processes
 * are still brought up to date). */
int unwinder_sync(struct unwinder *u, struct module_table *table);

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *out);

/* Asks the worker for m's table now, before a process maps it (the C
 * runtime every process maps: the first samples of a Run get their call
 * paths). */
void unwinder_prepare(struct unwinder *u, struct module *m);

/* readable when the worker loaded tables: call unwinder_sync() then */
int unwinder_fd(const struct unwinder *u);

/* Waits until the worker has no table left to compile (tests, and the
 * first Batch of a Run): 0, or -ETIMEDOUT after timeout_ms. */
int unwinder_wait_idle(struct unwinder *u, int timeout_ms);

/* Waits until m's table is compiled, or m has none (never asked, or
 * failed): the program about to start waits for its own modules' tables
 * only, not for others queued before (tables the node service prepares
 * for the C runtime, another Run's). 0, or -ETIMEDOUT at deadline_ms
 * (clock_monotonic_ms()). */
int unwinder_wait_module(struct unwinder *u, const struct module *m, long long deadline_ms);

#endif
