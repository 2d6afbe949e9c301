/* unwind_table — unwind_table_compile() of unwind_table.h.
 *
 * Two passes. First every FDE of .eh_frame and .debug_frame is listed
 * (cfi_fde: extent, signal flag) with its extent converted to file
 * offsets through the executable PT_LOADs, and the list is sorted by
 * offset; an FDE overlapping one already taken (the same function in both
 * sections, or a nested description) is skipped. Then each FDE's rows are
 * read with libdw (dwarf_cfi_addrframe at the FDE's start, then at each
 * row's end) and reduced by cfi_rule, rules interned, rows emitted in
 * order: equal neighbours merged, an INVALID end marker wherever the next
 * FDE does not start where the last one ended, and at the end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "userspace/log/log.h"
#include "userspace/unwind/cfi_fde.h"
#include "userspace/unwind/cfi_rule.h"
#include "userspace/unwind/unwind_elf.h"
#include "userspace/unwind/unwind_table.h"

struct fde_item {
	uint64_t start, end; /* ELF vaddr */
	uint32_t off;	     /* file offset of start; end's is off + (end - start) */
	uint8_t signal;
	uint8_t debug_frame; /* 1: read from .debug_frame's CFI */
};

struct compile {
	Elf *elf;
	Dwarf *dwarf;	     /* for .debug_frame, NULL when absent */
	Dwarf_CFI *cfi[2];   /* [0] .eh_frame, [1] .debug_frame */
	struct unwind_exec_segments segs;
	struct fde_item *fdes;
	size_t n_fdes, cap_fdes;
	struct unwind_row *rows;
	size_t n_rows, cap_rows;
	struct unwind_rules *rules;
	struct unwind_table_stats st;
	/* the last rule interned, a cache: neighbouring rows mostly repeat */
	struct unwind_rule last_rule;
	uint32_t last_index;
	int have_last;
};

