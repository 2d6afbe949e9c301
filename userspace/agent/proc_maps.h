/* proc_maps — the executable mappings of a process, from /proc/PID/maps.
 *
 * One line of /proc/PID/maps is
 *     start-end perms pgoff major:minor inode [path]
 * with hex start, end, pgoff, major and minor, decimal inode. An ip inside a
 * mapping has the file offset ip - start + pgoff (see elf_file.h for the way
 * on to an ELF vaddr). The path is kept exactly as the kernel prints it:
 * "" for an anonymous mapping, "[vdso]", "[heap]"... as is, and the
 * " (deleted)" suffix of an unlinked file kept (the caller decides whether to
 * go through /proc/PID/map_files).
 *
 * Reading is a snapshot: the process may map or exit while we read; a process
 * that is gone is reported as -ESRCH or -ENOENT, never as an empty map.
 */
#ifndef NUNATAK_PROC_MAPS_H
#define NUNATAK_PROC_MAPS_H

#include <stdint.h>

#define PROC_MAP_PATH_MAX 4096

struct proc_map {
	uint64_t start, end, pgoff;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	char perms[5];		      /* "r-xp" */
	char path[PROC_MAP_PATH_MAX]; /* "" for anonymous; "[vdso]" and " (deleted)" kept as is */
};

/* Parses one line (with or without its final newline) into *out.
 * Returns 0, or -EINVAL when the line is not in the format above (missing
 * field, non-hex number, end < start, bad perms, path too long). */
int proc_maps_parse_line(const char *line, struct proc_map *out);

/* Calls cb for every executable mapping ('x' in perms) of pid, in address
 * order. Stops and returns cb's value as soon as it is non-zero.
 * Returns 0, -ENOENT when the process is gone, -ESRCH when it has no
 * mapping at all (exited but not reaped, kernel thread) or exited while
 * read, -EINVAL on a line that does not parse, -errno otherwise. m is valid only during cb. */
int proc_maps_for_each_exec(int pid, int (*cb)(const struct proc_map *m, void *ctx), void *ctx);

#endif
