/* summary_mpi — ranks and MPI call sites, as text and as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/balance.h"
#include "analysis/balance_samples.h"
#include "report/summary_format.h"
#include "report/summary_mpi.h"
#include "report/summary_probe_cost.h"
#include "userspace/log/json_text.h"
#include "userspace/pivot/pivot.h"

#define NUM_WIDTH 11 /* strlen("unavailable") */
#define NAME_WIDTH_MAX 40

static void print_ranks_headline(FILE *out, const struct balance *b)
{
	char factor[32], eff[32], share[32];

	fprintf(out, "\nranks: %zu rank%s", b->n_ranks, b->n_ranks == 1 ? "" : "s");
	if (b->imbalance_not_applicable) {
		fprintf(out, ", balance not applicable (%s), MPI share of time %s\n",
			b->imbalance_not_applicable,
			summary_fmt_share(share, sizeof(share), b->mpi_share));
		return;
	}
	if (b->busiest_rank >= 0)
		fprintf(out, ", busiest rank %d at %sx the mean time outside MPI", b->busiest_rank,
			summary_fmt_double(factor, sizeof(factor), "%.2f", b->busiest_factor));
	else
		fprintf(out, ", busiest rank " SUMMARY_UNAVAILABLE);
	fprintf(out, ", load-balance efficiency %s, MPI share of time %s\n",
		summary_fmt_share(eff, sizeof(eff), b->efficiency),
		summary_fmt_share(share, sizeof(share), b->mpi_share));
}

/* a rank's MPI time and share, "≈0.412 ± 0.051" when a site of it was
 * estimated */
static void rank_mpi_text(const struct balance_rank *r, char *mpi, char *frac, size_t len)
{
	const char *m = summary_fmt_estimate(mpi, len, "%.3f", r->mpi_time, r->mpi_time_estimated,
					     r->mpi_time_error);
	const char *f = summary_fmt_estimate(frac, len, "%.1f%%", 100 * r->mpi_fraction,
					     r->mpi_time_estimated, 100 * r->mpi_fraction_error);

	if (m != mpi) /* the static "unavailable" */
		snprintf(mpi, len, "%s", m);
	if (f != frac)
		snprintf(frac, len, "%s", f);
}

/* where an estimated rank's MPI time came from, one line per such rank:
 * its samples (how many, the share inside MPI calls, the windows' figure
 * it replaced) or its windows (and why not the samples) */
static void print_rank_methods(FILE *out, const struct balance *b)
{
	char win[64], share[32];
	size_t i;

	for (i = 0; i < b->n_ranks; i++) {
		const struct balance_rank *r = &b->ranks[i];
		const char *w;

		if (!r->mpi_time_method || !strcmp(r->mpi_time_method, BALANCE_METHOD_PROBES))
			continue;
		fprintf(out, "  rank %d: MPI time ", r->rank);
		if (!strcmp(r->mpi_time_method, BALANCE_METHOD_SAMPLES)) {
			w = summary_fmt_estimate(win, sizeof(win), "%.3f", r->windows_mpi_time, 1,
						 r->windows_mpi_time_error);
			fprintf(out,
				"from %" PRIu64 " samples, %s of them inside MPI calls, × its app "
				"time (its calls probed in sampled windows; the windows' estimate: "
				"%s s)\n",
				r->app_samples,
				summary_fmt_share(share, sizeof(share), r->mpi_fraction), w);
			continue;
		}
		fprintf(out, "extrapolated from its sampled windows, not from its samples (");
		summary_print_text(out, r->mpi_time_method_reason ? r->mpi_time_method_reason : "");
		fprintf(out, ")\n");
	}
}

