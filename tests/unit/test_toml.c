/* Unit tests for userspace/config/toml: every accepted type, every refused
 * class with its exact line:column, and an allocation-failure pass. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include "userspace/config/toml.h"

#define FILENAME "t.toml"

static int check_entry_sane(const struct toml_entry *e, void *ctx)
{
	unsigned line, col;
	size_t *count = ctx;

	assert_non_null(e->path);
	assert_true(e->path[0] != '\0');
	assert_true(e->key_line >= 1);
	assert_true(e->key_col >= 1);
	assert_int_equal(e->type, toml_value_type(e->value));
	toml_value_position(e->value, &line, &col);
	assert_true(line >= 1 && col >= 1);
	/* a value never starts before its key */
	assert_true(line > e->key_line || (line == e->key_line && col >= e->key_col));
	(*count)++;
	return 0;
}

/* Invariants every parsed document keeps; returns the number of keys. */
static size_t assert_sane_doc(const struct toml_doc *doc)
{
	size_t count = 0;

	assert_non_null(doc);
	assert_int_equal(toml_doc_foreach(doc, check_entry_sane, &count), 0);
	return count;
}

static struct toml_doc *parse_ok(const char *text)
{
	char err[256] = "";
	struct toml_doc *doc = toml_doc__parse(text, strlen(text), FILENAME, err, sizeof(err));

	if (!doc)
		fail_msg("unexpected parse error: %s", err);
	assert_sane_doc(doc);
	return doc;
}

static const char all_types[] =
    "# a comment line\n"
    "\n"
    "title = \"a\\\"b\\\\c\\nd\\te\\u00e9\\u20ac\"  # trailing comment\n"
    "lit = 'C:\\path\\no escape'\n"
    "\"quoted key\" = 1\n"
    "'lit key' = 2\n"
    "int1 = +99\n"
    "int2 = -17\n"
    "int3 = 1_000_000\n"
    "int4 = 0\n"
    "big = 9223372036854775807\n"
    "small = -9223372036854775808\n"
    "f1 = 3.14\n"
    "f2 = -0.01\n"
    "f3 = 5e+22\n"
    "f4 = 6.626E-34\n"
    "f5 = 1_000.5\n"
    "f6 = 2e3\n"
    "yes = true\n"
    "no = false\n"
    "empty = \"\"\n"
    "utf8 = \"h\xc3\xa9t\xc3\xa9\"\n"
    "arr = [ 1, 2, 3, ]\n"
    "mixed = [\n"
    "  \"a\",  # comment in an array\n"
    "\n"
    "  1.5,\n"
    "  [true, false],\n"
    "]\n"
    "empty_arr = []\n"
    "dotted.key . here = \"x\"\n"
    "[table]\n"
    "k = 1\n"
    "[ table . sub ]\t# header comment\n"
    "k = 2\n"
    "[a.b.c]\n"
    "[a]\n"
    "x = 1\n"
    "[dotted.key.more]\n"
    "y = 3\n";

