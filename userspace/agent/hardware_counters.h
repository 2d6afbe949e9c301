/* hardware_counters — cycles and instructions of each observed process
 * for the counting layer, where the Machine has a PMU.
 *
 * hardware_counters__new() asks the kernel once whether a cycles counter
 * can be opened; without a PMU (as on most VMs: perf stat says "not
 * supported") every process gets the counters as unavailable with that
 * reason, never 0. With one, a counting event pair (inherited by the
 * process' threads and children) is opened at the process' first exec and
 * read at exit: one pair per process, kept across its later execs (an
 * event attached to a task survives exec), so the counts cover every
 * image the process ran.
 */
#ifndef NUNATAK_AGENT_HARDWARE_COUNTERS_H
#define NUNATAK_AGENT_HARDWARE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hardware_counters;

/* NULL + errno (ENOMEM) only */
struct hardware_counters *hardware_counters__new(void);
/* The same bookkeeping over another pair of events (type and two
 * configs), e.g. PERF_TYPE_SOFTWARE task-clock and context-switches to
 * test it where no PMU exists. NULL + errno (ENOMEM) only. */
struct hardware_counters *hardware_counters__new_events(uint32_t type, uint64_t first,
							uint64_t second);
void hardware_counters__free(struct hardware_counters *hc);

/* NULL when counting works here, else why it does not */
const char *hardware_counters_unavailable(const struct hardware_counters *hc);
/* Start counting process tgid (at its exec); a process already counted
 * keeps its pair. 0 or -errno. */
int hardware_counters_start(struct hardware_counters *hc, pid_t tgid);
/* processes being counted (one event pair each) */
size_t hardware_counters_processes(const struct hardware_counters *hc);
/* Read and forget tgid's counters (at its exit). 0, or -ENOENT (not
 * counted: *reason says why). */
int hardware_counters_finish(struct hardware_counters *hc, pid_t tgid, uint64_t *cycles,
			     uint64_t *instructions, const char **reason);

#endif