static int fde_push(struct compile *c, const struct fde_item *f)
{
	if (c->n_fdes == c->cap_fdes) {
		size_t cap = c->cap_fdes ? 2 * c->cap_fdes : 4096;
		struct fde_item *v = realloc(c->fdes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->fdes = v;
		c->cap_fdes = cap;
	}
	c->fdes[c->n_fdes++] = *f;
	return 0;
}

/* Lists the FDEs of one section: 0, -ENOENT (absent), -ENOEXEC, -ENOMEM */
static int list_fdes(struct compile *c, const char *name, int debug_frame)
{
	struct cfi_section sec;
	struct cfi_fde_iter it;
	struct cfi_fde fde;
	int err = cfi_section_find(c->elf, name, &sec);

	if (err)
		return err;
	cfi_fde_iter_init(&it, &sec);
	while (cfi_fde_next(&it, &fde) > 0) {
		struct fde_item f = { .start = fde.start, .end = fde.end, .signal = fde.signal,
				      .debug_frame = (uint8_t)debug_frame };
		uint64_t off, seg_end;

		c->st.fdes++;
		/* code outside the executable segments, or an FDE running past
		 * its segment, is not unwound: a gap, INVALID */
		if (unwind_exec_vaddr_to_offset(&c->segs, fde.start, &off, &seg_end) ||
		    fde.end > seg_end || off + (fde.end - fde.start) > UINT32_MAX) {
			c->st.skipped_fdes++;
			continue;
		}
		f.off = (uint32_t)off;
		err = fde_push(c, &f);
		if (err)
			return err;
	}
	c->st.unreadable_fdes += it.unreadable;
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_item *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (x->debug_frame != y->debug_frame) /* .eh_frame first: what the loader uses */
		return x->debug_frame < y->debug_frame ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int row_push(struct compile *c, uint32_t pc, uint32_t rule)
{
	/* a row at a pc already emitted replaces it (an end marker where a
	 * signal FDE starts one byte early) */
	while (c->n_rows && c->rows[c->n_rows - 1].pc >= pc)
		c->n_rows--;
	if (c->n_rows && c->rows[c->n_rows - 1].rule == rule)
		return 0;
	if (c->n_rows == c->cap_rows) {
		size_t cap = c->cap_rows ? 2 * c->cap_rows : 4096;
		struct unwind_row *v = realloc(c->rows, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->rows = v;
		c->cap_rows = cap;
	}
	c->rows[c->n_rows].pc = pc;
	c->rows[c->n_rows].rule = rule;
	c->n_rows++;
	return 0;
}

static int intern(struct compile *c, const struct unwind_rule *r, uint32_t *index)
{
	int err;

	if (c->have_last && !memcmp(&c->last_rule, r, sizeof(*r))) {
		*index = c->last_index;
		return 0;
	}
	err = unwind_rules_intern(c->rules, r, index);
	if (err)
		return err;
	c->last_rule = *r;
	c->last_index = *index;
	c->have_last = 1;
	return 0;
}

/* Emits the rows of one FDE, first_pc being where its first row starts
 * (one byte early for a signal trampoline). */
static int emit_fde(struct compile *c, const struct fde_item *f, uint32_t first_pc)
{
	Dwarf_CFI *cfi = c->cfi[f->debug_frame];
	uint64_t pc = f->start;
	uint32_t index = 0;
	int err;

	while (pc < f->end) {
		struct unwind_rule rule = { 0 };
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr start, end;

		c->st.cfi_rows++;
		if (!cfi || dwarf_cfi_addrframe(cfi, pc, &frame) ||
		    dwarf_frame_info(frame, &start, &end, NULL) < 0 || end <= pc) {
			free(frame);
			/* libdw cannot read this FDE: the rest of it is INVALID */
			c->st.invalid_rows++;
			return row_push(c, pc == f->start ? first_pc : (uint32_t)(f->off + (pc - f->start)), 0);
		}
		cfi_rule_from_frame(frame, f->signal, &rule);
		free(frame);
		if (rule.cfa_type == UNWIND_CFA_INVALID)
			c->st.invalid_rows++;
		err = intern(c, &rule, &index);
		if (err)
			return err;
		err = row_push(c, pc == f->start ? first_pc : (uint32_t)(f->off + (pc - f->start)), index);
		if (err)
			return err;
		pc = end;
	}
	return 0;
}

/* The rows of every listed FDE, in file-offset order, with end markers */
static int emit_all(struct compile *c)
{
	uint64_t taken_end = 0; /* file offset where the last emitted FDE ends */
	int any = 0, err;

	qsort(c->fdes, c->n_fdes, sizeof(*c->fdes), cmp_fde);
	for (size_t i = 0; i < c->n_fdes; i++) {
		const struct fde_item *f = &c->fdes[i];
		uint32_t first_pc = f->off;

		if (any && f->off < taken_end) {
			c->st.skipped_fdes++; /* described already (both sections, or nested) */
			continue;
		}
		if (any && f->off > taken_end) {
			err = row_push(c, (uint32_t)taken_end, 0);
			if (err)
				return err;
		}
		/* the return-address-minus-one lookup of the frame a handler
		 * returns to must land in the trampoline; never a byte another
		 * FDE describes */
		if (f->signal && f->off > 0 && (!any || f->off > taken_end))
			first_pc = f->off - 1;
		err = emit_fde(c, f, first_pc);
		if (err)
			return err;
		taken_end = f->off + (f->end - f->start);
		any = 1;
	}
	return any ? row_push(c, (uint32_t)taken_end, 0) : 0;
}

/* libdw's CFI of both sections, and the FDE list: 0, -ENODATA, -ENOEXEC, -ENOMEM */
static int open_cfi(struct compile *c)
{
	struct cfi_section probe;
	int err, found = 0;

	err = unwind_exec_segments_read(c->elf, &c->segs);
	if (err)
		return err;
	/* FDEs are listed from the sections; without an .eh_frame section
	 * libdw would fall back to PT_GNU_EH_FRAME (a path that leaks in
	 * libdw 0.188 on malformed files, and one sections never need) */
	if (cfi_section_find(c->elf, ".eh_frame", &probe) == 0)
		c->cfi[0] = dwarf_getcfi_elf(c->elf);
	if (c->cfi[0]) {
		err = list_fdes(c, ".eh_frame", 0);
		if (err && err != -ENOENT)
			return err;
		c->st.has_eh_frame = !err;
		found |= !err;
	}
	if (cfi_section_find(c->elf, ".debug_frame", &probe) == 0)
		c->dwarf = dwarf_begin_elf(c->elf, DWARF_C_READ, NULL);
	c->cfi[1] = c->dwarf ? dwarf_getcfi(c->dwarf) : NULL;
	if (c->cfi[1]) {
		err = list_fdes(c, ".debug_frame", 1);
		if (err && err != -ENOENT)
			return err;
		c->st.has_debug_frame = !err;
		found |= !err;
	}
	return found && c->n_fdes ? 0 : -ENODATA;
}

int unwind_table_compile(int fd, struct unwind_rules *rules, struct unwind_row **rows,
			 size_t *n_rows, struct unwind_table_stats *stats)
{
	struct compile c = { .rules = rules };
	struct stat sb;
	int err;

	*rows = NULL;
	*n_rows = 0;
	if (fstat(fd, &sb))
		return -errno;
	if ((uint64_t)sb.st_size > UINT32_MAX)
		return -EFBIG;
	err = unwind_elf_begin(fd, &c.elf);
	if (err)
		return err;
	err = open_cfi(&c);
	if (err)
		goto cleanup;
	err = emit_all(&c);
	if (err)
		goto cleanup;
	c.st.rows = c.n_rows;
	*rows = c.rows;
	*n_rows = c.n_rows;
	c.rows = NULL;
	pr_debug("unwind table: %zu rows from %lu FDEs (%lu CFI rows, %lu invalid, %lu FDEs skipped, "
		 "%lu unreadable), %zu rules in the dictionary",
		 *n_rows, (unsigned long)c.st.fdes, (unsigned long)c.st.cfi_rows,
		 (unsigned long)c.st.invalid_rows, (unsigned long)c.st.skipped_fdes,
		 (unsigned long)c.st.unreadable_fdes, unwind_rules_count(rules));
cleanup:
	if (stats)
		*stats = c.st;
	free(c.rows);
	free(c.fdes);
	if (c.cfi[0])
		dwarf_cfi_end(c.cfi[0]);
	if (c.dwarf)
		dwarf_end(c.dwarf);
	elf_end(c.elf);
	return err;
}
