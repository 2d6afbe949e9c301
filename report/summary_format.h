/* summary_format — how the summary writes numbers, shared by its text and
 * JSON sections: an unavailable value (NAN) is "unavailable" or null,
 * never 0. The returned string is buf or a static "unavailable". */
#ifndef NUNATAK_REPORT_SUMMARY_FORMAT_H
#define NUNATAK_REPORT_SUMMARY_FORMAT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define SUMMARY_UNAVAILABLE "unavailable"

/* "%.3f" seconds */
const char *summary_fmt_seconds(char *buf, size_t len, double seconds);
/* "%.1f%%" of a fraction of 1 */
const char *summary_fmt_share(char *buf, size_t len, double share);
/* printf format fmt of one double */
const char *summary_fmt_double(char *buf, size_t len, const char *fmt, double v)
    __attribute__((format(printf, 3, 0)));

/* an estimate and its error: "≈" fmt(v) " ± " fmt(err) ("± unavailable"
 * when err is NAN); fmt(v) alone when not estimated; "unavailable" when v
 * is NAN */
const char *summary_fmt_estimate(char *buf, size_t len, const char *fmt, double v,
				 int estimated, double err) __attribute__((format(printf, 3, 0)));

/* the columns s takes on a terminal: its UTF-8 characters ("≈" is one) */
int summary_text_width(const char *s);

/* s right-aligned in width columns (nunatak's own text: not sanitized) */
void summary_print_right(FILE *out, int width, const char *s);

/* text from outside (a source line, an executable's path) for a
 * terminal: every control character but tab written '?', so that it cannot
 * move the cursor or change colours */
void summary_print_text(FILE *out, const char *text);

/* the same, for text of several lines (a remedy with one line per cause):
 * each line after the first starts with indent, so that it stands under the
 * first one's text; ends with a newline */
void summary_print_lines(FILE *out, const char *text, const char *indent);

/* A Degradation for a terminal, every text through the sanitizer:
 * "<lead>degradation NAME[ on NODE]: MESSAGE" then "remedy: REMEDY" on a
 * line of its own after @indent spaces (<= 32); the lines after the first
 * of each stand under its text (a remedy has one line per cause). */
void summary_print_degradation(FILE *out, const char *lead, int indent, const char *name,
			       const char *node, const char *message, const char *remedy);

/* NAN → null; a new reference, NULL when out of memory */
json_t *summary_json_number(double v);

#endif
