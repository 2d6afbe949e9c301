/* toml — see toml.h. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/config/toml.h"

#define TOML_MAX_KEY_PARTS 32
#define TOML_MAX_DEPTH 64

/* How a table came to exist: TOML allows a header to define a table that
 * was only implied by an earlier header, but never twice, and dotted keys
 * may only extend tables that dotted keys created. */
enum table_origin {
	TABLE_IMPLIED = 0,
	TABLE_HEADER,
	TABLE_DOTTED,
};

struct toml_kv {
	char *key;
	char *path;
	unsigned line, col;
	struct toml_value *value;
};

struct toml_value {
	enum toml_type type;
	unsigned line, col;
	union {
		char *s;
		long long i;
		double f;
		bool b;
		struct {
			struct toml_value **items;
			size_t len, cap;
		} arr;
		struct {
			struct toml_kv *kvs;
			size_t len, cap;
			enum table_origin origin;
		} tab;
	};
};

struct toml_doc {
	struct toml_value *root;
};

struct key_part {
	char *name;
	const char *at;
};

struct key_path {
	struct key_part parts[TOML_MAX_KEY_PARTS];
	size_t len;
};

struct parser {
	const char *text, *p, *end;
	unsigned line;
	const char *line_start;
	const char *filename;
	char *err;
	size_t errlen;
	struct toml_value *root, *table;
	const char *table_path;
};

static long fail_alloc_after = -1;

void toml__fail_alloc_after(long n)
{
	fail_alloc_after = n;
}

static bool alloc_should_fail(void)
{
	if (fail_alloc_after < 0)
		return false;
	if (fail_alloc_after == 0)
		return true;
	fail_alloc_after--;
	return false;
}

static void *toml_calloc(size_t n, size_t size)
{
	if (alloc_should_fail())
		return NULL;
	return calloc(n, size);
}

static void *toml_realloc(void *ptr, size_t size)
{
	if (alloc_should_fail())
		return NULL;
	return realloc(ptr, size);
}

static char *toml_strndup(const char *s, size_t n)
{
	char *copy = toml_calloc(1, n + 1);

	if (copy)
		memcpy(copy, s, n);
	return copy;
}

static void value_free(struct toml_value *v)
{
	size_t i;

	if (!v)
		return;
	switch (v->type) {
	case TOML_STRING:
		free(v->s);
		break;
	case TOML_ARRAY:
		for (i = 0; i < v->arr.len; i++)
			value_free(v->arr.items[i]);
		free(v->arr.items);
		break;
	case TOML_TABLE:
		for (i = 0; i < v->tab.len; i++) {
			free(v->tab.kvs[i].key);
			free(v->tab.kvs[i].path);
			value_free(v->tab.kvs[i].value);
		}
		free(v->tab.kvs);
		break;
	default:
		break;
	}
	free(v);
}

void toml_doc__free(struct toml_doc *doc)
{
	if (!doc)
		return;
	value_free(doc->root);
	free(doc);
}

/* ---- positions and errors ---- */

static void position_of(const struct parser *ps, const char *at, unsigned *line, unsigned *col)
{
	const char *q, *ls = ps->text;
	unsigned l = 1;

	if (at >= ps->line_start) {
		*line = ps->line;
		*col = (unsigned)(at - ps->line_start) + 1;
		return;
	}
	for (q = ps->text; q < at; q++) {
		if (*q == '\n') {
			l++;
			ls = q + 1;
		}
	}
	*line = l;
	*col = (unsigned)(at - ls) + 1;
}