static void test_valid_all_types(void **state)
{
	struct toml_doc *doc = parse_ok(all_types);
	const struct toml_value *v, *inner;
	const char *s;
	long long i;
	double f;
	bool b;

	(void)state;
	assert_int_equal(toml_doc_get_string(doc, "title", &s), 0);
	assert_string_equal(s, "a\"b\\c\nd\te\xc3\xa9\xe2\x82\xac");
	assert_int_equal(toml_doc_get_string(doc, "lit", &s), 0);
	assert_string_equal(s, "C:\\path\\no escape");
	assert_int_equal(toml_doc_get_int(doc, "quoted key", &i), 0);
	assert_int_equal(i, 1);
	assert_int_equal(toml_doc_get_int(doc, "lit key", &i), 0);
	assert_int_equal(i, 2);
	assert_int_equal(toml_doc_get_int(doc, "int1", &i), 0);
	assert_int_equal(i, 99);
	assert_int_equal(toml_doc_get_int(doc, "int2", &i), 0);
	assert_int_equal(i, -17);
	assert_int_equal(toml_doc_get_int(doc, "int3", &i), 0);
	assert_int_equal(i, 1000000);
	assert_int_equal(toml_doc_get_int(doc, "int4", &i), 0);
	assert_int_equal(i, 0);
	assert_int_equal(toml_doc_get_int(doc, "big", &i), 0);
	assert_true(i == INT64_MAX);
	assert_int_equal(toml_doc_get_int(doc, "small", &i), 0);
	assert_true(i == INT64_MIN);
	assert_int_equal(toml_doc_get_float(doc, "f1", &f), 0);
	assert_float_equal(f, 3.14, 1e-12);
	assert_int_equal(toml_doc_get_float(doc, "f2", &f), 0);
	assert_float_equal(f, -0.01, 1e-12);
	assert_int_equal(toml_doc_get_float(doc, "f3", &f), 0);
	assert_float_equal(f, 5e22, 1e10);
	assert_int_equal(toml_doc_get_float(doc, "f4", &f), 0);
	assert_float_equal(f, 6.626e-34, 1e-40);
	assert_int_equal(toml_doc_get_float(doc, "f5", &f), 0);
	assert_float_equal(f, 1000.5, 1e-12);
	assert_int_equal(toml_doc_get_float(doc, "f6", &f), 0);
	assert_float_equal(f, 2000.0, 1e-12);
	assert_int_equal(toml_doc_get_bool(doc, "yes", &b), 0);
	assert_true(b);
	assert_int_equal(toml_doc_get_bool(doc, "no", &b), 0);
	assert_false(b);
	assert_int_equal(toml_doc_get_string(doc, "empty", &s), 0);
	assert_string_equal(s, "");
	assert_int_equal(toml_doc_get_string(doc, "utf8", &s), 0);
	assert_string_equal(s, "h\xc3\xa9t\xc3\xa9");

	v = toml_doc_find(doc, "arr");
	assert_non_null(v);
	assert_int_equal(toml_value_type(v), TOML_ARRAY);
	assert_int_equal(toml_array_len(v), 3);
	assert_int_equal(toml_value_int(toml_array_at(v, 2), &i), 0);
	assert_int_equal(i, 3);
	assert_null(toml_array_at(v, 3));

	v = toml_doc_find(doc, "mixed");
	assert_int_equal(toml_array_len(v), 3);
	assert_int_equal(toml_value_string(toml_array_at(v, 0), &s), 0);
	assert_string_equal(s, "a");
	assert_int_equal(toml_value_float(toml_array_at(v, 1), &f), 0);
	assert_float_equal(f, 1.5, 0);
	inner = toml_array_at(v, 2);
	assert_int_equal(toml_array_len(inner), 2);
	assert_int_equal(toml_value_bool(toml_array_at(inner, 1), &b), 0);
	assert_false(b);
	assert_int_equal(toml_array_len(toml_doc_find(doc, "empty_arr")), 0);
	assert_int_equal(toml_value_type(toml_doc_find(doc, "empty_arr")), TOML_ARRAY);

	assert_int_equal(toml_doc_get_string(doc, "dotted.key.here", &s), 0);
	assert_string_equal(s, "x");
	assert_int_equal(toml_doc_get_int(doc, "dotted.key.more.y", &i), 0);
	assert_int_equal(i, 3);
	assert_int_equal(toml_doc_get_int(doc, "table.k", &i), 0);
	assert_int_equal(i, 1);
	assert_int_equal(toml_doc_get_int(doc, "table.sub.k", &i), 0);
	assert_int_equal(i, 2);
	assert_int_equal(toml_doc_get_int(doc, "a.x", &i), 0);
	assert_int_equal(i, 1);
	assert_int_equal(toml_value_type(toml_doc_find(doc, "a.b.c")), TOML_TABLE);

	toml_doc__free(doc);
}

