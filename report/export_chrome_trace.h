/* export_chrome_trace — a Run's MPI Events in the Trace Event format (the
 * JSON object form: {"traceEvents": [...], "displayTimeUnit": "ms"}),
 * which Perfetto (ui.perfetto.dev) and chrome://tracing open.
 *
 * What it holds:
 *  - metadata ("ph": "M") for every Locus: process_name and
 *    process_sort_index per process, thread_name per thread; a rank's
 *    process is pid = its rank and is named "rank R", any other process is
 *    pid = its pid (tgid) and named "COMM (pid P)"; tid = the thread's tid;
 *  - each MPI Event (`nunatak run --mpi-events`) as a complete event
 *    ("ph": "X", "cat": "mpi", name the MPI function) on its Locus' pid and
 *    tid; ts and dur in microseconds (the ns values / 1000, so nothing is
 *    rounded away), ts counted from the earliest Event of the Run (each
 *    node's CLOCK_MONOTONIC: nodes are not aligned with each other); args
 *    bytes and peer (the peer rank) when the Event has them;
 *  - a Run without Events: the metadata and one global instant event
 *    ("ph": "i", "s": "g") named "no MPI Event" whose args.reason says why
 *    (the Run was made without --mpi-events; or no process made an MPI
 *    call).
 * "otherData" says the Run's name, the clock and t0_ns.
 */
#ifndef NUNATAK_REPORT_EXPORT_CHROME_TRACE_H
#define NUNATAK_REPORT_EXPORT_CHROME_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

struct pivot;

struct export_chrome_trace_stats {
	uint64_t events;    /* "X" events written (the Run's Events) */
	uint64_t loci;	    /* threads named */
	const char *reason; /* static: why there is no Event; NULL when there are */
};

/* Writes the trace of p to out; manifest (may be NULL) names the Run.
 * stats may be NULL. 0, -EINVAL, -ENOMEM, -EBADMSG (an Event of a Locus
 * the pivot does not have), -EIO (out failed; errno of the write when
 * known), or the pivot's -errno. */
int export_chrome_trace(struct pivot *p, const json_t *manifest, FILE *out,
			struct export_chrome_trace_stats *stats);

#endif
