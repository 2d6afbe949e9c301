/* summary_diagnostic — Diagnostics as the summary writes them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "analysis/diagnostic.h"
#include "report/summary_diagnostic.h"
#include "report/summary_format.h"
#include "userspace/log/json_text.h"

#define NO_CLASS "—" /* one column wide, three bytes */
#define MAX_REASONS 64

/* the reasons the blocks point to, each said once */
struct reasons {
	const char *text[MAX_REASONS];
	size_t n;
};

/* its number (from 1); 0 when the list is full (the reason is then said
 * where it is used) */
static size_t reason_ref(struct reasons *rs, const char *reason)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		if (!strcmp(rs->text[i], reason))
			return i + 1;
	if (rs->n == MAX_REASONS)
		return 0;
	rs->text[rs->n++] = reason;
	return rs->n;
}

/* " [n]" or " (reason)" */
static const char *reason_mark(char *buf, size_t len, struct reasons *rs, const char *reason)
{
	size_t n = reason_ref(rs, reason);

	if (n)
		snprintf(buf, len, "[%zu]", n);
	else
		snprintf(buf, len, "(%s)", reason);
	return buf;
}

/* value with its unit: flop/s with an SI prefix */
static void number_text(char *buf, size_t len, double v, const char *unit)
{
	static const char *const prefixes[] = {"", "k", "M", "G", "T", "P"};
	size_t p = 0;

	if (!strcmp(unit, "fraction")) {
		summary_fmt_share(buf, len, v);
	} else if (!strcmp(unit, "ratio")) {
		snprintf(buf, len, "%.2f", v);
	} else if (!strcmp(unit, "flop/s") || !strcmp(unit, "B/s")) {
		while (v >= 1000 && p + 1 < sizeof(prefixes) / sizeof(prefixes[0])) {
			v /= 1000;
			p++;
		}
		snprintf(buf, len, "%.3g %s%s", v, prefixes[p], unit);
	} else {
		snprintf(buf, len, "%.3g %s", v, unit);
	}
}

/* a derived value as the blocks write it: never 0 for unavailable */
static const char *value_text(char *buf, size_t len, const struct derived *v, struct reasons *rs)
{
	char num[64], mark[DERIVED_REASON_MAX + 8];

	if (v->quality == QUALITY_UNAVAILABLE) {
		snprintf(buf, len, "%s %s", SUMMARY_UNAVAILABLE,
			 reason_mark(mark, sizeof(mark), rs, v->reason));
		return buf;
	}
	if (isinf(v->value))
		snprintf(num, sizeof(num), "infinite");
	else
		number_text(num, sizeof(num), v->value, v->unit);
	if (v->quality == QUALITY_ESTIMATED)
		snprintf(buf, len, "%s (estimated %s)", num,
			 reason_mark(mark, sizeof(mark), rs, v->reason));
	else if (isinf(v->value) && v->reason[0])
		snprintf(buf, len, "%s %s", num, reason_mark(mark, sizeof(mark), rs, v->reason));
	else
		snprintf(buf, len, "%s", num);
	return buf;
}

const char *summary_class_text(const struct hotspot_share *h, int *width)
{
	const char *c = h->diagnostic ? h->diagnostic->classification : NULL;

	*width = c ? (int)strlen(c) : 1;
	return c ? c : NO_CLASS;
}

/* 1 when the four placement values are unavailable for one reason */
static int placement_missing(const struct diagnostic *g)
{
	const struct derived *v[] = {&g->achieved, &g->attainable, &g->envelope_fraction};
	size_t i;

	if (g->dram_intensity.quality != QUALITY_UNAVAILABLE)
		return 0;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i]->quality != QUALITY_UNAVAILABLE ||
		    strcmp(v[i]->reason, g->dram_intensity.reason))
			return 0;
	return 1;
}

/* the placement lines and the class line (one line when neither exists);
 * a Run that places no Hotspot says so once, after the blocks */
static void print_placement(FILE *out, const struct diagnostic *g, const struct diagnostic_run *run,
			    struct reasons *rs)
{
	char a[DERIVED_REASON_MAX + 96], b[DERIVED_REASON_MAX + 96];

