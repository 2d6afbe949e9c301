/* Snapshot tests of report/payload on pivots built here
 * (tests/unit/payload_fixture.h): the trunk and the format, each Hotspot's
 * quality (measured, estimated, unavailable, null below the floor), an
 * unresolved Hotspot, a missing source with its reason, the inline chains,
 * the roofline, the Loci, the flame graph (root first, by samples, the
 * kernel flagged, sums), the MPI Events, the summary text; --no-source
 * (no line text anywhere in the serialized payload); a Run with no sample;
 * the flame graph's Stack limit (counted, never lost silently). */
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

#include "analysis/diagnose.h"
#include "report/html_escape.h"
#include "report/payload.h"
#include "report/run_model.h"
#include "report/summary.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/payload_fixture.h"

#define JGET(o, k) json_object_get((o), (k))
#define JSTR(o, k) json_string_value(json_object_get((o), (k)))
#define JINT(o, k) json_integer_value(json_object_get((o), (k)))

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/nunatak-payload-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

static json_t *hotspot_named(json_t *payload, const char *name)
{
	json_t *h;
	size_t i;

	json_array_foreach(JGET(JGET(payload, "summary"), "hotspots"), i, h)
		if (!strcmp(JSTR(h, "name"), name))
			return h;
	fail_msg("no hotspot '%s'", name);
	return NULL;
}

/* the payload of p with the fixture's manifest */
static json_t *payload_of(struct pivot *p, unsigned model_flags, unsigned flags, char **text)
{
	json_t *manifest = pf_manifest(), *j;
	struct run_model m;

	assert_int_equal(run_model_build(&m, p, manifest, RUN_MODEL_COMPONENTS | model_flags), 0);
	m.run_dir = "/runs/payload-1";
	j = payload_json(&m, flags);
	assert_non_null(j);
	if (text) {
		*text = json_for_script(j, NULL);
		assert_non_null(*text);
	}
	run_model_release(&m);
	json_decref(manifest);
	return j;
}

static void test_trunk(void **state)
{
	struct pivot *p = pf_build(tmpdir, "trunk.sqlite", 1);
	json_t *j = payload_of(p, 0, 0, NULL), *f;

	(void)state;
	f = JGET(j, "format");
	assert_string_equal(JSTR(f, "name"), "nunatak-report");
	assert_int_equal(JINT(f, "schema"), PAYLOAD_SCHEMA);
	assert_int_equal(strncmp(JSTR(f, "generated_by"), "nunatak ", 8), 0);
	assert_int_equal(strlen(JSTR(j, "generated")), strlen("2026-12-02T06:58:03Z"));
	assert_true(json_is_false(JGET(j, "no_source")));
	assert_string_equal(JSTR(j, "run_dir"), "/runs/payload-1");
	/* the manifest as it is */
	assert_string_equal(JSTR(JGET(JGET(j, "manifest"), "run"), "name"), "payload <run> & co");
	assert_true(json_is_null(JGET(j, "components")));
	json_decref(j);
	pivot__free(p);
}

