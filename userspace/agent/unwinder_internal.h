/* unwinder_internal — what unwinder.c (the Agent's side: processes) and
 * unwinder_tables.c (the worker thread: tables) share; unwinder.h is the
 * interface.
 *
 * Locking: `lock` guards by_identity, the job queue, `completed` and
 * stats. The rule dictionary, the row pool's bump pointer and the mapped
 * arrays are the worker's alone; the Agent's thread reads a table id only
 * once its entry says DONE.
 */
#ifndef NUNATAK_AGENT_UNWINDER_INTERNAL_H
#define NUNATAK_AGENT_UNWINDER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "userspace/agent/unwinder.h"
#include "userspace/unwind/unwind_table.h"

enum table_state { TABLE_PENDING, TABLE_DONE };

/* one module identity's table (a file at two paths is tabled once) */
struct loaded_table {
	char *identity;
	char *path;      /* where the worker reads it (PENDING only) */
	uint64_t inode;  /* the mapped inode: another file at path is refused */
	uint64_t bytes;  /* the file's size: small tables are compiled first */
	enum table_state state;
	uint32_t id;     /* DONE: the table id, 0 when none */
	int err;         /* DONE: why none (-ENODATA no CFI, -ENOSPC pool full, ...) */
	struct loaded_table *next_job;
};

struct unwinder {
	struct sampler_unwind_maps maps;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t idle; /* broadcast when the worker finished a job (idle: none left) */
	pthread_t worker;
	int worker_started, stopping;
	int working;   /* the worker is compiling a job */
	int event_fd;  /* readable when tables completed */
	int completed; /* tables completed since the last unwinder_sync */
	struct loaded_table *jobs; /* by size, smallest first */
	void *by_identity; /* tsearch tree of struct loaded_table * */
	struct unwinder_stats stats;
	/* the worker's */
	struct unwind_rules *rules;
	struct unwind_rule *rules_mem; /* the kernel's unwind_rules, mapped */
	struct unwind_row *rows_mem;   /* the kernel's unwind_rows, mapped */
	size_t rules_bytes, rows_bytes;
	uint32_t rules_loaded, rows_used, next_table;
	/* the Agent's thread's: one process' entry being built, its counters */
	struct unwind_proc *proc;
	int proc_waits;   /* a module of proc has its table compiling */
	pid_t *waiting;   /* processes synced while a table they map compiled */
	size_t n_waiting, cap_waiting;
	uint64_t mappings_dropped, procs_refused;
};

/* unwinder_tables.c: the worker thread */
void *unwinder_worker(void *arg);

#endif
