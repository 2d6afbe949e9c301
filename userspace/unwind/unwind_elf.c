/* unwind_elf — see unwind_elf.h */
#include <errno.h>
#include <sys/stat.h>

#include "userspace/unwind/unwind_elf.h"

/* 1 when the headers libelf will read lie inside the file: a truncated
 * file (its section headers sit at its end) is refused up front rather
 * than read as one without sections */
static int headers_inside(Elf *elf, uint64_t size)
{
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh))
		return 0;
	if (eh.e_phoff && (eh.e_phoff > size || (uint64_t)eh.e_phnum * eh.e_phentsize > size - eh.e_phoff))
		return 0;
	if (eh.e_shoff && (eh.e_shoff > size || (uint64_t)eh.e_shnum * eh.e_shentsize > size - eh.e_shoff))
		return 0;
	return 1;
}

int unwind_elf_begin(int fd, Elf **out)
{
	struct stat sb;
	Elf *elf;

	*out = NULL;
	if (fstat(fd, &sb))
		return -errno;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC; /* libelf does not tell an allocation failure apart */
	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) == ELFCLASSNONE ||
	    !headers_inside(elf, (uint64_t)sb.st_size)) {
		elf_end(elf);
		return -ENOEXEC;
	}
	*out = elf;
	return 0;
}

int unwind_exec_segments_read(Elf *elf, struct unwind_exec_segments *segs)
{
	size_t phnum;

	segs->n = 0;
	if (elf_getphdrnum(elf, &phnum))
		return -ENOEXEC;
	for (size_t i = 0; i < phnum && segs->n < UNWIND_MAX_EXEC_SEGMENTS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || ph.p_filesz == 0)
			continue;
		if (ph.p_offset + ph.p_filesz < ph.p_offset || ph.p_vaddr + ph.p_filesz < ph.p_vaddr)
			continue; /* wraps: maps nothing */
		segs->seg[segs->n].vaddr = ph.p_vaddr;
		segs->seg[segs->n].offset = ph.p_offset;
		segs->seg[segs->n].filesz = ph.p_filesz;
		segs->n++;
	}
	return 0;
}

int unwind_exec_vaddr_to_offset(const struct unwind_exec_segments *segs, uint64_t vaddr,
				uint64_t *offset, uint64_t *seg_end_vaddr)
{
	for (size_t i = 0; i < segs->n; i++) {
		if (vaddr >= segs->seg[i].vaddr && vaddr - segs->seg[i].vaddr < segs->seg[i].filesz) {
			*offset = vaddr - segs->seg[i].vaddr + segs->seg[i].offset;
			if (seg_end_vaddr)
				*seg_end_vaddr = segs->seg[i].vaddr + segs->seg[i].filesz;
			return 0;
		}
	}
	return -ENOENT;
}
