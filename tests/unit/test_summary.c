/* Tests of analysis/diagnose and report/summary on pivots built here:
 * shares and their sum, the floor of 30 samples, ties, the unresolved
 * share, summing over Loci; the summary text (lines, "unavailable", no
 * samples) and its JSON twin, also of names that are not UTF-8 (Hotspots,
 * Degradations, ranks, MPI call sites); the ranks and MPI sections on the
 * 4-rank pivot of mpi_fixture.h (call sites whole, MPI_Init and
 * MPI_Finalize apart), and their absence without MPI data; the class
 * column, the Diagnostic blocks and their JSON on a Run without a Machine
 * snapshot nor FLOP/DRAM counters (tests/unit/test_diagnostic.c has the
 * placed ones). */
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
#include "report/summary.h"
#include "tests/unit/run_model_fixture.h"
#include "tests/unit/mpi_fixture.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/summary_fixture.h"
#include "userspace/pivot/pivot.h"

#define EPS 1e-12

static char tmpdir[PATH_MAX];
static int pivot_serial;

/* one Hotspot per row: a single-frame stack at offset, samples on two
 * Loci; 1 sample = 1 ms of cpu-clock (or 1000 cycles) */
struct spec {
	uint64_t offset;
	const char *name;
	enum resolution_level level;
	const char *source_file;
	uint64_t samples_l0, samples_l1;
};

struct attribute_ctx {
	struct pivot *p;
	const struct spec *specs;
	size_t n;
};

static int attribute(const struct pivot_module *m, const uint64_t *offsets, size_t n, void *arg)
{
	struct attribute_ctx *ctx = arg;
	struct attributed_address aa[16];
	size_t i, j;

	assert_true(n <= 16);
	memset(aa, 0, sizeof(aa));
	for (i = 0; i < n; i++) {
		for (j = 0; j < ctx->n && ctx->specs[j].offset != offsets[i]; j++)
			;
		assert_true(j < ctx->n);
		aa[i].address = offsets[i];
		aa[i].level = ctx->specs[j].level;
		aa[i].function = (char *)ctx->specs[j].name;
		aa[i].function_start = offsets[i];
		aa[i].source_file = (char *)ctx->specs[j].source_file;
		aa[i].line = ctx->specs[j].source_file ? 12 : 0;
	}
	return pivot_store_attribution(ctx->p, m->id, aa, n, "done", NULL);
}

/* module: its display name (the file name of the binary) */
static struct pivot *build_pivot_of(const struct spec *specs, size_t n, const char *counter,
				    const char *module)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module mod = NUNATAK__WIRE__MODULE__INIT, *mods[1] = {&mod};
	Nunatak__Wire__Locus loci[2] = {NUNATAK__WIRE__LOCUS__INIT, NUNATAK__WIRE__LOCUS__INIT};
	Nunatak__Wire__Locus *locus_ptrs[2] = {&loci[0], &loci[1]};
	Nunatak__Wire__Stack stacks[16], *stack_ptrs[16];
	Nunatak__Wire__Address addrs[16], *addr_ptrs[16];
	Nunatak__Wire__SampleCount samples[32], *sample_ptrs[32];
	struct attribute_ctx ctx = {.specs = specs, .n = n};
	uint64_t unit = strcmp(counter, "cycles") ? 1000000 : 1000;
	char path[PATH_MAX + 64];
	struct pivot *p;
	size_t i, k = 0;

	assert_true(n <= 16);
	snprintf(path, sizeof(path), "%s/p%d.sqlite", tmpdir, pivot_serial++);
	p = pivot__create(path);
	assert_non_null(p);
	ctx.p = p;

	b.run_id = "r";
	b.node = "n1";
	b.seq = 1;
	mod.identity = "0011";
	mod.path = "/opt/app/solver";
	mod.display_name = (char *)module;
	mod.has_build_id = 1;
	for (i = 0; i < 2; i++) {
		loci[i].node = "n1";
		loci[i].tgid = 100; /* two threads of one process: their imbalance applies */
		loci[i].tid = 100 + (uint32_t)i;
	}
	for (i = 0; i < n; i++) {
		Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;
		Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;

		a.module = 0;
		a.offset = specs[i].offset;
		addrs[i] = a;
		addr_ptrs[i] = &addrs[i];
		s.n_frames = 1;
		s.frames = &addr_ptrs[i];
		stacks[i] = s;
		stack_ptrs[i] = &stacks[i];
		for (uint32_t l = 0; l < 2; l++) {
			Nunatak__Wire__SampleCount sc = NUNATAK__WIRE__SAMPLE_COUNT__INIT;
			uint64_t count = l ? specs[i].samples_l1 : specs[i].samples_l0;

			if (!count)
				continue;
			sc.locus = l;
			sc.stack = i;
			sc.counter = (char *)counter;
			sc.sample_count = count;
			sc.value = count * unit;
			samples[k] = sc;
			sample_ptrs[k] = &samples[k];
			k++;
		}
	}
	b.n_modules = 1;
	b.modules = mods;
	b.n_loci = 2;
	b.loci = locus_ptrs;
	b.n_stacks = n;
	b.stacks = stack_ptrs;
	b.n_samples = k;
	b.samples = sample_ptrs;
	assert_int_equal(pivot_store_batch(p, &b), 0);
	if (n)
		assert_int_equal(pivot_for_each_module_to_attribute(p, attribute, &ctx), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	return p;
}

