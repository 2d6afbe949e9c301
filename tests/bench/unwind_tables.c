/* unwind-tables — compiles the unwind table of each ELF file named on the
 * command line (userspace/unwind/) and prints, per file: compile time,
 * FDEs, CFI rows, rows emitted, their bytes (8 per row), invalid rows, FDEs
 * not tabled (skipped or unreadable) and the size of the shared rule
 * dictionary; then the totals and peak RSS.
 *
 *   build/bench/unwind-tables /lib/x86_64-linux-gnu/libc.so.6 ...
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "userspace/unwind/unwind_table.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct unwind_rules *rules = unwind_rules__new();
	uint64_t total_rows = 0;
	double total_s = 0;
	struct rusage ru;
	int status = 0;

	if (!rules) {
		fprintf(stderr, "unwind-tables: %s\n", strerror(errno));
		return 1;
	}
	printf("%-44s %7s %7s %8s %8s %9s %7s %7s %6s\n", "file", "seconds", "FDEs", "CFI rows",
	       "rows", "bytes", "invalid", "skipped", "rules");
	for (int i = 1; i < argc; i++) {
		struct unwind_table_stats st = { 0 };
		struct unwind_row *rows = NULL;
		size_t n = 0;
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC), err;
		double t0 = now_s(), dt;

		if (fd < 0) {
			fprintf(stderr, "cannot open '%s': %s\n", argv[i], strerror(errno));
			status = 1;
			continue;
		}
		err = unwind_table_compile(fd, rules, &rows, &n, &st);
		dt = now_s() - t0;
		close(fd);
		if (err) {
			fprintf(stderr, "cannot compile '%s': %s\n", argv[i], strerror(-err));
			status = 1;
			continue;
		}
		printf("%-44s %7.3f %7lu %8lu %8zu %9zu %7lu %7lu %6zu\n", argv[i], dt,
		       (unsigned long)st.fdes, (unsigned long)st.cfi_rows, n, n * sizeof(*rows),
		       (unsigned long)st.invalid_rows,
		       (unsigned long)(st.skipped_fdes + st.unreadable_fdes), unwind_rules_count(rules));
		total_rows += n;
		total_s += dt;
		free(rows);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("total: %.3f s, %lu rows, %lu bytes of rows, %zu rules (%zu bytes), peak RSS %ld KiB\n",
	       total_s, (unsigned long)total_rows, (unsigned long)(total_rows * sizeof(struct unwind_row)),
	       unwind_rules_count(rules), unwind_rules_count(rules) * sizeof(struct unwind_rule),
	       ru.ru_maxrss);
	unwind_rules__free(rules);
	return status;
}
