/* unwind_elf — the ELF side of compiling unwind tables from an fd: the
 * libelf handle (read with pread, never mapped: a file truncated under us
 * gives errors, not SIGBUS) and the executable PT_LOAD segments through
 * which CFI's virtual addresses become the file offsets bpf/unwind.h keys
 * rows by.
 *
 * elf_file (userspace/elf/) answers the same conversion for every PT_LOAD
 * of a path it opens itself; tables only cover code, so only executable
 * segments count here, and the caller already holds the fd.
 */
#ifndef NUNATAK_UNWIND_UNWIND_ELF_H
#define NUNATAK_UNWIND_UNWIND_ELF_H

#include <stddef.h>
#include <stdint.h>
#include <gelf.h>

/* libelf handle of the ELF file open on fd (not consumed): 0 or -ENOEXEC
 * (not an ELF file, or its program or section headers past its end: a
 * truncated one), -errno of fstat. The caller ends it with elf_end(). */
int unwind_elf_begin(int fd, Elf **out);

#define UNWIND_MAX_EXEC_SEGMENTS 16

struct unwind_exec_segments {
	size_t n;
	struct {
		uint64_t vaddr, offset, filesz;
	} seg[UNWIND_MAX_EXEC_SEGMENTS];
};

/* The executable PT_LOADs of elf (the first UNWIND_MAX_EXEC_SEGMENTS):
 * 0, -ENOEXEC when the program headers cannot be read. */
int unwind_exec_segments_read(Elf *elf, struct unwind_exec_segments *segs);

/* The file offset of vaddr through the executable segment whose file
 * extent holds it: 0, -ENOENT. *seg_end_vaddr (may be NULL) gets the end
 * of that segment's file extent, in vaddr. */
int unwind_exec_vaddr_to_offset(const struct unwind_exec_segments *segs, uint64_t vaddr,
				uint64_t *offset, uint64_t *seg_end_vaddr);

#endif