static struct pivot *build_pivot(const struct spec *specs, size_t n, const char *counter)
{
	return build_pivot_of(specs, n, counter, "solver");
}

/* compute spans two Loci (60 + 40); alpha (5 + 25: max / min 5, a
 * difference beyond the sampling noise 3 sqrt(30)) and beta tie at 30 (the
 * floor);
 * gap has 29 (under it) and is unresolved; tiny has 1 */
static const struct spec run_specs[] = {
    {0x2000, "beta", RESOLUTION_FUNCTION, NULL, 30, 0},
    {0x1000, "compute", RESOLUTION_LINE, "src/solver.c", 60, 40},
    {0x3000, "solver+0x3000", RESOLUTION_UNRESOLVED, NULL, 0, 29},
    {0x4000, "alpha", RESOLUTION_SYMBOL, NULL, 5, 25},
    {0x5000, "tiny", RESOLUTION_FUNCTION, NULL, 1, 0},
};
#define N_RUN_SPECS (sizeof(run_specs) / sizeof(run_specs[0]))

static void test_diagnosis_arithmetic(void **state)
{
	struct pivot *p = build_pivot(run_specs, N_RUN_SPECS, "cpu-clock");
	struct diagnosis *d = diagnosis__new(p);
	double sum = 0;
	size_t i;

	(void)state;
	assert_non_null(d);
	assert_string_equal(d->counter, "cpu-clock");
	assert_int_equal(d->total_samples, 190);
	assert_int_equal(d->total_hotspots, 5);
	assert_near(d->total_seconds, 0.190, EPS);
	assert_int_equal(d->n_hotspots, 3);
	assert_string_equal(d->hotspots[0].name, "compute");
	assert_int_equal(d->hotspots[0].samples, 100);
	assert_near(d->hotspots[0].share, 100.0 / 190, EPS);
	assert_near(d->hotspots[0].seconds, 0.100, EPS);
	assert_string_equal(d->hotspots[0].module, "solver");
	assert_string_equal(d->hotspots[0].source_file, "src/solver.c");
	assert_string_equal(d->hotspots[0].resolution_level, "line");
	/* tie at 30: by name */
	assert_string_equal(d->hotspots[1].name, "alpha");
	assert_string_equal(d->hotspots[2].name, "beta");
	assert_int_equal(d->hotspots[2].samples, 30); /* 30: reported */
	assert_null(d->hotspots[2].source_file);
	assert_near(d->hotspots[1].share, 30.0 / 190, EPS);
	/* 29 and 1: others */
	assert_int_equal(d->others.hotspots, 2);
	assert_int_equal(d->others.samples, 30);
	assert_near(d->others.share, 30.0 / 190, EPS);
	assert_near(d->others.seconds, 0.030, EPS);
	assert_near(d->unresolved_share, 29.0 / 190, EPS);
	for (i = 0; i < d->n_hotspots; i++)
		sum += d->hotspots[i].share;
	assert_near(sum + d->others.share, 1.0, EPS);
	diagnosis__free(d);
	pivot__free(p);
}

static void test_diagnosis_empty(void **state)
{
	struct pivot *p = build_pivot(NULL, 0, "cpu-clock");
	struct diagnosis *d = diagnosis__new(p);

	(void)state;
	assert_non_null(d);
	assert_null(d->counter);
	assert_int_equal(d->n_hotspots, 0);
	assert_int_equal(d->total_samples, 0);
	assert_true(isnan(d->total_seconds));
	assert_true(isnan(d->unresolved_share));
	diagnosis__free(d);
	pivot__free(p);
	assert_null(diagnosis__new(NULL));
	assert_int_equal(errno, EINVAL);
}