static void print_ranks(FILE *out, const struct balance *b)
{
	char app[32], mpi[64], frac[64], cpu[32];
	int node_w = (int)strlen("node"), mpi_w = NUM_WIDTH, frac_w = NUM_WIDTH;
	size_t i;

	for (i = 0; i < b->n_ranks; i++) {
		int len = (int)strlen(b->ranks[i].node);

		if (len > node_w)
			node_w = len < NAME_WIDTH_MAX ? len : NAME_WIDTH_MAX;
		rank_mpi_text(&b->ranks[i], mpi, frac, sizeof(mpi));
		if (summary_text_width(mpi) > mpi_w)
			mpi_w = summary_text_width(mpi);
		if (summary_text_width(frac) > frac_w)
			frac_w = summary_text_width(frac);
	}
	print_ranks_headline(out, b);
	fprintf(out, "\n  %6s  %-*s  %*s  %*s  %*s  %*s\n", "rank", node_w, "node", NUM_WIDTH,
		"app s", mpi_w, "MPI s", frac_w, "MPI %", NUM_WIDTH, "CPU s");
	for (i = 0; i < b->n_ranks; i++) {
		const struct balance_rank *r = &b->ranks[i];
		const char *a = summary_fmt_seconds(app, sizeof(app), r->app_time);

		/* estimated: marked here, explained in what is not said */
		if (!strcmp(r->app_time_quality, "estimated") && a == app)
			strcat(app, "*");
		rank_mpi_text(r, mpi, frac, sizeof(mpi));
		/* a longer node name moves the columns: never cut (names alike) */
		fprintf(out, "  %6d  %-*s  %*s  ", r->rank, node_w, r->node, NUM_WIDTH, a);
		summary_print_right(out, mpi_w, mpi);
		fputs("  ", out);
		summary_print_right(out, frac_w, frac);
		fprintf(out, "  %*s\n", NUM_WIDTH, summary_fmt_seconds(cpu, sizeof(cpu), r->cpu_time));
	}
	print_rank_methods(out, b);
}

/* "location (containing function)", whole: two call sites never look the
 * same (a cut label made CommBrick::forward_comm and reverse_comm one);
 * caller frees, NULL when out of memory */
static char *call_site_label(const struct balance_call_site *cs)
{
	/* the terminal shows the file's base name: "pattern.c:128 (main)" */
	const char *slash = strrchr(cs->location, '/');
	const char *where = slash ? slash + 1 : cs->location;
	char *s = NULL;
	int n;

	/* an unresolved call site's Hotspot is named after the address */
	if (cs->containing_function && strcmp(cs->containing_function, cs->location))
		n = asprintf(&s, "%s (%s)", where, cs->containing_function);
	else
		n = asprintf(&s, "%s", where);
	return n < 0 ? NULL : s;
}

/* the call sites of the tables: MPI time's, not MPI_Init's or
 * MPI_Finalize's (said apart); at most SUMMARY_MPI_TOP in shown[] */
static size_t pick_call_sites(const struct balance *b, size_t *shown, size_t *n_timed)
{
	size_t i, n = 0;

	*n_timed = 0;
	for (i = 0; i < b->n_call_sites; i++) {
		if (pivot_mpi_is_lifetime(b->call_sites[i].function))
			continue;
		(*n_timed)++;
		if (n < SUMMARY_MPI_TOP)
			shown[n++] = i;
	}
	return n;
}

#define COV_NOT_APPLICABLE "n/a"

static const char *const cov_not_applicable[] = {BALANCE_NA_ONE_RANK, BALANCE_NA_ONE_CALLER};

/* the bit of cs's reason for an n/a COV in the mask print_call_sites
 * returns; 0 when its COV applies */
static unsigned cov_not_applicable_bit(const struct balance_call_site *cs)
{
	size_t k;

	for (k = 0; cs->cov_not_applicable && k < 2; k++)
		if (!strcmp(cs->cov_not_applicable, cov_not_applicable[k]))
			return 1u << k;
	return 0;
}

/* why the COV column says n/a: once per reason, under both tables */
static void print_cov_not_applicable(FILE *out, unsigned mask)
{
	size_t k;

	for (k = 0; k < 2; k++)
		if (mask & (1u << k))
			fprintf(out, "  COV " COV_NOT_APPLICABLE " (not applicable): %s\n",
				cov_not_applicable[k]);
}

/* a site's calls and total time, "≈9871 ± 1328" when estimated */
static void call_site_text(const struct balance_call_site *cs, char *calls, char *total,
			   size_t len)
{
	const char *t;

	summary_fmt_estimate(calls, len, "%.0f", (double)cs->calls, !!cs->estimate,
			     cs->calls_error);
	t = summary_fmt_estimate(total, len, "%.3f", (double)cs->total_ns / 1e9, !!cs->estimate,
				 cs->total_ns_error / 1e9);
	if (t != total)
		snprintf(total, len, "%s", t);
}

/* the call site comes last, whole, so a long one moves no column; the
 * reasons of the n/a COVs shown, as a mask */
