/* summary_source — the source lines of the summary's Hotspots, from the
 * extracts the Run holds (userspace/source/source_extracts.h).
 *
 * Text: for the first SUMMARY_SOURCE_HOTSPOTS Hotspots above the floor,
 * its hottest SUMMARY_SOURCE_LINES lines (in line order) with their share
 * and text, or the reason there is no text (then the lines with their
 * shares only). A Hotspot with no extract (no line was sampled in its own
 * source file, a Run older than extracts) says nothing.
 * JSON: each Hotspot's `source`: {file (as the debug information names
 * it), resolved (the file read, null), status, reason|null, first_line,
 * last_line (null without text), truncated, lines[{line, text|null,
 * share|null, samples}]} or null without an extract. lines are the
 * extract's lines and the lines sampled, by line; share = the line's
 * samples / the Run's samples, null for a line not sampled.
 * Control characters of a source line (but tab) print as '?' in the text.
 * no_source (RUN_MODEL_NO_SOURCE): no line's text is read; the extract
 * says status "disabled" with RUN_MODEL_NO_SOURCE_REASON, its lines keep
 * their numbers and shares.
 */
#ifndef NUNATAK_REPORT_SUMMARY_SOURCE_H
#define NUNATAK_REPORT_SUMMARY_SOURCE_H

#include <stdio.h>

#include <jansson.h>

struct diagnosis;
struct hotspot_share;
struct pivot;

#define SUMMARY_SOURCE_HOTSPOTS 3
#define SUMMARY_SOURCE_LINES 6

/* 0, -EIO when out failed, -ENOMEM, or the pivot's error; p NULL: nothing */
int summary_print_sources(FILE *out, const struct diagnosis *d, struct pivot *p, int no_source);

/* Sets hotspot["source"] for h: 0 or -ENOMEM (or the pivot's error). */
int summary_source_attach(json_t *hotspot, const struct diagnosis *d,
			  const struct hotspot_share *h, struct pivot *p, int no_source);

#endif