__attribute__((format(printf, 3, 4))) static int parse_error(struct parser *ps, const char *at,
							     const char *fmt, ...)
{
	unsigned line, col;
	va_list ap;
	int n;

	if (!ps->err || !ps->errlen)
		return -EINVAL;
	position_of(ps, at, &line, &col);
	n = snprintf(ps->err, ps->errlen, "%s:%u:%u: ", ps->filename, line, col);
	if (n >= 0 && (size_t)n < ps->errlen) {
		va_start(ap, fmt);
		vsnprintf(ps->err + n, ps->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int oom(struct parser *ps)
{
	if (ps->err && ps->errlen)
		snprintf(ps->err, ps->errlen, "%s: out of memory", ps->filename);
	return -ENOMEM;
}

/* Names the character at @at for a message: 'x', end of line, byte 0x01. */
static const char *describe(const struct parser *ps, const char *at, char buf[16])
{
	unsigned char c;

	if (at >= ps->end)
		return "end of file";
	c = (unsigned char)*at;
	if (c == '\n' || (c == '\r' && at + 1 < ps->end && at[1] == '\n'))
		return "end of line";
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, 16, "'%c'", c);
	else if (c == ' ')
		snprintf(buf, 16, "space");
	else
		snprintf(buf, 16, "byte 0x%02x", c);
	return buf;
}

/* ---- lexical helpers ---- */

static bool at_eof(const struct parser *ps)
{
	return ps->p >= ps->end;
}

static int peek(const struct parser *ps, size_t ahead)
{
	if (ps->p + ahead >= ps->end)
		return -1;
	return (unsigned char)ps->p[ahead];
}

static bool is_bare_key_char(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Control characters other than tab are refused in strings and comments. */
static bool is_control(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static void skip_blanks(struct parser *ps)
{
	while (!at_eof(ps) && (*ps->p == ' ' || *ps->p == '\t'))
		ps->p++;
}

static int skip_comment(struct parser *ps)
{
	char buf[16];

	/* at '#': runs to the end of the line, which stays unconsumed */
	for (ps->p++; !at_eof(ps) && *ps->p != '\n'; ps->p++) {
		if (*ps->p == '\r' && peek(ps, 1) == '\n')
			continue;
		if (is_control((unsigned char)*ps->p))
			return parse_error(ps, ps->p, "control character %s in comment",
					   describe(ps, ps->p, buf));
	}
	return 0;
}

/* Consumes a line end at ps->p if there is one; returns whether it did. */
static bool take_newline(struct parser *ps)
{
	if (peek(ps, 0) == '\r' && peek(ps, 1) == '\n')
		ps->p++;
	if (peek(ps, 0) != '\n')
		return false;
	ps->p++;
	ps->line++;
	ps->line_start = ps->p;
	return true;
}

/* After a header or a key/value: blanks, an optional comment, then a line
 * end or the end of the file. */
static int expect_line_end(struct parser *ps, const char *after)
{
	char buf[16];
	int err;

	skip_blanks(ps);
	if (peek(ps, 0) == '#') {
		err = skip_comment(ps);
		if (err)
			return err;
	}
	if (at_eof(ps) || take_newline(ps))
		return 0;
	if (*ps->p == '\r')
		return parse_error(ps, ps->p, "carriage return not followed by a newline");
	return parse_error(ps, ps->p, "unexpected %s after %s", describe(ps, ps->p, buf), after);
}

/* Inside arrays: blanks, comments and line ends. */
static int skip_space_in_array(struct parser *ps)
{
	int err;

	for (;;) {
		skip_blanks(ps);
		if (peek(ps, 0) == '#') {
			err = skip_comment(ps);
			if (err)
				return err;
		}
		if (!take_newline(ps))
			return 0;
	}
}

/* Whole-input checks done once so the parser can trust its bytes: valid
 * UTF-8, which also rules out overlong forms and surrogates. */
static int check_utf8(struct parser *ps)
{
	const unsigned char *s = (const unsigned char *)ps->text;
	const unsigned char *end = (const unsigned char *)ps->end;
	size_t n, i;
	uint32_t cp;

	while (s < end) {
		if (*s < 0x80) {
			s++;
			continue;
		}
		if ((*s & 0xe0) == 0xc0) {
			n = 1;
			cp = *s & 0x1f;
		} else if ((*s & 0xf0) == 0xe0) {
			n = 2;
			cp = *s & 0x0f;
		} else if ((*s & 0xf8) == 0xf0) {
			n = 3;
			cp = *s & 0x07;
		} else {
			goto bad;
		}
		if ((size_t)(end - s) <= n)
			goto bad;
		for (i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				goto bad;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			goto bad;
		s += n + 1;
	}
	return 0;
bad:
	return parse_error(ps, (const char *)s, "invalid UTF-8");
}

/* ---- values ---- */

static struct toml_value *value_new(struct parser *ps, enum toml_type type, const char *at)
{
	struct toml_value *v = toml_calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->type = type;
	position_of(ps, at, &v->line, &v->col);
	return v;
}

static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t utf8_encode(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	out[0] = (char)(0xe0 | (cp >> 12));
	out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[2] = (char)(0x80 | (cp & 0x3f));
	return 3;
}

/* Parses a basic or literal string at ps->p into a new NUL-terminated
 * string. The decoded text is never longer than the quoted one (\uXXXX is
 * six bytes for at most three), which sizes the buffer up front. */
static int parse_string(struct parser *ps, char **out)
{
	const char *open = ps->p, *q;
	char quote = *open, buf[16];
	char *s, *w;
	uint32_t cp;
	int i, h;

	if (peek(ps, 1) == quote && peek(ps, 2) == quote)
		return parse_error(ps, open, "multi-line strings are not supported");
	for (q = open + 1; q < ps->end && *q != quote && *q != '\n'; q++) {
		if (quote == '"' && *q == '\\' && q + 1 < ps->end && q[1] != '\n')
			q++;
	}
	if (q >= ps->end || *q != quote)
		return parse_error(ps, open, "unterminated string");

	s = toml_calloc(1, (size_t)(q - open));
	if (!s)
		return oom(ps);
	w = s;
	for (ps->p = open + 1; ps->p < q; ps->p++) {
		unsigned char c = (unsigned char)*ps->p;

		if (is_control(c)) {
			parse_error(ps, ps->p, "control character %s in string",
				    describe(ps, ps->p, buf));
			goto fail;
		}
		if (quote == '\'' || c != '\\') {
			*w++ = (char)c;
			continue;
		}
		switch (peek(ps, 1)) {
		case '"':
			*w++ = '"';
			break;
		case '\\':
			*w++ = '\\';
			break;
		case 'n':
			*w++ = '\n';
			break;
		case 't':
			*w++ = '\t';
			break;
		case 'u':
			cp = 0;
			for (i = 2; i < 6; i++) {
				h = ps->p + i < q ? hex_value((unsigned char)ps->p[i]) : -1;
				if (h < 0) {
					parse_error(ps, ps->p, "\\u needs four hexadecimal digits");
					goto fail;
				}
				cp = (cp << 4) | (uint32_t)h;
			}
			if (cp == 0) {
				parse_error(ps, ps->p, "NUL character not allowed in string");
				goto fail;
			}
			if (cp >= 0xd800 && cp <= 0xdfff) {
				parse_error(ps, ps->p, "invalid unicode scalar value \\u%04X", cp);
				goto fail;
			}
			w += utf8_encode(cp, w);
			ps->p += 4;
			break;
		default:
			parse_error(ps, ps->p, "unsupported escape sequence \\%.1s", ps->p + 1);
			goto fail;
		}
		ps->p++;
	}
	*w = '\0';
	ps->p = q + 1;
	*out = s;
	return 0;
fail:
	free(s);
	return -EINVAL;
}

/* Numbers: the token is every character that could belong to a number or a
 * date, so "1979-05-27" or "1.2.3" is refused as a whole rather than split
 * into a number and junk. */
static bool is_number_char(int c)
{
	return is_bare_key_char(c) || c == '.' || c == '+' || c == ':';
}

/* Digits with '_' only between two digits; returns the first character not
 * part of the run, or NULL with the error reported. */
static const char *scan_digits(struct parser *ps, const char *q, const char *end, int *err)
{
	const char *start = q;

	for (; q < end && (is_digit((unsigned char)*q) || *q == '_'); q++) {
		if (*q == '_' && (q == start || q + 1 >= end || !is_digit((unsigned char)q[1]))) {
			*err = parse_error(ps, q, "'_' must be between two digits");
			return NULL;
		}
	}
	if (q == start) {
		char buf[16];

		*err = parse_error(ps, q, "expected a digit, found %s", describe(ps, q, buf));
		return NULL;
	}
	return q;
}

static int parse_number(struct parser *ps, struct toml_value **out)
{
	const char *start = ps->p, *end = ps->p, *q, *digits;
	bool is_float = false;
	char *copy = NULL, *w, *stop;
	struct toml_value *v;
	char buf[16];
	int err = 0;

	while (end < ps->end && is_number_char((unsigned char)*end))
		end++;

	/* dates and times: 1979-05-27, 07:32:00 */
	for (q = start; q < end && is_digit((unsigned char)*q); q++)
		;
	if ((q - start == 4 && q < end && *q == '-') || (q - start == 2 && q < end && *q == ':'))
		return parse_error(ps, start, "dates and times are not supported");

	q = start;
	if (*q == '+' || *q == '-')
		q++;
	if (end - q == 3 && (!strncmp(q, "inf", 3) || !strncmp(q, "nan", 3)))
		return parse_error(ps, start, "inf and nan are not supported");
	if (end - q >= 2 && q[0] == '0' && q[1] == 'x')
		return parse_error(ps, start, "hexadecimal integers are not supported");
	if (end - q >= 2 && q[0] == '0' && q[1] == 'o')
		return parse_error(ps, start, "octal integers are not supported");
	if (end - q >= 2 && q[0] == '0' && q[1] == 'b')
		return parse_error(ps, start, "binary integers are not supported");

	digits = q;
	q = scan_digits(ps, q, end, &err);
	if (!q)
		return err;
	if (q - digits > 1 && digits[0] == '0')
		return parse_error(ps, digits, "leading zeros are not allowed");
	if (q < end && *q == '.') {
		is_float = true;
		q = scan_digits(ps, q + 1, end, &err);
		if (!q)
			return err;
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		is_float = true;
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			q++;
		q = scan_digits(ps, q, end, &err);
		if (!q)
			return err;
	}
	if (q < end)
		return parse_error(ps, q, "invalid character %s in number", describe(ps, q, buf));

	copy = toml_calloc(1, (size_t)(end - start) + 1);
	if (!copy)
		return oom(ps);
	for (w = copy, q = start; q < end; q++)
		if (*q != '_')
			*w++ = *q;
	v = value_new(ps, is_float ? TOML_FLOAT : TOML_INT, start);
	if (!v) {
		err = oom(ps);
		goto cleanup;
	}
	errno = 0;
	if (is_float) {
		v->f = strtod(copy, &stop);
		if (isinf(v->f))
			err = parse_error(ps, start, "float out of range");
	} else {
		v->i = strtoll(copy, &stop, 10);
		if (errno == ERANGE)
			err = parse_error(ps, start, "integer out of range");
	}
	if (err) {
		value_free(v);
		goto cleanup;
	}
	ps->p = end;
	*out = v;
cleanup:
	free(copy);
	return err;
}

static int parse_value(struct parser *ps, struct toml_value **out, int depth);

static int array_push(struct parser *ps, struct toml_value *arr, struct toml_value *item)
{
	struct toml_value **items;
	size_t cap;

	if (arr->arr.len == arr->arr.cap) {
		cap = arr->arr.cap ? arr->arr.cap * 2 : 4;
		items = toml_realloc(arr->arr.items, cap * sizeof(*items));
		if (!items)
			return oom(ps);
		arr->arr.items = items;
		arr->arr.cap = cap;
	}
	arr->arr.items[arr->arr.len++] = item;
	return 0;
}

static int parse_array(struct parser *ps, struct toml_value **out, int depth)
{
	const char *open = ps->p;
	struct toml_value *arr, *item = NULL;
	char buf[16];
	int err;

	if (depth >= TOML_MAX_DEPTH)
		return parse_error(ps, open, "arrays nested too deeply");
	arr = value_new(ps, TOML_ARRAY, open);
	if (!arr)
		return oom(ps);
	ps->p++;
	for (;;) {
		err = skip_space_in_array(ps);
		if (err)
			goto fail;
		if (peek(ps, 0) == ']')
			break;
		if (at_eof(ps)) {
			err = parse_error(ps, open, "unterminated array");
			goto fail;
		}
		err = parse_value(ps, &item, depth + 1);
		if (err)
			goto fail;
		err = array_push(ps, arr, item);
		if (err) {
			value_free(item);
			goto fail;
		}
		err = skip_space_in_array(ps);
		if (err)
			goto fail;
		if (peek(ps, 0) == ',') {
			ps->p++;
			continue;
		}
		if (peek(ps, 0) == ']')
			break;
		if (at_eof(ps))
			err = parse_error(ps, open, "unterminated array");
		else
			err = parse_error(ps, ps->p, "expected ',' or ']' in array, found %s",
					  describe(ps, ps->p, buf));
		goto fail;
	}
	ps->p++;
	*out = arr;
	return 0;
fail:
	value_free(arr);
	return err;
}

static int parse_value(struct parser *ps, struct toml_value **out, int depth)
{
	const char *start = ps->p, *q;
	struct toml_value *v;
	char buf[16];
	size_t n;
	int c = peek(ps, 0), err;

	if (c == '"' || c == '\'') {
		v = value_new(ps, TOML_STRING, start);
		if (!v)
			return oom(ps);
		err = parse_string(ps, &v->s);
		if (err) {
			value_free(v);
			return err;
		}
		*out = v;
		return 0;
	}
	if (c == '[')
		return parse_array(ps, out, depth);
	if (c == '{')
		return parse_error(ps, start, "inline tables are not supported");
	if (is_digit(c) || c == '+' || c == '-')
		return parse_number(ps, out);
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
		for (q = start; q < ps->end && is_bare_key_char((unsigned char)*q); q++)
			;
		n = (size_t)(q - start);
		if ((n == 4 && !memcmp(start, "true", 4)) ||
		    (n == 5 && !memcmp(start, "false", 5))) {
			v = value_new(ps, TOML_BOOL, start);
			if (!v)
				return oom(ps);
			v->b = n == 4;
			ps->p = q;
			*out = v;
			return 0;
		}
		if (n == 3 && (!memcmp(start, "inf", 3) || !memcmp(start, "nan", 3)))
			return parse_error(ps, start, "inf and nan are not supported");
		return parse_error(ps, start, "invalid value '%.*s' (strings must be quoted)",
				   (int)(n > 40 ? 40 : n), start);
	}
	if (c < 0 || c == '\n' || c == '\r' || c == '#' || c == ',' || c == ']')
		return parse_error(ps, start, "expected a value, found %s",
				   describe(ps, start, buf));
	return parse_error(ps, start, "invalid value starting with %s", describe(ps, start, buf));
}

/* ---- keys and tables ---- */

static void key_path_release(struct key_path *kp)
{
	size_t i;

	for (i = 0; i < kp->len; i++)
		free(kp->parts[i].name);
	kp->len = 0;
}

/* Parses a (possibly dotted) key at ps->p, stopping before what follows it
 * ('=' or ']'). */
static int parse_key(struct parser *ps, struct key_path *kp)
{
	const char *start;
	char buf[16];
	char *name;
	int c, err;

	kp->len = 0;
	for (;;) {
		start = ps->p;
		c = peek(ps, 0);
		if (kp->len == TOML_MAX_KEY_PARTS)
			return parse_error(ps, start, "key has more than %d parts",
					   TOML_MAX_KEY_PARTS);
		if (c == '"' || c == '\'') {
			err = parse_string(ps, &name);
			if (err)
				return err;
		} else if (is_bare_key_char(c)) {
			while (!at_eof(ps) && is_bare_key_char((unsigned char)*ps->p))
				ps->p++;
			name = toml_strndup(start, (size_t)(ps->p - start));
			if (!name)
				return oom(ps);
		} else {
			return parse_error(ps, start, "expected a key, found %s",
					   describe(ps, start, buf));
		}
		kp->parts[kp->len].name = name;
		kp->parts[kp->len].at = start;
		kp->len++;
		skip_blanks(ps);
		if (peek(ps, 0) != '.')
			return 0;
		ps->p++;
		skip_blanks(ps);
	}
}

static bool is_bare_key(const char *key)
{
	if (!*key)
		return false;
	for (; *key; key++)
		if (!is_bare_key_char((unsigned char)*key))
			return false;
	return true;
}

/* @prefix "." @key, with @key quoted when it is not a bare key. */
static char *path_join(const char *prefix, const char *key)
{
	size_t len = strlen(prefix) + 2 * strlen(key) + 4, n;
	char *path = toml_calloc(1, len);
	const char *k;

	if (!path)
		return NULL;
	n = (size_t)snprintf(path, len, "%s%s", prefix, *prefix ? "." : "");
	if (is_bare_key(key)) {
		strcpy(path + n, key);
		return path;
	}
	path[n++] = '"';
	for (k = key; *k; k++) {
		if (*k == '"' || *k == '\\')
			path[n++] = '\\';
		path[n++] = *k;
	}
	path[n] = '"';
	return path;
}

/* The entry of @table whose key is key[0..len) (keys hold no NUL). */
static struct toml_kv *table_find_len(const struct toml_value *table, const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < table->tab.len; i++)
		if (!strncmp(table->tab.kvs[i].key, key, len) && !table->tab.kvs[i].key[len])
			return &table->tab.kvs[i];
	return NULL;
}

static struct toml_kv *table_find(const struct toml_value *table, const char *key)
{
	return table_find_len(table, key, strlen(key));
}

/* Appends @key to @table, taking @value; returns the new entry or NULL
 * (ENOMEM, @value freed). @key is copied. */
static struct toml_kv *table_add(struct parser *ps, struct toml_value *table, const char *key,
				 const char *path_prefix, const char *at, struct toml_value *value)
{
	struct toml_kv *kvs, *kv;
	size_t cap;

	if (table->tab.len == table->tab.cap) {
		cap = table->tab.cap ? table->tab.cap * 2 : 8;
		kvs = toml_realloc(table->tab.kvs, cap * sizeof(*kvs));
		if (!kvs)
			goto fail;
		table->tab.kvs = kvs;
		table->tab.cap = cap;
	}
	kv = &table->tab.kvs[table->tab.len];
	kv->key = toml_strndup(key, strlen(key));
	kv->path = path_join(path_prefix, key);
	if (!kv->key || !kv->path) {
		free(kv->key);
		free(kv->path);
		goto fail;
	}
	position_of(ps, at, &kv->line, &kv->col);
	kv->value = value;
	table->tab.len++;
	return kv;
fail:
	value_free(value);
	return NULL;
}

/* Walks @kp from @table, creating missing tables with @origin; the walk
 * may enter an existing table only if @may_enter says so. Stops before the
 * last part; *@parent is the table holding it, *@parent_path its path. */
static int walk_key(struct parser *ps, const struct key_path *kp, struct toml_value *table,
		    const char *table_path, enum table_origin origin, bool dotted,
		    struct toml_value **parent, const char **parent_path)
{
	struct toml_value *sub;
	struct toml_kv *kv;
	size_t i;

	for (i = 0; i + 1 < kp->len; i++) {
		kv = table_find(table, kp->parts[i].name);
		if (!kv) {
			sub = value_new(ps, TOML_TABLE, kp->parts[i].at);
			if (!sub)
				return oom(ps);
			sub->tab.origin = origin;
			kv = table_add(ps, table, kp->parts[i].name, table_path, kp->parts[i].at,
				       sub);
			if (!kv)
				return oom(ps);
		} else if (kv->value->type != TOML_TABLE) {
			return parse_error(ps, kp->parts[0].at, "key '%s' already defined as %s",
					   kv->path, toml_type_name(kv->value->type));
		} else if (dotted && kv->value->tab.origin != TABLE_DOTTED) {
			return parse_error(ps, kp->parts[0].at,
					   "table '%s' already defined, cannot extend it here",
					   kv->path);
		}
		table = kv->value;
		table_path = kv->path;
	}
	*parent = table;
	*parent_path = table_path;
	return 0;
}

static int parse_table_header(struct parser *ps)
{
	struct key_path kp = {.len = 0};
	const char *parent_path, *name_at;
	struct toml_value *parent, *table;
	struct toml_kv *kv;
	char buf[16];
	int err;

	if (peek(ps, 1) == '[')
		return parse_error(ps, ps->p, "arrays of tables are not supported");
	ps->p++;
	skip_blanks(ps);
	name_at = ps->p;
	err = parse_key(ps, &kp);
	if (err)
		goto cleanup;
	if (peek(ps, 0) != ']') {
		err = parse_error(ps, ps->p, "expected ']' after table name, found %s",
				  describe(ps, ps->p, buf));
		goto cleanup;
	}
	ps->p++;
	err = expect_line_end(ps, "table header");
	if (err)
		goto cleanup;

	err = walk_key(ps, &kp, ps->root, "", TABLE_IMPLIED, false, &parent, &parent_path);
	if (err)
		goto cleanup;
	kv = table_find(parent, kp.parts[kp.len - 1].name);
	if (!kv) {
		table = value_new(ps, TOML_TABLE, name_at);
		if (!table) {
			err = oom(ps);
			goto cleanup;
		}
		table->tab.origin = TABLE_HEADER;
		kv = table_add(ps, parent, kp.parts[kp.len - 1].name, parent_path, name_at, table);
		if (!kv) {
			err = oom(ps);
			goto cleanup;
		}
	} else if (kv->value->type != TOML_TABLE) {
		err = parse_error(ps, name_at, "key '%s' already defined as %s", kv->path,
				  toml_type_name(kv->value->type));
		goto cleanup;
	} else if (kv->value->tab.origin != TABLE_IMPLIED) {
		err = parse_error(ps, name_at, "table '%s' defined twice", kv->path);
		goto cleanup;
	} else {
		kv->value->tab.origin = TABLE_HEADER;
		position_of(ps, name_at, &kv->line, &kv->col);
		kv->value->line = kv->line;
		kv->value->col = kv->col;
	}
	ps->table = kv->value;
	ps->table_path = kv->path;
cleanup:
	key_path_release(&kp);
	return err;
}

static int parse_key_value(struct parser *ps)
{
	struct key_path kp = {.len = 0};
	struct toml_value *parent, *value = NULL;
	const char *parent_path, *key_at = ps->p;
	struct toml_kv *kv;
	char buf[16];
	int err;

	err = parse_key(ps, &kp);
	if (err)
		goto cleanup;
	if (peek(ps, 0) != '=') {
		err = parse_error(ps, ps->p, "expected '=' after key, found %s",
				  describe(ps, ps->p, buf));
		goto cleanup;
	}
	ps->p++;
	skip_blanks(ps);

	err =
	    walk_key(ps, &kp, ps->table, ps->table_path, TABLE_DOTTED, true, &parent, &parent_path);
	if (err)
		goto cleanup;
	kv = table_find(parent, kp.parts[kp.len - 1].name);
	if (kv) {
		err = parse_error(ps, key_at, "duplicate key '%s'", kv->path);
		goto cleanup;
	}
	err = parse_value(ps, &value, 0);
	if (err)
		goto cleanup;
	if (!table_add(ps, parent, kp.parts[kp.len - 1].name, parent_path, key_at, value)) {
		err = oom(ps);
		goto cleanup;
	}
	err = expect_line_end(ps, "value");
cleanup:
	key_path_release(&kp);
	return err;
}

struct toml_doc *toml_doc__parse(const char *text, size_t len, const char *filename, char *err,
				 size_t errlen)
{
	struct parser ps = {
	    .text = text,
	    .p = text,
	    .end = text + len,
	    .line = 1,
	    .line_start = text,
	    .filename = filename ? filename : "<input>",
	    .err = err,
	    .errlen = errlen,
	};
	struct toml_doc *doc;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	doc = toml_calloc(1, sizeof(*doc));
	if (!doc) {
		ret = oom(&ps);
		goto fail;
	}
	doc->root = value_new(&ps, TOML_TABLE, text);
	if (!doc->root) {
		ret = oom(&ps);
		goto fail;
	}
	doc->root->tab.origin = TABLE_HEADER;
	ps.root = ps.table = doc->root;
	ps.table_path = "";

	ret = check_utf8(&ps);
	if (ret)
		goto fail;
	/* a UTF-8 byte order mark is not content */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		ps.p += 3;
	while (!at_eof(&ps)) {
		skip_blanks(&ps);
		if (at_eof(&ps))
			break;
		if (*ps.p == '#' || *ps.p == '\n' || *ps.p == '\r')
			ret = expect_line_end(&ps, "comment");
		else if (*ps.p == '[')
			ret = parse_table_header(&ps);
		else
			ret = parse_key_value(&ps);
		if (ret)
			goto fail;
	}
	return doc;
fail:
	toml_doc__free(doc);
	errno = -ret;
	return NULL;
}

/* ---- lookups ---- */

const struct toml_value *toml_doc_find(const struct toml_doc *doc, const char *path)
{
	const struct toml_value *table;
	const struct toml_kv *kv = NULL;
	const char *seg = path, *dot;
	size_t n;

	if (!doc || !path)
		return NULL;
	table = doc->root;
	for (;;) {
		/* no copy of the segment: a key of any length is found */
		dot = strchr(seg, '.');
		n = dot ? (size_t)(dot - seg) : strlen(seg);
		kv = table_find_len(table, seg, n);
		if (!kv)
			return NULL;
		if (!dot)
			return kv->value;
		if (kv->value->type != TOML_TABLE)
			return NULL;
		table = kv->value;
		seg = dot + 1;
	}
}

enum toml_type toml_value_type(const struct toml_value *value)
{
	return value->type;
}

const char *toml_type_name(enum toml_type type)
{
	switch (type) {
	case TOML_STRING:
		return "a string";
	case TOML_INT:
		return "an integer";
	case TOML_FLOAT:
		return "a float";
	case TOML_BOOL:
		return "a boolean";
	case TOML_ARRAY:
		return "an array";
	case TOML_TABLE:
		return "a table";
	}
	return "an unknown type";
}

void toml_value_position(const struct toml_value *value, unsigned *line, unsigned *col)
{
	*line = value->line;
	*col = value->col;
}

int toml_value_string(const struct toml_value *value, const char **out)
{
	if (!value)
		return -ENOENT;
	if (value->type != TOML_STRING)
		return -EINVAL;
	*out = value->s;
	return 0;
}

int toml_value_int(const struct toml_value *value, long long *out)
{
	if (!value)
		return -ENOENT;
	if (value->type != TOML_INT)
		return -EINVAL;
	*out = value->i;
	return 0;
}

int toml_value_float(const struct toml_value *value, double *out)
{
	if (!value)
		return -ENOENT;
	if (value->type != TOML_FLOAT)
		return -EINVAL;
	*out = value->f;
	return 0;
}

int toml_value_bool(const struct toml_value *value, bool *out)
{
	if (!value)
		return -ENOENT;
	if (value->type != TOML_BOOL)
		return -EINVAL;
	*out = value->b;
	return 0;
}

int toml_doc_get_string(const struct toml_doc *doc, const char *path, const char **out)
{
	return toml_value_string(toml_doc_find(doc, path), out);
}

int toml_doc_get_int(const struct toml_doc *doc, const char *path, long long *out)
{
	return toml_value_int(toml_doc_find(doc, path), out);
}

int toml_doc_get_float(const struct toml_doc *doc, const char *path, double *out)
{
	return toml_value_float(toml_doc_find(doc, path), out);
}

int toml_doc_get_bool(const struct toml_doc *doc, const char *path, bool *out)
{
	return toml_value_bool(toml_doc_find(doc, path), out);
}

size_t toml_array_len(const struct toml_value *array)
{
	return array && array->type == TOML_ARRAY ? array->arr.len : 0;
}

const struct toml_value *toml_array_at(const struct toml_value *array, size_t i)
{
	if (i >= toml_array_len(array))
		return NULL;
	return array->arr.items[i];
}

static int foreach_in(const struct toml_value *table,
		      int (*fn)(const struct toml_entry *entry, void *ctx), void *ctx)
{
	const struct toml_kv *kv;
	struct toml_entry entry;
	size_t i;
	int ret;

	for (i = 0; i < table->tab.len; i++) {
		kv = &table->tab.kvs[i];
		entry.path = kv->path;
		entry.type = kv->value->type;
		entry.value = kv->value;
		entry.key_line = kv->line;
		entry.key_col = kv->col;
		ret = fn(&entry, ctx);
		if (ret)
			return ret;
		if (kv->value->type == TOML_TABLE) {
			ret = foreach_in(kv->value, fn, ctx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

size_t toml_table_len(const struct toml_value *table)
{
	return table && table->type == TOML_TABLE ? table->tab.len : 0;
}

const struct toml_value *toml_table_at(const struct toml_value *table, size_t i,
				       const char **key)
{
	if (i >= toml_table_len(table))
		return NULL;
	if (key)
		*key = table->tab.kvs[i].key;
	return table->tab.kvs[i].value;
}

int toml_doc_foreach(const struct toml_doc *doc,
		     int (*fn)(const struct toml_entry *entry, void *ctx), void *ctx)
{
	return foreach_in(doc->root, fn, ctx);
}
