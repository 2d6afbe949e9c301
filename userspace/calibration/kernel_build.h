/* kernel_build — where and how calibration builds its kernels: a private
 * directory (mkdtemp, 0700, under $TMPDIR or /tmp) holding the embedded
 * sources (kernel_sources.h), the compiler's messages and the binaries,
 * all created under the directory's descriptor with O_CREAT|O_EXCL|
 * O_NOFOLLOW, mode 0600 (binaries 0700, as the compiler makes them in a
 * directory only we can write); removed with everything in it when freed.
 *
 * Compilers are trusted tools (tool_resolve_trusted), run with execve and
 * an argument vector, bounded in time (KERNEL_BUILD_TIMEOUT_MS).
 */
#ifndef NUNATAK_CALIBRATION_KERNEL_BUILD_H
#define NUNATAK_CALIBRATION_KERNEL_BUILD_H

#include <stddef.h>

#include "userspace/calibration/kernel_sources.h"

#define KERNEL_BUILD_TIMEOUT_MS 60000

struct kernel_workdir;

/* NULL + errno */
struct kernel_workdir *kernel_workdir__new(void);
/* removes the directory and its files; NULL-safe */
void kernel_workdir__free(struct kernel_workdir *wd);
const char *kernel_workdir_path(const struct kernel_workdir *wd);

/* writes an embedded source file into the directory: 0 or -errno */
int kernel_workdir_write(struct kernel_workdir *wd, const struct kernel_source *src);

/* The C compiler of the Machine: the first trusted one of cc, gcc, clang.
 * 0 with @path; else -errno of the last and @err says why. */
int kernel_compiler_find(char *path, size_t len, char *err, size_t errlen);

/* Runs @compiler (absolute) @flags... -o DIR/@binary DIR/@source in the
 * directory, with @argv0 as its argv[0] (NULL: @compiler). 0; -ETIMEDOUT;
 * -ENOEXEC when it exited non-zero, @err holding the start of its
 * messages; another -errno. */
int kernel_compile(struct kernel_workdir *wd, const char *compiler, const char *argv0,
		   const char *const flags[], const char *source, const char *binary, char *err,
		   size_t errlen);

/* DIR/@file into @buf: 0 or -ENAMETOOLONG */
int kernel_workdir_file(const struct kernel_workdir *wd, const char *file, char *buf, size_t len);

#endif
