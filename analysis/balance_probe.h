/* balance_probe — nunatak's MPI probes taken out of a rank's times, for
 * analysis/balance.c (method: docs/mpi-probe-cost.md).
 *
 * A rank made probed_calls traps (nested ones included), of which calls
 * were outermost calls the probes timed and lifetime_calls among them
 * MPI_Init / MPI_Finalize (outside the app window). Each trap cost c ns,
 * in_window ns of it between the entry and return timestamps of the call
 * it probed. So the clocks counted, of the probes' cost:
 *  - in the app window (MPI_Init's return to MPI_Finalize's entry):
 *      (probed_calls - lifetime_calls) x c
 *  - in the MPI time (the timed windows of the non-lifetime calls):
 *      (calls - lifetime_calls) x in_window + (probed_calls - calls) x c
 *    (a nested trap is wholly inside its outer call's window);
 * and app_time = wall_app_time - the first, mpi_time = wall_mpi_time -
 * the second (never below 0, never app below mpi). Not calibrated: the
 * times stay as measured, the cost NAN with its reason. */
#ifndef NUNATAK_ANALYSIS_BALANCE_PROBE_H
#define NUNATAK_ANALYSIS_BALANCE_PROBE_H

#include "analysis/balance.h"

struct pivot_mpi_locus;

/* r's app_time and mpi_time (as measured, s) corrected, its probe fields
 * filled from l. 0 or -ENOMEM. */
int balance_probe_rank(struct balance_rank *r, const struct pivot_mpi_locus *l);

/* b->probe_cost from b->ranks. 0 or -ENOMEM. */
int balance_probe_run(struct balance *b);

/* frees what balance_probe_rank and balance_probe_run allocated */
void balance_probe_rank_free(struct balance_rank *r);
void balance_probe_run_free(struct balance *b);

#endif
