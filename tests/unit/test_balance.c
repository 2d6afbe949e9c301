/* Tests of analysis/balance on the 4-rank pivot of mpi_fixture.h: per-rank
 * rows (estimated and unavailable values), run-level imbalance, efficiency
 * and MPI share, call sites across ranks (sums, min, max, COV with ranks
 * that never called counting as 0, not applicable with one rank calling),
 * unavailable bytes, the sort helpers,
 * a Run without MPI data, nunatak's probe cost taken out of the
 * ranks' times (analysis/balance_probe.c), and the estimates of ranks
 * probed in sampled windows (errors in quadrature over ranks and sites),
 * and the MPI time of such a rank from its samples (balance_samples). */
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

#include "analysis/balance.h"
#include "analysis/balance_samples.h"
#include "tests/unit/mpi_fixture.h"
#include "tests/unit/test_helpers.h"

#define EPS 1e-12

static char tmpdir[PATH_MAX];

static struct pivot *mpi_pivot(const char *name)
{
	struct pivot *p = fx_build(tmpdir, name);

	assert_non_null(p);
	return p;
}

static const struct balance_call_site *find_site(const struct balance *b, const char *function)
{
	size_t i;

	for (i = 0; i < b->n_call_sites; i++)
		if (!strcmp(b->call_sites[i].function, function))
			return &b->call_sites[i];
	fail_msg("no call site %s", function);
	return NULL;
}

static void test_ranks(void **state)
{
	struct pivot *p = mpi_pivot("ranks.sqlite");
	struct balance *b = balance__new(p);
	static const double app[4] = {3.3, 3.8, 4.1, 4.6}, mpi[4] = {2.3, 1.8, 1.1, 0.6};
	size_t r;

	(void)state;
	assert_non_null(b);
	assert_int_equal(b->n_ranks, 4); /* the launcher has no rank */
	for (r = 0; r < 4; r++) {
		const struct balance_rank *x = &b->ranks[r];

		assert_int_equal(x->rank, r);
		assert_string_equal(x->node, fx_nodes[r]);
		assert_near(x->app_time, app[r], EPS);
		assert_near(x->mpi_time, mpi[r], EPS);
		assert_near(x->mpi_fraction, mpi[r] / app[r], EPS);
		assert_near(x->outside_mpi_time, (double)(r + 1), 1e-9);
		if (r < 3) {
			assert_string_equal(x->app_time_quality, "measured");
			assert_null(x->app_time_reason);
			assert_near(x->cpu_time, 1.75, EPS);
			assert_near(x->process_wall_time, 5.0, EPS);
			if (r == 1) { /* its exit has no run-queue delay */
				assert_true(isnan(x->run_delay));
				assert_true(isnan(x->asleep_fraction));
			} else {
				assert_near(x->run_delay, 0.25, EPS);
				/* the least share of its app window asleep */
				assert_near(x->asleep_fraction,
					    fmax(x->wall_app_time - 1.75 - 0.25, 0) / x->wall_app_time,
					    EPS);
			}
		} else {
			/* no MPI_Finalize: estimated from the last time seen */
			assert_string_equal(x->app_time_quality, "estimated");
			assert_string_equal(x->app_time_reason, "MPI_Finalize not reached");
			/* no ProcessExit: unavailable, never 0 */
			assert_true(isnan(x->cpu_time));
			assert_true(isnan(x->run_delay));
			assert_true(isnan(x->asleep_fraction));
		}
	}
	/* outside MPI: 1, 2, 3, 4 s → mean 2.5, max 4 */
	assert_near(b->imbalance, 1.6, 1e-9);
	assert_near(b->efficiency, 0.625, 1e-9);
	assert_int_equal(b->busiest_rank, 3);
	assert_near(b->busiest_factor, 1.6, 1e-9);
	assert_near(b->mpi_share, 5.8 / 15.8, 1e-12);
	balance__free(b);
	pivot__free(p);
}

