/* balance_samples — the MPI time of a rank whose calls were probed in
 * sampled windows (the probes' cost budget), from its samples as Linaro
 * MAP does, for analysis/balance.c (method: docs/mpi-probe-cost.md, "MPI
 * time of a sampled rank").
 *
 * The windows' extrapolation of a rank's MPI time is biased on loops of
 * sub-microsecond calls (a window's time is mostly the traps'); the
 * samples are not probed. Of the rank process' cpu-clock samples (every
 * thread: the Loci of its node and tgid), those of nunatak's probes and
 * those inside MPI_Init, MPI_Init_thread or MPI_Finalize (outside the app
 * window) are left out: n remain, the application's, k of them inside an
 * MPI call (each Stack classified once, analysis/stack_class.h). With
 * f = k / n and the rank's app time T (the probes' cost out,
 * balance_probe.h):
 *     MPI time = f × T
 *     error    = sqrt(f (1 − f) / n) × T, at least T / n (one sample's
 *                worth: f = 0 or 1 is not exact)
 * On-CPU samples see only the time the rank is on a CPU: a rank that
 * blocks (sleeps) in MPI has fewer samples there than it spends there. A
 * rank runnable but waiting for a CPU (a shared or oversubscribed node)
 * is not seen either, but that wait falls inside and outside MPI alike
 * and does not bias f. So, over the rank process' lifetime (its exit),
 *     asleep = (wall - CPU time - run-queue delay) / wall
 * (asleep_fraction; NAN when one is unavailable) must be at most
 * BALANCE_SAMPLES_MAX_ASLEEP; without the run-queue delay, its CPU time
 * must be at least BALANCE_SAMPLES_MIN_CPU of its wall app time. The
 * windows' estimate stays, with mpi_time_method_reason saying why, when
 * the rule fails, when the rank has no such sample, or when its CPU time
 * or app time is unavailable.
 *
 * mpi_time_method: BALANCE_METHOD_PROBES for a rank whose every site was
 * measured (its time unchanged), BALANCE_METHOD_WINDOWS when the windows'
 * estimate stays, BALANCE_METHOD_SAMPLES when the samples gave it (the
 * windows' figure kept in windows_mpi_time, windows_mpi_time_error).
 */
#ifndef NUNATAK_ANALYSIS_BALANCE_SAMPLES_H
#define NUNATAK_ANALYSIS_BALANCE_SAMPLES_H

#include "analysis/balance.h"

struct pivot;

#define BALANCE_METHOD_PROBES "probes"
#define BALANCE_METHOD_WINDOWS "probes, sampled windows"
#define BALANCE_METHOD_SAMPLES "samples"

#define BALANCE_SAMPLES_MAX_ASLEEP 0.1
#define BALANCE_SAMPLES_MIN_CPU 0.9 /* when the run-queue delay is unavailable */
#define BALANCE_SAMPLES_COUNTER "cpu-clock"

/* r's asleep_fraction set from r->process_wall_time, r->cpu_time and
 * r->run_delay (every rank); r's method chosen and its MPI time, error,
 * share and time outside MPI set from r->app_samples, r->mpi_samples,
 * r->cpu_time, r->wall_app_time, r->asleep_fraction and r->app_time, as
 * above; r->mpi_time, r->mpi_time_error are the
 * probes' (the windows' when r->mpi_time_estimated). Pure. 0 or -ENOMEM. */
int balance_samples_rank(struct balance_rank *r);

/* every rank's samples read from p (has_samples), then
 * balance_samples_rank on each. 0, -ENOMEM or the pivot's error. */
int balance_samples(struct pivot *p, struct balance *b);

void balance_samples_rank_free(struct balance_rank *r);

#endif
