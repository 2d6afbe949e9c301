/* Tests of analysis/derived and analysis/diagnostic on pivots built here
 * through the pivot API (a Batch stored, attributed, its Measurements
 * derived), with FLOP and DRAM samples as the pmu part stores them
 * (counters flop_dp, flop_sp, dram_bytes) and a Machine snapshot as the
 * manifest embeds it:
 *  - Quality propagation along a lineage (worst of the inputs, its reason,
 *    NAN is unavailable, never 0);
 *  - the Ceilings and cores read from the snapshot (quota, bad units);
 *  - a 2-rank Run with a launcher: each Hotspot classified (memory-,
 *    compute-, latency-bound, imbalance, infinite imbalance), the numbers
 *    of its placement, single precision against flops_sp, the floor;
 *  - an estimated Ceiling: what it makes estimated, and the summary's
 *    wording (estimated [n], the reason once, the Ceiling named);
 *  - estimated or unavailable Measurements carried along the lineage;
 *  - no PMU: every placement unavailable with the Degradation's message
 *    (else the default reason), the imbalance still classified;
 *  - imbalance applicability: one rank and one thread, processes of
 *    different programs, threads of one process, ranks of two programs. */
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
#include "analysis/diagnostic.h"
#include "report/summary.h"
#include "tests/unit/run_model_fixture.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/summary_fixture.h"
#include "userspace/pivot/pivot.h"

static char tmpdir[PATH_MAX];
static int pivot_serial;

#define MS 1000000ull /* one cpu-clock sample: 1 ms */
#define REL(x) (fabs(x) * 1e-9)

struct locus_spec {
	uint32_t tgid;
	int rank; /* -1: none */
	const char *comm;
	uint32_t tid; /* 0: tgid (the main thread) */
};

struct sample_spec {
	size_t hotspot, locus;
	const char *counter;
	uint64_t count, value;
};

static const char *const names[] = {"stream", "dgemm", "halo", "wait", "io", "tiny", "single"};
#define N_HOTSPOTS (sizeof(names) / sizeof(names[0]))

static int attribute(const struct pivot_module *m, const uint64_t *offsets, size_t n, void *arg)
{
	struct attributed_address aa[N_HOTSPOTS];
	size_t i;

	assert_true(n <= N_HOTSPOTS);
	memset(aa, 0, sizeof(aa));
	for (i = 0; i < n; i++) {
		aa[i].address = offsets[i];
		aa[i].level = RESOLUTION_FUNCTION;
		aa[i].function = (char *)names[offsets[i] / 0x100 - 1];
		aa[i].function_start = offsets[i];
	}
	return pivot_store_attribution(arg, m->id, aa, n, "done", NULL);
}

/* the Quality and reason of every dram_bytes Measurement, and FLOP ones
 * measured */
