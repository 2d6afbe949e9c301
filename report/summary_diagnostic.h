/* summary_diagnostic — the Diagnostics in the summary (analysis/diagnostic.h).
 *
 * Text: the class of each listed Hotspot in the table ("—" without one),
 * then one short block per listed Hotspot above the floor, its measured
 * values first: share, seconds, imbalance (and over which Loci) where it
 * applies, then DRAM intensity, achieved, attainable, envelope fraction,
 * class with its evidence. A measured value is written with its unit; an
 * estimated one adds "(estimated [n])"; an unavailable one is "unavailable
 * [n]", never 0; an infinite one "infinite [n]". [n] points to a reason
 * listed once under the blocks (shared reasons are said once). A Hotspot
 * whose four placement values are unavailable for a reason of its own gets
 * "placement unavailable [n]". What holds for the whole Run is said once
 * under the blocks, not per Hotspot: "no roofline placement in this Run"
 * (no FLOP or DRAM counter: when the counters' Degradation says why, its
 * message's first clause and its name, the whole message and its remedy
 * being printed with the Degradations) and "imbalance not applicable[ to
 * A, B]: why" (not a measurement: no value is written). "What this summary
 * does not say" names the Ceilings that are estimated or unavailable, with
 * their reasons, when some Hotspot is placed (otherwise none is used).
 *
 * JSON: a Hotspot's `diagnostic` = {share, imbalance, dram_intensity,
 * achieved, attainable, envelope_fraction, ridge} each {value|null, unit,
 * quality, reason|null, lineage[], formula|null} (value null when
 * unavailable or infinite: the reason says which), imbalance_over
 * ("ranks"|"threads"|null), imbalance_not_applicable (why, or null: when a
 * string, the `imbalance` key is absent), loci (Loci compared), peak
 * ("flops_dp" | "flops_sp"), classification (string|null),
 * classification_reason; null below the floor. The summary's
 * `diagnostic_run` = {imbalance_over ("ranks"|"threads"|null),
 * imbalance_not_applicable (string|null), no_placement (why no Hotspot of
 * the Run is placed, or null)}.
 */
#ifndef NUNATAK_REPORT_SUMMARY_DIAGNOSTIC_H
#define NUNATAK_REPORT_SUMMARY_DIAGNOSTIC_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

struct diagnosis;
struct hotspot_share;

/* the class column: the class, or "—"; its display width in *width */
const char *summary_class_text(const struct hotspot_share *h, int *width);

/* the Diagnostic blocks of d->hotspots[0 .. shown) (those above the floor) */
void summary_print_diagnostics(FILE *out, const struct diagnosis *d, size_t shown);

/* the "what this does not say" lines about Ceilings and placements */
void summary_print_diagnostic_not_said(FILE *out, const struct diagnosis *d);

/* h's `diagnostic` (json null below the floor); NULL when out of memory */
json_t *summary_diagnostic_json(const struct hotspot_share *h);

/* the summary's `diagnostic_run` (json null without one); NULL when out of
 * memory */
json_t *summary_diagnostic_run_json(const struct diagnosis *d);

#endif
