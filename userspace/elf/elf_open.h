/* elf_open — how nunatak opens an ELF file that someone else may have
 * put at its path (a module of the Target, a library of its DT_NEEDED
 * closure in a RUNPATH directory a user controls, a program): never
 * blocking on a FIFO, never opening a device, never reading another file
 * than the one that was mapped.
 */
#ifndef NUNATAK_ELF_OPEN_H
#define NUNATAK_ELF_OPEN_H

#include <stdint.h>
#include <sys/stat.h>

/* The one way nunatak opens an ELF file (a module, a program, a library
 * of the closure), whoever could have put something at path: it is
 * stat()ed first and refused unless a regular file (a FIFO would block
 * the open or the read, a device would see an open), then opened
 * O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC and checked again on the
 * descriptor (same file, regular), then O_NONBLOCK is cleared. inode: the
 * inode number of the file as it was mapped (an MMAP2 record, a
 * /proc/PID/maps line), 0 when unknown; only the inode is compared, as the
 * device of a mapping on overlayfs is the underlying file system's.
 * Returns the descriptor (the caller closes it) with *st its fstat(), or
 * -ENOENT/-EACCES/... from stat/open, -EISDIR (a directory), -EINVAL (a
 * FIFO, socket or device), -ESTALE (replaced while opened, or not the
 * mapped inode). Says why at debug level. */
int elf_open_regular(const char *path, uint64_t inode, struct stat *st);

#endif
