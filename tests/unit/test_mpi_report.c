/* test_mpi_report — what a publish makes of the kernel's MPI call sites,
 * on real BPF maps: the map full (MAX_MPI_SITES keys) of two processes,
 * each (process, function, call site) under two datatypes, becomes one
 * Batch site per (process, function, call site) with the sum of both
 * (calls, time, extremes) and one MPI lifetime per process; and the
 * lookup is hashed, so a full map is reported in milliseconds (the
 * figure is printed; a linear search took ~16384² / 4 comparisons); and
 * mpi_report_sites_of keeps the processes it is asked for only.
 *
 * The sites are written into the map of a real mpi_probes (its own, no
 * probe attached); no MPI library is known, so bytes are unavailable with
 * that reason.
 *
 * Without root or kernel BTF every test is SKIPPED with the reason.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/mpi_report.h"
#include "userspace/agent/sampler.h"

#define PROCESSES 2
#define SITES (MAX_MPI_SITES / PROCESSES / 2) /* per process, each under 2 datatypes */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void locus_of(void *ctx, pid_t tgid, struct batch_locus *l)
{
	(void)ctx;
	memset(l, 0, sizeof(*l));
	l->tgid = l->tid = tgid;
	l->world_size = -1;
}

static uint64_t no_exit(void *ctx, pid_t tgid)
{
	(void)ctx, (void)tgid;
	return 0;
}

static int only_1000(void *ctx, pid_t tgid)
{
	(void)ctx;
	return tgid == 1000;
}

static void test_full_site_map(void **state)
{
	struct sampler_opts so = {.frequency = 99};
	const char *why_not = bpf_unavailable();
	Nunatak__Wire__Batch *batch;
	struct module_table *table;
	struct batch_builder *b;
	struct mpi_probes *mp;
	struct sampler *s;
	char err[256] = "";
	uint64_t t0, took;
	size_t i, n_send = 0;
	int fd, d;
	__u32 tgid;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	s = sampler__new(&so, err, sizeof(err));
	if (!s)
		fail_msg("sampler__new: %s", err);
	mp = mpi_probes__new(sampler_targets_fd(s), 0, err, sizeof(err));
	if (!mp)
		fail_msg("mpi_probes__new: %s", err);
	table = module_table__new();
	b = batch_builder__new("run", "node", 0);
	assert_non_null(table);
	assert_non_null(b);
	fd = mpi_probes_sites_fd(mp);
	for (tgid = 1000; tgid < 1000 + PROCESSES; tgid++)
		for (i = 0; i < SITES; i++)
			for (d = 0; d < 2; d++) {
				struct mpi_site_key k = {.tgid = tgid,
							 .function = i % 2 ? MPI_FN_SEND
									   : MPI_FN_BARRIER,
							 .call_site = 0x400000 + i * 16,
							 .datatype = (uint64_t)d};
				struct mpi_site_value v = {.calls = 1 + (uint64_t)d,
							   .total_ns = 100 * (1 + (uint64_t)d),
							   .min_ns = 10 + (uint64_t)d,
							   .max_ns = 50 + (uint64_t)d,
							   .count_sum = 4};

				assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST), 0);
			}

	t0 = now_ns();
	assert_int_equal(mpi_report_sites(mp, table, b, locus_of, no_exit, NULL), 0);
	took = now_ns() - t0;
	printf("%d kernel sites reported as %d Batch sites in %.1f ms\n", MAX_MPI_SITES,
	       PROCESSES * SITES, took / 1e6);

	batch = batch_builder_envelope(b)->batch;
	assert_int_equal(batch->n_mpi_call_sites, PROCESSES * SITES);
	for (i = 0; i < batch->n_mpi_call_sites; i++) {
		const Nunatak__Wire__MpiCallSite *c = batch->mpi_call_sites[i];

		/* both datatypes' totals in one site */
		assert_int_equal(c->calls, 3);
		assert_int_equal(c->total_ns, 300);
		assert_int_equal(c->min_ns, 10);
		assert_int_equal(c->max_ns, 51);
		if (!strcmp(c->function, "MPI_Send")) {
			n_send++;
			assert_false(c->has_bytes);
			assert_non_null(c->bytes_reason);
		}
	}
	assert_int_equal(n_send, PROCESSES * SITES / 2);
	/* no lifetime without the kernel's record of the process (none here) */
	assert_int_equal(batch->n_mpi_processes, 0);
	/* hashed: a full map in well under a second even on a loaded machine */
	assert_true(took < 2000000000ull);

	batch_builder__free(b);

	/* one Target's processes only */
	b = batch_builder__new("run", "node", 1);
	assert_non_null(b);
	assert_int_equal(mpi_report_sites_of(mp, table, b, locus_of, no_exit, only_1000, NULL), 0);
	batch = batch_builder_envelope(b)->batch;
	assert_int_equal(batch->n_mpi_call_sites, SITES);
	for (i = 0; i < batch->n_mpi_call_sites; i++)
		assert_int_equal(batch->loci[batch->mpi_call_sites[i]->locus]->tgid, 1000);
	batch_builder__free(b);
	module_table__free(table);
	mpi_probes__free(mp);
	sampler__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_site_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