static void test_summary_text(void **state)
{
	struct pivot *p = build_pivot(run_specs, N_RUN_SPECS, "cpu-clock");
	struct diagnosis *d = diagnosis__new(p);
	char *text;

	(void)state;
	assert_int_equal(pivot_add_degradation(p, "no-cycles", "no hardware cycles counter",
					       "run on bare metal"),
			 0);
	/* a remedy of several lines (one per cause), text never raw */
	assert_int_equal(pivot_add_degradation(p, "two-causes", "two \x1b[2Jcauses",
					       "3 samples x: do a\n4 samples y: do \x1b[31mb"),
			 0);
	text = print_to_string(d, p);
	assert_contains(text, "  - degradation two-causes: two ?[2Jcauses\n"
			      "      remedy: 3 samples x: do a\n"
			      "              4 samples y: do ?[31mb\n");
	assert_null(strchr(text, '\x1b'));
	assert_contains(text, "nunatak: 3 hotspots above the floor of 30 samples cover 84.2% of"
			      " 190 samples, 0.190 s sampled\n");
	assert_contains(text, "   share   samples  seconds  level       module  class      hotspot\n");
	assert_contains(text, "   52.6%       100    0.100  line        solver  —          compute"
			      " (src/solver.c)\n");
	/* alpha: 5 and 25 samples on two threads, max / min = 5 */
	assert_contains(text, "   15.8%        30    0.030  symbol      solver  imbalance  alpha\n");
	assert_contains(text, "   15.8%        30    0.030  function    solver  —          beta\n");
	assert_contains(text, "   15.8%        30    0.030                                 others: 2"
			      " hotspots\n");
	/* the Diagnostics: no Machine snapshot, no FLOP or DRAM counter */
	assert_contains(text, "\ndiagnostic of the hotspots above the floor\n"
			      "  compute: share 52.6%, 0.100 s, imbalance 1.50 over 2 threads\n"
			      "  alpha: share 15.8%, 0.030 s, imbalance 5.00 over 2 threads\n"
			      "      class imbalance: its time varies 5.00x across the 2 threads"
			      " (max / min >= 2)\n"
			      "  beta: share 15.8%, 0.030 s\n"
			      "  no roofline placement in this Run, so no roofline class: no FLOP or"
			      " DRAM counter was sampled in this Run\n"
			      "  imbalance not applicable to beta: one thread of one process ran"
			      " it\n\n");
	/* no placement at all: no conclusion rests on a Ceiling, none is listed */
	assert_null(strstr(text, "Ceiling"));
	/* said once, in the diagnostic */
	assert_null(strstr(text, "roofline placements"));
	assert_null(strstr(text, "unavailable ["));
	assert_null(strstr(text, " 0.0 "));
	assert_contains(text, "  - others: 2 hotspots under 30 samples each (30 samples, 15.8%"
			      " of the time) get no diagnostic\n");
	assert_contains(text, "  - unresolved: 15.3% of the time is in code no symbol names\n");
	assert_contains(text, "  - degradation no-cycles: no hardware cycles counter\n"
			      "      remedy: run on bare metal\n");
	/* the table says nothing is unavailable: only the Diagnostics do */
	assert_true(!strstr(text, "unavailable") ||
		    strstr(text, "unavailable") > strstr(text, "diagnostic of the hotspots"));
	/* the table comes before what it does not say */
	assert_true(strstr(text, "compute") < strstr(text, "what this summary does not say"));
	free(text);
	diagnosis__free(d);
	pivot__free(p);
}

/* more than SUMMARY_MAX_HOTSPOTS above the floor: the rest is folded */
static void test_summary_folds_beyond_ten(void **state)
{
	static const char *names[12] = {"f00", "f01", "f02", "f03", "f04", "f05",
					"f06", "f07", "f08", "f09", "f10", "f11"};
	struct spec specs[12];
	struct pivot *p;
	struct diagnosis *d;
	char *text;
	size_t i;

	(void)state;
	for (i = 0; i < 12; i++)
		specs[i] =
		    (struct spec){0x100 * (i + 1), names[i], RESOLUTION_FUNCTION, NULL, 100 - i, 0};
	p = build_pivot(specs, 12, "cpu-clock");
	d = diagnosis__new(p);
	assert_int_equal(d->n_hotspots, 12);
	text = print_to_string(d, p);
	assert_contains(text, "  f09\n");
	assert_null(strstr(text, "  f10\n"));
	assert_null(strstr(text, "  f10: ")); /* no Diagnostic block beyond the table */
	assert_contains(text, "  f09: share 8.0%");
	/* 90 + 89 samples of 1134 */
	assert_contains(text, "   15.8%       179    0.179                             others: 2"
			      " hotspots (2 above the floor not listed, 0 under 30 samples)\n");
	assert_contains(text, "  - degradations: none\n");
	free(text);
	diagnosis__free(d);
	pivot__free(p);
}

static void test_summary_unavailable(void **state)
{
	struct pivot *p = build_pivot(run_specs, N_RUN_SPECS, "cycles");
	struct diagnosis *d = diagnosis__new(p);
	json_t *j, *h;
	char *text;

	(void)state;
	assert_string_equal(d->counter, "cycles");
	assert_true(isnan(d->hotspots[0].seconds));
	text = print_to_string(d, p);
	assert_contains(text, "190 samples, time sampled unavailable (only cycles was"
			      " sampled)\n");
	assert_contains(text, "   52.6%       100  unavailable  line        solver  —          compute"
			      " (src/solver.c)\n");
	/* only cycles: the shares are of cycles, the placement has no time */
	assert_contains(text, "  compute: share 52.6%, imbalance 1.50 over 2 threads\n");
	assert_null(strstr(text, " 0.000 "));
	assert_contains(text, "  - unresolved: 15.3% of the cycles is in code no symbol names\n");
	free(text);

	j = summary_json_of(d, p);
	assert_non_null(j);
	h = json_array_get(json_object_get(j, "hotspots"), 0);
	assert_true(json_is_null(json_object_get(h, "seconds")));
	assert_true(json_is_null(json_object_get(json_object_get(j, "totals"), "seconds")));
	assert_near(json_real_value(json_object_get(h, "share")), 100.0 / 190, EPS);
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

static void test_summary_no_samples(void **state)
{
	struct pivot *p = build_pivot(NULL, 0, "cpu-clock");
	struct diagnosis *d = diagnosis__new(p);
	json_t *j;
	char *text;

	(void)state;
	text = print_to_string(d, p);
	assert_contains(text, "nunatak: no samples were recorded, so there is no hotspot to"
			      " report\n  no degradation was recorded: the application probably"
			      " ended before the first sample\n");
	assert_contains(text, "  - degradations: none\n");
	free(text);

	assert_int_equal(pivot_add_degradation(p, "no-perf-events", "perf_event_open refused",
					       "sysctl kernel.perf_event_paranoid=1"),
			 0);
	text = print_to_string(d, p);
	assert_contains(text, "nunatak: no samples were recorded, so there is no hotspot to"
			      " report\n");
	assert_contains(text, "  sampling was degraded: the degradations below say why\n");
	assert_contains(text, "  - degradation no-perf-events: perf_event_open refused\n"
			      "      remedy: sysctl kernel.perf_event_paranoid=1\n");
	assert_null(strstr(text, "unresolved"));
	assert_null(strstr(text, "0.0%"));
	free(text);

	j = summary_json_of(d, p);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "hotspots")), 0);
	assert_true(json_is_null(json_object_get(j, "unresolved_share")));
	assert_true(json_is_null(json_object_get(j, "counter")));
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "totals"), "samples")), 0);
	assert_int_equal(json_array_size(json_object_get(j, "degradations")), 1);
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