static void test_lookup_errors(void **state)
{
	struct toml_doc *doc = parse_ok("s = \"x\"\ni = 3\n[t]\nf = 1.0\n");
	const char *s;
	long long i;
	double f;
	bool b;

	(void)state;
	assert_int_equal(toml_doc_get_int(doc, "s", &i), -EINVAL);
	assert_int_equal(toml_doc_get_string(doc, "i", &s), -EINVAL);
	/* an integer is not a float */
	assert_int_equal(toml_doc_get_float(doc, "i", &f), -EINVAL);
	assert_int_equal(toml_doc_get_bool(doc, "t.f", &b), -EINVAL);
	assert_int_equal(toml_doc_get_int(doc, "missing", &i), -ENOENT);
	assert_int_equal(toml_doc_get_int(doc, "t.missing", &i), -ENOENT);
	assert_int_equal(toml_doc_get_int(doc, "s.below", &i), -ENOENT);
	assert_int_equal(toml_doc_get_string(doc, "t", &s), -EINVAL);
	assert_int_equal(toml_doc_get_float(doc, "t.f", &f), 0);
	assert_float_equal(f, 1.0, 0);
	toml_doc__free(doc);
	toml_doc__free(NULL);
}

struct collected {
	char paths[16][64];
	unsigned line[16], col[16];
	size_t n;
};

static int collect(const struct toml_entry *e, void *ctx)
{
	struct collected *c = ctx;

	assert_true(c->n < 16);
	snprintf(c->paths[c->n], sizeof(c->paths[0]), "%s", e->path);
	c->line[c->n] = e->key_line;
	c->col[c->n] = e->key_col;
	c->n++;
	return 0;
}

static int stop_at_second(const struct toml_entry *e, void *ctx)
{
	int *seen = ctx;

	(void)e;
	return ++*seen == 2 ? 42 : 0;
}

static void test_foreach_paths_and_positions(void **state)
{
	struct toml_doc *doc = parse_ok("a = 1\n"
					"\"b.c\" = 2\n"
					"\"plain\" = 3\n"
					"[sec]\n"
					"  x.y = 'v'\n"
					"[\"odd key\"]\n");
	struct collected c = {.n = 0};
	unsigned line, col;
	int seen = 0;

	(void)state;
	assert_int_equal(toml_doc_foreach(doc, collect, &c), 0);
	assert_int_equal(c.n, 7);
	assert_string_equal(c.paths[0], "a");
	assert_string_equal(c.paths[1], "\"b.c\"");
	assert_string_equal(c.paths[2], "plain");
	assert_string_equal(c.paths[3], "sec");
	assert_int_equal(c.line[3], 4);
	assert_int_equal(c.col[3], 2);
	assert_string_equal(c.paths[4], "sec.x");
	assert_string_equal(c.paths[5], "sec.x.y");
	assert_int_equal(c.line[5], 5);
	assert_int_equal(c.col[5], 3);
	assert_string_equal(c.paths[6], "\"odd key\"");
	/* a quoted key with a dot is not a dotted path */
	assert_null(toml_doc_find(doc, "b.c"));
	assert_non_null(toml_doc_find(doc, "plain"));
	toml_value_position(toml_doc_find(doc, "sec.x.y"), &line, &col);
	assert_int_equal(line, 5);
	assert_int_equal(col, 9);
	assert_int_equal(toml_doc_foreach(doc, stop_at_second, &seen), 42);
	assert_int_equal(seen, 2);
	toml_doc__free(doc);
}

static void test_crlf_and_bom(void **state)
{
	struct toml_doc *doc = parse_ok("\xef\xbb\xbf"
					"a = 1\r\n# c\r\n[t]\r\nb = \"x\"\r\n");
	const char *s;
	long long i;

	(void)state;
	assert_int_equal(toml_doc_get_int(doc, "a", &i), 0);
	assert_int_equal(i, 1);
	assert_int_equal(toml_doc_get_string(doc, "t.b", &s), 0);
	assert_string_equal(s, "x");
	toml_doc__free(doc);

	doc = parse_ok("");
	assert_int_equal(assert_sane_doc(doc), 0);
	toml_doc__free(doc);
	doc = parse_ok("# only a comment");
	toml_doc__free(doc);
}