	if (run->no_placement[0]) {
		/* the Run's reason is said once; what was measured still is */
		if (derived_available(&g->achieved))
			fprintf(out, "      achieved %s\n",
				value_text(a, sizeof(a), &g->achieved, rs));
	} else if (placement_missing(g)) {
		fprintf(out, "      placement %s%s\n",
			value_text(a, sizeof(a), &g->dram_intensity, rs),
			g->classification ? "" : ", so no class");
	} else {
		fprintf(out, "      DRAM intensity %s, achieved %s\n",
			value_text(a, sizeof(a), &g->dram_intensity, rs),
			value_text(b, sizeof(b), &g->achieved, rs));
		fprintf(out, "      attainable against %s %s, envelope fraction %s\n", g->peak,
			value_text(a, sizeof(a), &g->attainable, rs),
			value_text(b, sizeof(b), &g->envelope_fraction, rs));
		if (!g->classification)
			fprintf(out, "      no class: no placement %s\n",
				reason_mark(a, sizeof(a), rs, g->envelope_fraction.reason));
	}
	if (g->classification)
		fprintf(out, "      class %s: %s\n", g->classification, g->classification_reason);
}

/* the measured values first: share, seconds, imbalance where it applies */
static void print_one(FILE *out, const struct hotspot_share *h, const struct diagnostic_run *run,
		      struct reasons *rs)
{
	const struct diagnostic *g = h->diagnostic;
	char a[DERIVED_REASON_MAX + 96];

	fprintf(out, "  %s: share %s", h->name, value_text(a, sizeof(a), &g->share, rs));
	if (!isnan(h->seconds))
		fprintf(out, ", %s s", summary_fmt_seconds(a, sizeof(a), h->seconds));
	if (!g->imbalance_not_applicable) {
		fprintf(out, ", imbalance %s", value_text(a, sizeof(a), &g->imbalance, rs));
		if (derived_available(&g->imbalance))
			fprintf(out, " over %zu %s", g->n_loci, g->imbalance_over);
	}
	fputc('\n', out);
	print_placement(out, g, run, rs);
}

/* 1 when h's imbalance is not applicable for the reason why */
static int not_applicable_for(const struct hotspot_share *h, const char *why)
{
	return h->diagnostic && h->diagnostic->imbalance_not_applicable &&
	       !strcmp(h->diagnostic->imbalance_not_applicable, why);
}

/* "imbalance not applicable[ to A, B]: why", once per reason among the
 * shown Hotspots */
static void print_not_applicable(FILE *out, const struct diagnosis *d, size_t shown)
{
	const char *why[] = {DIAGNOSTIC_NA_RANK_PROGRAMS, DIAGNOSTIC_NA_ONE_THREAD,
			     DIAGNOSTIC_NA_PROCESSES};
	size_t i, k, n, all = 0;

	for (i = 0; i < shown && i < d->n_hotspots; i++)
		all += d->hotspots[i].diagnostic != NULL;
	for (k = 0; k < sizeof(why) / sizeof(why[0]); k++) {
		const char *sep = " to ";

		for (i = 0, n = 0; i < shown && i < d->n_hotspots; i++)
			n += not_applicable_for(&d->hotspots[i], why[k]);
		if (!n)
			continue;
		fprintf(out, "  imbalance not applicable");
		for (i = 0; n < all && i < shown && i < d->n_hotspots; i++)
			if (not_applicable_for(&d->hotspots[i], why[k])) {
				fprintf(out, "%s%s", sep, d->hotspots[i].name);
				sep = ", ";
			}
		fprintf(out, ": %s\n", why[k]);
	}
}

/* Once for the Run. When the cause is the counters' Degradation, which the
 * summary prints whole with its remedy under "what this summary does not
 * say", only its first clause is repeated here, with its name. */
static void print_no_placement(FILE *out, const struct diagnostic_run *run)
{
	const char *cause = run->no_placement, *colon;

	if (!cause[0])
		return;
	fputs("  no roofline placement in this Run, so no roofline class: ", out);
	colon = strstr(cause, ": ");
	if (run->no_counter_reason[0] && !strcmp(cause, run->no_counter_reason) && colon)
		fprintf(out, "%.*s (degradation %s below)\n", (int)(colon - cause), cause,
			DIAGNOSTIC_COUNTERS_DEGRADATION);
	else
		fprintf(out, "%s\n", cause);
}

