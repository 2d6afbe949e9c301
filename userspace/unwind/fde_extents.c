/* fde_extents — unwind_fde_extents() and unwind_fde_extent_find() of
 * unwind_table.h: function extents as the FDEs of .eh_frame and
 * .debug_frame state them (what names a stripped function's samples by
 * its extent, never per instruction). */
#include <errno.h>
#include <stdlib.h>

#include "userspace/unwind/cfi_fde.h"
#include "userspace/unwind/unwind_elf.h"
#include "userspace/unwind/unwind_table.h"

struct extent_vec {
	struct fde_extent *v;
	size_t n, cap;
};

static int extent_push(struct extent_vec *x, uint64_t start, uint64_t end)
{
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 1024;
		struct fde_extent *v = realloc(x->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		x->v = v;
		x->cap = cap;
	}
	x->v[x->n].start = start;
	x->v[x->n].end = end;
	x->n++;
	return 0;
}

/* 0, -ENOENT (no such section), -ENOEXEC, -ENOMEM */
static int collect_section(Elf *elf, const char *name, struct extent_vec *x)
{
	struct cfi_section sec;
	struct cfi_fde_iter it;
	struct cfi_fde fde;
	int err = cfi_section_find(elf, name, &sec);

	if (err)
		return err;
	cfi_fde_iter_init(&it, &sec);
	while (cfi_fde_next(&it, &fde) > 0) {
		err = extent_push(x, fde.start, fde.end);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_extent(const void *a, const void *b)
{
	const struct fde_extent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

static size_t dedupe_sorted(struct fde_extent *v, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (out && v[out - 1].start == v[i].start && v[out - 1].end == v[i].end)
			continue;
		v[out++] = v[i];
	}
	return out;
}

int unwind_fde_extents(int fd, struct fde_extent **out, size_t *n)
{
	struct extent_vec x = { 0 };
	static const char *const sections[] = { ".eh_frame", ".debug_frame" };
	Elf *elf = NULL;
	int err, found = 0;

	*out = NULL;
	*n = 0;
	err = unwind_elf_begin(fd, &elf);
	if (err)
		return err;
	for (size_t i = 0; i < 2; i++) {
		err = collect_section(elf, sections[i], &x);
		if (err == -ENOENT)
			continue;
		if (err)
			goto cleanup;
		found = 1;
	}
	if (!found || x.n == 0) {
		err = -ENODATA;
		goto cleanup;
	}
	qsort(x.v, x.n, sizeof(*x.v), cmp_extent);
	*n = dedupe_sorted(x.v, x.n);
	*out = x.v;
	x.v = NULL;
	err = 0;
cleanup:
	free(x.v);
	elf_end(elf);
	return err;
}

/* How far back unwind_fde_extent_find() looks for an enclosing extent
 * when the nearest start does not cover vaddr: FDEs nest only where a
 * hand-written or compiler-split function is described twice, one level
 * deep; the bound keeps every lookup O(log n). */
#define EXTENT_NEST_SCAN 16

int unwind_fde_extent_find(const struct fde_extent *extents, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	/* first extent whose start is > vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (extents[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, steps = 0; i > 0 && steps < EXTENT_NEST_SCAN; i--, steps++) {
		/* the latest start that covers is the innermost; at one start
		 * (sorted by end) the shortest that covers */
		const struct fde_extent *e = &extents[i - 1];

		if (vaddr < e->end) {
			size_t best = i - 1;

			while (best > 0 && extents[best - 1].start == e->start &&
			       vaddr < extents[best - 1].end)
				best--;
			return (int)best;
		}
	}
	return -ENOENT;
}
