/* stacks_fixture — a pivot built from a compact description (modules,
 * Loci, multi-frame Stacks, samples, process exits, names) through the real
 * store, attribution and derivation of pivot.h, for the tests of the
 * processes view, the kernel share and the folded export (header-only:
 * each test is one translation unit).
 *
 * Counter cpu-clock, 1 sample = 1 ms. A module with attribute 0 is left
 * unattributed: its addresses have no Hotspot (use it off the leaf, a
 * sample whose leaf has no Hotspot gets no Measurement). Every address of
 * an attributed module must have a name in names[].
 */
#ifndef NUNATAK_TESTS_STACKS_FIXTURE_H
#define NUNATAK_TESTS_STACKS_FIXTURE_H

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "userspace/pivot/pivot.h"

#define SFX_MAX 32
#define SFX_DEPTH 8

struct sfx_module {
	const char *identity, *path, *display_name;
	int attribute;
};

struct sfx_locus {
	uint32_t tgid, tid;
	const char *comm, *exe;
};

struct sfx_frame {
	uint32_t module;
	uint64_t offset;
};

struct sfx_stack {
	int truncated;
	size_t n; /* frames, innermost first */
	struct sfx_frame frames[SFX_DEPTH];
};

struct sfx_sample {
	uint32_t locus, stack;
	uint64_t count;
	int in_kernel;
};

struct sfx_exit {
	uint32_t locus;
	uint64_t utime_ns, stime_ns;
};

struct sfx_name {
	uint32_t module;
	uint64_t offset;
	const char *name;
	enum resolution_level level;
};

struct sfx {
	const struct sfx_module *modules;
	size_t n_modules;
	const struct sfx_locus *loci;
	size_t n_loci;
	const struct sfx_stack *stacks;
	size_t n_stacks;
	const struct sfx_sample *samples;
	size_t n_samples;
	const struct sfx_exit *exits;
	size_t n_exits;
	const struct sfx_name *names;
	size_t n_names;
};

struct sfx_attribute_ctx {
	struct pivot *p;
	const struct sfx *f;
};

static int sfx_attribute(const struct pivot_module *m, const uint64_t *offsets, size_t n, void *arg)
{
	struct sfx_attribute_ctx *ctx = arg;
	struct attributed_address aa[SFX_MAX];
	uint32_t mod;
	size_t i, j;

	for (mod = 0; mod < ctx->f->n_modules; mod++)
		if (!strcmp(ctx->f->modules[mod].identity, m->identity))
			break;
	assert_true(mod < ctx->f->n_modules);
	if (!ctx->f->modules[mod].attribute)
		return 0;
	assert_true(n <= SFX_MAX);
	memset(aa, 0, sizeof(aa));
	for (i = 0; i < n; i++) {
		for (j = 0; j < ctx->f->n_names; j++)
			if (ctx->f->names[j].module == mod && ctx->f->names[j].offset == offsets[i])
				break;
		assert_true(j < ctx->f->n_names);
		aa[i].address = offsets[i];
		aa[i].level = ctx->f->names[j].level;
		aa[i].function = (char *)ctx->f->names[j].name;
		aa[i].function_start = offsets[i];
	}
	return pivot_store_attribution(ctx->p, m->id, aa, n, "done", NULL);
}

/* the Batch's arrays, filled from f */
struct sfx_batch {
	Nunatak__Wire__Batch b;
	Nunatak__Wire__Module mods[SFX_MAX], *mod_ptrs[SFX_MAX];
	Nunatak__Wire__Locus loci[SFX_MAX], *locus_ptrs[SFX_MAX];
	Nunatak__Wire__Stack stacks[SFX_MAX], *stack_ptrs[SFX_MAX];
	Nunatak__Wire__Address addrs[SFX_MAX][SFX_DEPTH], *addr_ptrs[SFX_MAX][SFX_DEPTH];
	Nunatak__Wire__SampleCount samples[SFX_MAX], *sample_ptrs[SFX_MAX];
	Nunatak__Wire__ProcessExit exits[SFX_MAX], *exit_ptrs[SFX_MAX];
};

