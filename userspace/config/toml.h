/* toml — a strict parser for the TOML subset nunatak's configuration uses.
 *
 * Debian ships no C TOML library, so nunatak owns this one. It accepts:
 *   - comments (#), blank lines, LF or CRLF line ends, UTF-8 text;
 *   - tables [a] and [a.b]; bare keys (A-Za-z0-9_-) and quoted keys
 *     ("..." or '...'); dotted keys a.b = 1;
 *   - basic strings "..." with the escapes \" \\ \n \t \uXXXX, literal
 *     strings '...';
 *   - integers: decimal, optional sign, '_' only between digits, no leading
 *     zero, 64-bit signed;
 *   - floats: decimal with a fraction and/or an exponent (1.5, 1e3, -2.5E-3);
 *   - booleans true and false;
 *   - arrays of the above (mixed types allowed), spanning lines, trailing
 *     comma allowed.
 * Everything else is rejected, never guessed at: inline tables, arrays of
 * tables, dates and times, multi-line strings, hex/octal/binary integers,
 * inf and nan, other escapes, NUL characters, duplicate keys, tables
 * defined twice, junk after a value.
 *
 * Errors read "file:line:column: message", line and column 1-based, the
 * column counted in bytes and pointing at the offending character. Errors
 * about a key (duplicate key, table defined twice, key not a table) point at
 * the first character of the key as written, inside the brackets for a
 * table header.
 *
 * A parsed document is immutable. Every pointer it hands out (strings,
 * values, entry paths) is borrowed from it and lives until toml_doc__free().
 */
#ifndef NUNATAK_TOML_H
#define NUNATAK_TOML_H

#include <stdbool.h>
#include <stddef.h>

struct toml_doc;
struct toml_value;

enum toml_type {
	TOML_STRING,
	TOML_INT,
	TOML_FLOAT,
	TOML_BOOL,
	TOML_ARRAY,
	TOML_TABLE,
};

/* Parses @len bytes of @text (need not be NUL-terminated). @filename only
 * names the input in error messages (NULL reads "<input>"). Returns the
 * document, to free with toml_doc__free(), or NULL with errno EINVAL and
 * "file:line:column: message" in @err (when @err is not NULL), or errno
 * ENOMEM.
 */
struct toml_doc *toml_doc__parse(const char *text, size_t len, const char *filename, char *err,
				 size_t errlen);
/* NULL-safe. */
void toml_doc__free(struct toml_doc *doc);

/* Value at a dotted path of bare key names ("sampling.frequency"), NULL if
 * absent. A quoted key is found by its bare spelling when it has one.
 */
const struct toml_value *toml_doc_find(const struct toml_doc *doc, const char *path);

/* Typed lookups by dotted path: 0 and *@out set, -ENOENT if absent, -EINVAL
 * if the value has another type (an integer is not a float). */
int toml_doc_get_string(const struct toml_doc *doc, const char *path, const char **out);
int toml_doc_get_int(const struct toml_doc *doc, const char *path, long long *out);
int toml_doc_get_float(const struct toml_doc *doc, const char *path, double *out);
int toml_doc_get_bool(const struct toml_doc *doc, const char *path, bool *out);

enum toml_type toml_value_type(const struct toml_value *value);
const char *toml_type_name(enum toml_type type);
/* Where the value starts in the text (for a table: where its name is). */
void toml_value_position(const struct toml_value *value, unsigned *line, unsigned *col);
/* Same contract as the toml_doc_get_* functions, on a value. */
int toml_value_string(const struct toml_value *value, const char **out);
int toml_value_int(const struct toml_value *value, long long *out);
int toml_value_float(const struct toml_value *value, double *out);
int toml_value_bool(const struct toml_value *value, bool *out);
/* Arrays: length (0 for a non-array) and element @i (NULL out of range). */
size_t toml_array_len(const struct toml_value *array);
const struct toml_value *toml_array_at(const struct toml_value *array, size_t i);

/* Tables: number of keys (0 for a non-table) and value @i (NULL out of
 * range), *@key its name as written, unquoted. In insertion order. */
size_t toml_table_len(const struct toml_value *table);
const struct toml_value *toml_table_at(const struct toml_value *table, size_t i,
				       const char **key);

/* One key of the document, as toml_doc_foreach() presents it. */
struct toml_entry {
	/* Full dotted path from the root; a segment that is not a valid bare
	 * key is written quoted ("a.b" stays distinct from a."b.c"). */
	const char *path;
	enum toml_type type;
	const struct toml_value *value;
	unsigned key_line, key_col; /* first character of the key */
};

/* Calls @fn on every key, tables included (so an empty unknown table can be
 * refused too), a table before its keys, keys in insertion order. Array
 * elements are not visited. Stops at the first non-zero return of @fn and
 * returns it; returns 0 otherwise.
 */
int toml_doc_foreach(const struct toml_doc *doc,
		     int (*fn)(const struct toml_entry *entry, void *ctx), void *ctx);

/* Testing only: the allocation number @n (0-based) of the parses that
 * follow, and every one after it, fails; -1 (the default) disables. Lets the
 * tests prove every allocation failure is reported as ENOMEM without leaks.
 */
void toml__fail_alloc_after(long n);

#endif
