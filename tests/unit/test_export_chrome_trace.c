/* Tests of report/export_chrome_trace on the Run of export_fixture.h, the
 * output parsed back (jansson): the metadata (one process per rank or pid,
 * named once, one thread_name per Locus), every MPI Event as an "X" event
 * on its rank's pid and thread with ts from the earliest Event and dur in
 * µs, args bytes/peer only when known; without Events, the instant event
 * and its reason (MPI without --mpi-events, or no MPI at all); a failed
 * write. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "report/export_chrome_trace.h"
#include "tests/unit/export_fixture.h"
#include "tests/unit/test_helpers.h"

static char tmpdir[PATH_MAX];

static json_t *export_and_parse(struct pivot *p, struct export_chrome_trace_stats *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_error_t e;
	json_t *doc;

	assert_non_null(f);
	assert_int_equal(export_chrome_trace(p, NULL, f, st), 0);
	fclose(f);
	doc = json_loads(buf, 0, &e);
	if (!doc)
		fail_msg("not JSON: %s: %s", e.text, buf);
	free(buf);
	return doc;
}

/* the events of doc with phase ph (and name, when not NULL), in a new array */
static json_t *events(json_t *doc, const char *ph, const char *name)
{
	json_t *all = json_object_get(doc, "traceEvents"), *out = json_array(), *e;
	size_t i;

	assert_non_null(all);
	json_array_foreach(all, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "ph")), ph))
			continue;
		if (!name || !strcmp(json_string_value(json_object_get(e, "name")), name))
			json_array_append(out, e);
	}
	return out;
}

static size_t count(json_t *doc, const char *ph, const char *name)
{
	json_t *a = events(doc, ph, name);
	size_t n = json_array_size(a);

	json_decref(a);
	return n;
}

static json_int_t integer(json_t *e, const char *key)
{
	json_t *v = json_object_get(e, key);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static void test_trace_events(void **state)
{
	struct pivot *p = efx_build(tmpdir, "trace.sqlite", EFX_ALL);
	struct export_chrome_trace_stats st;
	json_t *doc, *x, *procs, *threads, *e, *args;
	size_t i;

	(void)state;
	doc = export_and_parse(p, &st);
	assert_string_equal(json_string_value(json_object_get(doc, "displayTimeUnit")), "ms");
	assert_int_equal(integer(json_object_get(doc, "otherData"), "t0_ns"), 900);
	/* rank 0, rank 1, the launcher's pid: named once each; 5 threads */
	procs = events(doc, "M", "process_name");
	threads = events(doc, "M", "thread_name");
	assert_int_equal(json_array_size(procs), 3);
	assert_int_equal(json_array_size(threads), 5);
	assert_int_equal(integer(json_array_get(procs, 0), "pid"), 0);
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_array_get(procs, 0), "args"), "name")),
			    "rank 0");
	assert_int_equal(integer(json_array_get(procs, 2), "pid"), 5);
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_array_get(procs, 2), "args"), "name")),
			    "launcher (pid 5)");
	/* every Event, by locus then start: ts from 900 ns, in µs */
	x = events(doc, "X", NULL);
	assert_int_equal(json_array_size(x), EFX_N_EVENTS);
	assert_int_equal(st.events, EFX_N_EVENTS);
	assert_null(st.reason);
	json_array_foreach(x, i, e)
	{
		static const char *const names[] = {"MPI_Init", "MPI_Send", "MPI_Barrier",
						    "MPI_Recv"};
		static const double ts[] = {0.1, 4.1, 0.0, 3.1}, dur[] = {0.5, 2.0, 0.1, 3.5};
		static const json_int_t pid[] = {0, 0, 1, 1}, tid[] = {10, 10, 20, 20};

		assert_string_equal(json_string_value(json_object_get(e, "name")), names[i]);
		assert_string_equal(json_string_value(json_object_get(e, "cat")), "mpi");
		assert_true(fabs(json_real_value(json_object_get(e, "ts")) - ts[i]) < 1e-9);
		assert_true(fabs(json_real_value(json_object_get(e, "dur")) - dur[i]) < 1e-9);
		assert_int_equal(integer(e, "pid"), pid[i]);
		assert_int_equal(integer(e, "tid"), tid[i]);
		args = json_object_get(e, "args");
		if (i == 1 || i == 3) {
			assert_int_equal(integer(args, "bytes"), 4096);
			assert_int_equal(integer(args, "peer"), i == 1 ? 1 : 0);
		} else {
			assert_null(json_object_get(args, "bytes"));
			assert_null(json_object_get(args, "peer"));
		}
	}
	assert_int_equal(count(doc, "i", NULL), 0);
	json_decref(x);
	json_decref(procs);
	json_decref(threads);
	json_decref(doc);
	pivot__free(p);
}

/* without Events: the instant event says why */
static void test_trace_no_events(void **state)
{
	struct pivot *mpi = efx_build(tmpdir, "mpi.sqlite", EFX_SAMPLES | EFX_MPI);
	struct pivot *plain = efx_build(tmpdir, "plain.sqlite", EFX_SAMPLES);
	struct export_chrome_trace_stats st;
	json_t *doc, *i;
	const char *reason;

	(void)state;
	doc = export_and_parse(mpi, &st);
	i = events(doc, "i", "no MPI Event");
	assert_int_equal(json_array_size(i), 1);
	reason = json_string_value(
	    json_object_get(json_object_get(json_array_get(i, 0), "args"), "reason"));
	assert_non_null(strstr(reason, "without --mpi-events"));
	assert_string_equal(reason, st.reason);
	assert_int_equal(count(doc, "X", NULL), 0);
	assert_true(json_is_null(json_object_get(json_object_get(doc, "otherData"), "t0_ns")));
	json_decref(i);
	json_decref(doc);
	doc = export_and_parse(plain, &st);
	assert_non_null(strstr(st.reason, "no process of the Run made an MPI call"));
	json_decref(doc);
	pivot__free(mpi);
	pivot__free(plain);
}

static void test_trace_errors(void **state)
{
	struct pivot *p;
	FILE *out;

	(void)state;
	assert_int_equal(export_chrome_trace(NULL, NULL, stdout, NULL), -EINVAL);
	out = fopen("/dev/full", "w");
	if (!out) {
		print_message("SKIPPED: /dev/full cannot be opened here\n");
		return;
	}
	p = efx_build(tmpdir, "full.sqlite", EFX_ALL);
	assert_int_equal(export_chrome_trace(p, NULL, out, NULL), -ENOSPC);
	fclose(out);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "export_trace") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trace_events),
	    cmocka_unit_test(test_trace_no_events),
	    cmocka_unit_test(test_trace_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