static unsigned print_call_sites(FILE *out, const struct balance *b, const char *by)
{
	unsigned mask = 0;
	char calls[64], total[64], mean[32], bytes[32], cov[32], *label;
	int fn_w = (int)strlen("function"), calls_w = 10, total_w = NUM_WIDTH;
	size_t shown[SUMMARY_MPI_TOP], n, n_timed, i;

	n = pick_call_sites(b, shown, &n_timed);
	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		const struct balance_call_site *cs = &b->call_sites[shown[i]];
		int len = (int)strlen(cs->function);

		if (len > fn_w)
			fn_w = len;
		call_site_text(cs, calls, total, sizeof(calls));
		if (summary_text_width(calls) > calls_w)
			calls_w = summary_text_width(calls);
		if (summary_text_width(total) > total_w)
			total_w = summary_text_width(total);
	}
	fprintf(out, "\nMPI call sites by %s (top %zu of %zu)\n", by, n, n_timed);
	fprintf(out, "  %-*s  %*s  %*s  %*s  %*s  %*s  %s\n", fn_w, "function", calls_w, "calls",
		total_w, "total s", NUM_WIDTH + 1, "mean µs", NUM_WIDTH, "bytes", NUM_WIDTH, "COV",
		"call site");
	for (i = 0; i < n; i++) {
		const struct balance_call_site *cs = &b->call_sites[shown[i]];

		if (cs->has_bytes)
			snprintf(bytes, sizeof(bytes), "%s%" PRIu64, cs->estimate ? "≈" : "",
				 cs->bytes);
		else
			snprintf(bytes, sizeof(bytes), SUMMARY_UNAVAILABLE);
		call_site_text(cs, calls, total, sizeof(calls));
		label = call_site_label(cs);
		fputs("  ", out);
		summary_print_text(out, cs->function);
		fprintf(out, "%*s  ", fn_w - (int)strlen(cs->function), "");
		summary_print_right(out, calls_w, calls);
		fputs("  ", out);
		summary_print_right(out, total_w, total);
		fputs("  ", out);
		summary_print_right(out, NUM_WIDTH, summary_fmt_double(mean, sizeof(mean), "%.1f",
								      cs->mean_ns / 1e3));
		fputs("  ", out);
		summary_print_right(out, NUM_WIDTH, bytes);
		fprintf(out, "  %*s  ", NUM_WIDTH,
			cs->cov_not_applicable
			    ? COV_NOT_APPLICABLE
			    : summary_fmt_double(cov, sizeof(cov), "%.2f", cs->cov));
		summary_print_text(out, label ? label : cs->location);
		fputc('\n', out);
		free(label);
		mask |= cov_not_applicable_bit(cs);
	}
	return mask;
}

/* which call sites are estimated and why, once under both tables: the
 * first estimated site's text (its lowest rank's; each rank's own is
 * under nunatak's MPI probes) */
static void print_estimated(FILE *out, const struct balance *b)
{
	const struct balance_call_site *first = NULL;
	size_t i, n = 0;

	for (i = 0; i < b->n_call_sites; i++) {
		if (!b->call_sites[i].estimate || pivot_mpi_is_lifetime(b->call_sites[i].function))
			continue;
		first = first ? first : &b->call_sites[i];
		n++;
	}
	if (!first)
		return;
	fprintf(out, "  ≈ estimated, ± one standard error: %zu call site%s (marked ≈), ", n,
		n == 1 ? "" : "s");
	if (first->estimate_rank >= 0)
		fprintf(out, "rank %d: ", first->estimate_rank);
	summary_print_text(out, first->estimate);
	fputc('\n', out);
}

/* what MPI time is, and MPI_Init / MPI_Finalize apart: summed over their
 * call sites and ranks */
static void print_lifetime_calls(FILE *out, const struct balance *b)
{
	static const char *const lifetime[] = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"};
	char total[32];
	size_t i, k, said = 0;

	fprintf(out, "\nMPI time is the time inside MPI calls between the end of MPI_Init and "
		     "the start of MPI_Finalize\n");
	for (k = 0; k < sizeof(lifetime) / sizeof(lifetime[0]); k++) {
		uint64_t calls = 0, ns = 0;

		for (i = 0; i < b->n_call_sites; i++) {
			if (strcmp(b->call_sites[i].function, lifetime[k]))
				continue;
			calls += b->call_sites[i].calls;
			ns += b->call_sites[i].total_ns;
		}
		if (!calls)
			continue;
		fprintf(out, "%s %s %s s in %" PRIu64 " call%s",
			said++ ? "," : "  not in it:", lifetime[k],
			summary_fmt_seconds(total, sizeof(total), (double)ns / 1e9), calls,
			calls == 1 ? "" : "s");
	}
	if (said)
		fputc('\n', out);
}

