/* elf_dynamic — the dynamic section of an ELF file: which libraries it
 * needs (DT_NEEDED) and where it asks the loader to look (DT_RUNPATH, or
 * DT_RPATH when there is no RUNPATH), to find the libraries an executable
 * will load before it runs.
 */
#ifndef NUNATAK_ELF_DYNAMIC_H
#define NUNATAK_ELF_DYNAMIC_H

#include <stddef.h>

struct elf_dynamic {
	char **needed; /* sonames, in file order */
	size_t n_needed;
	char *runpath; /* NULL when none; ':'-separated, $ORIGIN not expanded */
};

/* Opened with elf_open_regular(): never blocks on a FIFO nor opens a
 * device. 0, -ENOEXEC (not ELF), -ENODATA (no dynamic section: static or
 * not a program), -EINVAL (not a regular file), -EISDIR, -errno. On success release with elf_dynamic_release(). */
int elf_dynamic_read(const char *path, struct elf_dynamic *out);
void elf_dynamic_release(struct elf_dynamic *d);

#endif