static void set_quality(struct pivot *p, const char *quality, const char *reason)
{
	sqlite3_stmt *st;

	assert_int_equal(sqlite3_exec(pivot_sqlite(p),
				      "UPDATE measurements SET quality = 'measured', reason = NULL"
				      " WHERE counter IN ('flop_dp', 'flop_sp')",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p),
					    "UPDATE measurements SET quality = ?, reason = ?"
					    " WHERE counter = 'dram_bytes'",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(st, 1, quality, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
}

/* Hotspot i at offset 0x100 × (i + 1), a one-frame Stack each */
static struct pivot *build(const struct locus_spec *ls, size_t nl, const struct sample_spec *ss,
			   size_t ns)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	Nunatak__Wire__Module mod = NUNATAK__WIRE__MODULE__INIT, *mods[1] = {&mod};
	Nunatak__Wire__Locus loci[8], *locus_ptrs[8];
	Nunatak__Wire__Stack stacks[N_HOTSPOTS], *stack_ptrs[N_HOTSPOTS];
	Nunatak__Wire__Address addrs[N_HOTSPOTS], *addr_ptrs[N_HOTSPOTS];
	Nunatak__Wire__SampleCount samples[64], *sample_ptrs[64];
	char path[PATH_MAX + 64];
	struct pivot *p;
	size_t i;

	assert_true(nl <= 8 && ns <= 64);
	snprintf(path, sizeof(path), "%s/p%d.sqlite", tmpdir, pivot_serial++);
	p = pivot__create(path);
	assert_non_null(p);
	b.run_id = "r";
	b.node = "n1";
	b.seq = 1;
	mod.identity = "00aa";
	mod.path = "/opt/app/solver";
	mod.display_name = "solver";
	mod.has_build_id = 1;
	for (i = 0; i < nl; i++) {
		Nunatak__Wire__Locus l = NUNATAK__WIRE__LOCUS__INIT;

		l.node = "n1";
		l.tgid = ls[i].tgid;
		l.tid = ls[i].tid ? ls[i].tid : ls[i].tgid;
		l.comm = (char *)ls[i].comm;
		l.has_rank = ls[i].rank >= 0;
		l.rank = ls[i].rank;
		loci[i] = l;
		locus_ptrs[i] = &loci[i];
	}
	for (i = 0; i < N_HOTSPOTS; i++) {
		Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;
		Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;

		a.offset = 0x100 * (i + 1);
		addrs[i] = a;
		addr_ptrs[i] = &addrs[i];
		s.n_frames = 1;
		s.frames = &addr_ptrs[i];
		stacks[i] = s;
		stack_ptrs[i] = &stacks[i];
	}
	for (i = 0; i < ns; i++) {
		Nunatak__Wire__SampleCount sc = NUNATAK__WIRE__SAMPLE_COUNT__INIT;

		sc.locus = (uint32_t)ss[i].locus;
		sc.stack = (uint32_t)ss[i].hotspot;
		sc.counter = (char *)ss[i].counter;
		sc.sample_count = ss[i].count;
		sc.value = ss[i].value;
		samples[i] = sc;
		sample_ptrs[i] = &samples[i];
	}
	b.n_modules = 1;
	b.modules = mods;
	b.n_loci = nl;
	b.loci = locus_ptrs;
	b.n_stacks = N_HOTSPOTS;
	b.stacks = stack_ptrs;
	b.n_samples = ns;
	b.samples = sample_ptrs;
	assert_int_equal(pivot_store_batch(p, &b), 0);
	assert_int_equal(pivot_for_each_module_to_attribute(p, attribute, p), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	/* each test sets the Quality of its inputs (the derivation may mark
	 * dram_bytes estimated: the pmu part's DRAM event is a lower bound) */
	set_quality(p, "measured", NULL);
	return p;
}

/* ranks 0 and 1, and mpirun (a launcher: left out of everything) */
static const struct locus_spec two_ranks[] = {
    {100, 0, "solver", 0}, {101, 1, "solver", 0}, {90, -1, "mpirun", 0}};

#define T(h, l, n)                                                                                 \
	{                                                                                          \
		h, l, "cpu-clock", n, (n)*MS                                                       \
	}
#define C(h, l, ctr, v)                                                                            \
	{                                                                                          \
		h, l, ctr, 1, v                                                                    \
	}

/* Per core (2 cores): flops_dp 4e9, flops_sp 8e9, dram 8e9 B/s, ridge 0.5 */
static const struct sample_spec ranked[] = {
    /* stream: I = 3.2e8 / 1.28e9 = 0.25, achieved 3.2e8 / 0.2 s = 1.6e9,
     * attainable 8e9 × 0.25 = 2e9, 0.8 of it: memory-bound */
    T(0, 0, 100), T(0, 1, 100), C(0, 0, "flop_dp", 160000000), C(0, 1, "flop_dp", 160000000),
    C(0, 0, "dram_bytes", 640000000), C(0, 1, "dram_bytes", 640000000),
    /* the launcher's: must count nowhere */
    T(0, 2, 50), C(0, 2, "flop_dp", 1000000000000), C(0, 2, "dram_bytes", 1),
    /* dgemm: I = 4.2e8 / 1e8 = 4.2, achieved 4.2e8 / 0.12 = 3.5e9 of 4e9 */
    T(1, 0, 60), T(1, 1, 60), C(1, 0, "flop_dp", 210000000), C(1, 1, "flop_dp", 210000000),
    C(1, 0, "dram_bytes", 50000000), C(1, 1, "dram_bytes", 50000000),
    /* halo: 90 / 30 → imbalance 3 */
    T(2, 0, 90), T(2, 1, 30), C(2, 0, "flop_dp", 1000000), C(2, 0, "dram_bytes", 1000000),
    /* wait: I = 1e6 / 1e8 = 0.01, attainable 8e7, achieved 1e7: 0.125 */
    T(3, 0, 50), T(3, 1, 50), C(3, 0, "flop_dp", 500000), C(3, 1, "flop_dp", 500000),
    C(3, 0, "dram_bytes", 50000000), C(3, 1, "dram_bytes", 50000000),
    /* io: rank 0 only → infinite imbalance */
    T(4, 0, 40), C(4, 0, "dram_bytes", 4000),
    /* tiny: under the floor */
    T(5, 0, 5),
    /* single: mostly sp → against flops_sp; I = 8.02e8 / 1e7 = 80.2 */
    T(6, 0, 50), T(6, 1, 50), C(6, 0, "flop_sp", 400000000), C(6, 1, "flop_sp", 400000000),
    C(6, 0, "flop_dp", 1000000), C(6, 1, "flop_dp", 1000000), C(6, 0, "dram_bytes", 10000000)};
#define N_RANKED (sizeof(ranked) / sizeof(ranked[0]))

static json_t *machine_of(const char *dram_quality, const char *dram_reason)
{
	json_t *m = json_pack(
	    "{s:{s:i, s:n}, s:[{s:s, s:f, s:s, s:s, s:n, s:s}, {s:s, s:f, s:s, s:s, s:n, s:s},"
	    " {s:s, s:f, s:s, s:s, s:s*, s:s}, {s:s, s:n, s:s, s:s, s:s, s:n}]}",
	    "allocation", "visible_cores", 2, "cpu_quota", "ceilings", "name", "flops_dp", "value",
	    8e9, "unit", "flop/s", "quality", "measured", "reason", "source", "calibration", "name",
	    "flops_sp", "value", 16e9, "unit", "flop/s", "quality", "measured", "reason", "source",
	    "calibration", "name", "dram_bandwidth", "value", 16e9, "unit", "B/s", "quality",
	    dram_quality, "reason", dram_reason, "source", "calibration", "name", "network_latency",
	    "value", "unit", "s", "quality", "unavailable", "reason", "not measured", "source");

	assert_non_null(m);
	return m;
}

static const struct hotspot_share *find(const struct diagnosis *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->n_all; i++)
		if (!strcmp(d->hotspots[i].name, name))
			return &d->hotspots[i];
	fail_msg("no Hotspot %s", name);
	return NULL;
}

static const struct diagnostic *diag(const struct diagnosis *d, const char *name)
{
	const struct hotspot_share *h = find(d, name);

	assert_non_null(h->diagnostic);
	return h->diagnostic;
}

static void test_derived_lineage(void **state)
{
	struct derived flop, bytes, ceiling, cores, intensity, attainable, fraction, none;
	const struct derived *in[4];
	enum quality q;

	(void)state;
	derived_input(&flop, "flop", 100, "flop", QUALITY_MEASURED, NULL);
	derived_input(&bytes, "dram_bytes", 400, "B", QUALITY_MEASURED, NULL);
	derived_input(&ceiling, "dram_bandwidth", 1e10, "B/s", QUALITY_ESTIMATED,
		      "dram_bandwidth: spread 14 %");
	derived_input(&cores, "cores", 2, "cores", QUALITY_MEASURED, NULL);
	in[0] = &flop;
	in[1] = &bytes;
	derived_combine(&intensity, "dram_intensity", "flop/B", "flop / dram_bytes", in, 2, 0.25,
			NULL);
	assert_int_equal(intensity.quality, QUALITY_MEASURED);
	assert_string_equal(intensity.reason, "");
	assert_int_equal(intensity.n_lineage, 2);
	assert_string_equal(intensity.lineage[0], "flop");
	assert_string_equal(intensity.lineage[1], "dram_bytes");
	/* estimated two steps up: the leaf's reason travels */
	in[0] = &intensity;
	in[1] = &ceiling;
	in[2] = &cores;
	derived_combine(&attainable, "attainable", "flop/s", "f", in, 3, 1.25e9, NULL);
	assert_int_equal(attainable.quality, QUALITY_ESTIMATED);
	assert_string_equal(attainable.reason, "dram_bandwidth: spread 14 %");
	assert_near(attainable.value, 1.25e9, 0);
	in[0] = &intensity;
	in[1] = &attainable;
	derived_combine(&fraction, "envelope_fraction", "fraction", "f", in, 2, 0.5, NULL);
	assert_int_equal(fraction.quality, QUALITY_ESTIMATED);
	assert_string_equal(fraction.reason, "dram_bandwidth: spread 14 %");
	/* unavailable beats estimated, whatever the order; the value is NAN
	 * even though the caller computed one */
	derived_input(&none, "flops_dp", NAN, "flop/s", QUALITY_MEASURED, "not calibrated");
	assert_int_equal(none.quality, QUALITY_UNAVAILABLE);
	in[0] = &fraction;
	in[1] = &none;
	derived_combine(&attainable, "x", "u", "f", in, 2, 42, NULL);
	assert_int_equal(attainable.quality, QUALITY_UNAVAILABLE);
	assert_true(isnan(attainable.value));
	assert_string_equal(attainable.reason, "not calibrated");
	/* 0 / 0 of available inputs: unavailable with the caller's reason */
	in[0] = &flop;
	derived_combine(&attainable, "x", "u", "f", in, 1, NAN, "nothing sampled");
	assert_int_equal(attainable.quality, QUALITY_UNAVAILABLE);
	assert_string_equal(attainable.reason, "nothing sampled");
	/* an estimated input without a reason still says one */
	derived_input(&none, "x", 1, "u", QUALITY_ESTIMATED, NULL);
	assert_string_equal(none.reason, "no reason given");
	assert_int_equal(quality_parse("estimated", &q), 0);
	assert_int_equal(q, QUALITY_ESTIMATED);
	assert_int_equal(quality_parse("bogus", &q), -EINVAL);
	assert_int_equal(quality_parse(NULL, &q), -EINVAL);
	assert_int_equal(quality_worst(QUALITY_ESTIMATED, QUALITY_MEASURED), QUALITY_ESTIMATED);
}

static void test_machine_read(void **state)
{
	struct diagnostic_run run;
	json_t *m = machine_of("measured", NULL);

	(void)state;
	diagnostic_run_read_machine(&run, m);
	assert_int_equal(run.flops_dp.quality, QUALITY_MEASURED);
	assert_near(run.flops_dp.value, 8e9, 0);
	assert_near(run.cores.value, 2, 0);
	/* a quota binds: ceil(1.5) of 4 visible cores */
	json_object_set_new(json_object_get(m, "allocation"), "visible_cores", json_integer(4));
	json_object_set_new(json_object_get(m, "allocation"), "cpu_quota", json_real(1.5));
	diagnostic_run_read_machine(&run, m);
	assert_near(run.cores.value, 2, 0);
	json_object_set_new(json_object_get(m, "allocation"), "cpu_quota", json_real(8));
	diagnostic_run_read_machine(&run, m);
	assert_near(run.cores.value, 4, 0);
	/* a wrong unit or Quality is not taken */
	json_object_set_new(json_array_get(json_object_get(m, "ceilings"), 0), "unit",
			    json_string("Gflop/s"));
	json_object_set_new(json_array_get(json_object_get(m, "ceilings"), 1), "quality",
			    json_string("sure"));
	diagnostic_run_read_machine(&run, m);
	assert_int_equal(run.flops_dp.quality, QUALITY_UNAVAILABLE);
	assert_string_equal(run.flops_dp.reason, "flops_dp: unit 'Gflop/s', expected 'flop/s'");
	assert_int_equal(run.flops_sp.quality, QUALITY_UNAVAILABLE);
	assert_string_equal(run.flops_sp.reason, "flops_sp: quality 'sure' is not a Quality");
	json_object_del(m, "allocation");
	json_array_remove(json_object_get(m, "ceilings"), 2);
	diagnostic_run_read_machine(&run, m);
	assert_int_equal(run.cores.quality, QUALITY_UNAVAILABLE);
	assert_string_equal(run.dram_bandwidth.reason,
			    "dram_bandwidth: not in the Run's Machine snapshot");
	diagnostic_run_read_machine(&run, NULL);
	assert_string_equal(run.flops_dp.reason, "flops_dp: the Run has no Machine snapshot");
	json_decref(m);
}

static void test_classified(void **state)
{
	struct pivot *p = build(two_ranks, 3, ranked, N_RANKED);
	json_t *m = machine_of("measured", NULL);
	struct diagnosis *d = diagnosis__new_on(p, m);
	const struct diagnostic *g;

	(void)state;
	assert_non_null(d);
	json_decref(m); /* borrowed during the call only */
	assert_string_equal(d->diagnostic_run->loci, "ranks");
	assert_int_equal(d->diagnostic_run->n_ranks, 2);
	g = diag(d, "stream");
	assert_near(g->dram_intensity.value, 0.25, REL(0.25));
	assert_near(g->achieved.value, 1.6e9, REL(1.6e9));
	assert_near(g->attainable.value, 2e9, REL(2e9));
	assert_near(g->envelope_fraction.value, 0.8, REL(0.8));
	assert_near(g->ridge.value, 0.5, REL(0.5));
	assert_near(g->imbalance.value, 1, 0); /* the launcher's 50 left out */
	assert_int_equal(g->envelope_fraction.quality, QUALITY_MEASURED);
	assert_string_equal(g->peak, "flops_dp");
	assert_string_equal(g->classification, "memory-bound");
	assert_string_equal(g->classification_reason,
			    "DRAM intensity 0.25 flop/B below the ridge (0.5 flop/B)");
	g = diag(d, "dgemm");
	assert_near(g->envelope_fraction.value, 3.5e9 / 4e9, 1e-9);
	assert_string_equal(g->classification, "compute-bound");
	g = diag(d, "halo");
	assert_near(g->imbalance.value, 3, 1e-12);
	assert_string_equal(g->imbalance_over, "ranks");
	assert_string_equal(g->classification, "imbalance");
	assert_string_equal(g->classification_reason,
			    "its time varies 3.00x across the 2 ranks (max / min >= 2)");
	g = diag(d, "wait");
	assert_near(g->envelope_fraction.value, 0.125, 1e-9);
	assert_string_equal(g->classification, "latency-bound");
	assert_string_equal(g->classification_reason, "12.5 % of attainable, below 50 %");
	g = diag(d, "io");
	assert_true(isinf(g->imbalance.value));
	assert_int_equal(g->imbalance.quality, QUALITY_MEASURED);
	assert_string_equal(g->imbalance.reason, "rank 1 ran none of it: max / min is infinite");
	assert_string_equal(g->classification, "imbalance");
	/* FLOP counters sampled in the Run, none here: 0 FLOP, measured */
	assert_near(g->dram_intensity.value, 0, 0);
	assert_int_equal(g->dram_intensity.quality, QUALITY_MEASURED);
	g = diag(d, "single");
	assert_string_equal(g->peak, "flops_sp");
	assert_near(g->attainable.value, 8e9, REL(8e9));
	assert_near(g->achieved.value, 8.02e8 / 0.1, REL(8.02e9));
	assert_string_equal(g->classification, "compute-bound");
	assert_string_equal(g->attainable.lineage[1], "flops_sp");
	assert_null(find(d, "tiny")->diagnostic); /* under the floor */
	diagnosis__free(d);
	pivot__free(p);
}

static void test_estimated_ceiling(void **state)
{
	struct pivot *p = build(two_ranks, 3, ranked, N_RANKED);
	json_t *m = machine_of("estimated", "spread 14 % between repetitions");
	struct diagnosis *d = diagnosis__new_on(p, m);
	const struct diagnostic *g = diag(d, "stream");
	char *text;

	(void)state;
	json_decref(m);
	assert_int_equal(g->dram_intensity.quality, QUALITY_MEASURED);
	assert_int_equal(g->achieved.quality, QUALITY_MEASURED);
	assert_int_equal(g->attainable.quality, QUALITY_ESTIMATED);
	assert_int_equal(g->envelope_fraction.quality, QUALITY_ESTIMATED);
	assert_string_equal(g->envelope_fraction.reason,
			    "dram_bandwidth: spread 14 % between repetitions");
	assert_string_equal(g->classification, "memory-bound");
	assert_string_equal(g->classification_reason,
			    "DRAM intensity 0.25 flop/B below the ridge (0.5 flop/B); estimated: "
			    "dram_bandwidth: spread 14 % between repetitions");
	text = print_to_string(d, p);
	assert_contains(text,
			"  stream: share 29.2%, 0.200 s, imbalance 1.00 over 2 ranks\n"
			"      DRAM intensity 0.25 flop/B, achieved 1.6 Gflop/s\n"
			"      attainable against flops_dp 2 Gflop/s (estimated [1]), envelope"
			" fraction 80.0% (estimated [1])\n"
			"      class memory-bound: DRAM intensity 0.25 flop/B below the ridge"
			" (0.5 flop/B); estimated: dram_bandwidth: spread 14 % between"
			" repetitions\n");
	assert_contains(text, "  io: share 5.8%, 0.040 s, imbalance infinite [2] over 2 ranks\n");
	assert_null(strstr(text, "no roofline placement"));
	assert_null(strstr(text, "not applicable"));
	assert_contains(text, "  [1] dram_bandwidth: spread 14 % between repetitions\n"
			      "  [2] rank 1 ran none of it: max / min is infinite\n");
	/* said once, however many Hotspots it touches */
	assert_null(strstr(strstr(text, "  [1] dram_bandwidth") + 1, "  [1] dram_bandwidth"));
	/* io: no FLOP, some DRAM bytes: a measured 0, then no fraction of 0 */
	assert_contains(text, "      DRAM intensity 0 flop/B, achieved 0 flop/s\n");
	assert_contains(text,
			"  [3] no FLOP was sampled in it: attainable is 0 at DRAM intensity 0\n");
	assert_null(strstr(text, "[4]"));
	assert_contains(text, "  - estimated Ceiling dram_bandwidth: spread 14 % between"
			      " repetitions\n");
	assert_null(strstr(text, "Ceiling flops_dp"));
	/* the class column */
	assert_contains(text, "  solver  memory-bound   stream\n");
	assert_contains(text, "  solver  latency-bound  wait\n");
	free(text);
	diagnosis__free(d);
	pivot__free(p);
}

/* DRAM bytes estimated (a lower bound): the intensity and everything
 * placed from it are estimated with that reason, the achieved rate not */
static void test_estimated_measurement(void **state)
{
	static const char why[] = "cache lines filled from DRAM x 64 B: a lower bound";
	struct pivot *p = build(two_ranks, 3, ranked, N_RANKED);
	json_t *m = machine_of("measured", NULL);
	struct diagnosis *d;
	const struct diagnostic *g;

	(void)state;
	set_quality(p, "estimated", why);
	d = diagnosis__new_on(p, m);
	g = diag(d, "stream");
	assert_int_equal(g->achieved.quality, QUALITY_MEASURED);
	assert_int_equal(g->dram_intensity.quality, QUALITY_ESTIMATED);
	assert_string_equal(g->dram_intensity.reason, why);
	assert_int_equal(g->attainable.quality, QUALITY_ESTIMATED);
	assert_int_equal(g->envelope_fraction.quality, QUALITY_ESTIMATED);
	assert_string_equal(g->envelope_fraction.reason, why);
	assert_int_equal(g->share.quality, QUALITY_MEASURED);
	assert_near(g->envelope_fraction.value, 0.8, REL(0.8)); /* the value is kept */
	assert_string_equal(g->classification_reason,
			    "DRAM intensity 0.25 flop/B below the ridge (0.5 flop/B); estimated: "
			    "cache lines filled from DRAM x 64 B: a lower bound");
	diagnosis__free(d);
	/* one unavailable Measurement (no value) makes the sum unavailable */
	assert_int_equal(
	    sqlite3_exec(pivot_sqlite(p),
			 "UPDATE measurements SET value = NULL, quality = 'unavailable',"
			 " reason = 'counter multiplexed out' WHERE counter = 'flop_dp'"
			 " AND hotspot = (SELECT id FROM hotspots WHERE name = 'dgemm')"
			 " AND locus = (SELECT id FROM loci WHERE tgid = 101)",
			 NULL, NULL, NULL),
	    SQLITE_OK);
	d = diagnosis__new_on(p, m);
	g = diag(d, "dgemm");
	assert_int_equal(g->achieved.quality, QUALITY_UNAVAILABLE);
	assert_string_equal(g->achieved.reason, "counter multiplexed out");
	assert_true(isnan(g->achieved.value));
	assert_null(g->classification);
	assert_int_equal(diag(d, "stream")->achieved.quality, QUALITY_MEASURED);
	diagnosis__free(d);
	json_decref(m);
	pivot__free(p);
}

/* the ranked Run without its FLOP and DRAM samples */
static struct pivot *build_time_only(void)
{
	struct sample_spec time_only[N_RANKED];
	size_t i, n = 0;

	for (i = 0; i < N_RANKED; i++)
		if (!strcmp(ranked[i].counter, "cpu-clock"))
			time_only[n++] = ranked[i];
	return build(two_ranks, 3, time_only, n);
}

static void test_no_pmu(void **state)
{
	static const char message[] = "no PMU: perf_event_open(cycles) is not supported here";
	struct pivot *p = build_time_only();
	json_t *m = machine_of("measured", NULL), *j, *g;
	struct diagnosis *d = diagnosis__new_on(p, m);
	const struct diagnostic *x;
	char *text;

	(void)state;
	x = diag(d, "stream");
	assert_int_equal(x->dram_intensity.quality, QUALITY_UNAVAILABLE);
	assert_true(isnan(x->envelope_fraction.value));
	assert_string_equal(x->envelope_fraction.reason, DIAGNOSTIC_NO_COUNTER);
	assert_null(x->classification);
	assert_string_equal(diag(d, "halo")->classification, "imbalance"); /* needs no placement */
	diagnosis__free(d);

	assert_int_equal(
	    pivot_add_degradation(p, DIAGNOSTIC_COUNTERS_DEGRADATION, message, "run on bare metal"),
	    0);
	d = diagnosis__new_on(p, m);
	x = diag(d, "dgemm");
	assert_string_equal(x->achieved.reason, message);
	assert_string_equal(x->classification_reason,
			    "no placement: no PMU: perf_event_open(cycles)"
			    " is not supported here");
	text = print_to_string(d, p);
	/* the Run's reason once, under the blocks; no per-Hotspot placement */
	assert_contains(text, "  dgemm: share 17.5%, 0.120 s, imbalance 1.00 over 2 ranks\n"
			      "  halo: share 17.5%, 0.120 s, imbalance 3.00 over 2 ranks\n"
			      "      class imbalance: its time varies 3.00x across the 2 ranks"
			      " (max / min >= 2)\n");
	/* the cause's first clause and the Degradation's name: its whole
	 * message and remedy are printed once, with the Degradations */
	assert_contains(text, "  no roofline placement in this Run, so no roofline class: no PMU"
			      " (degradation hardware-counters-unavailable below)\n");
	assert_null(strstr(strstr(text, "perf_event_open(cycles)") + 1, "perf_event_open(cycles)"));
	assert_null(strstr(text, "placement unavailable"));
	assert_null(strstr(text, "] no PMU"));
	assert_null(strstr(strstr(text, "no roofline placement") + 1, "no roofline placement"));
	assert_null(strstr(text, "roofline placements:"));
	assert_contains(text, "  - degradation hardware-counters-unavailable: no PMU:");
	assert_null(strstr(text, "0 flop"));
	assert_null(strstr(text, "0.0%,"));
	free(text);
	j = summary_json_of(d, p);
	g = json_object_get(json_array_get(json_object_get(j, "hotspots"), 0), "diagnostic");
	assert_true(json_is_null(json_object_get(json_object_get(g, "achieved"), "value")));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(g, "achieved"), "quality")),
	    "unavailable");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(g, "achieved"), "reason")), message);
	json_decref(j);
	json_decref(m);
	diagnosis__free(d);
	pivot__free(p);
}

