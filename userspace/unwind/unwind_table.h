/* unwind_table — a module's call frame information (.eh_frame, and
 * .debug_frame where present) compiled into the rows of bpf/unwind.h, and
 * the function extents the same CFI states.
 *
 * Compilation walks every FDE with libdw (dwarf_getcfi_elf for .eh_frame,
 * dwarf_getcfi for .debug_frame), reduces each CFI row to one struct
 * unwind_rule (CFA rule, rbp rule; the return address is always at CFA - 8
 * on x86-64, any other RA rule is UNWIND_CFA_INVALID but for "undefined",
 * which is UNWIND_CFA_STOP), interns the rule in a shared dictionary, and
 * emits rows keyed by module FILE offset (converted from the ELF virtual
 * address through the executable PT_LOAD segments). Neighbouring rows with
 * the same rule are merged; an UNWIND_CFA_INVALID row ends every FDE that
 * is not followed directly by the next one, and the table. Rows are sorted
 * by pc, strictly increasing. Signal trampolines (CIE augmentation "S")
 * become UNWIND_CFA_SIGNAL rows starting one byte before the FDE, so that
 * the return-address-minus-one lookup lands in them. The PLT's CFA
 * expression (DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and;
 * DW_OP_lit10 or 11; DW_OP_ge; ...) becomes UNWIND_CFA_PLT with the
 * threshold in cfa_offset. Offsets are kept in 32 bits (offsets over
 * 32 767 exist in libc, liblammps, libLLVM).
 *
 * Thread-safety: a struct unwind_rules is not shared between threads
 * without a lock; compilation of different modules into one dictionary is
 * serialised by the caller.
 */
#ifndef NUNATAK_UNWIND_UNWIND_TABLE_H
#define NUNATAK_UNWIND_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/unwind.h"

/* The shared rule dictionary: rule -> index; index 0 is always the
 * UNWIND_CFA_INVALID rule (all zero). */
struct unwind_rules;

/* NULL + errno (ENOMEM) */
struct unwind_rules *unwind_rules__new(void);
void unwind_rules__free(struct unwind_rules *r); /* NULL-safe */
/* the index of rule (interned when new): 0 or -ENOSPC beyond
 * MAX_UNWIND_RULES, -ENOMEM */
int unwind_rules_intern(struct unwind_rules *r, const struct unwind_rule *rule, uint32_t *index);
size_t unwind_rules_count(const struct unwind_rules *r);
/* rule of index i < unwind_rules_count(); owned by r */
const struct unwind_rule *unwind_rules_get(const struct unwind_rules *r, uint32_t i);

struct unwind_table_stats {
	uint64_t fdes;          /* FDEs read (both sections) */
	uint64_t cfi_rows;      /* CFI rows before merging */
	uint64_t rows;          /* rows emitted, end markers included */
	uint64_t invalid_rows;  /* rows whose rule the unwinder cannot apply */
	int has_eh_frame, has_debug_frame;
	/* FDEs read but not tabled: outside the executable PT_LOADs, or
	 * overlapping one already tabled (a function both sections describe) */
	uint64_t skipped_fdes;
	uint64_t unreadable_fdes; /* FDEs or CIEs malformed or in an encoding not decoded */
};

/* Compiles the CFI of the ELF file open on fd (not consumed; read with
 * pread/libelf, never through a path another user could swap). *rows is
 * malloc'ed (the caller frees), sorted by pc; rules are interned in rules.
 * 0; -ENODATA when the file has no CFI at all (*rows NULL, *n_rows 0);
 * -ENOEXEC not an ELF file; -EFBIG a file over 4 GiB; -ENOSPC the rule
 * dictionary is full; -ENOMEM. stats may be NULL. */
int unwind_table_compile(int fd, struct unwind_rules *rules, struct unwind_row **rows,
			 size_t *n_rows, struct unwind_table_stats *stats);

/* A function's extent as its FDE states it, in ELF virtual addresses. */
struct fde_extent {
	uint64_t start, end; /* [start, end) */
};

/* The FDE extents of the ELF file open on fd, sorted by start, exact
 * duplicates removed (.eh_frame and .debug_frame may both describe a
 * function). *out is malloc'ed (the caller frees). 0; -ENODATA no CFI;
 * -ENOEXEC; -ENOMEM. */
int unwind_fde_extents(int fd, struct fde_extent **out, size_t *n);

/* The extent of extents[0..n) that covers vaddr: its index, or -ENOENT.
 * O(log n). Where extents nest (rare), the innermost (latest start). */
int unwind_fde_extent_find(const struct fde_extent *extents, size_t n, uint64_t vaddr);

#endif