struct bad_case {
	const char *text;
	size_t len; /* 0: strlen(text) */
	unsigned line, col;
	const char *message;
};

static const struct bad_case bad_cases[] = {
    /* not in the subset */
    {"a = {x = 1}", 0, 1, 5, "inline tables are not supported"},
    {"[[a]]\n", 0, 1, 1, "arrays of tables are not supported"},
    {"d = 1979-05-27", 0, 1, 5, "dates and times are not supported"},
    {"d = 1979-05-27T07:32:00Z", 0, 1, 5, "dates and times are not supported"},
    {"t = 07:32:00", 0, 1, 5, "dates and times are not supported"},
    {"x = \"\"\"abc\"\"\"", 0, 1, 5, "multi-line strings are not supported"},
    {"x = '''abc'''", 0, 1, 5, "multi-line strings are not supported"},
    {"x = 0x1F", 0, 1, 5, "hexadecimal integers are not supported"},
    {"x = 0o17", 0, 1, 5, "octal integers are not supported"},
    {"x = 0b101", 0, 1, 5, "binary integers are not supported"},
    {"x = inf", 0, 1, 5, "inf and nan are not supported"},
    {"x = -nan", 0, 1, 5, "inf and nan are not supported"},
    /* duplicates and redefinitions */
    {"a = 1\nb = 2\na = 3\n", 0, 3, 1, "duplicate key 'a'"},
    {"a.b = 1\n a . b = 2\n", 0, 2, 2, "duplicate key 'a.b'"},
    {"\"a\" = 1\na = 2\n", 0, 2, 1, "duplicate key 'a'"},
    {"[a]\nx = 1\n[a]\n", 0, 3, 2, "table 'a' defined twice"},
    {"[a]\n[ a ]\n", 0, 2, 3, "table 'a' defined twice"},
    {"[a.b]\n[a]\n[a.b]\n", 0, 3, 2, "table 'a.b' defined twice"},
    {"a.b = 1\n[a]\n", 0, 2, 2, "table 'a' defined twice"},
    {"a = 1\n[a.b]\n", 0, 2, 2, "key 'a' already defined as an integer"},
    {"a = 1\na.b = 2\n", 0, 2, 1, "key 'a' already defined as an integer"},
    {"[a.b]\n[a]\nb.c = 1\n", 0, 3, 1, "table 'a.b' already defined"},
    {"[t]\nx = [1]\n[t.x]\n", 0, 3, 2, "key 't.x' already defined as an array"},
    /* junk after a value */
    {"a = 1 x", 0, 1, 7, "unexpected 'x' after value"},
    {"a = \"s\" \"t\"", 0, 1, 9, "unexpected '\"' after value"},
    {"a = true false", 0, 1, 10, "unexpected 'f' after value"},
    {"[a] b = 1", 0, 1, 5, "unexpected 'b' after table header"},
    {"a = [1] ]", 0, 1, 9, "unexpected ']' after value"},
    {"a = 1\0", 6, 1, 6, "unexpected byte 0x00 after value"},
    {"a = 1\rb = 2", 0, 1, 6, "carriage return not followed by a newline"},
    /* numbers */
    {"a = 12abc", 0, 1, 7, "invalid character 'a' in number"},
    {"a = 1.2.3", 0, 1, 8, "invalid character '.' in number"},
    {"a = 1__2", 0, 1, 6, "'_' must be between two digits"},
    {"a = 1_", 0, 1, 6, "'_' must be between two digits"},
    {"a = -_1", 0, 1, 6, "'_' must be between two digits"},
    {"a = 1_.5", 0, 1, 6, "'_' must be between two digits"},
    {"a = _1", 0, 1, 5, "invalid value starting with '_'"},
    {"a = 012", 0, 1, 5, "leading zeros are not allowed"},
    {"a = -01.5", 0, 1, 6, "leading zeros are not allowed"},
    {"a = 1.", 0, 1, 7, "expected a digit, found end of file"},
    {"a = 1.e5", 0, 1, 7, "expected a digit, found 'e'"},
    {"a = 1e", 0, 1, 7, "expected a digit"},
    {"a = .5", 0, 1, 5, "invalid value starting with '.'"},
    {"a = +", 0, 1, 6, "expected a digit"},
    {"a = 9223372036854775808", 0, 1, 5, "integer out of range"},
    {"a = -9223372036854775809", 0, 1, 5, "integer out of range"},
    {"a = 1e999", 0, 1, 5, "float out of range"},
    /* values and keys */
    {"a = hello", 0, 1, 5, "invalid value 'hello' (strings must be quoted)"},
    {"a = True", 0, 1, 5, "invalid value 'True'"},
    {"a = truely", 0, 1, 5, "invalid value 'truely'"},
    {"a =", 0, 1, 4, "expected a value, found end of file"},
    {"a = # no value", 0, 1, 5, "expected a value, found '#'"},
    {"a =\nb = 1", 0, 1, 4, "expected a value, found end of line"},
    {"a 1", 0, 1, 3, "expected '=' after key, found '1'"},
    {"a. = 1", 0, 1, 4, "expected a key, found '='"},
    {"= 1", 0, 1, 1, "expected a key, found '='"},
    {"a b = 1", 0, 1, 3, "expected '=' after key, found 'b'"},
    {"[a", 0, 1, 3, "expected ']' after table name, found end of file"},
    {"[]", 0, 1, 2, "expected a key, found ']'"},
    {"ok = 1\n  bad = {}", 0, 2, 9, "inline tables are not supported"},
    /* strings */
    {"a = \"x\\qy\"", 0, 1, 7, "unsupported escape sequence \\q"},
    {"a = \"\\r\"", 0, 1, 6, "unsupported escape sequence \\r"},
    {"a = \"\\U0001F600\"", 0, 1, 6, "unsupported escape sequence \\U"},
    {"a = \"\\u12\"", 0, 1, 6, "\\u needs four hexadecimal digits"},
    {"a = \"\\u12G4\"", 0, 1, 6, "\\u needs four hexadecimal digits"},
    {"a = \"\\u0000\"", 0, 1, 6, "NUL character not allowed in string"},
    {"a = \"x\\uD800\"", 0, 1, 7, "invalid unicode scalar value \\uD800"},
    {"a = \"abc\nb = 1\n", 0, 1, 5, "unterminated string"},
    {"a = 'abc", 0, 1, 5, "unterminated string"},
    {"a = \"abc\\\"", 0, 1, 5, "unterminated string"},
    {"a = \"x\x01\"", 0, 1, 7, "control character byte 0x01 in string"},
    {"a = 'x\x7f'", 0, 1, 7, "control character byte 0x7f in string"},
    {"a = \"x\xff\"", 0, 1, 7, "invalid UTF-8"},
    {"a = \"\xc0\xaf\"", 0, 1, 6, "invalid UTF-8"},
    {"a = 1 # \x02", 0, 1, 9, "control character byte 0x02 in comment"},
    {"\"unterminated key = 1", 0, 1, 1, "unterminated string"},
    /* arrays */
    {"a = [1, 2\n", 0, 1, 5, "unterminated array"},
    {"a = [1 2]", 0, 1, 8, "expected ',' or ']' in array, found '2'"},
    {"a = [,]", 0, 1, 6, "expected a value, found ','"},
    {"a = [1,,]", 0, 1, 8, "expected a value, found ','"},
    {"a = [\n  1,\n  x,\n]", 0, 3, 3, "invalid value 'x'"},
    {"a = [{}]", 0, 1, 6, "inline tables are not supported"},
};

