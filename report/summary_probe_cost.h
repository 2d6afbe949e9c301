/* summary_probe_cost — what nunatak's MPI probes cost the ranks, in the
 * summary (report/summary_mpi.c calls it) and its JSON: a Run-level line
 * ("nunatak's MPI probes cost 0.412 s, 3.1 % of the ranks' time (12345
 * calls × 33.4 µs, calibrated on node vm); not counted as the
 * application's time"), then per rank its probed calls, cost per call,
 * calls × cost and share of its time, and how it was probed when that was
 * recorded (budget, every call). The method: docs/mpi-probe-cost.md. */
#ifndef NUNATAK_REPORT_SUMMARY_PROBE_COST_H
#define NUNATAK_REPORT_SUMMARY_PROBE_COST_H

#include <stdio.h>

#include <jansson.h>

struct balance;
struct balance_rank;

void summary_print_probe_cost(FILE *out, const struct balance *b);

/* Sets in rank object o: probe_calls, probe_cost_per_call_ns,
 * probe_cost_s, probe_cost_share (null when unavailable), probe_cost_reason
 * (null when calibrated), probe_budget (null: every call or not
 * recorded), probing (null: not recorded), wall_app_time and
 * wall_mpi_time (as the clocks read them, the probes included). 0 or
 * -ENOMEM. */
int summary_probe_cost_rank_json(json_t *o, const struct balance_rank *r);

/* {calls, seconds, share, per_call_ns_min, per_call_ns_max, ranks, node}
 * (numbers null when no rank was calibrated); NULL when out of memory */
json_t *summary_probe_cost_json(const struct balance *b);

#endif
