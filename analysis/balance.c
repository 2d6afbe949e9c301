/* balance — per-rank times, run-level imbalance and the MPI call sites
 * across ranks, from the pivot's MPI Measurements and mpi_calls. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/balance.h"
#include "analysis/balance_probe.h"
#include "analysis/balance_samples.h"
#include "userspace/pivot/pivot.h"

#define NS_PER_S 1e9

static const char *quality_static(const char *q)
{
	if (q && !strcmp(q, "measured"))
		return "measured";
	if (q && !strcmp(q, "estimated"))
		return "estimated";
	return "unavailable";
}

/* seconds of a Locus-level value, NAN when it has none */
static double seconds_of(const struct pivot_locus_value *v)
{
	if (!v->quality || !strcmp(v->quality, "unavailable") || isnan(v->value))
		return NAN;
	return v->value / NS_PER_S;
}

struct collect {
	struct balance *b;
	size_t cap;
	struct locus_index {
		int64_t locus;
		size_t idx;
	} * index;		       /* ranks[] by locus id, for per_rank */
	struct balance_call_site *cur; /* the group being summed */
	int64_t cur_call_site;
};

static int collect_rank(const struct pivot_mpi_locus *l, void *ctx)
{
	struct collect *c = ctx;
	struct balance *b = c->b;
	struct balance_rank *r;
	const char *reason;

	if (!l->has_rank)
		return 0;
	if (b->n_ranks == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;

		r = reallocarray(b->ranks, cap, sizeof(*r));
		if (!r)
			return -ENOMEM;
		b->ranks = r;
		c->cap = cap;
	}
	r = &b->ranks[b->n_ranks++];
	memset(r, 0, sizeof(*r));
	r->rank = l->rank;
	r->locus = l->locus;
	r->node = strdup(l->node ? l->node : "");
	r->app_time = seconds_of(&l->app_time);
	r->app_time_quality = quality_static(l->app_time.quality);
	reason = l->app_time.reason;
	if (!reason && !l->app_time.quality)
		reason = "app time not derived";
	if (reason && !(r->app_time_reason = strdup(reason)))
		return -ENOMEM;
	r->mpi_time = seconds_of(&l->mpi_time);
	r->cpu_time = seconds_of(&l->cpu_time);
	r->process_wall_time = seconds_of(&l->wall_time);
	r->run_delay = seconds_of(&l->run_delay);
	if (balance_probe_rank(r, l))
		return -ENOMEM;
	r->outside_mpi_time = r->app_time - r->mpi_time; /* NAN propagates */
	r->mpi_fraction = r->app_time > 0 ? r->mpi_time / r->app_time : NAN;
	if (!r->node)
		return -ENOMEM;
	return 0;
}

/* after every rank's MPI time and error are final (balance_samples) */
static void compute_run_level(struct balance *b)
{
	double sum = 0, max = -1, mpi = 0, app = 0, var = 0;
	size_t i, n = 0, n_app = 0;
	int busiest = -1;

	for (i = 0; i < b->n_ranks; i++) {
		const struct balance_rank *r = &b->ranks[i];

		if (!isnan(r->app_time) && !isnan(r->mpi_time)) {
			app += r->app_time;
			mpi += r->mpi_time;
			var += r->mpi_time_error * r->mpi_time_error;
			n_app++;
		}
		if (isnan(r->outside_mpi_time))
			continue;
		sum += r->outside_mpi_time;
		n++;
		if (r->outside_mpi_time > max) {
			max = r->outside_mpi_time;
			busiest = r->rank;
		}
	}
	b->imbalance = b->efficiency = b->busiest_factor = b->mpi_share = NAN;
	b->mpi_share_error = NAN;
	b->busiest_rank = -1;
	b->imbalance_not_applicable = NULL;
	if (n_app && app > 0) {
		b->mpi_share = mpi / app;
		b->mpi_share_error = sqrt(var) / app;
	}
	if (n == 1) {
		b->imbalance_not_applicable = BALANCE_NA_ONE_RANK;
		return;
	}
	if (!n || !(sum > 0) || !(max > 0))
		return;
	b->imbalance = max / (sum / n);
	b->efficiency = (sum / n) / max;
	b->busiest_factor = b->imbalance;
	b->busiest_rank = busiest;
}

static int by_locus(const void *a, const void *b)
{
	const struct locus_index *x = a, *y = b;

	return x->locus < y->locus ? -1 : x->locus > y->locus;
}

