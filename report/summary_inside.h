/* summary_inside — what the summary says of the Stacks' classes
 * (analysis/stack_class.h, analysis/diagnose.h): nunatak's own probe
 * samples counted apart, and for a Hotspot with samples inside MPI calls
 * the MPI function and call site they were in, so a busy-wait in the MPI
 * library reads as MPI time at its call site. Used by summary.c only.
 *
 * Text: under a Hotspot's row, one line per (MPI function, call site), at
 * most SUMMARY_MAX_MPI_CALLS, "inside MPI_Send (97.0% of it), called from
 * send_blocks (busy_send.c:60)"; after the table the Run's lines
 * "inside MPI calls: ..." and "nunatak's MPI probes: N samples, x% of the
 * samples — nunatak's cost, not the application's".
 * JSON: each Hotspot's "inside_mpi" (null when none of its samples was):
 * {samples, share (of the Hotspot's samples), calls[{function|null,
 * call_site{function, module, file, line}|null, samples}]}; the root's
 * "inside_mpi" {samples, seconds|null, share|null (of the application's
 * time)} and "nunatak_probes" {samples, seconds|null, share|null (of the
 * application's samples and these), what}.
 */
#ifndef NUNATAK_REPORT_SUMMARY_INSIDE_H
#define NUNATAK_REPORT_SUMMARY_INSIDE_H

#include <stdio.h>

#include <jansson.h>

struct diagnosis;
struct hotspot_share;

#define SUMMARY_MAX_MPI_CALLS 2

/* the lines under h's row (nothing when none of its samples is in MPI) */
void summary_print_hotspot_inside(FILE *out, const struct hotspot_share *h);
/* the Run's lines (nothing when there is nothing to say) */
void summary_print_inside(FILE *out, const struct diagnosis *d);
/* h's "inside_mpi" value: a new reference (json null when none), NULL
 * when out of memory */
json_t *summary_hotspot_inside_json(const struct hotspot_share *h);
/* sets root's "inside_mpi" and "nunatak_probes": 0 or -ENOMEM */
int summary_inside_json(json_t *root, const struct diagnosis *d);

#endif
