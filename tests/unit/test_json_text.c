/* Tests of userspace/log/json_text: valid UTF-8 is kept byte for byte,
 * each byte of an invalid sequence (lone continuation byte, overlong form,
 * surrogate, above U+10FFFF, truncated sequence, bytes never in UTF-8)
 * becomes \xNN, NUL inside a counted text too; the result is always a
 * string jansson accepts. Expected strings are written out by hand from
 * Unicode table 3-7 (and agree with Python's
 * bytes.decode("utf-8", "backslashreplace")); jansson's own UTF-8 check is
 * the oracle of the exhaustive passes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "userspace/log/json_text.h"

/* json_textn of len bytes at in is the string expected */
static void assert_text(const char *in, size_t len, const char *expected)
{
	json_t *j = json_textn(in, len);
	size_t n;
	char *e;

	assert_non_null(j);
	assert_true(json_is_string(j));
	assert_string_equal(json_string_value(j), expected);
	assert_int_equal(json_string_length(j), strlen(expected));
	/* what jansson writes parses back, and is the same string */
	e = json_dumps(j, JSON_ENCODE_ANY);
	assert_non_null(e);
	json_decref(j);
	j = json_loads(e, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(j), expected);
	json_decref(j);
	free(e);
	e = json_text_escape(in, len, &n);
	assert_non_null(e);
	assert_string_equal(e, expected);
	assert_int_equal(n, strlen(expected));
	free(e);
}

#define TEXT(lit, expected) assert_text(lit, sizeof(lit) - 1, expected)

static void test_valid_utf8_unchanged(void **state)
{
	(void)state;
	TEXT("", "");
	TEXT("hotspots", "hotspots");
	TEXT("a\\xffb", "a\\xffb"); /* a backslash stays what it is */
	TEXT("\x7f", "\x7f");
	TEXT("caf\xc3\xa9", "caf\xc3\xa9");			      /* U+00E9 */
	TEXT("\xc2\x80\xdf\xbf", "\xc2\x80\xdf\xbf");		      /* U+0080, U+07FF */
	TEXT("\xe0\xa0\x80\xef\xbf\xbf", "\xe0\xa0\x80\xef\xbf\xbf"); /* U+0800, U+FFFF */
	TEXT("\xed\x9f\xbf\xee\x80\x80", "\xed\x9f\xbf\xee\x80\x80"); /* around surrogates */
	TEXT("\xf0\x90\x80\x80", "\xf0\x90\x80\x80");		      /* U+10000 */
	TEXT("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");		      /* U+10FFFF */
	TEXT("\xe2\x82\xac 5", "\xe2\x82\xac 5");		      /* € 5 */
}

static void test_invalid_bytes_escaped(void **state)
{
	(void)state;
	TEXT("sl\xffp", "sl\\xffp");
	TEXT("\x80", "\\x80"); /* lone continuation bytes */
	TEXT("a\xbf\x80z", "a\\xbf\\x80z");
	TEXT("\xc0\x80", "\\xc0\\x80");					    /* overlong NUL */
	TEXT("\xc1\xbf", "\\xc1\\xbf");					    /* overlong U+007F */
	TEXT("\xe0\x80\xaf", "\\xe0\\x80\\xaf");			    /* overlong '/' */
	TEXT("\xe0\x9f\xbf", "\\xe0\\x9f\\xbf");			    /* overlong U+07FF */
	TEXT("\xf0\x8f\xbf\xbf", "\\xf0\\x8f\\xbf\\xbf");		    /* overlong U+FFFF */
	TEXT("\xed\xa0\x80", "\\xed\\xa0\\x80");			    /* surrogate U+D800 */
	TEXT("\xed\xbf\xbf", "\\xed\\xbf\\xbf");			    /* surrogate U+DFFF */
	TEXT("\xed\xa0\xbd\xed\xb8\x80", "\\xed\\xa0\\xbd\\xed\\xb8\\x80"); /* CESU pair */
	TEXT("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");		    /* U+110000 */
	TEXT("\xf5\x80\x80\x80", "\\xf5\\x80\\x80\\x80");
	TEXT("\xf8\x88\x80\x80\x80", "\\xf8\\x88\\x80\\x80\\x80"); /* 5-byte form */
	TEXT("\xfe\xff", "\\xfe\\xff");
	/* truncated: at the end, and followed by ASCII or another lead byte */
	TEXT("ab\xc3", "ab\\xc3");
	TEXT("\xe2\x82", "\\xe2\\x82");
	TEXT("\xf0\x9f\x98", "\\xf0\\x9f\\x98");
	TEXT("\xe2\x82z", "\\xe2\\x82z");
	TEXT("\xe2\xe2\x82\xac", "\\xe2\xe2\x82\xac"); /* the € after it is kept */
	TEXT("\xc3\xc3\xa9", "\\xc3\xc3\xa9");
	/* invalid between valid */
	TEXT("caf\xc3\xa9\xff\xe2\x82\xac", "caf\xc3\xa9\\xff\xe2\x82\xac");
}

