/* payload — the data of the HTML report (report/report_html.h): one JSON
 * object, versioned (schema PAYLOAD_SCHEMA), built from a run_model
 * (report/run_model.h) so that it says what the terminal summary and
 * `summary --json` say, from the same Diagnostics, computed once.
 *
 * Schema 1, top level: format{name "nunatak-report", schema, generated_by
 * "nunatak <commit>"}, generated (UTC, ISO 8601), no_source, run_dir,
 * manifest (the Run's manifest.json as it is: the trunk), summary
 * (summary_json(m), each Hotspot with `quality`: the worst Quality of its
 * Diagnostic's values, null below the floor, and `inline`: the inline
 * chains of its sampled addresses, outermost frame first, by decreasing
 * samples, at most PAYLOAD_MAX_INLINE), summary_text (exactly what
 * summary_print writes), roofline {peak, bandwidth, ridge, reason} (values
 * {value, unit, quality, reason}, per core as the Diagnostics' achieved
 * and attainable are), loci, flame (payload_flame.c), events
 * (payload_events.c), components (null without Components).
 * A value that is unavailable is null next to its reason, never 0.
 *
 * Bounds, so that a big Run gives a page that opens: at most
 * PAYLOAD_MAX_STACKS Stacks (by decreasing samples), each of at most
 * PAYLOAD_MAX_FRAMES_PER_STACK frames (the innermost kept, the Stack then
 * marked truncated), at most PAYLOAD_MAX_EVENTS Events (the earliest);
 * what is cut is counted in the section's `limit`, never dropped silently.
 *
 * Source lines: a model built with RUN_MODEL_NO_SOURCE (what
 * PAYLOAD_NO_SOURCE asks) never reads a line's text, so none is in the
 * payload nor in summary_text; each extract says status "disabled" with
 * the reason "the report was made with --no-source".
 */
#ifndef NUNATAK_REPORT_PAYLOAD_H
#define NUNATAK_REPORT_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct run_model;
struct pivot;

#define PAYLOAD_SCHEMA 1
#define PAYLOAD_MAX_STACKS 20000
#define PAYLOAD_MAX_FRAMES_PER_STACK 512
#define PAYLOAD_MAX_EVENTS 200000
#define PAYLOAD_MAX_INLINE 20

#define PAYLOAD_NO_SOURCE 0x1u /* the model must be built with RUN_MODEL_NO_SOURCE */

/* The payload of m (its pivot, manifest, run_dir). NULL + errno: EINVAL
 * (m NULL, PAYLOAD_NO_SOURCE on a model that read the source), ENOMEM,
 * EIO, or the pivot's error. The caller owns the reference. */
json_t *payload_json(const struct run_model *m, unsigned flags);

/* the sections, each a new reference or NULL + errno (payload_*.c) */
json_t *payload_loci_json(struct pivot *p);
json_t *payload_flame_json(struct pivot *p, const char *counter);
json_t *payload_events_json(struct pivot *p);

/* sets `inline` on each Hotspot object of hotspots (the summary's, in
 * the order of m->d->hotspots): 0 or -errno */
int payload_inline_attach(json_t *hotspots, const struct run_model *m);

#endif
