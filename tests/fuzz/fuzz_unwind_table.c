/* fuzz_unwind_table — ELF files as the Agent compiles their unwind tables
 * (userspace/unwind/): unwind_table_compile() into one dictionary shared
 * by every input (as in the Agent), unwind_fde_extents() and
 * unwind_fde_extent_find(). The input is written to a file on tmpfs and
 * read through its fd, as the Agent does. Invariants: the documented
 * errors only; a table sorted and strictly increasing, ending INVALID,
 * every rule index interned; extents sorted, found where they are. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/log/log.h"
#include "userspace/unwind/unwind_table.h"

static char path[128];
static struct unwind_rules *rules;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_QUIET);
	snprintf(path, sizeof(path), "%s/module.elf", fuzz_scratch_dir());
	rules = unwind_rules__new();
	FUZZ_CHECK(rules);
	return 0;
}

static void check_table(const struct unwind_row *rows, size_t n,
			const struct unwind_table_stats *st)
{
	size_t count = unwind_rules_count(rules);

	FUZZ_CHECK(n >= 1 && st->rows == n);
	FUZZ_CHECK(rows[n - 1].rule == 0);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(rows[i].rule < count);
		FUZZ_CHECK(!i || rows[i - 1].pc < rows[i].pc);
		FUZZ_CHECK(!i || rows[i - 1].rule != rows[i].rule);
	}
	FUZZ_CHECK(st->cfi_rows >= st->invalid_rows);
}

static void check_extents(int fd)
{
	struct fde_extent *e = NULL;
	size_t n = 0;
	int err = unwind_fde_extents(fd, &e, &n);

	FUZZ_CHECK(err == 0 || err == -ENODATA || err == -ENOEXEC || err == -ENOMEM);
	if (err) {
		FUZZ_CHECK(!e && n == 0);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		int k = unwind_fde_extent_find(e, n, e[i].start);

		FUZZ_CHECK(e[i].start < e[i].end);
		FUZZ_CHECK(!i || e[i - 1].start < e[i].start ||
			   (e[i - 1].start == e[i].start && e[i - 1].end < e[i].end));
		FUZZ_CHECK(k >= 0 && (size_t)k < n);
		FUZZ_CHECK(e[k].start <= e[i].start && e[i].start < e[k].end);
	}
	free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table_stats st;
	struct unwind_row *rows = NULL;
	size_t n = 0;
	int fd, err;

	fuzz_write_file(path, data, size);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	if (unwind_rules_count(rules) > MAX_UNWIND_RULES - 64) {
		unwind_rules__free(rules); /* the Agent's dictionary full: start over */
		rules = unwind_rules__new();
		FUZZ_CHECK(rules);
	}
	err = unwind_table_compile(fd, rules, &rows, &n, &st);
	FUZZ_CHECK(err == 0 || err == -ENODATA || err == -ENOEXEC || err == -ENOSPC ||
		   err == -ENOMEM);
	if (err)
		FUZZ_CHECK(!rows && n == 0);
	else
		check_table(rows, n, &st);
	free(rows);
	check_extents(fd);
	close(fd);
	return 0;
}