static void test_hotspots(void **state)
{
	struct pivot *p = pf_build(tmpdir, "hotspots.sqlite", 1);
	json_t *j = payload_of(p, 0, 0, NULL), *h, *src, *in, *fr, *s;

	(void)state;
	s = JGET(j, "summary");
	assert_int_equal(JINT(JGET(s, "totals"), "samples"), PF_CPU_SAMPLES);
	/* every Quality, and null below the floor */
	assert_string_equal(JSTR(hotspot_named(j, "stream"), "quality"), "measured");
	assert_string_equal(JSTR(hotspot_named(j, "halo"), "quality"), "estimated");
	assert_string_equal(JSTR(hotspot_named(j, "wait"), "quality"), "unavailable");
	assert_true(json_is_null(JGET(hotspot_named(j, "tiny"), "quality")));
	assert_true(json_is_false(JGET(hotspot_named(j, "tiny"), "above_floor")));
	/* the estimated one says why */
	assert_string_equal(JSTR(JGET(JGET(hotspot_named(j, "halo"), "diagnostic"), "dram_intensity"),
				 "quality"),
			    "estimated");
	/* unresolved, and counted as such */
	h = hotspot_named(j, "solver+0x600");
	assert_string_equal(JSTR(h, "resolution_level"), "unresolved");
	assert_near(json_real_value(JGET(s, "unresolved_share")), 35.0 / PF_CPU_SAMPLES, 1e-12);
	/* a missing source, with its reason, no text */
	src = JGET(hotspot_named(j, "wait"), "source");
	assert_string_equal(JSTR(src, "status"), "missing");
	assert_string_equal(JSTR(src, "reason"), PF_MISSING_REASON);
	assert_true(json_is_null(JGET(src, "first_line")));
	/* the embedded one with its text */
	src = JGET(hotspot_named(j, "stream"), "source");
	assert_string_equal(JSTR(src, "status"), "embedded");
	assert_string_equal(JSTR(json_array_get(JGET(src, "lines"), 0), "text"), "SECRET_LINE_40");
	/* the inline chain, outermost first */
	in = JGET(hotspot_named(j, "halo"), "inline");
	assert_int_equal(json_array_size(in), 1);
	assert_int_equal(JINT(json_array_get(in, 0), "samples"), 75);
	fr = JGET(json_array_get(in, 0), "frames");
	assert_int_equal(json_array_size(fr), 2);
	assert_string_equal(JSTR(json_array_get(fr, 0), "function"), "halo");
	assert_int_equal(JINT(json_array_get(fr, 0), "line"), 60);
	assert_string_equal(JSTR(json_array_get(fr, 1), "function"), "halo_inner");
	assert_string_equal(JSTR(json_array_get(fr, 1), "file"), "src/inner.h");
	assert_int_equal(json_array_size(JGET(hotspot_named(j, "stream"), "inline")), 0);
	json_decref(j);
	pivot__free(p);
}

/* no FLOP or DRAM counter in the Run: no Hotspot is placed, which is the
 * Run's (diagnostic_run.no_placement, said once), not a flaw of each
 * Hotspot's: their Quality is that of their own values */
