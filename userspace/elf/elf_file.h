/* elf_file — what nunatak needs to know about one ELF file (a module).
 *
 * An elf_file is read once at elf_file__open() and is immutable afterwards:
 * the identity, the PT_LOAD table and the sorted function symbols are copied
 * out of libelf, so the file descriptor is closed before open returns and
 * every query is a pure function of the struct (safe to share read-only
 * between threads).
 *
 * Identity. A module is identified by its GNU build-id (NT_GNU_BUILD_ID, as
 * lowercase hex, as `readelf -n` prints it). A file without a build-id gets a
 * stated fallback identity:
 *
 *     "nobuildid:" + 16 lowercase hex digits of the 64-bit FNV-1a hash
 *     (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over, in order,
 *       1. the file size in bytes, as 8 little-endian bytes,
 *       2. the first min(size, 64 KiB) bytes of the file,
 *       3. the last  min(size, 64 KiB) bytes of the file
 *     (for files under 128 KiB the two windows overlap; they are still both
 *     hashed, so the rule has no special case).
 *
 * It is stable for an unchanged file and cheap for a large one; it is not a
 * content hash of the middle of the file, which is why a build-id is always
 * preferred.
 *
 * Addresses. Three spaces are involved: the ip (process address), the file
 * offset (ip - map_start + map_pgoff, from /proc/PID/maps), and the ELF
 * virtual address (vaddr: what nm prints and llvm-symbolizer expects). A
 * Hotspot's physical identity uses the file offset; naming uses the vaddr.
 *
 * Extent rule. An address is named only by a function symbol whose extent
 * [st_value, st_value + st_size) covers it; an address in a gap between
 * symbols is never named after its neighbour (-ENOENT, it stays
 * module+0x1a2b). Data objects (STT_OBJECT: an Open MPI predefined datatype
 * is one, its handle is its address) follow the same rule in their own
 * tables; a function is never answered for an object query and vice versa.
 */
#ifndef NUNATAK_ELF_FILE_H
#define NUNATAK_ELF_FILE_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

/* Reads path (opened with elf_open_regular()). Returns NULL and sets
 * errno: ENOENT/EACCES/... from open(2), EISDIR, EINVAL (not a regular
 * file), ESTALE, ENOEXEC when the file is not an ELF file (or is
 * truncated/corrupt), ENOMEM. The caller frees with elf_file__free(). */
struct elf_file *elf_file__open(const char *path);

/* elf_file__open() of the file mapped with inode number inode (0: any):
 * NULL and ESTALE when the file at path now is another one. */
struct elf_file *elf_file__open_mapped(const char *path, uint64_t inode);

/* NULL-safe. */
void elf_file__free(struct elf_file *f);

/* Lowercase hex of NT_GNU_BUILD_ID, or NULL when the file has none.
 * Owned by f. */
const char *elf_file__build_id(const struct elf_file *f);

/* The build-id if present, else the "nobuildid:<16 hex>" fallback described
 * above. Never NULL for an opened file. Owned by f. */
const char *elf_file__identity(const struct elf_file *f);

/* ET_DYN (PIE executable or shared library) -> 1, anything else -> 0. */
int elf_file__is_pie_or_shared(const struct elf_file *f);

/* Converts a file offset into an ELF vaddr through the PT_LOAD segment whose
 * file extent [p_offset, p_offset + p_filesz) contains it:
 * vaddr = file_offset - p_offset + p_vaddr.
 * Returns 0, or -ENOENT when no PT_LOAD covers the offset. */
int elf_file__offset_to_vaddr(const struct elf_file *f, uint64_t file_offset, uint64_t *vaddr);

/* The virtual address at which a mapping starting at file offset pgoff
 * (page-aligned, as /proc/PID/maps and MMAP2 records give it) begins: the
 * kernel maps a PT_LOAD from the page holding its first byte, which may
 * lie before p_offset, where elf_file__offset_to_vaddr() has no answer.
 * load bias = mapping start - this. 0 or -ENOENT. */
int elf_file__mapping_vaddr(const struct elf_file *f, uint64_t pgoff, uint64_t *vaddr);

struct elf_symbol {
	const char *name; /* raw (mangled) name, owned by the elf_file */
	uint64_t start;	  /* vaddr */
	uint64_t size;
	int from_dynsym; /* 1 when found only in .dynsym (resolution level "symbol") */
};

/* Finds the function symbol (STT_FUNC or STT_GNU_IFUNC, size > 0, defined)
 * whose extent covers vaddr, first in .symtab, then in .dynsym. When several
 * cover it (aliases, nested extents) the choice is deterministic: global
 * before weak before local, then the shortest extent, then the highest start,
 * then the smallest name (strcmp).
 * O(log n) per lookup after the sort done at open.
 * Returns 0 and fills *out, or -ENOENT when no symbol covers vaddr. */
int elf_file__find_symbol(const struct elf_file *f, uint64_t vaddr, struct elf_symbol *out);

/* Finds the data object (STT_OBJECT, size > 0, defined; not STT_TLS) whose
 * extent covers vaddr, first in .symtab, then in .dynsym, with the tie rule
 * of elf_file__find_symbol(). An object in .bss has a vaddr but no file
 * offset: reach it from a process address through the vaddr, not through
 * elf_file__offset_to_vaddr() of a file-backed mapping.
 * Returns 0 and fills *out, or -ENOENT when no object covers vaddr. */
int elf_file__find_object(const struct elf_file *f, uint64_t vaddr, struct elf_symbol *out);

/* Looks a defined function or data object (size > 0) up by its exact raw
 * name, first in .symtab, then in .dynsym. Aliases are distinct names:
 * "MPI_Init" and "PMPI_Init" are both found, at the same start. When one
 * table holds the name several times (local statics of different units), the
 * choice is global before weak before local, then the lowest start.
 * O(number of symbols): meant for a handful of names per module, not per
 * sample.
 * Returns 0 and fills *out, or -ENOENT when no such symbol. */
int elf_file__lookup_name(const struct elf_file *f, const char *name, struct elf_symbol *out);

/* Calls cb for every function symbol (as elf_file__find_symbol() knows
 * them: defined, size > 0) of .symtab, or of .dynsym when the file has no
 * function in .symtab (a stripped file keeps its exported names there),
 * in address order; aliases are given each. Stops at cb's first non-zero
 * return and returns it; 0 after the last. */
int elf_file__for_each_function(const struct elf_file *f,
				int (*cb)(const struct elf_symbol *sym, void *ctx), void *ctx);

/* Converts an ELF vaddr into a file offset (what a uprobe is attached at)
 * through the PT_LOAD segment whose file-backed extent
 * [p_vaddr, p_vaddr + p_filesz) contains it:
 * file_offset = vaddr - p_vaddr + p_offset. The inverse of
 * elf_file__offset_to_vaddr().
 * Returns 0, or -ENOENT when no PT_LOAD covers vaddr with file contents
 * (.bss beyond p_filesz included). */
int elf_file__vaddr_to_offset(const struct elf_file *f, uint64_t vaddr, uint64_t *offset);

/* 1 when the file has a .symtab section (not stripped), else 0. */
int elf_file__has_symtab(const struct elf_file *f);

/* 1 when the file has a .debug_info section, else 0. */
int elf_file__has_debug_info(const struct elf_file *f);

/* Convenience: writes the lowercase hex build-id of path into hex (NUL
 * terminated). Returns 0, -ENODATA when the file has no build-id, -ENOSPC
 * when hexlen is too small, -errno as elf_file__open() otherwise. */
int elf_read_build_id(const char *path, char *hex, size_t hexlen);

#endif