/* FLOP sampled, DRAM not: the achieved rate stands, the placement not */
static void test_no_dram_counter(void **state)
{
	struct sample_spec no_dram[N_RANKED];
	struct pivot *p;
	struct diagnosis *d;
	const struct diagnostic *g;
	json_t *m = machine_of("measured", NULL);
	size_t i, n = 0;
	char *text;

	(void)state;
	for (i = 0; i < N_RANKED; i++)
		if (strcmp(ranked[i].counter, "dram_bytes") && strcmp(ranked[i].counter, "flop_sp"))
			no_dram[n++] = ranked[i];
	p = build(two_ranks, 3, no_dram, n);
	d = diagnosis__new_on(p, m);
	g = diag(d, "stream");
	assert_int_equal(g->achieved.quality, QUALITY_MEASURED);
	assert_near(g->achieved.value, 1.6e9, REL(1.6e9));
	assert_int_equal(g->achieved.n_lineage, 2); /* flop (dp only here), seconds */
	assert_string_equal(g->dram_intensity.reason,
			    "no dram_bytes counter was sampled in this Run");
	assert_string_equal(g->attainable.reason, "no dram_bytes counter was sampled in this Run");
	assert_null(g->classification);
	text = print_to_string(d, p);
	/* the measured rate under each Hotspot, the Run's reason once */
	assert_contains(text, "  stream: share 29.2%, 0.200 s, imbalance 1.00 over 2 ranks\n"
			      "      achieved 1.6 Gflop/s\n");
	assert_contains(text, "  no roofline placement in this Run, so no roofline class: no DRAM"
			      " counter was sampled in this Run\n");
	assert_null(strstr(text, "unavailable ["));
	assert_string_equal(d->diagnostic_run->no_placement,
			    "no DRAM counter was sampled in this Run");
	free(text);
	json_decref(m);
	diagnosis__free(d);
	pivot__free(p);
}

