/* cfi_fde — see cfi_fde.h: FDE iteration over libdw's dwarf_next_cfi(),
 * with the DW_EH_PE_* pointer decoding libdw keeps private. */
#include <errno.h>
#include <string.h>

#include <dwarf.h>

#include "userspace/unwind/cfi_fde.h"

int cfi_section_find(Elf *elf, const char *name, struct cfi_section *out)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT; /* no section headers: no CFI found by section */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *sname;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		sname = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!sname || strcmp(sname, name))
			continue;
		if (shdr.sh_type == SHT_NOBITS || shdr.sh_size == 0)
			return -ENOENT;
		memset(out, 0, sizeof(*out));
		out->data = elf_rawdata(scn, NULL);
		if (!out->data || !out->data->d_buf || out->data->d_size != shdr.sh_size)
			return -ENOEXEC;
		out->vaddr = shdr.sh_addr;
		out->eh_frame = strcmp(name, ".eh_frame") == 0;
		out->e_ident = (const unsigned char *)elf_getident(elf, NULL);
		return out->e_ident ? 0 : -ENOEXEC;
	}
	return -ENOENT;
}

void cfi_fde_iter_init(struct cfi_fde_iter *it, const struct cfi_section *sec)
{
	memset(it, 0, sizeof(*it));
	it->sec = *sec;
}

static int read_leb(const uint8_t **pp, const uint8_t *end, int is_signed, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (p >= end || shift >= 64)
			return -ENOEXEC;
		b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*pp = p;
	*out = v;
	return 0;
}

static int read_fixed(const struct cfi_section *sec, const uint8_t **pp, const uint8_t *end,
		      unsigned size, int is_signed, uint64_t *out)
{
	const uint8_t *p = *pp;
	int msb = sec->e_ident[EI_DATA] == ELFDATA2MSB;
	uint64_t v = 0;

	if ((size_t)(end - p) < size)
		return -ENOEXEC;
	for (unsigned i = 0; i < size; i++)
		v = (v << 8) | p[msb ? i : size - 1 - i];
	if (is_signed && size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * size);
	*pp = p + size;
	*out = v;
	return 0;
}

/* The value of a DW_EH_PE_* encoded pointer at *pp, its application
 * (absolute or pc-relative) applied: 0 or -ENOEXEC (malformed, or an
 * encoding not decoded here). */
static int read_encoded(const struct cfi_section *sec, uint8_t enc, const uint8_t **pp,
			const uint8_t *end, uint64_t *out)
{
	const uint8_t *field = *pp;
	unsigned addr_size = sec->e_ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	int err;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -ENOEXEC;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: err = read_fixed(sec, pp, end, addr_size, 0, out); break;
	case DW_EH_PE_uleb128: err = read_leb(pp, end, 0, out); break;
	case DW_EH_PE_udata2: err = read_fixed(sec, pp, end, 2, 0, out); break;
	case DW_EH_PE_udata4: err = read_fixed(sec, pp, end, 4, 0, out); break;
	case DW_EH_PE_udata8: err = read_fixed(sec, pp, end, 8, 0, out); break;
	case DW_EH_PE_sleb128: err = read_leb(pp, end, 1, out); break;
	case DW_EH_PE_sdata2: err = read_fixed(sec, pp, end, 2, 1, out); break;
	case DW_EH_PE_sdata4: err = read_fixed(sec, pp, end, 4, 1, out); break;
	case DW_EH_PE_sdata8: err = read_fixed(sec, pp, end, 8, 1, out); break;
	default: return -ENOEXEC;
	}
	if (err)
		return err;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr: break;
	case DW_EH_PE_pcrel:
		*out += sec->vaddr + (uint64_t)(field - (const uint8_t *)sec->data->d_buf);
		break;
	default: return -ENOEXEC; /* textrel, datarel, funcrel, aligned: not emitted for x86-64 FDEs */
	}
	if (addr_size == 4)
		*out &= 0xffffffffu;
	return 0;
}