static void test_invalid_inputs(void **state)
{
	char err[256], prefix[64];
	struct toml_doc *doc;
	const struct bad_case *c;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		c = &bad_cases[i];
		len = c->len ? c->len : strlen(c->text);
		err[0] = '\0';
		errno = 0;
		doc = toml_doc__parse(c->text, len, FILENAME, err, sizeof(err));
		if (doc) {
			toml_doc__free(doc);
			fail_msg("case %zu accepted: %s", i, c->text);
		}
		assert_int_equal(errno, EINVAL);
		snprintf(prefix, sizeof(prefix), FILENAME ":%u:%u: ", c->line, c->col);
		if (strncmp(err, prefix, strlen(prefix)) || !strstr(err, c->message))
			fail_msg("case %zu '%s': got \"%s\", want \"%s%s\"", i, c->text, err,
				 prefix, c->message);
	}
}

static void test_nesting_limit(void **state)
{
	char text[256], err[256];
	struct toml_doc *doc;
	int i, n = 0;

	(void)state;
	n += snprintf(text + n, sizeof(text) - n, "a = ");
	for (i = 0; i < 100; i++)
		text[n++] = '[';
	text[n] = '\0';
	doc = toml_doc__parse(text, strlen(text), FILENAME, err, sizeof(err));
	assert_null(doc);
	assert_string_equal(err, FILENAME ":1:69: arrays nested too deeply");
}