void summary_print_mpi(FILE *out, struct balance *b)
{
	unsigned mask;

	if (!out || !b || (!b->n_ranks && !b->n_call_sites))
		return;
	if (b->n_ranks) {
		print_ranks(out, b);
		summary_print_probe_cost(out, b);
	}
	if (!b->n_call_sites) {
		fprintf(out, "\nMPI: no call site was recorded\n");
		return;
	}
	print_lifetime_calls(out, b);
	mask = print_call_sites(out, b, "time");
	balance_sort_call_sites(b, BALANCE_BY_BYTES);
	mask |= print_call_sites(out, b, "bytes");
	balance_sort_call_sites(b, BALANCE_BY_TIME);
	print_estimated(out, b);
	print_cov_not_applicable(out, mask);
}

void summary_print_mpi_not_said(FILE *out, const struct balance *b)
{
	size_t i;

	if (!out || !b)
		return;
	for (i = 0; i < b->n_ranks; i++) {
		const struct balance_rank *r = &b->ranks[i];

		if (!strcmp(r->app_time_quality, "measured"))
			continue;
		fprintf(out, "  - rank %d: app time %s%s: %s\n", r->rank, r->app_time_quality,
			strcmp(r->app_time_quality, "estimated") ? "" : " (*)",
			r->app_time_reason ? r->app_time_reason : "no reason recorded");
	}
	for (i = 0; i < b->n_call_sites; i++) {
		const struct balance_call_site *cs = &b->call_sites[i];

		if (!cs->has_bytes)
			fprintf(out, "  - bytes of %s at %s: " SUMMARY_UNAVAILABLE " (%s)\n",
				cs->function, cs->location, cs->bytes_reason);
	}
}

/* mpi_time_method, mpi_time_method_reason, samples, windows_mpi_time,
 * windows_mpi_time_error, process_wall_time, run_delay, asleep_fraction:
 * 0 or -ENOMEM */
static int rank_method_json(json_t *o, const struct balance_rank *r)
{
	json_t *samples = r->has_samples
			      ? json_pack("{s:I, s:I}", "application", (json_int_t)r->app_samples,
					  "inside_mpi", (json_int_t)r->mpi_samples)
			      : json_null();

	if (!samples || json_object_set_new(o, "samples", samples))
		return -ENOMEM;
	if (json_object_set_new(o, "mpi_time_method",
				r->mpi_time_method ? json_string(r->mpi_time_method)
						   : json_null()) ||
	    json_object_set_new(o, "mpi_time_method_reason",
				r->mpi_time_method_reason ? json_string(r->mpi_time_method_reason)
							  : json_null()) ||
	    json_object_set_new(o, "windows_mpi_time", summary_json_number(r->windows_mpi_time)) ||
	    json_object_set_new(o, "windows_mpi_time_error",
				summary_json_number(r->windows_mpi_time_error)) ||
	    json_object_set_new(o, "process_wall_time",
				summary_json_number(r->process_wall_time)) ||
	    json_object_set_new(o, "run_delay", summary_json_number(r->run_delay)) ||
	    json_object_set_new(o, "asleep_fraction", summary_json_number(r->asleep_fraction)))
		return -ENOMEM;
	return 0;
}

/* imbalance: this rank's time outside MPI over the mean of the ranks';
 * absent when the balance is not applicable (one rank) */
static json_t *rank_json(const struct balance_rank *r, double mean_outside, int applicable)
{
	json_t *o = json_pack(
	    "{s:i, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o}", "rank", r->rank, "node", json_text(r->node), "app_time", summary_json_number(r->app_time),
	    "app_time_quality", r->app_time_quality, "app_time_reason",
	    json_text(r->app_time_reason), "mpi_time", summary_json_number(r->mpi_time),
	    "mpi_fraction", summary_json_number(r->mpi_fraction), "cpu_time",
	    summary_json_number(r->cpu_time), "outside_mpi_time",
	    summary_json_number(r->outside_mpi_time));

	if (o && (summary_probe_cost_rank_json(o, r) ||
		  json_object_set_new(o, "mpi_time_estimated", json_boolean(r->mpi_time_estimated)) ||
		  json_object_set_new(o, "mpi_time_error", summary_json_number(r->mpi_time_error)) ||
		  json_object_set_new(o, "mpi_fraction_error",
				      summary_json_number(r->mpi_fraction_error)) ||
		  rank_method_json(o, r)))
		o = (json_decref(o), NULL);
	if (o && applicable &&
	    json_object_set_new(o, "imbalance",
				summary_json_number(mean_outside > 0
							? r->outside_mpi_time / mean_outside
							: NAN)))
		o = (json_decref(o), NULL);
	return o;
}

/* not applicable (one rank): imbalance, efficiency and busiest_factor
 * absent, imbalance_not_applicable says why (null otherwise) */
