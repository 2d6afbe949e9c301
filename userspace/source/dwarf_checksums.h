/* dwarf_checksums — the MD5 of each source file a module's DWARF 5 line
 * tables record, read from `llvm-dwarfdump --debug-line MODULE` (a tool
 * resolved as trusted, run with execve and an argument vector, bounded in
 * time; its output streamed, only the line table prologues kept).
 *
 * A file is named as llvm-symbolizer names it: its name when absolute,
 * else its directory (include_directories[dir_index]) joined to it, that
 * directory itself under include_directories[0] (the compilation
 * directory) when relative; "/./" and doubled slashes collapsed.
 * DWARF 4 tables (and DWARF 5 ones a compiler wrote without MD5, as gcc
 * does) give files without a checksum.
 */
#ifndef NUNATAK_SOURCE_DWARF_CHECKSUMS_H
#define NUNATAK_SOURCE_DWARF_CHECKSUMS_H

#include <stddef.h>

#include "userspace/source/md5.h"

#define DWARF_CHECKSUMS_TIMEOUT_MS 20000

struct dwarf_file_checksum {
	char *path;
	int has_md5;
	unsigned char md5[MD5_DIGEST_BYTES];
};

/* The files of one module; filled by dwarf_checksums_feed(). */
struct dwarf_checksums {
	struct dwarf_file_checksum *files;
	size_t n, cap;
	/* parser state (private) */
	char **dirs;
	size_t n_dirs, cap_dirs;
	char *name;
	long dir_index;
	int in_file, has_md5;
	unsigned char md5[MD5_DIGEST_BYTES];
};

void dwarf_checksums_init(struct dwarf_checksums *dc);
void dwarf_checksums_release(struct dwarf_checksums *dc);

/* Feeds one line of llvm-dwarfdump's --debug-line output (no newline
 * needed); a line it does not know is skipped. 0 or -ENOMEM. */
int dwarf_checksums_feed(struct dwarf_checksums *dc, const char *line);
/* Ends the input (the last file entry kept). 0 or -ENOMEM. */
int dwarf_checksums_finish(struct dwarf_checksums *dc);

/* Runs tool (absolute) on module and parses its output into dc
 * (initialized by the caller), for at most timeout_ms. 0; -ETIMEDOUT;
 * -EIO when it failed (exit status not 0: no debug information, not ELF);
 * -errno from spawning. */
int dwarf_checksums_read(const char *tool, const char *module, int timeout_ms,
			 struct dwarf_checksums *dc);

/* What dc says of path: 1 and md5 filled when an entry of that path has a
 * checksum, 0 when it has none (or no entry names it). */
int dwarf_checksums_lookup(const struct dwarf_checksums *dc, const char *path,
			   unsigned char md5[MD5_DIGEST_BYTES]);

/* path with "/./" and "//" collapsed, in out (size len). */
void dwarf_path_normalize(const char *path, char *out, size_t len);

#endif