/* Reads the CIE at off into the iterator's cache: its FDE pointer
 * encoding and its signal flag. 0 or -ENOEXEC. */
static int load_cie(struct cfi_fde_iter *it, Dwarf_Off off)
{
	Dwarf_CFI_Entry e;
	Dwarf_Off next;
	const uint8_t *p, *end;
	const char *aug;
	uint8_t enc = DW_EH_PE_absptr;
	int signal = 0;

	it->cie_valid = 0;
	if (dwarf_next_cfi(it->sec.e_ident, it->sec.data, it->sec.eh_frame, off, &next, &e) ||
	    !dwarf_cfi_cie_p(&e))
		return -ENOEXEC;
	aug = e.cie.augmentation;
	p = e.cie.augmentation_data;
	end = p ? p + e.cie.augmentation_data_size : NULL;
	if (aug[0] && aug[0] != 'z')
		return -ENOEXEC; /* augmentation data of unknown size */
	for (const char *a = aug[0] ? aug + 1 : aug; *a; a++) {
		uint64_t ignored;

		if (*a == 'R') {
			if (!p || p >= end)
				return -ENOEXEC;
			enc = *p++;
		} else if (*a == 'P') {
			uint8_t penc;

			if (!p || p >= end)
				return -ENOEXEC;
			penc = *p++;
			/* the personality routine may be indirect: only its size matters */
			if (read_encoded(&it->sec, penc & ~DW_EH_PE_indirect & ~0x70, &p, end, &ignored))
				return -ENOEXEC;
		} else if (*a == 'L') {
			if (!p || p >= end)
				return -ENOEXEC;
			p++;
		} else if (*a == 'S') {
			signal = 1;
		} else if (*a != 'B' && *a != 'G') {
			return -ENOEXEC;
		}
	}
	it->cie_off = off;
	it->cie_enc = enc;
	it->cie_signal = signal;
	it->cie_ptr = (const uint8_t *)it->sec.data->d_buf + off;
	it->cie_valid = 1;
	return 0;
}

/* 1 a usable FDE, 0 an FDE to skip silently (discarded code), -ENOEXEC */
static int decode_fde(struct cfi_fde_iter *it, const Dwarf_FDE *f, struct cfi_fde *out)
{
	const uint8_t *p = f->start;
	uint64_t start, range;

	if ((!it->cie_valid || it->cie_off != f->CIE_pointer) && load_cie(it, f->CIE_pointer))
		return -ENOEXEC;
	if (read_encoded(&it->sec, it->cie_enc, &p, f->end, &start) ||
	    read_encoded(&it->sec, it->cie_enc & 0x0f, &p, f->end, &range))
		return -ENOEXEC;
	if (start == 0 || range == 0 || start + range < start)
		return 0;
	out->start = start;
	out->end = start + range;
	out->signal = it->cie_signal;
	out->cie = it->cie_ptr;
	return 1;
}

int cfi_fde_next(struct cfi_fde_iter *it, struct cfi_fde *fde)
{
	for (;;) {
		Dwarf_CFI_Entry e;
		Dwarf_Off next = (Dwarf_Off)-1;
		int rc;

		if (it->off == (Dwarf_Off)-1 || it->off >= it->sec.data->d_size)
			return 0;
		rc = dwarf_next_cfi(it->sec.e_ident, it->sec.data, it->sec.eh_frame, it->off, &next,
				    &e);
		if (rc > 0)
			return 0;
		if (rc < 0) {
			it->unreadable++;
			/* resumable only when libdw moved past the entry */
			if (next == (Dwarf_Off)-1 || next <= it->off)
				return 0;
			it->off = next;
			continue;
		}
		it->off = next;
		if (dwarf_cfi_cie_p(&e))
			continue;
		rc = decode_fde(it, &e.fde, fde);
		if (rc > 0)
			return 1;
		if (rc < 0)
			it->unreadable++;
	}
}