/* the key's absence and the reason in the summary's JSON */
static void assert_json_not_applicable(const struct diagnosis *d, struct pivot *p, size_t i,
				       const char *why)
{
	json_t *j = summary_json_of(d, p);
	json_t *g =
	    json_object_get(json_array_get(json_object_get(j, "hotspots"), i), "diagnostic");

	assert_non_null(g);
	assert_null(json_object_get(g, "imbalance"));
	assert_string_equal(json_string_value(json_object_get(g, "imbalance_not_applicable")), why);
	assert_true(json_is_null(json_object_get(g, "imbalance_over")));
	json_decref(j);
}

/* imbalance compares ranks of one program, or threads of one process:
 * anything else is not applicable, said once, never a value */
static void test_imbalance_applicability(void **state)
{
	static const struct locus_spec one_rank[] = {{100, 0, "solver", 0}};
	static const struct locus_spec procs[] = {{100, -1, "cc1", 0}, {101, -1, "as", 0}};
	static const struct locus_spec threads[] = {{100, -1, "omp", 0}, {100, -1, "omp", 102}};
	static const struct locus_spec mpmd[] = {{100, 0, "ocean", 0}, {101, 1, "atmos", 0}};
	static const struct sample_spec s1[] = {T(0, 0, 40)};
	static const struct sample_spec s2[] = {T(0, 0, 40), T(0, 1, 10), T(1, 0, 40)};
	struct pivot *p = build(one_rank, 1, s1, 1);
	struct diagnosis *d = diagnosis__new(p);
	const struct diagnostic *g;
	json_t *j;
	char *text;

	(void)state;
	/* one rank, one thread */
	g = diag(d, "stream");
	assert_string_equal(d->diagnostic_run->loci, "threads");
	assert_string_equal(g->imbalance_not_applicable, DIAGNOSTIC_NA_ONE_THREAD);
	assert_null(g->imbalance_over);
	assert_null(g->classification);
	assert_string_equal(g->attainable.reason, DIAGNOSTIC_NO_COUNTER);
	text = print_to_string(d, p);
	assert_contains(
	    text,
	    "  stream: share 100.0%, 0.040 s\n"
	    "  no roofline placement in this Run, so no roofline class: " DIAGNOSTIC_NO_COUNTER
	    "\n  imbalance not applicable: " DIAGNOSTIC_NA_ONE_THREAD "\n");
	assert_null(strstr(text, "imbalance unavailable"));
	free(text);
	assert_json_not_applicable(d, p, 0, DIAGNOSTIC_NA_ONE_THREAD);
	diagnosis__free(d);
	pivot__free(p);

	/* processes of different programs (make's cc1 and as) */
	p = build(procs, 2, s2, 3);
	d = diagnosis__new(p);
	g = diag(d, "stream");
	assert_string_equal(g->imbalance_not_applicable, DIAGNOSTIC_NA_PROCESSES);
	assert_true(isnan(g->imbalance.value));
	assert_null(g->classification); /* 40 / 10 would have been "imbalance" */
	assert_string_equal(diag(d, "dgemm")->imbalance_not_applicable, DIAGNOSTIC_NA_ONE_THREAD);
	text = print_to_string(d, p);
	assert_contains(text,
			"  imbalance not applicable to dgemm: " DIAGNOSTIC_NA_ONE_THREAD "\n"
			"  imbalance not applicable to stream: " DIAGNOSTIC_NA_PROCESSES "\n");
	assert_null(strstr(text, "  solver  imbalance"));
	free(text);
	j = summary_json_of(d, p);
	assert_true(json_is_null(
	    json_object_get(json_object_get(j, "diagnostic_run"), "imbalance_not_applicable")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "diagnostic_run"),
							      "imbalance_over")),
			    "threads");
	json_decref(j);
	diagnosis__free(d);
	pivot__free(p);

	/* two threads of one process: compared */
	p = build(threads, 2, s2, 3);
	d = diagnosis__new(p);
	g = diag(d, "stream");
	assert_null(g->imbalance_not_applicable);
	assert_string_equal(g->imbalance_over, "threads");
	assert_int_equal(g->n_loci, 2);
	assert_near(g->imbalance.value, 4, 1e-12);
	assert_string_equal(g->classification, "imbalance");
	assert_string_equal(g->classification_reason,
			    "its time varies 4.00x across the 2 threads (max / min >= 2)");
	text = print_to_string(d, p);
	assert_contains(text, "  stream: share 55.6%, 0.050 s, imbalance 4.00 over 2 threads\n"
			      "      class imbalance:");
	free(text);
	diagnosis__free(d);
	pivot__free(p);

	/* two ranks of two programs (MPMD): not applicable for the whole Run */
	p = build(mpmd, 2, s2, 3);
	d = diagnosis__new(p);
	assert_null(d->diagnostic_run->loci);
	assert_string_equal(d->diagnostic_run->imbalance_not_applicable,
			    DIAGNOSTIC_NA_RANK_PROGRAMS);
	assert_null(diag(d, "stream")->classification);
	text = print_to_string(d, p);
	assert_contains(text, "  imbalance not applicable: " DIAGNOSTIC_NA_RANK_PROGRAMS "\n");
	free(text);
	assert_json_not_applicable(d, p, 0, DIAGNOSTIC_NA_RANK_PROGRAMS);
	diagnosis__free(d);
	pivot__free(p);
}