/* a Run of two nodes: each Degradation says its node (one name on two
 * nodes is two Degradations); a Run of one node does not say it */
static void test_summary_node_degradations(void **state)
{
	struct pivot *p = build_pivot(NULL, 0, "cpu-clock");
	struct diagnosis *d = diagnosis__new(p);
	json_t *j, *x;
	size_t i;
	char *text;
	int nodes = 0;

	(void)state;
	assert_int_equal(pivot_add_node_degradation(p, "na", "no-cycles", "na: none", "r"), 0);
	text = print_to_string(d, p);
	assert_contains(text, "  - degradation no-cycles: na: none\n");
	free(text);
	assert_int_equal(sqlite3_exec(pivot_sqlite(p),
				      "INSERT INTO batches(node, incarnation, seq, received) VALUES"
				      " ('na', 1, 0, 't'), ('nb', 2, 0, 't')",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(pivot_add_node_degradation(p, "nb", "no-cycles", "nb: none", "r"), 0);
	text = print_to_string(d, p);
	assert_contains(text, "  - degradation no-cycles on na: na: none\n");
	assert_contains(text, "  - degradation no-cycles on nb: nb: none\n");
	free(text);
	j = summary_json_of(d, p);
	assert_non_null(j);
	json_array_foreach(json_object_get(j, "degradations"), i, x)
		nodes += !strcmp(json_string_value(json_object_get(x, "node")), "na") ||
			 !strcmp(json_string_value(json_object_get(x, "node")), "nb");
	assert_int_equal(nodes, 2);
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

/* the Diagnostics of run_specs' pivot in JSON: every derived value with
 * its unit, Quality, reason, lineage and formula; null below the floor */
static void assert_diagnostic_json(json_t *hs)
{
	json_t *g, *v;

	g = json_object_get(json_array_get(hs, 0), "diagnostic");
	assert_true(json_is_object(g));
	v = json_object_get(g, "share");
	assert_near(json_real_value(json_object_get(v, "value")), 100.0 / 190, EPS);
	assert_string_equal(json_string_value(json_object_get(v, "unit")), "fraction");
	assert_string_equal(json_string_value(json_object_get(v, "quality")), "measured");
	assert_true(json_is_null(json_object_get(v, "reason")));
	assert_string_equal(json_string_value(json_object_get(v, "formula")),
			    "hotspot time / sampled time");
	assert_int_equal(json_array_size(json_object_get(v, "lineage")), 2);
	v = json_object_get(g, "imbalance");
	assert_near(json_real_value(json_object_get(v, "value")), 60.0 / 40, EPS);
	assert_string_equal(json_string_value(json_object_get(g, "imbalance_over")), "threads");
	assert_true(json_is_null(json_object_get(g, "imbalance_not_applicable")));
	assert_int_equal(json_integer_value(json_object_get(g, "loci")), 2);
	for (const char *const *k = (const char *const[]){"dram_intensity", "achieved", "attainable",
							   "envelope_fraction", NULL};
	     *k; k++) {
		v = json_object_get(g, *k);
		assert_true(json_is_null(json_object_get(v, "value")));
		assert_string_equal(json_string_value(json_object_get(v, "quality")), "unavailable");
		assert_string_equal(json_string_value(json_object_get(v, "reason")),
				    "no FLOP or DRAM counter was sampled in this Run");
	}
	assert_true(json_is_null(json_object_get(g, "classification")));
	assert_string_equal(json_string_value(json_object_get(g, "classification_reason")),
			    "no placement: no FLOP or DRAM counter was sampled in this Run");
	g = json_object_get(json_array_get(hs, 1), "diagnostic");
	assert_string_equal(json_string_value(json_object_get(g, "classification")), "imbalance");
	g = json_object_get(json_array_get(hs, 2), "diagnostic");
	/* not applicable: no value at all, the reason instead */
	assert_null(json_object_get(g, "imbalance"));
	assert_string_equal(json_string_value(json_object_get(g, "imbalance_not_applicable")),
			    "one thread of one process ran it");
	assert_true(json_is_null(json_object_get(g, "imbalance_over")));
	/* below the floor: no Diagnostic */
	assert_true(json_is_null(json_object_get(json_array_get(hs, 3), "diagnostic")));
	assert_true(json_is_null(json_object_get(json_array_get(hs, 4), "diagnostic")));
}

static void test_summary_json(void **state)
{
	struct pivot *p = build_pivot(run_specs, N_RUN_SPECS, "cpu-clock");
	struct diagnosis *d = diagnosis__new(p);
	json_t *j, *hs, *h, *o, *t, *deg;

	(void)state;
	assert_int_equal(pivot_add_degradation(p, "no-cycles", "m", "r"), 0);
	j = summary_json_of(d, p);
	assert_non_null(j);
	hs = json_object_get(j, "hotspots");
	/* every Hotspot: the 3 above the floor first, then the 2 below */
	assert_int_equal(json_array_size(hs), 5);
	assert_true(json_is_true(json_object_get(json_array_get(hs, 2), "above_floor")));
	h = json_array_get(hs, 3);
	assert_string_equal(json_string_value(json_object_get(h, "name")), "solver+0x3000");
	assert_int_equal(json_integer_value(json_object_get(h, "samples")), 29);
	assert_true(json_is_false(json_object_get(h, "above_floor")));
	h = json_array_get(hs, 4);
	assert_string_equal(json_string_value(json_object_get(h, "name")), "tiny");
	assert_true(json_is_false(json_object_get(h, "above_floor")));
	h = json_array_get(hs, 0);
	assert_string_equal(json_string_value(json_object_get(h, "name")), "compute");
	assert_string_equal(json_string_value(json_object_get(h, "module")), "solver");
	assert_string_equal(json_string_value(json_object_get(h, "source_file")), "src/solver.c");
	assert_string_equal(json_string_value(json_object_get(h, "resolution_level")), "line");
	assert_near(json_real_value(json_object_get(h, "share")), 100.0 / 190, EPS);
	assert_int_equal(json_integer_value(json_object_get(h, "samples")), 100);
	assert_near(json_real_value(json_object_get(h, "seconds")), 0.1, EPS);
	h = json_array_get(hs, 2);
	assert_string_equal(json_string_value(json_object_get(h, "name")), "beta");
	assert_true(json_is_null(json_object_get(h, "source_file")));
	assert_diagnostic_json(hs);
	/* what holds for the whole Run, once */
	o = json_object_get(j, "diagnostic_run");
	assert_string_equal(json_string_value(json_object_get(o, "imbalance_over")), "threads");
	assert_true(json_is_null(json_object_get(o, "imbalance_not_applicable")));
	assert_string_equal(json_string_value(json_object_get(o, "no_placement")),
			    "no FLOP or DRAM counter was sampled in this Run");

	o = json_object_get(j, "others");
	assert_int_equal(json_integer_value(json_object_get(o, "hotspots")), 2);
	assert_int_equal(json_integer_value(json_object_get(o, "samples")), 30);
	assert_near(json_real_value(json_object_get(o, "share")), 30.0 / 190, EPS);
	t = json_object_get(j, "totals");
	assert_int_equal(json_integer_value(json_object_get(t, "samples")), 190);
	assert_int_equal(json_integer_value(json_object_get(t, "hotspots")), 5);
	assert_near(json_real_value(json_object_get(t, "seconds")), 0.19, EPS);
	assert_near(json_real_value(json_object_get(j, "unresolved_share")), 29.0 / 190, EPS);
	assert_string_equal(json_string_value(json_object_get(j, "counter")), "cpu-clock");
	assert_int_equal(json_integer_value(json_object_get(j, "floor")), 30);
	deg = json_array_get(json_object_get(j, "degradations"), 0);
	assert_string_equal(json_string_value(json_object_get(deg, "name")), "no-cycles");
	assert_string_equal(json_string_value(json_object_get(deg, "message")), "m");
	assert_string_equal(json_string_value(json_object_get(deg, "remedy")), "r");
	json_decref(j);

	assert_null(summary_json(NULL));
	assert_int_equal(errno, EINVAL);
	diagnosis__free(d);
	pivot__free(p);
}

/* text from outside that is not UTF-8 (a binary's file name, a symbol, a
 * source path in Latin-1, a Degradation quoting a path) is escaped as
 * json_text does, not a reason to lose the document */
static const struct spec odd_specs[] = {
    {0x1000, "k\xffrnel", RESOLUTION_LINE, "src/\xe9t\xe9.c", 40, 0},
    {0x2000, "caf\xc3\xa9", RESOLUTION_FUNCTION, NULL, 35, 0},
};

static void test_summary_json_not_utf8(void **state)
{
	struct pivot *p = build_pivot_of(odd_specs, 2, "cpu-clock", "sl\xffp");
	struct diagnosis *d = diagnosis__new(p);
	json_t *j, *back, *h, *deg;
	char *text;

	(void)state;
	assert_non_null(d);
	assert_int_equal(pivot_add_degradation(p, "module-changed", "not symbolized: /opt/\xfe",
					       "do not \xc3 rebuild"),
			 0);
	j = summary_json_of(d, p);
	assert_non_null(j);
	/* what is written parses back: every string is UTF-8 */
	text = json_dumps(j, JSON_INDENT(2));
	assert_non_null(text);
	back = json_loads(text, 0, NULL);
	assert_non_null(back);
	h = json_array_get(json_object_get(back, "hotspots"), 0);
	assert_string_equal(json_string_value(json_object_get(h, "name")), "k\\xffrnel");
	assert_string_equal(json_string_value(json_object_get(h, "module")), "sl\\xffp");
	assert_string_equal(json_string_value(json_object_get(h, "source_file")),
			    "src/\\xe9t\\xe9.c");
	h = json_array_get(json_object_get(back, "hotspots"), 1);
	assert_string_equal(json_string_value(json_object_get(h, "name")), "caf\xc3\xa9");
	deg = json_array_get(json_object_get(back, "degradations"), 0);
	assert_string_equal(json_string_value(json_object_get(deg, "message")),
			    "not symbolized: /opt/\\xfe");
	assert_string_equal(json_string_value(json_object_get(deg, "remedy")),
			    "do not \\xc3 rebuild");
	json_decref(back);
	free(text);
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

static void test_summary_mpi_text(void **state)
{
	struct pivot *p = fx_build(tmpdir, "mpi-text.sqlite");
	struct diagnosis *d;
	char *text;

	(void)state;
	assert_non_null(p);
	d = diagnosis__new(p);
	assert_non_null(d);
	text = print_to_string(d, p);
	assert_contains(text, "\nranks: 4 ranks, busiest rank 3 at 1.60x the mean time outside"
			      " MPI, load-balance efficiency 62.5%, MPI share of time 36.7%\n");
	assert_contains(text,
			"    rank  node        app s        MPI s        MPI %        CPU s\n");
	assert_contains(text,
			"       0  n1          3.300        2.300        69.7%        1.750\n");
	assert_contains(text,
			"       2  n2          4.100        1.100        26.8%        1.750\n");
	/* estimated app time marked, unavailable CPU time never 0 */
	assert_contains(text,
			"       3  n2         4.600*        0.600        13.0%  unavailable\n");
	/* what MPI time is, and MPI_Init / MPI_Finalize apart, not in the tables */
	assert_contains(text, "\nMPI time is the time inside MPI calls between the end of"
			      " MPI_Init and the start of MPI_Finalize\n"
			      "  not in it: MPI_Init 1.200 s in 4 calls, MPI_Finalize 0.200 s in 4"
			      " calls\n");
	assert_contains(text, "\nMPI call sites by time (top 4 of 4)\n"
			      "  function            calls      total s      mean µs        bytes"
			      "          COV  call site\n"
			      "  MPI_Allreduce         400        5.000      12500.0         3200"
			      "         0.45  solver.c:42 (compute)\n"
			      "  MPI_Alltoallv          20        0.400      20000.0  unavailable"
			      "         0.00  app+0x1300\n"
			      "  MPI_Send               20        0.400      20000.0         2000"
			      "         1.00  solver.c:77 (exchange)\n"
			      "  MPI_Recv               10        0.000          0.0  unavailable"
			      "          n/a  solver.c:80 (exchange)\n");
	/* said once, under both tables */
	assert_contains(text, "  COV n/a (not applicable): one rank calls it\n");
	assert_null(strstr(strstr(text, "  COV n/a") + 1, "  COV n/a"));
	assert_true(strstr(text, "  COV n/a") > strstr(text, "MPI call sites by bytes"));
	assert_contains(text, "\nMPI call sites by bytes (top 4 of 4)\n");
	assert_contains(text, "         3200         0.45  solver.c:42 (compute)\n"
			      "  MPI_Send               20        0.400      20000.0         2000"
			      "         1.00  solver.c:77 (exchange)\n"
			      "  MPI_Alltoallv  ");
	assert_null(strstr(text, "  MPI_Init  "));
	assert_null(strstr(text, "  MPI_Finalize  "));
	assert_contains(text, "  - rank 3: app time estimated (*): MPI_Finalize not reached\n");
	assert_contains(text, "  - bytes of MPI_Alltoallv at app+0x1300: unavailable (vector"
			      " counts not read)\n");
	assert_contains(text, "  - bytes of MPI_Recv at solver.c:80: unavailable (status not"
			      " read)\n");
	/* order: ranks after the headline, MPI before what is not said */
	assert_true(strstr(text, "no samples were recorded") < strstr(text, "ranks: 4"));
	assert_true(strstr(text, "MPI call sites by bytes") <
		    strstr(text, "what this summary does not say"));
	free(text);
	diagnosis__free(d);
	pivot__free(p);
}

/* two call sites whose labels agree on their first 40 characters (a cut
 * made CommBrick::forward_comm and reverse_comm one) are shown whole */
static void test_summary_mpi_sites_whole(void **state)
{
	struct pivot *p = fx_build(tmpdir, "mpi-whole.sqlite");
	struct diagnosis *d;
	char *text;

	(void)state;
	assert_non_null(p);
	assert_int_equal(
	    sqlite3_exec(pivot_sqlite(p),
			 "UPDATE hotspots SET name = 'LAMMPS_NS::CommBrick::forward_comm"
			 "(LAMMPS_NS::Pair*, int)' WHERE name = 'compute';"
			 "UPDATE hotspots SET name = 'LAMMPS_NS::CommBrick::reverse_comm"
			 "(LAMMPS_NS::Pair*, int)' WHERE name = 'exchange';"
			 "UPDATE addresses SET line = 42 WHERE line IN (77, 80)",
			 NULL, NULL, NULL),
	    SQLITE_OK);
	d = diagnosis__new(p);
	assert_non_null(d);
	text = print_to_string(d, p);
	assert_contains(text, "  solver.c:42 (LAMMPS_NS::CommBrick::forward_comm(LAMMPS_NS::Pair*,"
			      " int))\n");
	assert_contains(text, "  solver.c:42 (LAMMPS_NS::CommBrick::reverse_comm(LAMMPS_NS::Pair*,"
			      " int))\n");
	free(text);
	diagnosis__free(d);
	pivot__free(p);
}

/* a Run without MPI data says nothing about MPI */
static void test_summary_no_mpi(void **state)
{
	struct pivot *p = build_pivot(run_specs, N_RUN_SPECS, "cpu-clock");
	struct diagnosis *d = diagnosis__new(p);
	json_t *j, *bal;
	char *text;

	(void)state;
	text = print_to_string(d, p);
	assert_null(strstr(text, "ranks:"));
	assert_null(strstr(text, "MPI"));
	free(text);
	j = summary_json_of(d, p);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "ranks")), 0);
	assert_int_equal(json_array_size(json_object_get(j, "mpi")), 0);
	bal = json_object_get(j, "balance");
	assert_int_equal(json_integer_value(json_object_get(bal, "ranks")), 0);
	assert_true(json_is_null(json_object_get(bal, "imbalance")));
	assert_true(json_is_null(json_object_get(bal, "efficiency")));
	assert_true(json_is_null(json_object_get(bal, "busiest_rank")));
	assert_true(json_is_null(json_object_get(bal, "busiest_factor")));
	assert_true(json_is_null(json_object_get(bal, "mpi_share")));
	json_decref(j);
	/* without a pivot: the same empty sections */
	j = summary_json_of(d, NULL);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "ranks")), 0);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "balance"), "ranks")), 0);
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