static int build_index(struct collect *c)
{
	size_t i;

	c->index = calloc(c->b->n_ranks + 1, sizeof(*c->index));
	if (!c->index)
		return -ENOMEM;
	for (i = 0; i < c->b->n_ranks; i++) {
		c->index[i].locus = c->b->ranks[i].locus;
		c->index[i].idx = i;
	}
	qsort(c->index, c->b->n_ranks, sizeof(*c->index), by_locus);
	return 0;
}

static char *location_of(const struct pivot_mpi_call *m)
{
	char *s = NULL;
	int n;

	if (m->source_file && m->line > 0)
		n = asprintf(&s, "%s:%d", m->source_file, m->line);
	else if (m->source_file)
		n = asprintf(&s, "%s", m->source_file);
	else
		n = asprintf(&s, "%s+0x%" PRIx64, m->module ? m->module : "?", m->offset);
	return n < 0 ? NULL : s;
}

static void call_site_release(struct balance_call_site *cs)
{
	free(cs->function);
	free(cs->location);
	free(cs->file);
	free(cs->containing_function);
	free(cs->module);
	free(cs->bytes_reason);
	free(cs->per_rank);
	free(cs->estimate);
}

static int call_site_open(struct collect *c, const struct pivot_mpi_call *m)
{
	struct balance *b = c->b;
	struct balance_call_site *cs;
	size_t i;

	cs = reallocarray(b->call_sites, b->n_call_sites + 1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	b->call_sites = cs;
	cs = &b->call_sites[b->n_call_sites++];
	memset(cs, 0, sizeof(*cs));
	cs->has_bytes = 1;
	cs->min_ns = UINT64_MAX;
	cs->line = m->line > 0 ? m->line : 0;
	cs->offset = m->offset;
	cs->function = strdup(m->function ? m->function : "");
	cs->module = strdup(m->module ? m->module : "");
	cs->location = location_of(m);
	cs->file = m->source_file ? strdup(m->source_file) : NULL;
	cs->containing_function = m->containing_function ? strdup(m->containing_function) : NULL;
	cs->per_rank = calloc(b->n_ranks + 1, sizeof(*cs->per_rank));
	if (!cs->function || !cs->module || !cs->location || (m->source_file && !cs->file) ||
	    (m->containing_function && !cs->containing_function) || !cs->per_rank)
		return -ENOMEM;
	for (i = 0; i < b->n_ranks; i++)
		cs->per_rank[i].rank = b->ranks[i].rank;
	c->cur = cs;
	c->cur_call_site = m->call_site;
	return 0;
}

static int collect_call(const struct pivot_mpi_call *m, void *ctx)
{
	struct collect *c = ctx;
	struct balance_call_site *cs = c->cur;
	struct locus_index key = {.locus = m->locus}, *hit;
	int err;

	if (!cs || c->cur_call_site != m->call_site || strcmp(cs->function, m->function)) {
		err = call_site_open(c, m);
		if (err)
			return err;
		cs = c->cur;
	}
	cs->calls += m->calls;
	cs->total_ns += m->total_ns;
	if (m->min_ns < cs->min_ns)
		cs->min_ns = m->min_ns;
	if (m->max_ns > cs->max_ns)
		cs->max_ns = m->max_ns;
	if (m->has_bytes) {
		cs->bytes += m->bytes;
	} else if (cs->has_bytes) {
		/* unavailable is not zero: no partial sum */
		cs->has_bytes = 0;
		cs->bytes = 0;
		cs->bytes_reason = strdup(m->bytes_reason ? m->bytes_reason : "bytes not read");
		if (!cs->bytes_reason)
			return -ENOMEM;
	}
	if (m->estimate && !cs->estimate) {
		if (!(cs->estimate = strdup(m->estimate)))
			return -ENOMEM;
		cs->estimate_rank = m->has_rank ? m->rank : -1;
	}
	/* variances until finish_call_site; NAN (not stated) propagates */
	if (m->estimate) {
		cs->calls_error += m->calls_error * m->calls_error;
		cs->total_ns_error += m->total_ns_error * m->total_ns_error;
	}
	if (!m->has_rank)
		return 0;
	hit = bsearch(&key, c->index, c->b->n_ranks, sizeof(*c->index), by_locus);
	if (hit) {
		struct balance_rank *r = &c->b->ranks[hit->idx];

		cs->per_rank[hit->idx].calls += m->calls;
		cs->per_rank[hit->idx].total_ns += m->total_ns;
		/* a variance in ns² until finish_rank_errors */
		if (m->estimate && !pivot_mpi_is_lifetime(m->function)) {
			r->mpi_time_estimated = 1;
			r->mpi_time_error += m->total_ns_error * m->total_ns_error;
		}
	}
	return 0;
}

/* the ranks' MPI time errors from the variances collect_call summed (the
 * Run's MPI share's: compute_run_level) */
static void finish_rank_errors(struct balance *b)
{
	size_t i;

	for (i = 0; i < b->n_ranks; i++) {
		struct balance_rank *r = &b->ranks[i];

		r->mpi_time_error = sqrt(r->mpi_time_error) / NS_PER_S;
		r->mpi_fraction_error = r->app_time > 0 ? r->mpi_time_error / r->app_time : NAN;
	}
}

/* Square root of a small non-negative x by Newton's method: the program
 * links without libm. Converges to the last ulp in a few steps for the
 * normalised variances it is given (x <= number of ranks). */
static double sqrt_newton(double x)
{
	double g = x > 1 ? x : 1, next;
	int i;

	if (!(x > 0))
		return 0;
	for (i = 0; i < 2000; i++) {
		next = 0.5 * (g + x / g);
		if (next >= g) /* decreasing from above until it stops */
			break;
		g = next;
	}
	return g;
}

static void finish_call_site(struct balance_call_site *cs, size_t n_ranks)
{
	double mean = 0, var = 0, d;
	size_t i, callers = 0;

	cs->calls_error = sqrt(cs->calls_error);
	cs->total_ns_error = sqrt(cs->total_ns_error);
	if (cs->min_ns == UINT64_MAX)
		cs->min_ns = 0;
	if (!cs->has_bytes)
		cs->bytes = 0;
	cs->mean_ns = cs->calls ? (double)cs->total_ns / (double)cs->calls : NAN;
	cs->cov = NAN;
	cs->cov_not_applicable = NULL;
	for (i = 0; i < n_ranks; i++)
		callers += cs->per_rank[i].calls > 0;
	if (callers < 2) { /* no ranks sharing it: nothing to compare */
		cs->cov_not_applicable = n_ranks < 2 ? BALANCE_NA_ONE_RANK : BALANCE_NA_ONE_CALLER;
		return;
	}
	for (i = 0; i < n_ranks; i++)
		mean += (double)cs->per_rank[i].total_ns;
	mean /= (double)n_ranks;
	if (!(mean > 0))
		return;
	/* variance of total / mean: its square root is the COV */
	for (i = 0; i < n_ranks; i++) {
		d = (double)cs->per_rank[i].total_ns / mean - 1.0;
		var += d * d;
	}
	cs->cov = sqrt_newton(var / (double)n_ranks);
}

static int tie_break(const struct balance_call_site *x, const struct balance_call_site *y)
{
	int c;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	c = strcmp(x->function, y->function);
	return c ? c : strcmp(x->location, y->location);
}

static int by_time(const void *a, const void *b)
{
	return tie_break(a, b);
}

static int by_bytes(const void *a, const void *b)
{
	const struct balance_call_site *x = a, *y = b;

	if (x->has_bytes != y->has_bytes)
		return x->has_bytes ? -1 : 1;
	if (x->has_bytes && x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return tie_break(x, y);
}

void balance_sort_call_sites(struct balance *b, enum balance_order order)
{
	if (!b || !b->n_call_sites)
		return;
	qsort(b->call_sites, b->n_call_sites, sizeof(*b->call_sites),
	      order == BALANCE_BY_BYTES ? by_bytes : by_time);
}

struct balance *balance__new(struct pivot *p)
{
	struct collect c = {0};
	struct balance *b;
	size_t i;
	int err;

	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	c.b = b;
	err = pivot_for_each_mpi_locus(p, collect_rank, &c);
	if (err)
		goto cleanup;
	err = balance_probe_run(b);
	if (!err)
		err = build_index(&c);
	if (err)
		goto cleanup;
	err = pivot_for_each_mpi_call(p, collect_call, &c);
	if (err)
		goto cleanup;
	for (i = 0; i < b->n_call_sites; i++)
		finish_call_site(&b->call_sites[i], b->n_ranks);
	finish_rank_errors(b);
	err = balance_samples(p, b);
	if (err)
		goto cleanup;
	compute_run_level(b);
	balance_sort_call_sites(b, BALANCE_BY_TIME);
	free(c.index);
	return b;
cleanup:
	free(c.index);
	balance__free(b);
	errno = -err;
	return NULL;
}

void balance__free(struct balance *b)
{
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->n_ranks; i++) {
		free(b->ranks[i].node);
		free(b->ranks[i].app_time_reason);
		balance_probe_rank_free(&b->ranks[i]);
		balance_samples_rank_free(&b->ranks[i]);
	}
	balance_probe_run_free(b);
	free(b->ranks);
	for (i = 0; i < b->n_call_sites; i++)
		call_site_release(&b->call_sites[i]);
	free(b->call_sites);
	free(b);
}
