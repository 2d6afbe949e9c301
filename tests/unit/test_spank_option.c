/* Tests of deploy/slurm/spank_option: the value of --nunatak[=FREQ] as
 * Slurm hands it to the SPANK plugin (NULL or "" without "=FREQ", the
 * user's text otherwise). Every input yields a usable answer (the plugin
 * never refuses a submission): the frequency asked, or 0 (none: the nodes'
 * own); the return value tells a value taken as written (0) from one
 * dropped (-EINVAL not a number, -ERANGE out of 1..10000), and then the
 * message names the text and what is done instead. What the Prolog gets:
 * "<FREQ>" or "default", never empty. NUNATAK_PROFILE asks only when
 * exactly "1". */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "deploy/slurm/spank_option.h"

struct freq_case {
	const char *arg;
	int rc;
	int freq;
};

/* one case: rc, frequency, and a message exactly when rc != 0 */
static void check(const struct freq_case *c)
{
	char err[200];
	int freq = -12345;
	int rc;

	memset(err, 'x', sizeof(err) - 1);
	err[sizeof(err) - 1] = '\0';
	rc = spank_option_freq(c->arg, &freq, err, sizeof(err));
	print_message("arg %s%s%s -> rc %d freq %d err '%s'\n", c->arg ? "'" : "",
		      c->arg ? c->arg : "NULL", c->arg ? "'" : "", rc, freq, err);
	assert_int_equal(rc, c->rc);
	assert_int_equal(freq, c->freq);
	if (rc == 0) {
		assert_string_equal(err, "");
	} else {
		assert_non_null(strstr(err, "--nunatak="));
		assert_non_null(strstr(err, c->arg));
		assert_non_null(strstr(err, "profiling at the nodes' own frequency"));
	}
}

static void check_all(const struct freq_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++)
		check(&cases[i]);
}

static void test_no_value_is_the_default(void **state)
{
	static const struct freq_case cases[] = {
	    {NULL, 0, 0}, /* local/allocator: plain --nunatak */
	    {"", 0, 0},   /* remote: plain --nunatak */
	};
	(void)state;
	check_all(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_frequencies_taken(void **state)
{
	static const struct freq_case cases[] = {
	    {"99", 0, 99},   {"1", 0, 1},	      {"10000", 0, 10000},
	    {"499", 0, 499}, {"0099", 0, 99}, {"0000000000000000000007", 0, 7},
	};
	(void)state;
	check_all(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_out_of_range(void **state)
{
	static const struct freq_case cases[] = {
	    {"0", -ERANGE, 0},
	    {"000", -ERANGE, 0},
	    {"10001", -ERANGE, 0},
	    {"100000", -ERANGE, 0},
	    {"99999999999999999999999999999999", -ERANGE, 0}, /* no overflow */
	};
	(void)state;
	check_all(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_not_a_number(void **state)
{
	static const struct freq_case cases[] = {
	    {"-5", -EINVAL, 0},  {"abc", -EINVAL, 0},	 {"99x", -EINVAL, 0},
	    {"+99", -EINVAL, 0}, {"9.5", -EINVAL, 0},	 {"0x10", -EINVAL, 0},
	    {" 99", -EINVAL, 0}, {"99 ", -EINVAL, 0},	 {"\t99", -EINVAL, 0},
	    {"99\n", -EINVAL, 0}, {" ", -EINVAL, 0},	 {"9 9", -EINVAL, 0},
	    {"(null)", -EINVAL, 0}, /* what getopt gives in job_script context */
	};
	(void)state;
	check_all(cases, sizeof(cases) / sizeof(cases[0]));
}

/* the message is cut, never overrun, and a tiny or empty buffer is fine */
static void test_message_bounds(void **state)
{
	char small[8], big[300];
	char longarg[200];
	int freq;

	(void)state;
	memset(longarg, 'a', sizeof(longarg) - 1);
	longarg[sizeof(longarg) - 1] = '\0';
	assert_int_equal(spank_option_freq(longarg, &freq, small, sizeof(small)), -EINVAL);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(freq, 0);
	assert_int_equal(spank_option_freq("abc", &freq, NULL, 0), -EINVAL);
	assert_int_equal(spank_option_freq("12", &freq, NULL, 0), 0);
	assert_int_equal(freq, 12);
	/* a long text is quoted shortened: the message stays one short line */
	assert_int_equal(spank_option_freq(longarg, &freq, big, sizeof(big)), -EINVAL);
	assert_true(strlen(big) < 160);
}

static void test_prolog_value(void **state)
{
	char buf[16];

	(void)state;
	assert_string_equal(spank_option_value(0, buf, sizeof(buf)), "default");
	assert_string_equal(spank_option_value(99, buf, sizeof(buf)), "99");
	assert_string_equal(spank_option_value(1, buf, sizeof(buf)), "1");
	assert_string_equal(spank_option_value(10000, buf, sizeof(buf)), "10000");
	assert_string_equal(spank_option_value(10001, buf, sizeof(buf)), "default");
	assert_string_equal(spank_option_value(-5, buf, sizeof(buf)), "default");
	assert_ptr_equal(spank_option_value(7, buf, sizeof(buf)), buf);
}

/* every text Slurm may hand over ends as a value the Prolog can read */
static void test_every_text_gives_a_value(void **state)
{
	static const char *texts[] = {NULL, "", "99", "0", "-5", "abc", "100000", "99x", " ", "\t99\n"};
	char buf[16], err[160];
	int freq;

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		spank_option_freq(texts[i], &freq, err, sizeof(err));
		spank_option_value(freq, buf, sizeof(buf));
		assert_true(!strcmp(buf, "default") || (buf[0] >= '1' && buf[0] <= '9'));
		assert_string_equal(buf, i == 2 ? "99" : "default");
	}
}

static void test_profile_requested(void **state)
{
	(void)state;
	assert_int_equal(spank_option_profile_requested("1"), 1);
	assert_int_equal(spank_option_profile_requested(NULL), 0);
	assert_int_equal(spank_option_profile_requested(""), 0);
	assert_int_equal(spank_option_profile_requested("0"), 0);
	assert_int_equal(spank_option_profile_requested("yes"), 0);
	assert_int_equal(spank_option_profile_requested("11"), 0);
	assert_int_equal(spank_option_profile_requested(" 1"), 0);
	assert_int_equal(spank_option_profile_requested("1 "), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_value_is_the_default),
	    cmocka_unit_test(test_frequencies_taken),
	    cmocka_unit_test(test_out_of_range),
	    cmocka_unit_test(test_not_a_number),
	    cmocka_unit_test(test_message_bounds),
	    cmocka_unit_test(test_prolog_value),
	    cmocka_unit_test(test_every_text_gives_a_value),
	    cmocka_unit_test(test_profile_requested),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