static void test_run_without_counters(void **state)
{
	struct pivot *p = pf_build(tmpdir, "no-counters.sqlite", 1);
	json_t *j, *run;

	(void)state;
	assert_int_equal(sqlite3_exec(pivot_sqlite(p),
				      "DELETE FROM measurements WHERE counter IN"
				      " ('flop_dp', 'flop_sp', 'dram_bytes')",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	j = payload_of(p, 0, 0, NULL);
	run = JGET(JGET(j, "summary"), "diagnostic_run");
	assert_string_equal(JSTR(run, "no_placement"),
			    "no FLOP or DRAM counter was sampled in this Run");
	assert_string_equal(JSTR(run, "imbalance_over"), "ranks");
	/* wait was unavailable for its own reason (no FLOP in it): now the Run's */
	assert_string_equal(JSTR(hotspot_named(j, "wait"), "quality"), "measured");
	assert_string_equal(JSTR(hotspot_named(j, "stream"), "quality"), "measured");
	/* the values stay unavailable, with the reason */
	assert_string_equal(JSTR(JGET(JGET(hotspot_named(j, "stream"), "diagnostic"), "achieved"),
				 "quality"),
			    "unavailable");
	json_decref(j);
	pivot__free(p);
}

static void test_roofline_loci_events(void **state)
{
	struct pivot *p = pf_build(tmpdir, "roof.sqlite", 1);
	json_t *j = payload_of(p, 0, 0, NULL), *r, *l, *ev, *row;

	(void)state;
	r = JGET(j, "roofline");
	/* per core: 8e9 / 2 flop/s, 16e9 / 2 B/s, ridge 0.5 flop/B */
	assert_near(json_real_value(JGET(JGET(r, "peak"), "value")), 4e9, 1);
	assert_string_equal(JSTR(JGET(r, "peak"), "unit"), "flop/s");
	assert_string_equal(JSTR(JGET(r, "peak"), "quality"), "measured");
	assert_near(json_real_value(JGET(JGET(r, "bandwidth"), "value")), 8e9, 1);
	assert_near(json_real_value(JGET(JGET(r, "ridge"), "value")), 0.5, 1e-12);
	assert_true(json_is_null(JGET(r, "reason")));

	l = JGET(j, "loci");
	assert_int_equal(json_array_size(l), 2);
	assert_int_equal(JINT(json_array_get(l, 1), "rank"), 1);
	assert_int_equal(JINT(json_array_get(l, 1), "tgid"), 101);
	assert_string_equal(JSTR(json_array_get(l, 0), "node"), "n1");

	ev = JGET(j, "events");
	assert_true(json_is_true(JGET(ev, "available")));
	assert_true(json_is_null(JGET(ev, "reason")));
	assert_int_equal(JINT(ev, "t0_ns"), 900);
	assert_int_equal(json_array_size(JGET(ev, "events")), 3);
	/* by start: MPI_Send on rank 1 first, at 0 */
	row = json_array_get(JGET(ev, "events"), 0);
	assert_int_equal(json_integer_value(json_array_get(row, 0)), 1);
	assert_string_equal(json_string_value(json_array_get(
				JGET(ev, "names"), json_integer_value(json_array_get(row, 1)))),
			    "MPI_Send");
	assert_int_equal(json_integer_value(json_array_get(row, 2)), 0);
	assert_int_equal(json_integer_value(json_array_get(row, 3)), 100);
	assert_int_equal(json_integer_value(json_array_get(row, 4)), 64);
	assert_int_equal(json_integer_value(json_array_get(row, 5)), 0);
	row = json_array_get(JGET(ev, "events"), 2);
	assert_int_equal(json_integer_value(json_array_get(row, 2)), 1100);
	assert_true(json_is_null(json_array_get(row, 4)));
	assert_int_equal(json_integer_value(json_array_get(row, 5)), 1);
	assert_true(json_is_null(JGET(ev, "limit")));
	json_decref(j);
	pivot__free(p);
}

static void test_flame(void **state)
{
	struct pivot *p = pf_build(tmpdir, "flame.sqlite", 1);
	json_t *j = payload_of(p, 0, 0, NULL), *fl, *frames, *st, *x, *l;
	uint64_t sum = 0, prev = UINT64_MAX, locus_sum;
	size_t i, k;
	int kernel = 0;

	(void)state;
	fl = JGET(j, "flame");
	frames = JGET(fl, "frames");
	assert_string_equal(JSTR(fl, "counter"), "cpu-clock");
	assert_int_equal(JINT(fl, "samples"), PF_CPU_SAMPLES);
	assert_int_equal(JINT(fl, "kept_samples"), PF_CPU_SAMPLES);
	assert_true(json_is_null(JGET(fl, "limit")));
	assert_int_equal(json_array_size(frames), PF_N);
	assert_int_equal(json_array_size(JGET(fl, "stacks")), PF_N_STACKS);
	json_array_foreach(JGET(fl, "stacks"), i, st) {
		uint64_t n = (uint64_t)JINT(st, "n");

		assert_true(n <= prev);
		prev = n;
		sum += n;
		/* root first */
		x = json_array_get(frames, json_integer_value(json_array_get(JGET(st, "f"), 0)));
		assert_string_equal(JSTR(x, "name"), "main");
		locus_sum = 0;
		json_array_foreach(JGET(st, "l"), k, l) locus_sum +=
			json_integer_value(json_array_get(l, 1));
		assert_int_equal(locus_sum, n);
		assert_int_equal(JINT(st, "t"), 0);
	}
	assert_int_equal(sum, PF_CPU_SAMPLES);
	/* the first: stream ← compute ← main, 110 on both Loci */
	st = json_array_get(JGET(fl, "stacks"), 0);
	assert_int_equal(JINT(st, "n"), 110);
	x = json_array_get(frames, json_integer_value(json_array_get(JGET(st, "f"), 2)));
	assert_string_equal(JSTR(x, "name"), "stream");
	assert_string_equal(JSTR(x, "module"), "solver");
	assert_int_equal(json_array_size(JGET(st, "l")), 2);
	json_array_foreach(frames, i, x) {
		if (!strcmp(JSTR(x, "name"), "do_syscall_64")) {
			kernel = 1;
			assert_true(json_is_true(JGET(x, "kernel")));
			assert_string_equal(JSTR(x, "module"), "[kernel]");
		} else {
			assert_true(json_is_false(JGET(x, "kernel")));
		}
	}
	assert_true(kernel);
	json_decref(j);
	pivot__free(p);
}

/* summary_text is what summary_print writes, the C++/script name kept
 * as it is in JSON (the page escapes it) */
static void test_summary_text(void **state)
{
	struct pivot *p = pf_build(tmpdir, "text.sqlite", 1);
	json_t *manifest = pf_manifest(), *j;
	struct run_model m;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_int_equal(run_model_build(&m, p, manifest, 0), 0);
	assert_int_equal(summary_print(f, &m), 0);
	fclose(f);
	j = payload_json(&m, 0);
	assert_non_null(j);
	assert_string_equal(JSTR(j, "summary_text"), buf);
	assert_non_null(strstr(buf, PF_EVIL));
	assert_non_null(strstr(buf, "SECRET_LINE_42"));
	json_decref(j);
	free(buf);
	run_model_release(&m);
	json_decref(manifest);
	pivot__free(p);
}

static void test_no_source(void **state)
{
	struct pivot *p = pf_build(tmpdir, "nosrc.sqlite", 1);
	json_t *manifest = pf_manifest(), *j, *src;
	struct run_model m;
	char *with, *without;

	(void)state;
	/* the same Run with its source: the lines are there */
	json_decref(payload_of(p, 0, 0, &with));
	assert_non_null(strstr(with, "SECRET_LINE"));
	j = payload_of(p, RUN_MODEL_NO_SOURCE, PAYLOAD_NO_SOURCE, &without);
	assert_null(strstr(without, "SECRET_LINE"));
	assert_true(json_is_true(JGET(j, "no_source")));
	src = JGET(hotspot_named(j, "stream"), "source");
	assert_string_equal(JSTR(src, "status"), "disabled");
	assert_string_equal(JSTR(src, "reason"), RUN_MODEL_NO_SOURCE_REASON);
	/* line numbers and shares stay */
	assert_int_equal(JINT(json_array_get(JGET(src, "lines"), 0), "line"), 40);
	assert_true(json_is_null(JGET(json_array_get(JGET(src, "lines"), 0), "text")));
	assert_non_null(strstr(JSTR(j, "summary_text"), "disabled: " RUN_MODEL_NO_SOURCE_REASON));
	/* the inline frames keep their numbers */
	assert_int_equal(json_array_size(JGET(hotspot_named(j, "halo"), "inline")), 1);
	json_decref(j);
	free(with);
	free(without);
	/* asking for no source from a model that read it: refused */
	assert_int_equal(run_model_build(&m, p, manifest, 0), 0);
	assert_null(payload_json(&m, PAYLOAD_NO_SOURCE));
	assert_int_equal(errno, EINVAL);
	run_model_release(&m);
	json_decref(manifest);
	pivot__free(p);
}

static void test_no_samples(void **state)
{
	struct pivot *p = pf_build(tmpdir, "empty.sqlite", 0);
	json_t *j = payload_of(p, 0, 0, NULL), *fl, *ev;

	(void)state;
	assert_int_equal(json_array_size(JGET(JGET(j, "summary"), "hotspots")), 0);
	assert_true(json_is_null(JGET(JGET(j, "summary"), "counter")));
	assert_int_equal(strncmp(JSTR(j, "summary_text"), "nunatak: no samples were recorded", 33),
			 0);
	fl = JGET(j, "flame");
	assert_true(json_is_null(JGET(fl, "counter")));
	assert_int_equal(json_array_size(JGET(fl, "stacks")), 0);
	assert_int_equal(json_array_size(JGET(fl, "frames")), 0);
	assert_int_equal(JINT(fl, "samples"), 0);
	ev = JGET(j, "events");
	assert_true(json_is_false(JGET(ev, "available")));
	assert_non_null(strstr(JSTR(ev, "reason"), "--mpi-events"));
	assert_true(json_is_null(JGET(ev, "t0_ns")));
	/* the roofline is the Machine's: there without samples */
	assert_near(json_real_value(JGET(JGET(JGET(j, "roofline"), "ridge"), "value")), 0.5, 1e-12);
	assert_int_equal(json_array_size(JGET(j, "loci")), 2);
	json_decref(j);
	pivot__free(p);
}

static int attribute_all(const struct pivot_module *m, const uint64_t *offsets, size_t n,
			 void *arg)
{
	struct attributed_address *aa = calloc(n, sizeof(*aa));
	char (*names)[32] = calloc(n, sizeof(*names));
	size_t i;
	int err;

	assert_non_null(aa);
	assert_non_null(names);
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "f%zu", i);
		aa[i].address = offsets[i];
		aa[i].level = RESOLUTION_FUNCTION;
		aa[i].function = names[i];
		aa[i].function_start = offsets[i];
	}
	err = pivot_store_attribution(arg, m->id, aa, n, "done", NULL);
	free(aa);
	free(names);
	return err;
}

