/* cfi_fde — the FDEs of an ELF file's call frame information, one section
 * (.eh_frame or .debug_frame) at a time, with the function extent each one
 * states, in ELF virtual addresses.
 *
 * libdw's dwarf_next_cfi() splits a section into CIEs and FDEs but leaves
 * an FDE's initial_location and address_range encoded as its CIE's
 * augmentation says ('R': DW_EH_PE_* format and application); libdw has
 * no public decoder for them, so this module decodes the encodings a
 * linker emits (absolute or pc-relative; 2, 4, 8-byte or LEB128 values)
 * and counts any other one as an unreadable FDE (skipped, never guessed).
 * FDEs of discarded code (initial_location 0, or an empty range) are
 * skipped too.
 *
 * The iterator borrows the section data of an Elf that outlives it.
 */
#ifndef NUNATAK_UNWIND_CFI_FDE_H
#define NUNATAK_UNWIND_CFI_FDE_H

#include <stdint.h>
#include <gelf.h>
#include <elfutils/libdw.h>

struct cfi_section {
	Elf_Data *data;
	uint64_t vaddr; /* sh_addr: the base of pc-relative pointers */
	int eh_frame;	/* 1: .eh_frame format, 0: .debug_frame */
	const unsigned char *e_ident;
};

/* The section called name (".eh_frame" or ".debug_frame") of elf, with
 * data: 0, -ENOENT when absent or empty (SHT_NOBITS), -ENOEXEC when its
 * data cannot be read (a truncated file). */
int cfi_section_find(Elf *elf, const char *name, struct cfi_section *out);

struct cfi_fde {
	uint64_t start, end; /* [start, end), ELF vaddr */
	int signal;	     /* its CIE's augmentation has 'S': a signal trampoline */
	const uint8_t *cie;  /* identifies its CIE within the section */
};

struct cfi_fde_iter {
	struct cfi_section sec;
	Dwarf_Off off; /* next entry */
	/* the last CIE decoded: FDEs nearly always follow their CIE */
	Dwarf_Off cie_off;
	int cie_valid;
	uint8_t cie_enc; /* DW_EH_PE_* of initial_location and address_range */
	int cie_signal;
	const uint8_t *cie_ptr;
	uint64_t unreadable; /* FDEs or CIEs skipped: malformed, or an encoding not decoded */
};

void cfi_fde_iter_init(struct cfi_fde_iter *it, const struct cfi_section *sec);

/* The next FDE: 1 and *fde filled, 0 at the end of the section. An entry
 * that cannot be read is counted in it->unreadable and skipped; when the
 * section cannot be resumed past it, iteration ends there. */
int cfi_fde_next(struct cfi_fde_iter *it, struct cfi_fde *fde);

#endif
