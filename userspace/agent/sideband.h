/* sideband — the kernel's record of code mappings, fork and exec, for the
 * processes the Agent follows.
 *
 * One software "dummy" perf event per CPU asks the kernel for MMAP2 (code
 * mappings only), COMM (exec) and FORK records of every process; they are
 * queued with the process' pid at the moment they happen, so a process
 * that has already exited is still known. sideband_poll() applies them, in
 * time order across CPUs, to a module table, for the processes that table
 * follows (a child of a followed process becomes followed).
 */
#ifndef NUNATAK_AGENT_SIDEBAND_H
#define NUNATAK_AGENT_SIDEBAND_H

#include <stdint.h>

struct module_table;
struct sideband;

/* NULL + errno when perf_event_open or the buffers fail */
struct sideband *sideband__new(struct module_table *table);
void sideband__free(struct sideband *sb);
/* epoll fd that becomes readable when records are pending */
int sideband_fd(const struct sideband *sb);
/* Consume and apply every pending record. Returns 0 or -errno. */
int sideband_poll(struct sideband *sb);
/* records the kernel could not queue (its buffer was full) */
uint64_t sideband_lost(const struct sideband *sb);

#endif