/* PAYLOAD_MAX_STACKS + 5 Stacks: the 5 with the fewest samples are cut,
 * counted in limit and in samples, not in kept_samples */
static void test_stack_limit(void **state)
{
	size_t n = PAYLOAD_MAX_STACKS + 5, i;
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module mod = NUNATAK__WIRE__MODULE__INIT, *mods[1] = {&mod};
	Nunatak__Wire__Locus loc = NUNATAK__WIRE__LOCUS__INIT, *locs[1] = {&loc};
	Nunatak__Wire__Address *addrs = calloc(2 * n, sizeof(*addrs));
	Nunatak__Wire__Address **aptrs = calloc(2 * n, sizeof(*aptrs));
	Nunatak__Wire__Stack *stacks = calloc(n, sizeof(*stacks)), **sptrs = calloc(n, sizeof(*sptrs));
	Nunatak__Wire__SampleCount *sc = calloc(n, sizeof(*sc)), **scp = calloc(n, sizeof(*scp));
	uint64_t total = 0, cut = 0;
	char path[PATH_MAX + 32];
	struct pivot *p;
	json_t *j, *fl, *lim;

	(void)state;
	assert_true(addrs && aptrs && stacks && sptrs && sc && scp);
	snprintf(path, sizeof(path), "%s/limit.sqlite", tmpdir);
	p = pivot__create(path);
	assert_non_null(p);
	b.run_id = "r", b.node = "n1", b.seq = 1;
	mod.identity = "00bb", mod.path = "/opt/app/big", mod.display_name = "big";
	mod.has_build_id = 1;
	b.n_modules = 1, b.modules = mods;
	loc.node = "n1", loc.tgid = loc.tid = 7;
	b.n_loci = 1, b.loci = locs;
	for (i = 0; i < n; i++) {
		Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;
		Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;
		Nunatak__Wire__SampleCount c = NUNATAK__WIRE__SAMPLE_COUNT__INIT;

		a.offset = 0x1000;		/* the root, shared */
		addrs[2 * i] = a;
		a.offset = 0x2000 + 16 * i;	/* a leaf each */
		addrs[2 * i + 1] = a;
		aptrs[2 * i] = &addrs[2 * i + 1];
		aptrs[2 * i + 1] = &addrs[2 * i];
		s.n_frames = 2;
		s.frames = &aptrs[2 * i];
		stacks[i] = s;
		sptrs[i] = &stacks[i];
		c.stack = (uint32_t)i;
		c.counter = "cpu-clock";
		c.sample_count = i < 5 ? 1 : 2; /* the first 5 have the fewest */
		c.value = c.sample_count * PF_MS;
		total += c.sample_count;
		cut += i < 5 ? c.sample_count : 0;
		sc[i] = c;
		scp[i] = &sc[i];
	}
	b.n_stacks = n, b.stacks = sptrs, b.n_samples = n, b.samples = scp;
	assert_int_equal(pivot_store_batch(p, &b), 0);
	assert_int_equal(pivot_for_each_module_to_attribute(p, attribute_all, p), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	j = payload_of(p, 0, 0, NULL);
	fl = JGET(j, "flame");
	assert_int_equal(json_array_size(JGET(fl, "stacks")), PAYLOAD_MAX_STACKS);
	assert_int_equal(JINT(fl, "samples"), total);
	assert_int_equal(JINT(fl, "kept_samples"), total - cut);
	lim = JGET(fl, "limit");
	assert_int_equal(JINT(lim, "stacks"), PAYLOAD_MAX_STACKS);
	assert_int_equal(JINT(lim, "of"), n);
	assert_non_null(JSTR(lim, "reason"));
	/* only the frames the kept Stacks use */
	assert_int_equal(json_array_size(JGET(fl, "frames")), PAYLOAD_MAX_STACKS + 1);
	json_decref(j);
	pivot__free(p);
	free(addrs), free(aptrs), free(stacks), free(sptrs), free(sc), free(scp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trunk),	  cmocka_unit_test(test_hotspots),
	    cmocka_unit_test(test_roofline_loci_events), cmocka_unit_test(test_run_without_counters),
	    cmocka_unit_test(test_flame),
	    cmocka_unit_test(test_summary_text),  cmocka_unit_test(test_no_source),
	    cmocka_unit_test(test_no_samples),	  cmocka_unit_test(test_stack_limit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
