/* calibration_rows — the one owner of the calibration row schema
 * (GLOSSARY.md "Calibration row"): one timed candidate per line of a TSV,
 * the columns in this order, separated by one tab:
 *
 *   backend digest routine label measured_ms model_ms kernels flops bytes
 *   flops_approx bytes_approx opaque
 *
 * The schema is the one OCANNL's autotuner writes and reads
 * (Cost_model.Calibration: to_line, of_line), so that rows go both ways:
 *
 * Writing, byte for byte what the autotuner writes: measured_ms and
 * model_ms with exactly 6 decimals, FLOORED on the exact binary value
 * (integer arithmetic, never printf's rounding), so a stored time read
 * back is never above the time written; model_ms empty when the model had
 * no coverage (NAN in memory). kernels, flops, bytes: decimal integers
 * (OCaml's %d), the autotuner's reader taking only an int (63 bits). The
 * three flags: true or false (OCaml's %b; the autotuner's reader takes
 * nothing else). A count that is not an integer is written rounded UP and
 * the flag of its leg set true: the autotuner's counts are upper bounds
 * whose exactness the flag carries, so the written count stays a bound and
 * claims no exactness the value did not have (the fit then skips that leg
 * of the row). A count at or above 2^62 (CALIBRATION_COUNT_LIMIT, beyond
 * an OCaml int) refuses the row (-ERANGE): no integer it could be written
 * as would still be an upper bound the autotuner reads. No trailing
 * newline (a file adds one per row); a tab or a newline inside routine or
 * label becomes a space; a backend or digest holding one is refused
 * (-EINVAL): they are identities, not prose.
 *
 * Reading: 12 columns, or the older 11 (no routine: an empty one); the
 * flags true/false, or 0/1 as nunatak wrote them before; counts any
 * non-negative number (%d, or the %.17g nunatak wrote before). Any other
 * column count, an empty or unparseable number, another flag, a negative
 * time or count is rejected (-EINVAL with the column named), never
 * guessed. In a file, blank lines and lines starting with '#' are
 * comments; nothing else is skipped: the first bad line fails the whole
 * read with "file:line: reason".
 *
 * A row names itself "routine/label", or "label" when routine is empty.
 */
#ifndef NUNATAK_CALIBRATION_ROWS_H
#define NUNATAK_CALIBRATION_ROWS_H

#include <stdbool.h>
#include <stddef.h>

#define CALIBRATION_ROW_COLUMNS 12
#define CALIBRATION_ROW_COLUMNS_OLD 11 /* before routine existed */
/* 2^62: the first count an OCaml int (63 bits, max 2^62 - 1) cannot hold */
#define CALIBRATION_COUNT_LIMIT 4611686018427387904.0

struct calibration_row {
	char *backend, *digest, *routine, *label; /* owned, never NULL once read */
	double measured_ms;
	double model_ms; /* NAN: no model coverage */
	int kernels;	 /* >= 1 */
	double flops, bytes;
	bool flops_approx, bytes_approx, opaque;
};

/* frees the strings; NULL-safe; leaves @r zeroed */
void calibration_row_release(struct calibration_row *r);

/* The row as one line without its newline, malloc'ed into *line (caller
 * frees). 0; -EINVAL (a tab or newline in backend or digest, a time or
 * count negative or not finite, kernels < 1, a time over 9e9 ms); -ERANGE
 * (a count >= CALIBRATION_COUNT_LIMIT); -ENOMEM. */
int calibration_row_format(const struct calibration_row *r, char **line);

/* One line (its '\n' excluded by @len) into @r (strings owned by @r,
 * release it). 0, or -EINVAL with why (the column) in @why; -ENOMEM. On
 * error @r holds nothing. */
int calibration_row_parse(const char *line, size_t len, struct calibration_row *r, char *why,
			  size_t whylen);

/* "routine/label" or "label" into buf; buf */
const char *calibration_row_name(const struct calibration_row *r, char *buf, size_t len);

/* A count as a row stores it: the decimal integer of ceil(count) into
 * buf, and *approx set true when that is not count itself (left as it was
 * otherwise). 0; -EINVAL (negative, not finite); -ERANGE (>= 2^62). */
int calibration_count_format(double count, bool *approx, char *buf, size_t len);

/* ms with 6 decimals floored as a row stores it ("12.345678"): 0 or
 * -EINVAL (negative, not finite, over 9e9 ms) */
int calibration_ms_format(double ms, char *buf, size_t len);

/* rows read from files, in order */
struct calibration_rows {
	struct calibration_row *rows;
	size_t n, cap;
};

void calibration_rows_release(struct calibration_rows *set);

/* Moves *r (its strings) to the end of @set: 0, or -ENOMEM with *r still
 * the caller's. */
int calibration_rows_push(struct calibration_rows *set, struct calibration_row *r);

/* Appends every row of @path (shown as given) to @set. 0; -EINVAL with
 * "path:line: reason" in @err; -errno with "path: strerror" when it cannot
 * be read; -ENOMEM. On error @set keeps only what it held before. */
int calibration_rows_read_file(const char *path, struct calibration_rows *set, char *err,
			       size_t errlen);

/* The same over text in memory (@shown names it in messages). */
int calibration_rows_read_text(const char *text, size_t len, const char *shown,
			       struct calibration_rows *set, char *err, size_t errlen);

/* Appends @n rows, one line each, to @fd opened O_APPEND (shown names it in
 * messages), after checking it is a regular file (-EINVAL) owned by the
 * effective uid and not writable by anyone (-EPERM), refusals said. All
 * rows in one write. 0 or -errno. */
int calibration_rows_append_fd(int fd, const char *shown, const struct calibration_row *rows,
			       size_t n);

/* Opens @path to append rows: created 0600 when absent, never through a
 * symbolic link (-ELOOP). The fd, or -errno. */
int calibration_rows_open(const char *path);
/* The same for @name under the directory fd @at (shown in messages). */
int calibration_rows_open_at(int at, const char *name, const char *shown);

#endif
