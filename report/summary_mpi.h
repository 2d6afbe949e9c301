/* summary_mpi — the ranks and MPI sections of the summary (report/summary.h
 * says what the summary is); used by summary.c only.
 *
 * Text: a ranks headline (ranks, busiest rank and its factor over the mean
 * time outside MPI, load-balance efficiency, MPI share of time), a per-rank
 * table, what MPI time is (the time inside MPI calls between the end of
 * MPI_Init and the start of MPI_Finalize) with MPI_Init and MPI_Finalize
 * apart, then the top SUMMARY_MPI_TOP call sites of MPI time by time and
 * by bytes, each call site written whole (the last column: never cut, so
 * two call sites never look alike). A call site fewer than two ranks call
 * has no COV: "n/a", and why is said once under both tables.
 * Nothing is written for a Run without MPI data. Unavailable values are
 * written "unavailable", never 0; an estimated app time is marked '*' and
 * explained under "what this summary does not say".
 */
#ifndef NUNATAK_REPORT_SUMMARY_MPI_H
#define NUNATAK_REPORT_SUMMARY_MPI_H

#include <stdio.h>

#include <jansson.h>

struct balance;

#define SUMMARY_MPI_TOP 5

/* Re-sorts b's call sites (by bytes, then back by time). */
void summary_print_mpi(FILE *out, struct balance *b);

/* The "- rank N: ..." lines of what the summary does not say: ranks whose
 * app time is estimated or unavailable, call sites without bytes. */
void summary_print_mpi_not_said(FILE *out, const struct balance *b);

/* Sets root's `ranks`, `balance` and `mpi` (see summary_json()); b may be
 * NULL (no pivot): empty arrays and a balance of 0 ranks. 0 or -ENOMEM. */
int summary_mpi_json(json_t *root, const struct balance *b);

#endif
