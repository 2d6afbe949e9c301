/* summary — the terminal summary of a Run and its JSON twin.
 *
 * Both say the same things from one run_model (report/run_model.h, built
 * once by the caller): the diagnosis (analysis/diagnose.h), the balance of
 * the ranks (analysis/balance.h), the processes and threads
 * (analysis/processes.h), and the pivot's Degradations: a headline, the Hotspots by decreasing share
 * with their class, "others", the Diagnostic of each listed Hotspot above
 * the floor (report/summary_diagnostic.h), the kernel's share of the samples, the processes when the Run
 * ran several executables and the busy threads of a process that has
 * several (report/summary_processes.h), the ranks and the MPI call sites
 * (nothing for a Run without MPI data: report/summary_mpi.h), then what
 * the summary does not say (others, unresolved share and the modules
 * behind it with what would name them: report/summary_unresolved.h, ranks
 * whose app time is estimated or unavailable, call sites without bytes,
 * estimated or unavailable Ceilings, Degradations with their remedies). An unavailable value is written
 * "unavailable" (text) or null (JSON), never 0.
 *
 * The text lists at most SUMMARY_MAX_HOTSPOTS Hotspots and folds the rest
 * of those above the floor into its "others" line; the JSON lists every
 * Hotspot, each saying whether it is above the floor, and its `others`
 * sums those below it. The CLI adds the Run's path, name and exit code
 * itself.
 */
#ifndef NUNATAK_REPORT_SUMMARY_H
#define NUNATAK_REPORT_SUMMARY_H

#include <stdio.h>

#include <jansson.h>

struct run_model;

#define SUMMARY_MAX_HOTSPOTS 10

/* Writes the summary of m to out (the CLI passes stderr). A model without
 * a pivot shows no Degradation and no MPI data. Returns 0, -EINVAL, -EIO
 * when out failed, -ENOMEM, or the pivot's error. */
int summary_print(FILE *out, const struct run_model *m);

/* One object: hotspots[{name, module, source_file|null, resolution_level,
 * share, samples, seconds|null, above_floor, diagnostic|null,
 * inside_mpi|null (report/summary_inside.h)}] (every
 * Hotspot: those above the floor first, each part by decreasing share;
 * diagnostic: report/summary_diagnostic.h, null below the floor),
 * diagnostic_run (report/summary_diagnostic.h), inside_mpi and
 * nunatak_probes (report/summary_inside.h: the probes' samples are in no
 * Hotspot and in no share), others{hotspots,
 * samples, share|null} (those below the floor), totals{samples,
 * seconds|null, hotspots}, launcher_samples, unresolved_share|null,
 * unresolved_modules[{module, path, identity, samples, share, remedy}],
 * kernel_share|null, kernel_share_source, processes[...], threads[...]
 * (report/summary_processes.h), counter (null: nothing sampled), floor,
 * degradations[{name, node, message, remedy}],
 * ranks[{rank, node, app_time|null, app_time_quality, app_time_reason|null,
 * mpi_time|null, mpi_fraction|null, cpu_time|null, outside_mpi_time|null,
 * mpi_time_estimated, mpi_time_error|null, mpi_fraction_error|null (0 when
 * measured), mpi_time_method ("probes", "probes, sampled windows",
 * "samples": analysis/balance_samples.h), mpi_time_method_reason|null (why
 * a sampled rank's windows were kept), samples{application, inside_mpi}|null
 * (the rank process' cpu-clock samples, nunatak's probes' and MPI_Init's
 * out), windows_mpi_time|null, windows_mpi_time_error|null (the windows'
 * estimate the samples replaced), process_wall_time|null, run_delay|null
 * (s: its process from start to exit, and the time its threads waited for
 * a CPU), asleep_fraction|null ((process_wall_time - cpu_time -
 * run_delay) / process_wall_time), the probe cost's fields
 * (report/summary_probe_cost.h)}]
 * by rank, balance{ranks, imbalance, efficiency, busiest_rank, busiest_factor,
 * mpi_share, mpi_share_error} (null when unavailable), mpi[{function,
 * call_site{file, line, function, module, offset}, calls, total_time,
 * mean_time, min_time, max_time, estimate|null (a rank probed in sampled
 * windows: why and how; null when measured), calls_error|null,
 * total_time_error|null (one standard error, 0 when measured),
 * bytes|null, bytes_reason|null, cov|null (absent when
 * cov_not_applicable: why, else null), lifetime (MPI_Init,
 * MPI_Init_thread, MPI_Finalize: not MPI time), per_rank[{rank, calls,
 * total_time}]}] by decreasing total time. Times in seconds.
 * Shares are fractions of 1. NULL + errno (EINVAL: m or its diagnosis
 * NULL, ENOMEM, EIO); the caller owns the reference. */
json_t *summary_json(const struct run_model *m);

#endif