static void test_call_sites(void **state)
{
	struct pivot *p = mpi_pivot("sites.sqlite");
	struct balance *b = balance__new(p);
	const struct balance_call_site *cs;
	static const char *const by_time[] = {"MPI_Allreduce", "MPI_Init",     "MPI_Alltoallv",
					      "MPI_Send",      "MPI_Finalize", "MPI_Recv"};
	static const char *const by_bytes[] = {"MPI_Allreduce", "MPI_Send",	 "MPI_Init",
					       "MPI_Finalize",	"MPI_Alltoallv", "MPI_Recv"};
	size_t i;

	(void)state;
	assert_non_null(b);
	assert_int_equal(b->n_call_sites, 6);
	/* default order: total time, ties (0.4 s) by function */
	for (i = 0; i < 6; i++)
		assert_string_equal(b->call_sites[i].function, by_time[i]);

	cs = find_site(b, "MPI_Allreduce");
	assert_int_equal(cs->calls, 400); /* rank 0: 100, the larger running total */
	assert_int_equal(cs->total_ns, 5 * FX_S);
	assert_near(cs->mean_ns, 12500000.0, EPS);
	assert_int_equal(cs->min_ns, 1000);
	assert_int_equal(cs->max_ns, 4000000);
	assert_true(cs->has_bytes);
	assert_int_equal(cs->bytes, 3200);
	assert_null(cs->bytes_reason);
	/* per rank 2, 1.5, 1, 0.5 s: population std / mean = sqrt(0.2) */
	assert_near(cs->cov, 0.44721359549995793928, 1e-12);
	assert_string_equal(cs->location, "solver.c:42");
	assert_string_equal(cs->file, "solver.c");
	assert_int_equal(cs->line, 42);
	assert_string_equal(cs->containing_function, "compute");
	assert_string_equal(cs->module, "app");
	assert_int_equal(cs->offset, 0x1100);
	for (i = 0; i < 4; i++) {
		assert_int_equal(cs->per_rank[i].rank, i);
		assert_int_equal(cs->per_rank[i].calls, 100);
		assert_int_equal(cs->per_rank[i].total_ns, (4 - i) * FX_S / 2);
	}

	/* ranks 2 and 3 never called it: they count as 0 → 0.2, 0.2, 0, 0 */
	cs = find_site(b, "MPI_Send");
	assert_int_equal(cs->calls, 20);
	assert_int_equal(cs->bytes, 2000);
	assert_near(cs->cov, 1.0, 1e-12); /* ranks 0 and 1 call it: they are compared */
	assert_null(cs->cov_not_applicable);
	assert_int_equal(cs->per_rank[2].calls, 0);
	assert_int_equal(cs->per_rank[3].total_ns, 0);
	assert_string_equal(cs->containing_function, "exchange");

	/* one rank without bytes: the sum is unavailable, not 1500 */
	cs = find_site(b, "MPI_Alltoallv");
	assert_false(cs->has_bytes);
	assert_int_equal(cs->bytes, 0);
	assert_string_equal(cs->bytes_reason, "vector counts not read");
	assert_near(cs->cov, 0.0, 1e-12);
	assert_string_equal(cs->location, "app+0x1300"); /* unresolved */
	assert_null(cs->file);
	assert_int_equal(cs->line, 0);
	assert_near(cs->mean_ns, 20000000.0, EPS);

	cs = find_site(b, "MPI_Recv");
	assert_int_equal(cs->total_ns, 0);
	assert_true(isnan(cs->cov)); /* one rank calls it: nothing to compare */
	assert_string_equal(cs->cov_not_applicable, BALANCE_NA_ONE_CALLER);
	assert_null(find_site(b, "MPI_Allreduce")->cov_not_applicable);
	assert_string_equal(cs->location, "solver.c:80");

	balance_sort_call_sites(b, BALANCE_BY_BYTES);
	for (i = 0; i < 6; i++)
		assert_string_equal(b->call_sites[i].function, by_bytes[i]);
	balance_sort_call_sites(b, BALANCE_BY_TIME);
	for (i = 0; i < 6; i++)
		assert_string_equal(b->call_sites[i].function, by_time[i]);
	balance__free(b);
	pivot__free(p);
}

/* the same pivot derived twice gives the same balance */
static void test_idempotent(void **state)
{
	struct pivot *p = mpi_pivot("again.sqlite");
	struct balance *b;

	(void)state;
	assert_int_equal(pivot_derive_measurements(p), 0);
	assert_int_equal(pivot_derive_mpi_measurements(p), 0);
	b = balance__new(p);
	assert_non_null(b);
	assert_int_equal(b->n_ranks, 4);
	assert_near(b->mpi_share, 5.8 / 15.8, 1e-12);
	assert_near(b->ranks[0].mpi_time, 2.3, EPS);
	balance__free(b);
	pivot__free(p);
}