#define JGET(o, k) json_object_get((o), (k))

static void test_summary_mpi_json(void **state)
{
	struct pivot *p = fx_build(tmpdir, "mpi-json.sqlite");
	struct diagnosis *d;
	json_t *j, *ranks, *r, *bal, *mpi, *cs, *site, *pr;

	(void)state;
	assert_non_null(p);
	d = diagnosis__new(p);
	j = summary_json_of(d, p);
	assert_non_null(j);

	ranks = JGET(j, "ranks");
	assert_int_equal(json_array_size(ranks), 4);
	r = json_array_get(ranks, 0);
	assert_int_equal(json_integer_value(JGET(r, "rank")), 0);
	assert_string_equal(json_string_value(JGET(r, "node")), "n1");
	assert_near(json_real_value(JGET(r, "app_time")), 3.3, EPS);
	assert_near(json_real_value(JGET(r, "mpi_time")), 2.3, EPS);
	assert_near(json_real_value(JGET(r, "mpi_fraction")), 2.3 / 3.3, EPS);
	assert_near(json_real_value(JGET(r, "cpu_time")), 1.75, EPS);
	assert_near(json_real_value(JGET(r, "outside_mpi_time")), 1.0, 1e-9);
	assert_string_equal(json_string_value(JGET(r, "app_time_quality")), "measured");
	assert_true(json_is_null(JGET(r, "app_time_reason")));
	r = json_array_get(ranks, 3);
	assert_int_equal(json_integer_value(JGET(r, "rank")), 3);
	assert_true(json_is_null(JGET(r, "cpu_time")));
	assert_near(json_real_value(JGET(r, "app_time")), 4.6, EPS);
	assert_string_equal(json_string_value(JGET(r, "app_time_quality")), "estimated");
	assert_string_equal(json_string_value(JGET(r, "app_time_reason")),
			    "MPI_Finalize not reached");

	bal = JGET(j, "balance");
	assert_int_equal(json_integer_value(JGET(bal, "ranks")), 4);
	assert_near(json_real_value(JGET(bal, "imbalance")), 1.6, 1e-9);
	assert_near(json_real_value(JGET(bal, "efficiency")), 0.625, 1e-9);
	assert_int_equal(json_integer_value(JGET(bal, "busiest_rank")), 3);
	assert_near(json_real_value(JGET(bal, "busiest_factor")), 1.6, 1e-9);
	assert_near(json_real_value(JGET(bal, "mpi_share")), 5.8 / 15.8, EPS);

	mpi = JGET(j, "mpi");
	assert_int_equal(json_array_size(mpi), 6);
	cs = json_array_get(mpi, 0);
	assert_string_equal(json_string_value(JGET(cs, "function")), "MPI_Allreduce");
	site = JGET(cs, "call_site");
	assert_string_equal(json_string_value(JGET(site, "file")), "solver.c");
	assert_int_equal(json_integer_value(JGET(site, "line")), 42);
	assert_string_equal(json_string_value(JGET(site, "function")), "compute");
	assert_string_equal(json_string_value(JGET(site, "module")), "app");
	assert_int_equal(json_integer_value(JGET(site, "offset")), 0x1100);
	assert_int_equal(json_integer_value(JGET(cs, "calls")), 400);
	assert_near(json_real_value(JGET(cs, "total_time")), 5.0, EPS);
	assert_near(json_real_value(JGET(cs, "mean_time")), 0.0125, EPS);
	assert_near(json_real_value(JGET(cs, "min_time")), 1e-6, EPS);
	assert_near(json_real_value(JGET(cs, "max_time")), 4e-3, EPS);
	assert_int_equal(json_integer_value(JGET(cs, "bytes")), 3200);
	assert_true(json_is_null(JGET(cs, "bytes_reason")));
	assert_near(json_real_value(JGET(cs, "cov")), 0.44721359549995793928, 1e-12);
	pr = JGET(cs, "per_rank");
	assert_int_equal(json_array_size(pr), 4);
	assert_int_equal(json_integer_value(JGET(json_array_get(pr, 3), "rank")), 3);
	assert_int_equal(json_integer_value(JGET(json_array_get(pr, 3), "calls")), 100);
	assert_near(json_real_value(JGET(json_array_get(pr, 3), "total_time")), 0.5, EPS);

	assert_true(json_is_false(JGET(cs, "lifetime")));
	cs = json_array_get(mpi, 1); /* in the JSON, marked */
	assert_string_equal(json_string_value(JGET(cs, "function")), "MPI_Init");
	assert_true(json_is_true(JGET(cs, "lifetime")));
	cs = json_array_get(mpi, 2);
	assert_string_equal(json_string_value(JGET(cs, "function")), "MPI_Alltoallv");
	assert_true(json_is_null(JGET(cs, "bytes")));
	assert_string_equal(json_string_value(JGET(cs, "bytes_reason")), "vector counts not read");
	assert_true(json_is_null(JGET(JGET(cs, "call_site"), "file")));
	assert_true(json_is_null(JGET(JGET(cs, "call_site"), "line")));
	cs = json_array_get(mpi, 5);
	assert_string_equal(json_string_value(JGET(cs, "function")), "MPI_Recv");
	/* one rank calls it: no COV at all (not a measured 1.00, not null) */
	assert_null(JGET(cs, "cov"));
	assert_string_equal(json_string_value(JGET(cs, "cov_not_applicable")), "one rank calls it");
	cs = json_array_get(mpi, 0);
	assert_true(json_is_null(JGET(cs, "cov_not_applicable")));
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

/* the ranks and MPI sections take node, module, function and reason names
 * from the pivot too: bytes that are not UTF-8 there are escaped */
static void test_summary_mpi_json_not_utf8(void **state)
{
	struct pivot *p = fx_build(tmpdir, "mpi-odd.sqlite");
	struct diagnosis *d;
	json_t *j, *back, *r, *cs;
	char *text;

	(void)state;
	assert_non_null(p);
	assert_int_equal(
	    sqlite3_exec(pivot_sqlite(p),
			 "UPDATE loci SET node = CAST(X'6e31ff' AS TEXT) WHERE node = 'n1';"
			 "UPDATE modules SET display_name = CAST(X'617070fe' AS TEXT);"
			 "UPDATE hotspots SET name = name || CAST(X'c3' AS TEXT);"
			 "UPDATE mpi_calls SET bytes_reason = CAST(X'72ff' AS TEXT)"
			 " WHERE bytes_reason IS NOT NULL",
			 NULL, NULL, NULL),
	    SQLITE_OK);
	d = diagnosis__new(p);
	assert_non_null(d);
	j = summary_json_of(d, p);
	assert_non_null(j);
	text = json_dumps(j, JSON_INDENT(2));
	assert_non_null(text);
	back = json_loads(text, 0, NULL);
	assert_non_null(back);
	r = json_array_get(JGET(back, "ranks"), 0);
	assert_string_equal(json_string_value(JGET(r, "node")), "n1\\xff");
	cs = json_array_get(JGET(back, "mpi"), 0);
	assert_string_equal(json_string_value(JGET(JGET(cs, "call_site"), "module")), "app\\xfe");
	assert_string_equal(json_string_value(JGET(JGET(cs, "call_site"), "function")),
			    "compute\\xc3");
	cs = json_array_get(JGET(back, "mpi"), 2);
	assert_string_equal(json_string_value(JGET(cs, "bytes_reason")), "r\\xff");
	json_decref(back);
	free(text);
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "summary") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_diagnosis_arithmetic),
	    cmocka_unit_test(test_diagnosis_empty),
	    cmocka_unit_test(test_summary_text),
	    cmocka_unit_test(test_summary_folds_beyond_ten),
	    cmocka_unit_test(test_summary_unavailable),
	    cmocka_unit_test(test_summary_no_samples),
	    cmocka_unit_test(test_summary_json),
	    cmocka_unit_test(test_summary_node_degradations),
	    cmocka_unit_test(test_summary_json_not_utf8),
	    cmocka_unit_test(test_summary_mpi_text),
	    cmocka_unit_test(test_summary_mpi_sites_whole),
	    cmocka_unit_test(test_summary_no_mpi),
	    cmocka_unit_test(test_summary_mpi_json),
	    cmocka_unit_test(test_summary_mpi_json_not_utf8),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
