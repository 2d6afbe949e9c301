/* diagnostic — share, imbalance, roofline placement and class of each
 * Hotspot above the floor, from the pivot and the Machine snapshot. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "analysis/diagnostic.h"
#include "analysis/hotspot_loci.h"
#include "analysis/roofline.h"
#include "userspace/pivot/pivot.h"

/* the counters read per process: the diagnosis' time counter first */
#define TIME_COUNTER 0
#define COUNTER_OF(c) ((size_t)(c) + 1)

static const char *const counter_names[DIAGNOSTIC_N_COUNTERS] = {"flop_dp", "flop_sp",
								 "dram_bytes"};
static const char *const counter_units[DIAGNOSTIC_N_COUNTERS] = {"flop", "flop", "B"};

/* the rows of one Hotspot: rows[0 .. n) */
struct hotspot_rows {
	const struct hotspot_locus_row *rows;
	size_t n;
};

static int by_rank(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* the ranks sampled in the Run (time rows of the application's processes):
 * sorted, unique, in *ranks (malloc'ed). 0 or -ENOMEM. */
static int run_ranks(const struct hotspot_loci *hl, int **ranks, size_t *n)
{
	size_t i, k = 0;
	int *r;

	*ranks = NULL;
	*n = 0;
	r = calloc(hl->n ? hl->n : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < hl->n; i++)
		if (hl->rows[i].counter == TIME_COUNTER && !hl->rows[i].launcher &&
		    hl->rows[i].rank >= 0)
			r[k++] = hl->rows[i].rank;
	if (k)
		qsort(r, k, sizeof(*r), by_rank);
	for (i = 0, *n = 0; i < k; i++)
		if (!*n || r[*n - 1] != r[i])
			r[(*n)++] = r[i];
	*ranks = r;
	return 0;
}

static int find_degradation(const char *name, const char *message, const char *remedy, void *ctx)
{
	struct diagnostic_run *run = ctx;

	(void)remedy;
	if (strcmp(name, DIAGNOSTIC_COUNTERS_DEGRADATION))
		return 0;
	snprintf(run->no_counter_reason, sizeof(run->no_counter_reason), "%s", message);
	run->reason_is_degradation = 1;
	return 1;
}

/* which counters the Run sampled; why the others are missing when the Run
 * says it (its Degradation) or none was sampled */
static int run_counters(struct diagnostic_run *run, const struct hotspot_loci *hl, struct pivot *p)
{
	size_t i, c, any = 0;
	int err;

	run->no_counter_reason[0] = '\0';
	for (i = 0; i < hl->n; i++)
		for (c = 0; c < DIAGNOSTIC_N_COUNTERS; c++)
			if (hl->rows[i].counter == COUNTER_OF(c) && !run->sampled[c]) {
				run->sampled[c] = 1;
				any++;
			}
	if (any == DIAGNOSTIC_N_COUNTERS)
		return 0;
	err = p ? pivot_for_each_degradation(p, find_degradation, run) : 0;
	if (err < 0)
		return err;
	if (!err && !any)
		snprintf(run->no_counter_reason, sizeof(run->no_counter_reason), "%s",
			 DIAGNOSTIC_NO_COUNTER);
	return 0;
}

/* which Loci the Run's imbalance compares: two or more ranks of one
 * program, else (one rank or none) the threads of one process, per
 * Hotspot */
static int run_imbalance_loci(struct diagnostic_run *run, struct pivot *p)
{
	size_t programs = 1;
	int err;

	if (run->n_ranks < 2) {
		run->loci = "threads";
		return 0;
	}
	if (p) {
		err = hotspot_loci_rank_programs(p, &programs);
		if (err)
			return err;
	}
	if (programs > 1)
		run->imbalance_not_applicable = DIAGNOSTIC_NA_RANK_PROGRAMS;
	else
		run->loci = "ranks";
	return 0;
}

/* a placement needs FLOP (either precision) and DRAM bytes: without either
 * counter in the Run, no Hotspot is placed, for one reason */
static void run_no_placement(struct diagnostic_run *run)
{
	int no_flop = !run->sampled[DIAGNOSTIC_FLOP_DP] && !run->sampled[DIAGNOSTIC_FLOP_SP];
	size_t len = sizeof(run->no_placement);

	run->no_placement[0] = '\0';
	if (!no_flop && run->sampled[DIAGNOSTIC_DRAM_BYTES])
		return;
	if (run->no_counter_reason[0])
		snprintf(run->no_placement, len, "%s", run->no_counter_reason);
	else
		snprintf(run->no_placement, len, "no %s counter was sampled in this Run",
			 no_flop ? "FLOP" : "DRAM");
}

static void share_of(struct diagnostic *g, const struct diagnosis *d, const struct hotspot_share *h)
{
	int cycles = strcmp(d->counter, "cpu-clock") != 0;
	const char *unit = cycles ? "cycles" : "ns";
	struct derived part, total;
	const struct derived *in[] = {&part, &total};

	derived_input(&part, cycles ? "hotspot cycles" : "hotspot time", h->value, unit,
		      QUALITY_MEASURED, NULL);
	derived_input(&total, cycles ? "sampled cycles" : "sampled time", d->total_value, unit,
		      QUALITY_MEASURED, NULL);
	derived_combine(&g->share, "share", "fraction",
			cycles ? "hotspot cycles / sampled cycles" : "hotspot time / sampled time",
			in, 2, h->share, "nothing was sampled");
}

/* The extremes compared: the Hotspot's time and samples on its busiest
 * and on its least busy Locus. */
struct imbalance_extremes {
	double max, min; /* time */
	uint64_t max_samples, min_samples;
};

static void extremes_add(struct imbalance_extremes *x, double value, uint64_t samples)
{
	if (value > x->max || (value == x->max && samples > x->max_samples)) {
		x->max = value;
		x->max_samples = samples;
	}
	if (value < x->min) {
		x->min = value;
		x->min_samples = samples;
	}
}

/* max / min over the Loci of the Hotspot's time, into g->imbalance. Two
 * Loci doing the same work differ by sampling noise alone: a count a and a
 * count b differ by about sqrt(a + b) (Poisson). A ratio that would make
 * the imbalance class (>= ROOFLINE_IMBALANCE_MIN) from counts that differ
 * by no more than IMBALANCE_NOISE_SIGMAS times that (3 threads of 47
 * samples in all read 2.3x on a balanced loop) is estimated, with why, and
 * gives no class; below the class' bound the ratio claims nothing and
 * stays measured, as a share does. */
#define IMBALANCE_NOISE_SIGMAS 3.0
static void imbalance_set(struct diagnostic *g, size_t n, const struct imbalance_extremes *x,
			  const char *unit, const char *missing)
{
	int ranks = !strcmp(g->imbalance_over, "ranks");
	struct derived per_locus;
	const struct derived *in[] = {&per_locus};
	char note[DERIVED_REASON_MAX] = "", noise[DERIVED_REASON_MAX] = "";
	double a = (double)x->max_samples, b = (double)x->min_samples;

	g->n_loci = n;
	/* one wording for every Hotspot: the summary says a shared reason once */
	if (!(x->max < ROOFLINE_IMBALANCE_MIN * x->min) &&
	    a - b <= IMBALANCE_NOISE_SIGMAS * sqrt(a + b))
		snprintf(noise, sizeof(noise),
			 "the samples of its busiest and least busy %s (a, b) differ by no more "
			 "than %.0f sqrt(a + b), sampling noise: no class from it",
			 ranks ? "rank" : "thread", IMBALANCE_NOISE_SIGMAS);
	derived_input(&per_locus, ranks ? "time per rank" : "time per thread", x->max, unit,
		      noise[0] ? QUALITY_ESTIMATED : QUALITY_MEASURED, noise[0] ? noise : NULL);
	if (missing)
		snprintf(note, sizeof(note), "%s ran none of it: max / min is infinite", missing);
	derived_combine(&g->imbalance, "imbalance", "ratio",
			ranks ? "max / min of the Hotspot's time over the ranks"
			      : "max / min of the Hotspot's time over the threads of its process",
			in, 1, x->min > 0 ? x->max / x->min : INFINITY, note);
}

/* no imbalance: not a measurement, so no class from it */
static void imbalance_not_applicable(struct diagnostic *g, const char *why)
{
	g->imbalance_over = NULL;
	g->imbalance_not_applicable = why;
	g->n_loci = 0;
	derived_input(&g->imbalance, "imbalance", NAN, "ratio", QUALITY_UNAVAILABLE, why);
}

/* imbalance across the ranks of the Run (rank_time: scratch of
 * run->n_ranks doubles then as many uint64_t) */
static void imbalance_over_ranks(struct diagnostic *g, const struct hotspot_rows *hr,
				 const struct diagnostic_run *run, const int *ranks,
				 double *rank_time, const char *unit)
{
	struct imbalance_extremes x = {0, INFINITY, 0, 0};
	uint64_t *rank_samples = (uint64_t *)(rank_time + run->n_ranks);
	char missing[64] = "";
	size_t i;
	int *at;

	memset(rank_time, 0, run->n_ranks * (sizeof(*rank_time) + sizeof(*rank_samples)));
	for (i = 0; i < hr->n; i++) {
		const struct hotspot_locus_row *r = &hr->rows[i];

		at = r->counter == TIME_COUNTER && !r->launcher && r->rank >= 0
			 ? bsearch(&r->rank, ranks, run->n_ranks, sizeof(*ranks), by_rank)
			 : NULL;
		if (at && !isnan(r->value)) {
			rank_time[at - ranks] += r->value;
			rank_samples[at - ranks] += r->samples;
		}
	}
	for (i = 0; i < run->n_ranks; i++) {
		extremes_add(&x, rank_time[i], rank_samples[i]);
		if (!rank_time[i] && !missing[0])
			snprintf(missing, sizeof(missing), "rank %d", ranks[i]);
	}
	imbalance_set(g, run->n_ranks, &x, unit, missing[0] ? missing : NULL);
}

/* imbalance across the threads that ran the Hotspot, when they are threads
 * of one process (a Run with one rank or none) */
static void imbalance_over_threads(struct diagnostic *g, const struct hotspot_rows *hr,
				   const char *unit)
{
	struct imbalance_extremes x = {0, INFINITY, 0, 0};
	int64_t process = -1;
	size_t i, n = 0;

	for (i = 0; i < hr->n; i++) {
		const struct hotspot_locus_row *r = &hr->rows[i];

		if (r->counter != TIME_COUNTER || r->launcher || isnan(r->value) || !r->value)
			continue;
		if (process >= 0 && r->process != process) {
			imbalance_not_applicable(g, DIAGNOSTIC_NA_PROCESSES);
			return;
		}
		process = r->process;
		extremes_add(&x, r->value, r->samples);
		n++; /* one row per thread of the process */
	}
	if (n < 2) {
		imbalance_not_applicable(g, DIAGNOSTIC_NA_ONE_THREAD);
		return;
	}
	g->imbalance_over = "threads";
	imbalance_set(g, n, &x, unit, NULL);
}

static void imbalance_of(struct diagnostic *g, const struct hotspot_rows *hr,
			 const struct diagnostic_run *run, const int *ranks, double *rank_time,
			 const char *unit)
{
	if (run->imbalance_not_applicable) {
		imbalance_not_applicable(g, run->imbalance_not_applicable);
	} else if (!strcmp(run->loci, "ranks")) {
		g->imbalance_over = "ranks";
		imbalance_over_ranks(g, hr, run, ranks, rank_time, unit);
	} else {
		imbalance_over_threads(g, hr, unit);
	}
}

/* the Hotspot's Σ of counter c (0 when the Run sampled c elsewhere) */
static void counter_of(struct derived *out, const struct hotspot_rows *hr,
		       const struct diagnostic_run *run, enum diagnostic_counter c)
{
	enum quality q = QUALITY_MEASURED;
	const char *reason = NULL;
	double sum = 0;
	size_t i;

	if (!run->sampled[c]) {
		char why[DERIVED_REASON_MAX];

		snprintf(why, sizeof(why), "no %s counter was sampled in this Run",
			 counter_names[c]);
		derived_input(out, counter_names[c], NAN, counter_units[c], QUALITY_UNAVAILABLE,
			      run->no_counter_reason[0] ? run->no_counter_reason : why);
		return;
	}
	for (i = 0; i < hr->n; i++) {
		const struct hotspot_locus_row *r = &hr->rows[i];

		if (r->counter != COUNTER_OF(c) || r->launcher)
			continue;
		sum += r->value; /* NAN stays NAN: an unavailable Measurement */
		if (r->quality > q || (!reason && r->quality == q && r->reason)) {
			q = r->quality;
			reason = r->reason;
		}
	}
	derived_input(out, counter_names[c], sum, counter_units[c], q, reason);
}

/* dram_intensity, achieved, attainable, envelope_fraction and the ridge */
static void placement_of(struct diagnostic *g, const struct hotspot_rows *hr,
			 const struct diagnostic_run *run, const struct hotspot_share *h)
{
	struct derived ctr[DIAGNOSTIC_N_COUNTERS], flop, seconds;
	const struct derived *in[4];
	const struct derived *peak;
	struct roof roof;
	size_t c, n = 0;
	int sp;

	for (c = 0; c < DIAGNOSTIC_N_COUNTERS; c++)
		counter_of(&ctr[c], hr, run, (enum diagnostic_counter)c);
	if (run->sampled[DIAGNOSTIC_FLOP_DP] || !run->sampled[DIAGNOSTIC_FLOP_SP])
		in[n++] = &ctr[DIAGNOSTIC_FLOP_DP];
	if (run->sampled[DIAGNOSTIC_FLOP_SP])
		in[n++] = &ctr[DIAGNOSTIC_FLOP_SP];
	derived_combine(&flop, "flop", "flop", "flop_dp + flop_sp", in, n,
			(n > 1 ? in[1]->value : 0) + in[0]->value, NULL);
	derived_input(&seconds, "seconds", h->seconds, "s", QUALITY_MEASURED,
		      isnan(h->seconds) ? "only cycles were sampled: the Run has no time" : NULL);
	in[0] = &flop;
	in[1] = &ctr[DIAGNOSTIC_DRAM_BYTES];
	derived_combine(&g->dram_intensity, "dram_intensity", "flop/B", "flop / dram_bytes", in, 2,
			flop.value / in[1]->value,
			flop.value > 0 ? "no DRAM byte was sampled in it: the intensity is infinite"
				       : "neither FLOP nor DRAM bytes were sampled in it");
	in[1] = &seconds;
	derived_combine(&g->achieved, "achieved", "flop/s", "flop / seconds (its CPU time)", in, 2,
			flop.value / seconds.value, NULL);
	sp = ctr[DIAGNOSTIC_FLOP_SP].value > ctr[DIAGNOSTIC_FLOP_DP].value;
	peak = sp ? &run->flops_sp : &run->flops_dp;
	g->peak = peak->name;
	roof.peak = peak->value / run->cores.value;
	roof.bandwidth = run->dram_bandwidth.value / run->cores.value;
	in[0] = peak;
	in[1] = &run->dram_bandwidth;
	derived_combine(&g->ridge, "ridge", "flop/B",
			sp ? "flops_sp / dram_bandwidth" : "flops_dp / dram_bandwidth", in, 2,
			roofline_ridge(&roof), NULL);
	in[0] = &g->dram_intensity;
	in[1] = peak;
	in[2] = &run->dram_bandwidth;
	in[3] = &run->cores;
	derived_combine(&g->attainable, "attainable", "flop/s",
			sp ? "min(flops_sp, dram_bandwidth × dram_intensity) / cores"
			   : "min(flops_dp, dram_bandwidth × dram_intensity) / cores",
			in, 4, roofline_attainable(&roof, g->dram_intensity.value), NULL);
	in[0] = &g->achieved;
	in[1] = &g->attainable;
	derived_combine(&g->envelope_fraction, "envelope_fraction", "fraction",
			"achieved / attainable", in, 2,
			roofline_envelope_fraction(g->achieved.value, g->attainable.value),
			"no FLOP was sampled in it: attainable is 0 at DRAM intensity 0");
}

/* the class and its evidence (or why there is none) */
static void classify(struct diagnostic *g)
{
	/* an estimated imbalance (too few samples per Locus) makes no class */
	double imbalance = g->imbalance.quality == QUALITY_MEASURED ? g->imbalance.value : NAN;
	enum roofline_class c = roofline_classify(imbalance, g->envelope_fraction.value,
						  g->dram_intensity.value, g->ridge.value);
	const struct derived *basis = &g->envelope_fraction;
	char *out = g->classification_reason;
	size_t len = sizeof(g->classification_reason);
	int n = 0;

	g->classification = roofline_class_name(c);
	switch (c) {
	case ROOFLINE_IMBALANCE:
		basis = &g->imbalance;
		if (isinf(g->imbalance.value))
			n = snprintf(out, len, "%s", g->imbalance.reason);
		else
			n = snprintf(out, len,
				     "its time varies %.2fx across the %zu %s (max / min >= %g)",
				     g->imbalance.value, g->n_loci, g->imbalance_over,
				     ROOFLINE_IMBALANCE_MIN);
		break;
	case ROOFLINE_LATENCY_BOUND:
		n = snprintf(out, len, "%.1f %% of attainable, below %.0f %%",
			     100 * g->envelope_fraction.value, 100 * ROOFLINE_LATENCY_BELOW);
		break;
	case ROOFLINE_MEMORY_BOUND:
	case ROOFLINE_COMPUTE_BOUND:
		n = snprintf(out, len, "DRAM intensity %.3g flop/B %s the ridge (%.3g flop/B)",
			     g->dram_intensity.value,
			     c == ROOFLINE_MEMORY_BOUND ? "below" : "at or above", g->ridge.value);
		break;
	case ROOFLINE_NO_CLASS:
		/* the placement is missing: its reason (the imbalance, when that is
		 * what is missing too, says less) */
		snprintf(out, len, "no placement: %s", g->envelope_fraction.reason);
		return;
	}
	if (basis->quality == QUALITY_ESTIMATED && n >= 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, "; estimated: %s", basis->reason);
}

/* the rows of hotspot id in hl (sorted by Hotspot) */
static struct hotspot_rows rows_of(const struct hotspot_loci *hl, int64_t id)
{
	struct hotspot_rows hr = {NULL, 0};
	size_t lo = 0, hi = hl->n, mid;

	while (lo < hi) { /* the first row >= id */
		mid = lo + (hi - lo) / 2;
		if (hl->rows[mid].hotspot < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	hr.rows = hl->rows + lo;
	while (lo + hr.n < hl->n && hl->rows[lo + hr.n].hotspot == id)
		hr.n++;
	return hr;
}

static int diagnose_hotspots(struct diagnosis *d, const struct hotspot_loci *hl,
			     const struct diagnostic_run *run, const int *ranks)
{
	const char *unit = strcmp(d->counter, "cpu-clock") ? "cycles" : "ns";
	/* scratch: the time of each rank, then its samples */
	double *rank_time =
	    calloc(run->n_ranks ? run->n_ranks : 1, sizeof(*rank_time) + sizeof(uint64_t));
	size_t i;

	if (!rank_time)
		return -ENOMEM;
	for (i = 0; i < d->n_hotspots; i++) {
		struct hotspot_share *h = &d->hotspots[i];
		struct hotspot_rows hr = rows_of(hl, h->id);

		h->diagnostic = calloc(1, sizeof(*h->diagnostic));
		if (!h->diagnostic) {
			free(rank_time);
			return -ENOMEM;
		}
		share_of(h->diagnostic, d, h);
		imbalance_of(h->diagnostic, &hr, run, ranks, rank_time, unit);
		placement_of(h->diagnostic, &hr, run, h);
		classify(h->diagnostic);
	}
	free(rank_time);
	return 0;
}

int diagnostic_compute(struct diagnosis *d, struct pivot *p, const json_t *machine)
{
	struct hotspot_loci empty = {0, NULL}, *hl = NULL;
	const char *counters[1 + DIAGNOSTIC_N_COUNTERS];
	struct diagnostic_run *run;
	int *ranks = NULL;
	size_t c;
	int err;

	if (!d)
		return -EINVAL;
	run = calloc(1, sizeof(*run));
	if (!run)
		return -ENOMEM;
	d->diagnostic_run = run;
	diagnostic_run_read_machine(run, machine);
	if (!d->counter)
		return 0; /* nothing sampled: no Hotspot to diagnose */
	counters[TIME_COUNTER] = d->counter;
	for (c = 0; c < DIAGNOSTIC_N_COUNTERS; c++)
		counters[COUNTER_OF(c)] = counter_names[c];
	if (p) {
		hl = hotspot_loci__new(p, counters, 1 + DIAGNOSTIC_N_COUNTERS);
		if (!hl)
			return -errno;
	}
	err = run_counters(run, hl ? hl : &empty, p);
	err = err ?: run_ranks(hl ? hl : &empty, &ranks, &run->n_ranks);
	err = err ?: run_imbalance_loci(run, p);
	if (!err)
		run_no_placement(run);
	err = err ?: diagnose_hotspots(d, hl ? hl : &empty, run, ranks);
	free(ranks);
	hotspot_loci__free(hl);
	return err;
}
