/* summary_processes — the kernel, processes and threads parts of the
 * summary (report/summary.h says what the summary is; analysis/processes.h
 * what the figures are); used by summary.c only.
 *
 * Text:
 *  - one line for the kernel's share of the samples (always, once anything
 *    was sampled), saying when it comes from the in-kernel flag of a Run
 *    without kernel frames;
 *  - when the Run's sampled processes ran more than one executable: the
 *    totals per executable (at most SUMMARY_MAX_EXECUTABLES rows by
 *    decreasing samples, the rest in one "others" line: share, samples,
 *    seconds sampled, processes, CPU time; named by file name, by path
 *    where two have the same file name), then the per-process table (at
 *    most SUMMARY_MAX_PROCESSES rows, the rest in one "others" line); one
 *    executable: neither (the per-executable totals are then the Run's);
 *  - one line per process with more than one busy thread, naming them
 *    (at most SUMMARY_MAX_THREADS) with their share of its samples.
 * CPU time unavailable is written "unavailable", never 0. Text from
 * outside (paths, command names) goes through summary_print_text(): no
 * control character reaches the terminal.
 */
#ifndef NUNATAK_REPORT_SUMMARY_PROCESSES_H
#define NUNATAK_REPORT_SUMMARY_PROCESSES_H

#include <stdio.h>

#include <jansson.h>

struct processes;

#define SUMMARY_MAX_EXECUTABLES 8
#define SUMMARY_MAX_PROCESSES 10
#define SUMMARY_MAX_THREADS 8

/* the kernel line; nothing when nothing was sampled */
void summary_print_kernel(FILE *out, const struct processes *ps);

/* the processes table and the busy threads lines, when they apply */
void summary_print_processes(FILE *out, const struct processes *ps);

/* Sets root's kernel_share (null: nothing sampled), kernel_share_source
 * ("kernel frames", "in-kernel flag", null), executables[{executable
 * (path)|null, name|null, comm|null (set when the path is not), name_shared,
 * processes, samples, share|null, seconds|null, cpu_time|null,
 * cpu_time_quality, cpu_time_reason|null}] by decreasing samples (every
 * executable, even one), processes[{node, pid, executable|null, comm|null,
 * samples, share|null, seconds|null, cpu_time|null, cpu_time_quality,
 * cpu_time_reason|null, threads, busy_threads}] by decreasing samples and threads[{node, pid, tid,
 * samples, share|null, process_share|null, busy}] by process then decreasing samples. ps may be
 * NULL (no pivot): empty arrays, null share. 0 or -ENOMEM. */
int summary_processes_json(json_t *root, const struct processes *ps);

#endif
