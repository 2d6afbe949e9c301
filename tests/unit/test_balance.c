/* Tests of analysis/balance on the 4-rank pivot of mpi_fixture.h: per-rank
 * rows (estimated and unavailable values), run-level imbalance, efficiency
 * and MPI share, call sites across ranks (sums, min, max, COV with ranks
 * that never called counting as 0, not applicable with one rank calling),
 * unavailable bytes, the sort helpers,
 * and a Run without MPI data. */
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
		} else {
			/* no MPI_Finalize: estimated from the last time seen */
			assert_string_equal(x->app_time_quality, "estimated");
			assert_string_equal(x->app_time_reason, "MPI_Finalize not reached");
			/* no ProcessExit: unavailable, never 0 */
			assert_true(isnan(x->cpu_time));
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
