/* test_stack_losses — the stacks-truncated Degradation of a node
 * (userspace/aggregator/stack_losses.h): none under the threshold, one
 * above it naming each cause with its count, and in its remedy one
 * clause per cause that occurred ("N samples CAUSE: REMEDY"), per node,
 * stored in a real pivot.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/aggregator/stack_losses.h"
#include "userspace/pivot/pivot.h"

static char tmpdir[PATH_MAX];

/* the counters of the node under test: name=value pairs */
static const char *const *counters;

static uint64_t fake_counter(struct pivot *p, const char *node, const char *name)
{
	size_t len = strlen(name);
	int i;

	(void)p;
	if (strcmp(node, "n1"))
		return 0;
	for (i = 0; counters[i]; i++)
		if (!strncmp(counters[i], name, len) && counters[i][len] == '=')
			return strtoull(counters[i] + len + 1, NULL, 10);
	return 0;
}

struct found {
	int n;
	char node[64], message[2048], remedy[1024];
};

static int collect(const char *node, const char *name, const char *message, const char *remedy,
		   void *ctx)
{
	struct found *f = ctx;

	if (strcmp(name, "stacks-truncated"))
		return 0;
	f->n++;
	snprintf(f->node, sizeof(f->node), "%s", node);
	snprintf(f->message, sizeof(f->message), "%s", message);
	snprintf(f->remedy, sizeof(f->remedy), "%s", remedy);
	return 0;
}

static struct found run_with(const char *const *c, const char *pivot_name)
{
	struct found f = { 0 };
	struct pivot *p = pivot__create(path_in(tmpdir, pivot_name));

	assert_non_null(p);
	counters = c;
	assert_int_equal(stack_losses_truncated(p, "n1", fake_counter), 0);
	assert_int_equal(pivot_for_each_node_degradation(p, collect, &f), 0);
	pivot__free(p);
	return f;
}

static void test_below_threshold_is_no_degradation(void **state)
{
	/* 9 of 1000: the first milliseconds of the processes */
	static const char *const c[] = { "stacks_complete=991", "stacks_ended_no_process=5",
					 "stacks_ended_no_table=4", NULL };
	struct found f;

	(void)state;
	f = run_with(c, "below.sqlite");
	assert_int_equal(f.n, 0);
}

static void test_above_threshold_names_each_cause(void **state)
{
	static const char *const c[] = { "stacks_complete=900", "stacks_ended_no_cfi=70",
					 "stacks_ended_depth=30", NULL };
	struct found f;

	(void)state;
	f = run_with(c, "above.sqlite");
	assert_int_equal(f.n, 1);
	assert_string_equal(f.node, "n1");
	assert_non_null(strstr(f.message, "100 of 1000 samples (10.0%)"));
	assert_non_null(strstr(f.message, "70 at code without unwind information"));
	assert_non_null(strstr(f.message, "30 deeper than 128 frames"));
	assert_null(strstr(f.message, "first milliseconds"));
	/* the remedy: one clause per cause that occurred, with its count,
	 * in the causes' order, and nothing of the others */
	assert_string_equal(f.remedy,
			    "70 samples at code without unwind information: build with unwind "
			    "tables (-fasynchronous-unwind-tables, the default of gcc on x86-64)\n"
			    "30 samples deeper than 128 frames: none, deep recursion: the innermost "
			    "128 frames are shown");
}

/* the number of times needle occurs in haystack */
static int count_of(const char *haystack, const char *needle)
{
	int n = 0;

	while ((haystack = strstr(haystack, needle))) {
		n++;
		haystack += strlen(needle);
	}
	return n;
}

static void test_every_cause_has_its_own_clause(void **state)
{
	static const char *const c[] = { "stacks_complete=100",	      "stacks_ended_no_process=11",
					 "stacks_ended_no_table=12",	      "stacks_ended_no_mapping=13",
					 "stacks_ended_no_cfi=14",	      "stacks_ended_unreadable=15",
					 "stacks_ended_depth=16",	      "stacks_ended_bad_frame=17",
					 NULL };
	static const char *const clauses[] = {
		"11 samples before the process' mappings were known: none",
		"12 samples in a module without its unwind table: see the unwind-tables-*",
		"13 samples in JIT code: none",
		"14 samples at code without unwind information: build with unwind tables",
		"15 samples at unreadable stack memory: none",
		"16 samples deeper than 128 frames: none",
		"17 samples at a frame that did not look like one: report it",
	};
	struct found f;
	char *clause, *save = NULL;
	size_t i = 0;

	(void)state;
	f = run_with(c, "all.sqlite");
	assert_int_equal(f.n, 1);
	/* seven lines, one per cause, each opening with its count */
	assert_int_equal(count_of(f.remedy, "\n"), 6);
	assert_null(strchr(f.remedy, ';'));
	for (clause = strtok_r(f.remedy, "\n", &save); clause; clause = strtok_r(NULL, "\n", &save)) {
		assert_true(i < sizeof(clauses) / sizeof(clauses[0]));
		assert_true(!strncmp(clause, clauses[i], strlen(clauses[i])));
		i++;
	}
	assert_int_equal(i, 7);
}

static void test_nothing_counted_is_no_degradation(void **state)
{
	static const char *const c[] = { NULL };
	struct found f;

	(void)state;
	f = run_with(c, "none.sqlite");
	assert_int_equal(f.n, 0);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "stack-losses");
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_below_threshold_is_no_degradation),
		cmocka_unit_test(test_above_threshold_names_each_cause),
		cmocka_unit_test(test_every_cause_has_its_own_clause),
		cmocka_unit_test(test_nothing_counted_is_no_degradation),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