static json_t *balance_json(const struct balance *b)
{
	const char *na = b ? b->imbalance_not_applicable : NULL;
	json_t *o = json_pack("{s:I, s:o, s:o, s:o, s:o}", "ranks", (json_int_t)(b ? b->n_ranks : 0),
			      "busiest_rank",
			      b && b->busiest_rank >= 0 ? json_integer(b->busiest_rank) : json_null(),
			      "mpi_share", summary_json_number(b ? b->mpi_share : NAN),
			      "mpi_share_error", summary_json_number(b ? b->mpi_share_error : NAN),
			      "imbalance_not_applicable", na ? json_string(na) : json_null());

	if (o && !na &&
	    (json_object_set_new(o, "imbalance", summary_json_number(b ? b->imbalance : NAN)) ||
	     json_object_set_new(o, "efficiency", summary_json_number(b ? b->efficiency : NAN)) ||
	     json_object_set_new(o, "busiest_factor",
				 summary_json_number(b ? b->busiest_factor : NAN))))
		o = (json_decref(o), NULL);
	return o;
}

static json_t *call_site_json(const struct balance_call_site *cs, size_t n_ranks)
{
	json_t *o, *per_rank, *e;
	size_t i;

	/* names and paths of the call site come from outside: json_text */
	o = json_pack(
	    "{s:o, s:{s:o, s:o, s:o, s:o, s:I}, s:I, s:f, s:o, s:f, s:f, s:o, s:o,"
	    " s:o, s:b, s:[]}",
	    "function", json_text(cs->function), "call_site", "file", json_text(cs->file), "line",
	    cs->line > 0 ? json_integer(cs->line) : json_null(), "function",
	    json_text(cs->containing_function), "module", json_text(cs->module), "offset",
	    (json_int_t)cs->offset, "calls", (json_int_t)cs->calls, "total_time",
	    (double)cs->total_ns / 1e9, "mean_time", summary_json_number(cs->mean_ns / 1e9),
	    "min_time", (double)cs->min_ns / 1e9, "max_time", (double)cs->max_ns / 1e9, "bytes",
	    cs->has_bytes ? json_integer((json_int_t)cs->bytes) : json_null(), "bytes_reason",
	    json_text(cs->has_bytes ? NULL : cs->bytes_reason), "cov_not_applicable",
	    json_text(cs->cov_not_applicable), "lifetime", pivot_mpi_is_lifetime(cs->function),
	    "per_rank");
	if (!o)
		return NULL;
	/* estimated: why, and one standard error (0 when measured) */
	if (json_object_set_new(o, "estimate", json_text(cs->estimate)) ||
	    json_object_set_new(o, "calls_error", summary_json_number(cs->calls_error)) ||
	    json_object_set_new(o, "total_time_error",
				summary_json_number(cs->total_ns_error / 1e9))) {
		json_decref(o);
		return NULL;
	}
	/* not applicable is no value at all: the key is absent */
	if (!cs->cov_not_applicable && json_object_set_new(o, "cov", summary_json_number(cs->cov))) {
		json_decref(o);
		return NULL;
	}
	per_rank = json_object_get(o, "per_rank");
	for (i = 0; i < n_ranks; i++) {
		e = json_pack("{s:i, s:I, s:f}", "rank", cs->per_rank[i].rank, "calls",
			      (json_int_t)cs->per_rank[i].calls, "total_time",
			      (double)cs->per_rank[i].total_ns / 1e9);
		if (!e || json_array_append_new(per_rank, e)) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

int summary_mpi_json(json_t *root, const struct balance *b)
{
	json_t *ranks, *mpi, *o;
	double mean_outside = 0;
	size_t i;

	/* json_object_set_new takes the reference even when it fails */
	if (json_object_set_new(root, "ranks", json_array()) ||
	    json_object_set_new(root, "mpi", json_array()) ||
	    json_object_set_new(root, "balance", balance_json(b)) ||
	    json_object_set_new(root, "probe_cost", summary_probe_cost_json(b)))
		return -ENOMEM;
	ranks = json_object_get(root, "ranks");
	mpi = json_object_get(root, "mpi");
	for (i = 0; b && i < b->n_ranks; i++)
		mean_outside += b->ranks[i].outside_mpi_time / (double)b->n_ranks;
	for (i = 0; b && i < b->n_ranks; i++) {
		o = rank_json(&b->ranks[i], mean_outside, !b->imbalance_not_applicable);
		if (!o || json_array_append_new(ranks, o))
			return -ENOMEM;
	}
	for (i = 0; b && i < b->n_call_sites; i++) {
		o = call_site_json(&b->call_sites[i], b->n_ranks);
		if (!o || json_array_append_new(mpi, o))
			return -ENOMEM;
	}
	return 0;
}