static void test_nul_and_lengths(void **state)
{
	json_t *j;

	(void)state;
	TEXT("a\0b", "a\\x00b");
	TEXT("\0", "\\x00");
	assert_false(json_text_is_clean("a\0b", 3));
	assert_true(json_text_is_clean("a\0b", 1));
	/* a length shorter than the string cuts it, also inside a sequence */
	assert_text("caf\xc3\xa9", 4, "caf\\xc3");
	assert_text("sl\xffp", 2, "sl");
	/* the C-string entry stops at the NUL; NULL is JSON null */
	j = json_text("sl\xffp");
	assert_string_equal(json_string_value(j), "sl\\xffp");
	json_decref(j);
	j = json_text(NULL);
	assert_true(json_is_null(j));
	json_decref(j);
	j = json_text("");
	assert_string_equal(json_string_value(j), "");
	json_decref(j);
}

/* jansson's UTF-8 check (json_stringn refuses what is not UTF-8) agrees
 * with json_text_is_clean on every input without NUL, and the escaped
 * form of any input is accepted by it */
static void check_against_jansson(const unsigned char *b, size_t len)
{
	bool nul = memchr(b, 0, len) != NULL;
	json_t *j = json_stringn((const char *)b, len);
	bool clean = json_text_is_clean((const char *)b, len);
	char *e;
	size_t n;

	if (!nul && clean != (j != NULL))
		fail_msg("%zu bytes %02x %02x %02x %02x: json_text says %s, jansson %s", len, b[0],
			 len > 1 ? b[1] : 0, len > 2 ? b[2] : 0, len > 3 ? b[3] : 0,
			 clean ? "clean" : "not", j ? "accepts" : "refuses");
	json_decref(j);
	if (clean) {
		assert_false(nul);
		return;
	}
	e = json_text_escape((const char *)b, len, &n);
	assert_non_null(e);
	j = json_stringn(e, n);
	if (!j)
		fail_msg("escaped %02x %02x %02x %02x is not UTF-8", b[0], len > 1 ? b[1] : 0,
			 len > 2 ? b[2] : 0, len > 3 ? b[3] : 0);
	assert_int_equal(strlen(e), n);
	json_decref(j);
	free(e);
}

static void test_exhaustive_against_jansson(void **state)
{
	static const unsigned char leads[] = {0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xee,
					      0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5};
	static const unsigned char edges[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90,
					      0x9f, 0xa0, 0xbf, 0xc0, 0xe2, 0xff};
	unsigned char b[4];
	size_t l, e, f;
	unsigned x, y;

	(void)state;
	for (x = 0; x < 256; x++) {
		b[0] = (unsigned char)x;
		check_against_jansson(b, 1);
		for (y = 0; y < 256; y++) {
			b[1] = (unsigned char)y;
			check_against_jansson(b, 2);
		}
	}
	/* 3 bytes: every lead that has a rule, every byte after it; 4 bytes:
	 * the edges of the continuation range after the second */
	for (l = 0; l < sizeof(leads); l++)
		for (x = 0; x < 256; x++) {
			b[0] = leads[l];
			b[1] = (unsigned char)x;
			for (y = 0; y < 256; y++) {
				b[2] = (unsigned char)y;
				check_against_jansson(b, 3);
			}
			for (e = 0; e < sizeof(edges); e++)
				for (f = 0; f < sizeof(edges); f++) {
					b[2] = edges[e];
					b[3] = edges[f];
					check_against_jansson(b, 4);
				}
		}
}

/* random bytes: the result is UTF-8, and its valid parts are the input's */
static void test_random_bytes(void **state)
{
	unsigned char b[64];
	unsigned seed = 6;
	size_t len, i, n;
	char *e;
	json_t *j;
	int round;

	(void)state;
	for (round = 0; round < 20000; round++) {
		len = (size_t)rand_r(&seed) % sizeof(b);
		for (i = 0; i < len; i++)
			b[i] = (unsigned char)rand_r(&seed);
		e = json_text_escape((const char *)b, len, &n);
		assert_non_null(e);
		assert_true(json_text_is_clean(e, n));
		j = json_textn((const char *)b, len);
		assert_non_null(j);
		assert_memory_equal(json_string_value(j), e, n + 1);
		json_decref(j);
		free(e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_utf8_unchanged),
	    cmocka_unit_test(test_invalid_bytes_escaped),
	    cmocka_unit_test(test_nul_and_lengths),
	    cmocka_unit_test(test_exhaustive_against_jansson),
	    cmocka_unit_test(test_random_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