/* A ratio of 2 or more from counts within the sampling noise (a - b <=
 * 3 sqrt(a + b)) is estimated and makes no class; the same ratio from
 * counts ten times larger is the imbalance class. */
static void test_imbalance_noise(void **state)
{
	static const struct locus_spec threads[] = {{100, -1, "omp", 0}, {100, -1, "omp", 102}};
	static const struct sample_spec few[] = {T(0, 0, 22), T(0, 1, 10)}; /* 12 <= 16.97 */
	static const struct sample_spec many[] = {T(0, 0, 220), T(0, 1, 100)};
	const struct locus_spec *loci[] = {threads, two_ranks};
	const char *over[] = {"threads", "ranks"};
	const struct diagnostic *g;
	struct diagnosis *d;
	struct pivot *p;
	char *text;
	size_t k;

	(void)state;
	for (k = 0; k < 2; k++) {
		p = build(loci[k], 2, few, 2);
		d = diagnosis__new(p);
		g = diag(d, "stream");
		assert_string_equal(g->imbalance_over, over[k]);
		assert_near(g->imbalance.value, 2.2, 1e-12);
		assert_int_equal(g->imbalance.quality, QUALITY_ESTIMATED);
		assert_non_null(strstr(g->imbalance.reason, "differ by no more than 3 sqrt(a + b)"));
		assert_null(g->classification);
		text = print_to_string(d, p);
		assert_contains(text, "imbalance 2.20 (estimated [1]) over 2 ");
		assert_contains(text, "sampling noise: no class from it\n");
		assert_null(strstr(text, "class imbalance"));
		free(text);
		diagnosis__free(d);
		pivot__free(p);

		p = build(loci[k], 2, many, 2);
		d = diagnosis__new(p);
		g = diag(d, "stream");
		assert_near(g->imbalance.value, 2.2, 1e-12);
		assert_int_equal(g->imbalance.quality, QUALITY_MEASURED);
		assert_string_equal(g->classification, "imbalance");
		diagnosis__free(d);
		pivot__free(p);
	}
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "diagnostic") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_derived_lineage),
	    cmocka_unit_test(test_machine_read),
	    cmocka_unit_test(test_classified),
	    cmocka_unit_test(test_estimated_ceiling),
	    cmocka_unit_test(test_estimated_measurement),
	    cmocka_unit_test(test_no_pmu),
	    cmocka_unit_test(test_no_dram_counter),
	    cmocka_unit_test(test_imbalance_applicability),
	    cmocka_unit_test(test_imbalance_noise),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
