/* fuzz_helpers — what several libFuzzer targets share: a scratch directory
 * on tmpfs made once per process, and a file in it rewritten with each
 * input (for the parsers that take a path, not bytes).
 *
 * A failure of the scratch space itself is not a finding of the parser: it
 * aborts with a message, so libFuzzer stops and says so.
 */
#ifndef NUNATAK_FUZZ_HELPERS_H
#define NUNATAK_FUZZ_HELPERS_H

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fails the run with the message: an invariant of the target broke. */
#define FUZZ_CHECK(cond)                                                                    \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__,     \
				__LINE__, #cond);                                           \
			abort();                                                            \
		}                                                                           \
	} while (0)

static char fuzz_scratch[64];

/* at exit: the scratch directory and its files (a crash leaves them) */
static inline void fuzz_scratch_remove(void)
{
	DIR *d = opendir(fuzz_scratch);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(fuzz_scratch);
}

/* The scratch directory of this process (/dev/shm, else /tmp), removed at
 * exit; its files are rewritten in place, so it stays one per process. */
static inline const char *fuzz_scratch_dir(void)
{
	char *dir = fuzz_scratch;

	if (dir[0])
		return dir;
	snprintf(dir, sizeof(fuzz_scratch), "/dev/shm/nunatak-fuzz.XXXXXX");
	if (!mkdtemp(dir)) {
		snprintf(dir, sizeof(fuzz_scratch), "/tmp/nunatak-fuzz.XXXXXX");
		if (!mkdtemp(dir)) {
			perror("fuzz: cannot make a scratch directory");
			abort();
		}
	}
	atexit(fuzz_scratch_remove);
	return dir;
}

/* Replaces the content of @path (a file of the scratch directory) with
 * data[0..size). */
static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t off = 0;

	if (fd < 0) {
		perror(path);
		abort();
	}
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);

		if (n <= 0) {
			perror(path);
			abort();
		}
		off += (size_t)n;
	}
	close(fd);
}

#endif
