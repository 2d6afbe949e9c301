/* export_fixture — the Run the tests of report/export_* and of
 * pivot_read_loci read: stacks_fixture.h's pivot (real store, attribution
 * and derivation), its Loci given MPI ranks, MPI processes and MPI Events
 * before the Batch is stored (header-only).
 *
 * Loci: 0 = rank 0 (pid 10, tid 10), 1 = rank 0's second thread (10, 11),
 * 2 = rank 1 (20, 20), 3 = the launcher (5, 5, no rank), 4 = a thread
 * without comm (5, 6, no rank, never sampled). Modules: app (build-id
 * "ab12"), libx.so (never attributed), the kernel. Stacks, innermost
 * first: 0 c<b<main; 1 c(another address)<b<main; 2 c, truncated;
 * 3 clear_page_erms<c<libx+0x7000<main; 4 a name that is not UTF-8;
 * 5 libx+0x7000<main; 6 no frame at all.
 */
#ifndef NUNATAK_TESTS_EXPORT_FIXTURE_H
#define NUNATAK_TESTS_EXPORT_FIXTURE_H

#include "tests/unit/stacks_fixture.h"

/* (stacks_fixture's own builder is not used here) */
static inline void efx_unused(void)
{
	(void)sfx_build;
}

enum { EFX_APP, EFX_LIBX, EFX_KERNEL };

static const struct sfx_module efx_modules[] = {
    [EFX_APP] = {"ab12", "/opt/app/app", "app", 1},
    [EFX_LIBX] = {"cd34", "/opt/app/libx.so", "libx.so", 0},
    [EFX_KERNEL] = {"pseudo:kernel", "[kernel]", "[kernel]", 1},
};

static const struct sfx_name efx_names[] = {
    {EFX_APP, 0x100, "c", RESOLUTION_FUNCTION},
    {EFX_APP, 0x104, "c", RESOLUTION_FUNCTION},
    {EFX_APP, 0x200, "b;weird", RESOLUTION_FUNCTION},
    {EFX_APP, 0x300, "main", RESOLUTION_FUNCTION},
    {EFX_APP, 0x400, "a\nnew\xff", RESOLUTION_SYMBOL},
    {EFX_KERNEL, 0x50, "clear_page_erms", RESOLUTION_SYMBOL},
};

static const struct sfx_locus efx_loci[] = {
    {10, 10, "app", "/opt/app/app"},
    {10, 11, "app", "/opt/app/app"},
    {20, 20, "app", "/opt/app/app"},
    {5, 5, "launcher", "/usr/bin/launcher"},
    {5, 6, NULL, NULL},
};
static const int efx_rank[] = {0, 0, 1, -1, -1};

static const struct sfx_stack efx_stacks[] = {
    {0, 3, {{EFX_APP, 0x100}, {EFX_APP, 0x200}, {EFX_APP, 0x300}}},
    {0, 3, {{EFX_APP, 0x104}, {EFX_APP, 0x200}, {EFX_APP, 0x300}}},
    {1, 1, {{EFX_APP, 0x100}}},
    {0, 4, {{EFX_KERNEL, 0x50}, {EFX_APP, 0x100}, {EFX_LIBX, 0x7000}, {EFX_APP, 0x300}}},
    {0, 1, {{EFX_APP, 0x400}}},
    {0, 2, {{EFX_LIBX, 0x7000}, {EFX_APP, 0x300}}},
    {0, 0, {{0, 0}}},
};

/* (locus, stack, count, in_kernel): 43 samples; (0, 3) in and out of the
 * kernel, summed by the readers */
static const struct sfx_sample efx_samples[] = {
    {0, 0, 6, 0}, {1, 0, 4, 0}, {0, 1, 5, 0}, {1, 2, 3, 0},  {0, 3, 4, 1},
    {0, 3, 2, 0}, {2, 4, 2, 0}, {3, 5, 1, 0}, {2, 0, 10, 0}, {3, 6, 6, 0},
};
#define EFX_TOTAL 43

struct efx_event {
	uint32_t locus;
	const char *function;
	uint64_t start_ns, duration_ns;
	int has_bytes;
	uint64_t bytes;
	int has_peer;
	int32_t peer;
};

static const struct efx_event efx_events[] = {
    {0, "MPI_Send", 5000, 2000, 1, 4096, 1, 1},
    {0, "MPI_Init", 1000, 500, 0, 0, 0, 0},
    {2, "MPI_Recv", 4000, 3500, 1, 4096, 1, 0},
    {2, "MPI_Barrier", 900, 100, 0, 0, 0, 0},
};
#define EFX_N_EVENTS 4

/* what efx_build stores */
enum efx_what {
	EFX_SAMPLES = 1, /* the Stacks and samples (else none) */
	EFX_MPI = 2,	 /* ranks 0 and 1 are MPI processes */
	EFX_EVENTS = 4,	 /* their MPI Events */
	EFX_ALL = 7,
};

/* dir/file: the Run above, stored, attributed, derived */
static struct pivot *efx_build(const char *dir, const char *file, unsigned what)
{
	static struct sfx_batch t; /* large: not on the stack */
	static Nunatak__Wire__MpiEvent ev[EFX_N_EVENTS], *ev_ptrs[EFX_N_EVENTS];
	static Nunatak__Wire__MpiProcess mp[2], *mp_ptrs[2];
	struct sfx f = {efx_modules, 3,	 efx_loci, 5, efx_stacks, 7,
			efx_samples, 10, NULL,	   0, efx_names,  6};
	struct sfx_attribute_ctx ctx = {.f = &f};
	char path[PATH_MAX + 64];
	struct pivot *p;
	size_t i;

	if (!(what & EFX_SAMPLES))
		f.n_stacks = f.n_samples = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	p = pivot__create(path);
	assert_non_null(p);
	ctx.p = p;
	sfx_fill(&t, &f);
	for (i = 0; i < f.n_loci; i++)
		if (efx_rank[i] >= 0) {
			t.loci[i].has_rank = t.loci[i].has_world_size = 1;
			t.loci[i].rank = efx_rank[i];
			t.loci[i].world_size = 2;
		}
	for (i = 0; what & EFX_MPI && i < 2; i++) {
		Nunatak__Wire__MpiProcess m = NUNATAK__WIRE__MPI_PROCESS__INIT;

		m.locus = i ? 2 : 0;
		m.has_init_end_ns = 1;
		m.init_end_ns = 1500;
		mp[i] = m;
		mp_ptrs[i] = &mp[i];
	}
	t.b.n_mpi_processes = what & EFX_MPI ? 2 : 0;
	t.b.mpi_processes = mp_ptrs;
	for (i = 0; what & EFX_EVENTS && i < EFX_N_EVENTS; i++) {
		Nunatak__Wire__MpiEvent e = NUNATAK__WIRE__MPI_EVENT__INIT;

		e.locus = efx_events[i].locus;
		e.function = (char *)efx_events[i].function;
		e.start_ns = efx_events[i].start_ns;
		e.duration_ns = efx_events[i].duration_ns;
		e.has_bytes = efx_events[i].has_bytes;
		e.bytes = efx_events[i].bytes;
		e.has_peer = efx_events[i].has_peer;
		e.peer = efx_events[i].peer;
		ev[i] = e;
		ev_ptrs[i] = &ev[i];
	}
	t.b.n_mpi_events = what & EFX_EVENTS ? EFX_N_EVENTS : 0;
	t.b.mpi_events = ev_ptrs;
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	assert_int_equal(pivot_for_each_module_to_attribute(p, sfx_attribute, &ctx), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	return p;
}

#endif
