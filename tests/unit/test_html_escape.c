/* Tests of report/html_escape: the one escaper of the HTML report, on the
 * names a pivot holds (demangled C++ with < > &, a name that tries to end
 * the script element or open a comment, bytes that are not UTF-8, control
 * characters), and json_for_script: nothing in it can end the element, and
 * it parses back to the same value. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/html_escape.h"

static void assert_escaped(const char *in, const char *want)
{
	char *out = html_escape(in);

	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void test_cxx_names(void **state)
{
	(void)state;
	assert_escaped("std::vector<int, std::allocator<int> >::operator[]",
		       "std::vector&lt;int, std::allocator&lt;int&gt; &gt;::operator[]");
	assert_escaped("operator<<", "operator&lt;&lt;");
	assert_escaped("a&&b", "a&amp;&amp;b");
	assert_escaped("f(char const*) \"quoted\" 'single'",
		       "f(char const*) &quot;quoted&quot; &#39;single&#39;");
	assert_escaped("", "");
}

static void test_markup(void **state)
{
	char *out;

	(void)state;
	out = html_escape("</script><script>alert(1)</script><!--");
	assert_non_null(out);
	assert_null(strchr(out, '<'));
	assert_null(strchr(out, '>'));
	assert_string_equal(out, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!--");
	free(out);
	/* an entity already written is text: escaped again */
	assert_escaped("&lt;", "&amp;lt;");
}

static void test_bytes(void **state)
{
	(void)state;
	/* not UTF-8: \xNN as json_text writes it; UTF-8 kept */
	assert_escaped("k\xffrnel", "k\\xffrnel");
	assert_escaped("caf\xc3\xa9 \xe2\x80\x94", "caf\xc3\xa9 \xe2\x80\x94");
	assert_escaped("\xc3(", "\\xc3(");
	/* control characters but tab and newline: U+FFFD */
	assert_escaped("a\tb\nc\rd\x01" "e\x7f", "a\tb\nc\xef\xbf\xbd" "d\xef\xbf\xbd" "e\xef\xbf\xbd");
	assert_null(html_escape(NULL));
	assert_int_equal(errno, EINVAL);
}

static void test_json_for_script(void **state)
{
	const char *evil = "</script><!--<script>&x\xe2\x80\xa8y\xe2\x80\xa9z";
	json_t *j = json_pack("{s:s, s:[s, i], s:s}", "name", evil, "list", "a<b", 3, "cxx",
			      "std::map<int, int>::operator[]"),
	       *back;
	size_t len;
	char *out;

	(void)state;
	assert_non_null(j);
	out = json_for_script(j, &len);
	assert_non_null(out);
	assert_int_equal(len, strlen(out));
	assert_null(strchr(out, '<'));
	assert_null(strchr(out, '>'));
	assert_null(strchr(out, '&'));
	assert_null(strstr(out, "\xe2\x80\xa8"));
	assert_null(strstr(out, "\xe2\x80\xa9"));
	assert_non_null(strstr(out, "\\u003c/script\\u003e\\u003c!--"));
	assert_non_null(strstr(out, "\\u2028y\\u2029z"));
	/* compact, and the same value */
	assert_null(strchr(out, '\n'));
	back = json_loads(out, 0, NULL);
	assert_non_null(back);
	assert_true(json_equal(j, back));
	json_decref(back);
	free(out);
	json_decref(j);
	assert_null(json_for_script(NULL, NULL));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cxx_names),
	    cmocka_unit_test(test_markup),
	    cmocka_unit_test(test_bytes),
	    cmocka_unit_test(test_json_for_script),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