static void sfx_fill_stacks(struct sfx_batch *t, const struct sfx *f)
{
	size_t i, k;

	for (i = 0; i < f->n_stacks; i++) {
		Nunatak__Wire__Stack s = NUNATAK__WIRE__STACK__INIT;

		for (k = 0; k < f->stacks[i].n; k++) {
			Nunatak__Wire__Address a = NUNATAK__WIRE__ADDRESS__INIT;

			a.module = f->stacks[i].frames[k].module;
			a.offset = f->stacks[i].frames[k].offset;
			t->addrs[i][k] = a;
			t->addr_ptrs[i][k] = &t->addrs[i][k];
		}
		s.n_frames = f->stacks[i].n;
		s.frames = t->addr_ptrs[i];
		s.truncated = f->stacks[i].truncated;
		t->stacks[i] = s;
		t->stack_ptrs[i] = &t->stacks[i];
	}
	for (i = 0; i < f->n_samples; i++) {
		Nunatak__Wire__SampleCount sc = NUNATAK__WIRE__SAMPLE_COUNT__INIT;

		sc.locus = f->samples[i].locus;
		sc.stack = f->samples[i].stack;
		sc.counter = "cpu-clock";
		sc.sample_count = f->samples[i].count;
		sc.value = f->samples[i].count * 1000000;
		sc.in_kernel = f->samples[i].in_kernel;
		t->samples[i] = sc;
		t->sample_ptrs[i] = &t->samples[i];
	}
}

static void sfx_fill(struct sfx_batch *t, const struct sfx *f)
{
	Nunatak__Wire__Batch b = NUNATAK__WIRE__BATCH__INIT;
	size_t i;

	assert_true(f->n_modules <= SFX_MAX && f->n_loci <= SFX_MAX && f->n_stacks <= SFX_MAX &&
		    f->n_samples <= SFX_MAX && f->n_exits <= SFX_MAX);
	memset(t, 0, sizeof(*t));
	t->b = b;
	t->b.run_id = "r";
	t->b.node = "n1";
	t->b.seq = 1;
	for (i = 0; i < f->n_modules; i++) {
		Nunatak__Wire__Module m = NUNATAK__WIRE__MODULE__INIT;

		m.identity = (char *)f->modules[i].identity;
		m.path = (char *)f->modules[i].path;
		m.display_name = (char *)f->modules[i].display_name;
		m.has_build_id = strncmp(m.identity, "pseudo:", 7) != 0;
		t->mods[i] = m;
		t->mod_ptrs[i] = &t->mods[i];
	}
	for (i = 0; i < f->n_loci; i++) {
		Nunatak__Wire__Locus l = NUNATAK__WIRE__LOCUS__INIT;

		l.node = "n1";
		l.tgid = f->loci[i].tgid;
		l.tid = f->loci[i].tid;
		l.comm = (char *)f->loci[i].comm;
		l.exe = (char *)f->loci[i].exe;
		t->loci[i] = l;
		t->locus_ptrs[i] = &t->loci[i];
	}
	for (i = 0; i < f->n_exits; i++) {
		Nunatak__Wire__ProcessExit e = NUNATAK__WIRE__PROCESS_EXIT__INIT;

		e.locus = f->exits[i].locus;
		e.utime_ns = f->exits[i].utime_ns;
		e.stime_ns = f->exits[i].stime_ns;
		t->exits[i] = e;
		t->exit_ptrs[i] = &t->exits[i];
	}
	sfx_fill_stacks(t, f);
	t->b.n_modules = f->n_modules;
	t->b.modules = t->mod_ptrs;
	t->b.n_loci = f->n_loci;
	t->b.loci = t->locus_ptrs;
	t->b.n_stacks = f->n_stacks;
	t->b.stacks = t->stack_ptrs;
	t->b.n_samples = f->n_samples;
	t->b.samples = t->sample_ptrs;
	t->b.n_exits = f->n_exits;
	t->b.exits = t->exit_ptrs;
}

/* dir/file made from f: stored, attributed, derived */
static struct pivot *sfx_build(const char *dir, const char *file, const struct sfx *f)
{
	static struct sfx_batch t; /* large: not on the stack */
	struct sfx_attribute_ctx ctx = {.f = f};
	char path[PATH_MAX + 64];
	struct pivot *p;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	p = pivot__create(path);
	assert_non_null(p);
	ctx.p = p;
	sfx_fill(&t, f);
	assert_int_equal(pivot_store_batch(p, &t.b), 0);
	assert_int_equal(pivot_for_each_module_to_attribute(p, sfx_attribute, &ctx), 0);
	assert_int_equal(pivot_derive_measurements(p), 0);
	return p;
}

#endif