/* Found by fuzz_toml (regression seed tests/fuzz/corpus/toml/regress-long-key):
 * a key of 256 characters or more was parsed, listed by toml_doc_foreach,
 * and then not found by its own path. */
static void test_long_key_found(void **state)
{
	char text[1024], path[1024];
	struct toml_doc *doc;
	long long v;

	(void)state;
	memset(path, 'k', 600);
	path[600] = '\0';
	snprintf(text, sizeof(text), "[t]\n%s = 7\n", path);
	doc = parse_ok(text);
	memmove(path + 2, path, 601);
	memcpy(path, "t.", 2);
	assert_int_equal(toml_doc_get_int(doc, path, &v), 0);
	assert_int_equal(v, 7);
	path[strlen(path) - 1] = '\0'; /* a prefix of the key is not the key */
	assert_null(toml_doc_find(doc, path));
	toml_doc__free(doc);
}

static void test_error_buffer_handling(void **state)
{
	char small[8];

	(void)state;
	errno = 0;
	assert_null(toml_doc__parse("a = ", 4, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(toml_doc__parse("a = ", 4, FILENAME, small, sizeof(small)));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	/* without a file name the input is named <input> */
	{
		char err[128];

		assert_null(toml_doc__parse("x", 1, NULL, err, sizeof(err)));
		assert_string_equal(err, "<input>:1:2: expected '=' after key, found end of file");
	}
	/* text is not required to be NUL-terminated */
	{
		const char text[] = {'a', '=', '1', '2'};
		struct toml_doc *doc = toml_doc__parse(text, 3, FILENAME, NULL, 0);
		long long i;

		assert_non_null(doc);
		assert_int_equal(toml_doc_get_int(doc, "a", &i), 0);
		assert_int_equal(i, 1);
		toml_doc__free(doc);
	}
}

/* Every allocation of a full parse fails in turn: each must come back as
 * NULL/ENOMEM, and LeakSanitizer checks nothing leaks on the way. */
static void test_allocation_failures(void **state)
{
	struct toml_doc *doc = NULL;
	char err[256];
	long n;

	(void)state;
	for (n = 0; n < 100000; n++) {
		toml__fail_alloc_after(n);
		errno = 0;
		doc = toml_doc__parse(all_types, strlen(all_types), FILENAME, err, sizeof(err));
		if (doc)
			break;
		assert_int_equal(errno, ENOMEM);
		assert_string_equal(err, FILENAME ": out of memory");
	}
	toml__fail_alloc_after(-1);
	assert_non_null(doc);
	/* the document has dozens of keys: failures were really injected */
	assert_true(n > 50);
	assert_sane_doc(doc);
	toml_doc__free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_all_types),
	    cmocka_unit_test(test_lookup_errors),
	    cmocka_unit_test(test_foreach_paths_and_positions),
	    cmocka_unit_test(test_crlf_and_bom),
	    cmocka_unit_test(test_invalid_inputs),
	    cmocka_unit_test(test_nesting_limit),
	    cmocka_unit_test(test_long_key_found),
	    cmocka_unit_test(test_error_buffer_handling),
	    cmocka_unit_test(test_allocation_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