static void test_no_mpi(void **state)
{
	char path[PATH_MAX + 64];
	struct pivot *p;
	struct balance *b;

	(void)state;
	snprintf(path, sizeof(path), "%s/empty.sqlite", tmpdir);
	p = pivot__create(path);
	assert_non_null(p);
	assert_int_equal(pivot_derive_measurements(p), 0);
	b = balance__new(p);
	assert_non_null(b);
	assert_int_equal(b->n_ranks, 0);
	assert_int_equal(b->n_call_sites, 0);
	assert_true(isnan(b->imbalance));
	assert_true(isnan(b->efficiency));
	assert_true(isnan(b->mpi_share));
	assert_int_equal(b->busiest_rank, -1);
	balance_sort_call_sites(b, BALANCE_BY_BYTES);
	balance__free(b);
	balance__free(NULL);
	/* a pivot from before the MPI tables: no MPI data, not an error */
	assert_int_equal(sqlite3_exec(pivot_sqlite(p),
				      "DROP TABLE mpi_calls;"
				      " DROP TABLE mpi_processes",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(pivot_derive_measurements(p), 0);
	b = balance__new(p);
	assert_non_null(b);
	assert_int_equal(b->n_ranks, 0);
	assert_int_equal(b->n_call_sites, 0);
	balance__free(b);
	pivot__free(p);
	assert_null(balance__new(NULL));
	assert_int_equal(errno, EINVAL);
}

/* Two ranks, rank 0 calibrated: 1000 Allreduce timed 0.5 s in an app
 * window of 1 s, MPI_Init and MPI_Finalize, 10 nested traps: 1012 traps
 * of 10 us, 4 us of each inside the call's timed window. Rank 1 not
 * calibrated. The probes' cost leaves the app window
 * ((1012 - 2) x 10 us) and the MPI time ((1002 - 2) x 4 us + 10 x 10 us);
 * outside MPI keeps only the application's. */
static void test_probe_cost(void **state)
{
	struct fx_batch *t = calloc(1, sizeof(*t));
	char path[PATH_MAX + 32];
	struct balance *b;
	struct pivot *p;
	uint32_t r;

	(void)state;
	assert_non_null(t);
	snprintf(path, sizeof(path), "%s/probe.sqlite", tmpdir);
	p = pivot__create(path);
	assert_non_null(p);
	fx_init(t, 1);
	for (r = 0; r < 2; r++) {
		fx_process(t, r, 1 * FX_S, 2 * FX_S, 0);
		fx_call(t, r, "MPI_Init", 0x1000, 1, 300000000, 300000000, 300000000, 0, NULL, 0);
		fx_call(t, r, "MPI_Finalize", 0x1010, 1, 50000000, 50000000, 50000000, 0, NULL, 0);
		fx_call(t, r, "MPI_Allreduce", 0x1100, 1000, FX_S / 2, 1000, 1000000, 800, NULL, 1);
		t->procs[r].has_probed_calls = 1;
		t->procs[r].probed_calls = 1012;
	}
	t->procs[0].has_probe_cost_ns = t->procs[0].has_probe_cost_in_window_ns = 1;
	t->procs[0].probe_cost_ns = 10000;
	t->procs[0].probe_cost_in_window_ns = 4000;
	t->procs[0].probing = "every call";
	t->procs[1].probe_cost_reason = "not measured here";
	assert_int_equal(pivot_store_batch(p, &t->b), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	b = balance__new(p);
	assert_non_null(b);
	assert_int_equal(b->n_ranks, 2);
	/* rank 0: the probes out of both times */
	assert_near(b->ranks[0].wall_app_time, 1.0, EPS);
	assert_near(b->ranks[0].wall_mpi_time, 0.5, EPS);
	assert_near(b->ranks[0].app_time, 1.0 - 1010 * 10e-6, 1e-9);
	assert_near(b->ranks[0].mpi_time, 0.5 - (1000 * 4e-6 + 10 * 10e-6), 1e-9);
	assert_near(b->ranks[0].outside_mpi_time, 0.5 - 1010 * 10e-6 + 1000 * 4e-6 + 10 * 10e-6,
		    1e-9);
	assert_near(b->ranks[0].probe_cost_per_call_ns, 10000, EPS);
	assert_int_equal(b->ranks[0].probe_calls, 1012);
	assert_near(b->ranks[0].probe_cost_s, 1012 * 10e-6, 1e-12);
	assert_near(b->ranks[0].probe_cost_share, 1012 * 10e-6 / 1.0, 1e-12);
	assert_null(b->ranks[0].probe_cost_reason);
	assert_string_equal(b->ranks[0].probing, "every call");
	assert_true(isnan(b->ranks[0].probe_budget));
	/* rank 1: as measured, the cost unavailable with its reason */
	assert_near(b->ranks[1].app_time, 1.0, EPS);
	assert_near(b->ranks[1].mpi_time, 0.5, EPS);
	assert_true(isnan(b->ranks[1].probe_cost_s));
	assert_true(isnan(b->ranks[1].probe_cost_share));
	assert_string_equal(b->ranks[1].probe_cost_reason, "not measured here");
	assert_int_equal(b->ranks[1].probe_calls, 1012);
	/* the Run: the calibrated ranks only; the share uses the wall times */
	assert_near(b->mpi_share, (b->ranks[0].mpi_time + 0.5) / (b->ranks[0].app_time + 1.0), 1e-12);
	assert_int_equal(b->probe_cost.ranks, 1);
	assert_int_equal(b->probe_cost.calls, 1012);
	assert_near(b->probe_cost.seconds, 1012 * 10e-6, 1e-12);
	assert_near(b->probe_cost.share, 1012 * 10e-6 / 1.0, 1e-12);
	assert_near(b->probe_cost.per_call_ns_min, 10000, EPS);
	assert_near(b->probe_cost.per_call_ns_max, 10000, EPS);
	assert_string_equal(b->probe_cost.node, fx_nodes[0]);
	balance__free(b);
	pivot__free(p);
	free(t);
}

/* Two ranks of 1 s each, probed in sampled windows: rank 0's Allreduce
 * estimated (1000 ± 30 calls, 0.4 ± 0.004 s), rank 1's (1100 ± 40, 0.3 ±
 * 0.003 s); a Barrier measured on both (0.1 s each), MPI_Init measured.
 * The site: 2100 ± √(30² + 40²) = 50 calls, 0.7 ± 0.005 s, the text of
 * rank 0; the Barrier and MPI_Init measured (errors 0, no text). Rank 0's
 * MPI time 0.5 ± 0.004 s (the Barrier adds none), share 50 ± 0.4 %; the
 * Run's share 45 ± √(0.004² + 0.003²) / 2 s = 0.25 %. */
static void test_estimates(void **state)
{
	static const char *const why[2] = {"probed in 2 sampled windows (rank 0)",
					   "probed in 3 sampled windows (rank 1)"};
	static const double calls_err[2] = {30, 40}, ns_err[2] = {4e6, 3e6};
	struct fx_batch *t = calloc(1, sizeof(*t));
	const struct balance_call_site *cs;
	char path[PATH_MAX + 32];
	struct balance *b;
	struct pivot *p;
	uint32_t r;
	size_t i;

	(void)state;
	assert_non_null(t);
	snprintf(path, sizeof(path), "%s/estimates.sqlite", tmpdir);
	p = pivot__create(path);
	assert_non_null(p);
	fx_init(t, 1);
	for (r = 0; r < 2; r++) {
		fx_process(t, r, 1 * FX_S, 2 * FX_S, 0);
		fx_call(t, r, "MPI_Init", 0x1000, 1, 300000000, 300000000, 300000000, 0, NULL, 0);
		fx_call(t, r, "MPI_Barrier", 0x1200, 10, FX_S / 10, 1000, 1000000, 0, NULL, 0);
		fx_call(t, r, "MPI_Allreduce", 0x1100, 1000 + 100 * r, (4 - r) * FX_S / 10, 1000,
			1000000, 800, NULL, 1);
		i = t->b.n_mpi_call_sites - 1;
		t->calls[i].estimate = (char *)why[r];
		t->calls[i].has_calls_error = t->calls[i].has_total_ns_error = 1;
		t->calls[i].calls_error = calls_err[r];
		t->calls[i].total_ns_error = ns_err[r];
	}
	assert_int_equal(pivot_store_batch(p, &t->b), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	b = balance__new(p);
	assert_non_null(b);
	cs = find_site(b, "MPI_Allreduce");
	assert_int_equal(cs->calls, 2100);
	assert_string_equal(cs->estimate, why[0]);
	assert_int_equal(cs->estimate_rank, 0);
	assert_near(cs->calls_error, 50, 1e-9);
	assert_near(cs->total_ns_error, 5e6, 1e-6);
	cs = find_site(b, "MPI_Barrier");
	assert_null(cs->estimate);
	assert_near(cs->calls_error, 0, EPS);
	assert_near(cs->total_ns_error, 0, EPS);
	assert_null(find_site(b, "MPI_Init")->estimate);
	for (r = 0; r < 2; r++) {
		assert_true(b->ranks[r].mpi_time_estimated);
		assert_near(b->ranks[r].mpi_time, 0.5 - 0.1 * r, 1e-9);
		assert_near(b->ranks[r].mpi_time_error, ns_err[r] / 1e9, 1e-12);
		assert_near(b->ranks[r].mpi_fraction_error, ns_err[r] / 1e9 / 1.0, 1e-12);
	}
	assert_near(b->mpi_share, 0.9 / 2, 1e-9);
	assert_near(b->mpi_share_error, 5e-3 / 2, 1e-12);
	/* no sample in this pivot: the windows' estimate stays, and says so */
	for (r = 0; r < 2; r++) {
		assert_string_equal(b->ranks[r].mpi_time_method, BALANCE_METHOD_WINDOWS);
		assert_false(b->ranks[r].has_samples);
		assert_non_null(strstr(b->ranks[r].mpi_time_method_reason, "no sample"));
		assert_true(isnan(b->ranks[r].windows_mpi_time));
	}
	balance__free(b);
	pivot__free(p);
	free(t);
}

/* a rank of 2 s of app time (2.1 s as the clocks read it), its windows'
 * MPI time 1.5 ± 0.1 s */
static struct balance_rank sampled_rank(uint64_t app, uint64_t mpi, double cpu)
{
	struct balance_rank r = {0};

	r.app_time = 2.0;
	r.wall_app_time = 2.1;
	r.mpi_time = 1.5;
	r.mpi_time_error = 0.1;
	r.mpi_fraction = 0.75;
	r.mpi_fraction_error = 0.05;
	r.outside_mpi_time = 0.5;
	r.cpu_time = cpu;
	r.process_wall_time = r.run_delay = NAN; /* the old rule unless a test sets them */
	r.mpi_time_estimated = 1;
	r.has_samples = app > 0;
	r.app_samples = app;
	r.mpi_samples = mpi;
	return r;
}

/* The arithmetic of a sampled rank's MPI time (balance_samples.h):
 * 996 of 1000 samples inside MPI on a busy rank (CPU 2.0 of 2.1 s):
 * MPI time 0.996 x 2 s, error sqrt(0.996 x 0.004 / 1000) x 2 s; 1000 of
 * 1000: the error floor of one sample (2 s / 1000); CPU 1.5 s of 2.1 s
 * (71 %: below 90 %) with no run-queue delay, no samples, CPU
 * unavailable: the windows' estimate stays with the reason; a rank
 * measured on every call: unchanged. With its run-queue delay, the rule
 * asks how much of its app window (2.1 s) its process slept at least (its
 * whole life's CPU and wait counted against the window): 1.5 s on a CPU,
 * 0.9 s waiting for one: not asleep, its samples used (CPU 71 % of its
 * app time would have refused them); 0.1 s waiting: asleep at least 24 %,
 * the windows stay. */
static void test_samples_rank(void **state)
{
	struct balance_rank r;

	(void)state;
	r = sampled_rank(1000, 996, 2.0);
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_SAMPLES);
	assert_near(r.mpi_time, 0.996 * 2.0, EPS);
	assert_near(r.mpi_time_error, sqrt(0.996 * 0.004 / 1000) * 2.0, EPS);
	assert_near(r.mpi_fraction, 0.996, EPS);
	assert_near(r.mpi_fraction_error, sqrt(0.996 * 0.004 / 1000), EPS);
	assert_near(r.outside_mpi_time, 2.0 - 0.996 * 2.0, EPS);
	assert_near(r.windows_mpi_time, 1.5, EPS);
	assert_near(r.windows_mpi_time_error, 0.1, EPS);
	assert_null(r.mpi_time_method_reason);

	r = sampled_rank(1000, 1000, 2.0);
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_SAMPLES);
	assert_near(r.mpi_time, 2.0, EPS);
	assert_near(r.mpi_time_error, 2.0 / 1000, EPS);
	assert_near(r.outside_mpi_time, 0, EPS);

	r = sampled_rank(1000, 996, 1.5);
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_WINDOWS);
	assert_near(r.mpi_time, 1.5, EPS);
	assert_near(r.mpi_time_error, 0.1, EPS);
	assert_near(r.outside_mpi_time, 0.5, EPS);
	assert_true(isnan(r.windows_mpi_time));
	assert_non_null(strstr(r.mpi_time_method_reason, "CPU time is 71% of its app time"));
	balance_samples_rank_free(&r);

	r = sampled_rank(0, 0, 2.0);
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_WINDOWS);
	assert_near(r.mpi_time, 1.5, EPS);
	assert_non_null(strstr(r.mpi_time_method_reason, "no sample"));
	balance_samples_rank_free(&r);

	r = sampled_rank(1000, 996, NAN);
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_WINDOWS);
	assert_non_null(strstr(r.mpi_time_method_reason, "CPU time is unavailable"));
	balance_samples_rank_free(&r);

	r = sampled_rank(1000, 10, 2.0);
	r.mpi_time_estimated = 0;
	r.process_wall_time = 2.5;
	r.run_delay = 0.9;
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_PROBES);
	assert_near(r.mpi_time, 1.5, EPS);
	assert_null(r.mpi_time_method_reason);
	assert_near(r.asleep_fraction, 0, EPS); /* every rank's: 2.1 - 2.0 - 0.9 < 0 */

	/* runnable, waiting for a CPU: not asleep */
	r = sampled_rank(1000, 996, 1.5);
	r.process_wall_time = 2.5;
	r.run_delay = 0.9;
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_SAMPLES);
	assert_near(r.asleep_fraction, 0, EPS); /* 2.1 - 1.5 - 0.9 < 0 */
	assert_near(r.mpi_time, 0.996 * 2.0, EPS);
	assert_near(r.windows_mpi_time, 1.5, EPS);
	assert_null(r.mpi_time_method_reason);

	/* asleep at least (2.1 - 1.5 - 0.1) / 2.1 = 24 % of its app window:
	 * maybe in MPI */
	r = sampled_rank(1000, 996, 1.5);
	r.process_wall_time = 2.5;
	r.run_delay = 0.1;
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_WINDOWS);
	assert_near(r.asleep_fraction, 0.5 / 2.1, EPS);
	assert_near(r.mpi_time, 1.5, EPS);
	assert_true(isnan(r.windows_mpi_time));
	assert_non_null(strstr(r.mpi_time_method_reason, "asleep (neither on a CPU nor waiting "
							 "for one) at least 24% of its app time"));
	assert_non_null(strstr(r.mpi_time_method_reason, "0.100 s waiting"));
	balance_samples_rank_free(&r);

	/* no run-queue delay: the CPU rule, and the reason says so */
	r = sampled_rank(1000, 996, 1.5);
	r.process_wall_time = 2.5;
	assert_int_equal(balance_samples_rank(&r), 0);
	assert_true(isnan(r.asleep_fraction));
	assert_string_equal(r.mpi_time_method, BALANCE_METHOD_WINDOWS);
	assert_non_null(strstr(r.mpi_time_method_reason, "run-queue delay is unavailable"));
	balance_samples_rank_free(&r);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "balance") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ranks),
	    cmocka_unit_test(test_call_sites),
	    cmocka_unit_test(test_idempotent),
	    cmocka_unit_test(test_no_mpi),
	    cmocka_unit_test(test_probe_cost),
	    cmocka_unit_test(test_estimates),
	    cmocka_unit_test(test_samples_rank),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