void summary_print_diagnostics(FILE *out, const struct diagnosis *d, size_t shown)
{
	const struct diagnostic_run *run = d->diagnostic_run;
	struct reasons rs = {{0}, 0};
	size_t i, n = 0;

	for (i = 0; i < shown && i < d->n_hotspots; i++)
		n += d->hotspots[i].diagnostic != NULL;
	if (!n || !run)
		return;
	fprintf(out, "\ndiagnostic of the hotspot%s above the floor\n", n == 1 ? "" : "s");
	for (i = 0; i < shown && i < d->n_hotspots; i++)
		if (d->hotspots[i].diagnostic)
			print_one(out, &d->hotspots[i], run, &rs);
	print_no_placement(out, run);
	print_not_applicable(out, d, shown);
	for (i = 0; i < rs.n; i++)
		fprintf(out, "  [%zu] %s\n", i + 1, rs.text[i]);
}

void summary_print_diagnostic_not_said(FILE *out, const struct diagnosis *d)
{
	const struct diagnostic_run *run = d->diagnostic_run;
	const struct derived *ceilings[3];
	size_t i;

	/* with no placement at all, no conclusion rests on a Ceiling */
	if (!run || !d->n_hotspots || run->no_placement[0])
		return;
	ceilings[0] = &run->flops_dp;
	ceilings[1] = &run->flops_sp;
	ceilings[2] = &run->dram_bandwidth;
	for (i = 0; i < 3; i++)
		if (ceilings[i]->quality != QUALITY_MEASURED)
			fprintf(out, "  - %s Ceiling %s\n", quality_name(ceilings[i]->quality),
				ceilings[i]->reason);
}

static json_t *derived_json(const struct derived *v)
{
	json_t *lineage = json_array();
	size_t i;

	for (i = 0; lineage && i < v->n_lineage; i++)
		if (json_array_append_new(lineage, json_string(v->lineage[i]))) {
			json_decref(lineage);
			return NULL;
		}
	if (!lineage)
		return NULL;
	return json_pack("{s:o, s:s, s:s, s:o, s:o, s:o}", "value",
			 summary_json_number(isinf(v->value) ? NAN : v->value), "unit", v->unit,
			 "quality", quality_name(v->quality), "reason",
			 v->reason[0] ? json_text(v->reason) : json_null(), "lineage", lineage,
			 "formula", v->formula ? json_string(v->formula) : json_null());
}

json_t *summary_diagnostic_json(const struct hotspot_share *h)
{
	const struct diagnostic *g = h->diagnostic;

	json_t *o;

	if (!g)
		return json_null();
	o = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:o}", "share",
		      derived_json(&g->share), "imbalance_not_applicable",
		      json_text(g->imbalance_not_applicable), "dram_intensity",
		      derived_json(&g->dram_intensity), "achieved", derived_json(&g->achieved),
		      "attainable", derived_json(&g->attainable), "envelope_fraction",
		      derived_json(&g->envelope_fraction), "ridge", derived_json(&g->ridge),
		      "imbalance_over", json_text(g->imbalance_over), "loci", (json_int_t)g->n_loci,
		      "peak", json_text(g->peak), "classification", json_text(g->classification),
		      "classification_reason", json_text(g->classification_reason));
	/* not applicable is no value at all: the key is absent */
	if (o && !g->imbalance_not_applicable &&
	    json_object_set_new(o, "imbalance", derived_json(&g->imbalance)))
		o = (json_decref(o), NULL);
	return o;
}

json_t *summary_diagnostic_run_json(const struct diagnosis *d)
{
	const struct diagnostic_run *run = d->diagnostic_run;

	if (!run)
		return json_null();
	return json_pack("{s:o, s:o, s:o}", "imbalance_over", json_text(run->loci),
			 "imbalance_not_applicable", json_text(run->imbalance_not_applicable),
			 "no_placement",
			 run->no_placement[0] ? json_text(run->no_placement) : json_null());
}
