/* test_attribution_stripped — naming the functions of stripped modules,
 * against programs built here with gcc and the real llvm-symbolizer:
 *  - no symbol at all: every byte of N functions attributed gives N
 *    Hotspots "MODULE+0xSTART", START the function's start as its FDE (and
 *    the unstripped file's nm) says, in attribution and in a finalized
 *    Run; padding between functions stays its own, never named after a
 *    neighbour;
 *  - the debug information split out (objcopy --only-keep-debug) into
 *    DIR/.build-id/xx/rest.debug: with DIR among the debug directories
 *    (symbolizer_set_debug_dirs, config [tools] debug_dirs) the functions
 *    are named with their lines; a directory others may write is left out.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/modules.h"
#include "userspace/aggregator/finalize.h"
#include "userspace/attribution/attribution.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/elf/elf_file.h"
#include "userspace/pivot/pivot.h"

#define N_HOT 4

static const char *const hot_names[N_HOT] = {"hot_sum", "hot_mul", "hot_xor", "hot_div"};

static const char source[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "__attribute__((noinline)) long hot_sum(long n) { long s = 0;\n"
    "  for (long i = 0; i < n; i++) s += i * i; return s; }\n"
    "__attribute__((noinline)) long hot_mul(long n) { long s = 1;\n"
    "  for (long i = 1; i < n; i++) s = s * (i | 1) + 3; return s; }\n"
    "__attribute__((noinline)) long hot_xor(long n) { long s = 7;\n"
    "  for (long i = 0; i < n; i++) s ^= (s << 3) + i; return s; }\n"
    "__attribute__((noinline)) long hot_div(long n) { long s = 0;\n"
    "  for (long i = 1; i < n; i++) s += n / i + n % i; return s; }\n"
    "int main(int argc, char **argv) { long n = argc > 1 ? atol(argv[1]) : 1000;\n"
    "  printf(\"%ld\\n\", hot_sum(n) + hot_mul(n) + hot_xor(n) + hot_div(n));\n"
    "  return 0; }\n";

static char tmpdir[PATH_MAX];
static char full_path[PATH_MAX + 32], stripped_path[PATH_MAX + 32], debug_root[PATH_MAX + 32];
static const char *tool;
static int have_tool, built;

static int setup(void **state)
{
	char src[PATH_MAX + 32], id[128];
	FILE *f;

	(void)state;
	tool = symbolizer_tool();
	have_tool = tool[0] == '/' && access(tool, X_OK) == 0;
	if (make_tmpdir(tmpdir, sizeof(tmpdir), "attribution-stripped"))
		return -1;
	snprintf(src, sizeof(src), "%s/hot.c", tmpdir);
	snprintf(full_path, sizeof(full_path), "%s/hot", tmpdir);
	snprintf(stripped_path, sizeof(stripped_path), "%s/hot-stripped", tmpdir);
	snprintf(debug_root, sizeof(debug_root), "%s/debug", tmpdir);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fputs(source, f);
	fclose(f);
	built = run_cmd("gcc -O2 -g -fno-inline -fno-ipa-icf -Wl,--build-id '%s' -o '%s' && "
			"cp '%s' '%s' && strip --strip-all '%s'",
			src, full_path, full_path, stripped_path, stripped_path) == 0;
	if (built && elf_read_build_id(stripped_path, id, sizeof(id)) == 0)
		built = run_cmd("mkdir -p '%s/.build-id/%.2s' && objcopy --only-keep-debug '%s' "
				"'%s/.build-id/%.2s/%s.debug'",
				debug_root, id, full_path, debug_root, id, id + 2) == 0;
	else
		built = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	symbolizer_set_debug_dirs(NULL, 0, NULL, 0);
	return remove_tree(tmpdir);
}

#define NEED_BUILT()                                                                               \
	do {                                                                                       \
		SKIP_UNLESS(have_tool, "llvm-symbolizer not found (apt-get install llvm)");        \
		SKIP_UNLESS(built, "cannot build, strip and split the test program");              \
	} while (0)

/* every byte of the N functions, as nm of the unstripped file gives them */
static size_t hot_addresses(uint64_t **addrs, struct nm_symbol *syms)
{
	size_t i, n = 0, k = 0;
	uint64_t a, *v;

	for (i = 0; i < N_HOT; i++) {
		assert_int_equal(nm_lookup(full_path, hot_names[i], &syms[i]), 0);
		assert_true(syms[i].size > 0);
		n += syms[i].size;
	}
	v = calloc(n, sizeof(*v));
	assert_non_null(v);
	for (i = 0; i < N_HOT; i++)
		for (a = syms[i].addr; a < syms[i].addr + syms[i].size; a++)
			v[k++] = a;
	*addrs = v;
	return n;
}

static void test_extents_name_stripped_functions(void **state)
{
	struct nm_symbol syms[N_HOT], none;
	struct attributed_address *out;
	uint64_t *addrs, starts[N_HOT], gap;
	size_t n, i, j, n_starts = 0;
	char expect[64];

	(void)state;
	NEED_BUILT();
	assert_int_not_equal(nm_lookup(stripped_path, "hot_sum", &none), 0);
	symbolizer_set_debug_dirs(NULL, 0, NULL, 0);
	n = hot_addresses(&addrs, syms);
	out = calloc(n, sizeof(*out));
	assert_non_null(out);
	assert_int_equal(attribution_attribute_module(tool, stripped_path, NULL, NULL, addrs, n,
						      out, NULL, NULL, 0),
			 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(out[i].level, RESOLUTION_UNRESOLVED);
		for (j = 0; j < n_starts && starts[j] != out[i].function_start; j++)
			;
		if (j == n_starts) {
			assert_true(n_starts < N_HOT); /* never one per instruction */
			starts[n_starts++] = out[i].function_start;
		}
		snprintf(expect, sizeof(expect), "hot-stripped+0x%llx",
			 (unsigned long long)out[i].function_start);
		assert_string_equal(out[i].function, expect);
		attributed_address_release(&out[i]);
	}
	assert_int_equal(n_starts, N_HOT);
	for (i = 0; i < N_HOT; i++)
		assert_int_equal(starts[i], syms[i].addr); /* in nm's order, as sampled */

	/* the byte after a function, if padding: its own, not the function's */
	for (i = 0; i < N_HOT; i++) {
		gap = syms[i].addr + syms[i].size;
		for (j = 0;
		     j < N_HOT && !(syms[j].addr <= gap && gap < syms[j].addr + syms[j].size); j++)
			;
		if (j < N_HOT)
			continue;
		assert_int_equal(attribution_attribute_module(tool, stripped_path, NULL, NULL, &gap,
							      1, out, NULL, NULL, 0),
				 0);
		assert_int_equal(out[0].level, RESOLUTION_UNRESOLVED);
		assert_true(out[0].function_start != syms[i].addr);
		attributed_address_release(&out[0]);
	}
	free(out);
	free(addrs);
}

/* The same through a Run: the samples stored as an Agent sends them, the
 * Run finalized: N Hotspots in the pivot, holding every sample. */
static void test_stripped_run_has_n_hotspots(void **state)
{
	struct module mod = {.path = stripped_path, .display_name = "hot-stripped"};
	struct batch_locus locus = {.tgid = 1, .tid = 1, .comm = "hot", .world_size = -1};
	struct nm_symbol syms[N_HOT];
	struct module *frame[] = {&mod};
	struct batch_builder *b;
	json_t *manifest = json_object();
	char id[128], sql[256];
	struct pivot *p;
	uint64_t *addrs;
	sqlite3_stmt *st;
	size_t n, i;
	int dirfd;

	(void)state;
	NEED_BUILT();
	symbolizer_set_debug_dirs(NULL, 0, NULL, 0);
	assert_int_equal(elf_read_build_id(stripped_path, id, sizeof(id)), 0);
	mod.identity = id;
	mod.has_build_id = 1;
	n = hot_addresses(&addrs, syms);
	b = batch_builder__new("run-s", "node1", 1);
	assert_non_null(b);
	for (i = 0; i < n; i++)
		assert_int_equal(batch_builder_add_sample(b, &locus, frame, &addrs[i], 1, 0, 0,
							  "cpu-clock", 1, 1000),
				 0);
	p = pivot__create(path_in(tmpdir, "run.sqlite"));
	assert_non_null(p);
	assert_int_equal(pivot_store_batch(p, batch_builder_envelope(b)->batch), 0);
	batch_builder__free(b);
	dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	assert_int_equal(finalize_run(p, dirfd, manifest, tool), 0);
	close(dirfd);
	json_decref(manifest);

	snprintf(sql, sizeof(sql),
		 "SELECT h.name, h.function_start, h.resolution_level, sum(m.sample_count) FROM"
		 " hotspots h JOIN measurements m ON m.hotspot = h.id GROUP BY h.id ORDER BY"
		 " h.function_start");
	assert_int_equal(sqlite3_prepare_v2(pivot_sqlite(p), sql, -1, &st, NULL), SQLITE_OK);
	for (i = 0; sqlite3_step(st) == SQLITE_ROW; i++) {
		char expect[64];

		assert_true(i < N_HOT);
		snprintf(expect, sizeof(expect), "hot-stripped+0x%llx",
			 (unsigned long long)syms[i].addr);
		assert_string_equal((const char *)sqlite3_column_text(st, 0), expect);
		assert_int_equal(sqlite3_column_int64(st, 1), syms[i].addr);
		assert_string_equal((const char *)sqlite3_column_text(st, 2), "unresolved");
		assert_int_equal(sqlite3_column_int64(st, 3), syms[i].size); /* one per byte */
	}
	sqlite3_finalize(st);
	assert_int_equal(i, N_HOT);
	pivot__free(p);
	free(addrs);
}

static void test_debug_dirs_name_stripped_functions(void **state)
{
	const char *dirs[2] = {"/nonexistent/debug", debug_root};
	struct attributed_address out[N_HOT];
	struct nm_symbol syms[N_HOT];
	uint64_t addrs[N_HOT];
	char err[512];
	size_t i;

	(void)state;
	NEED_BUILT();
	for (i = 0; i < N_HOT; i++) {
		assert_int_equal(nm_lookup(full_path, hot_names[i], &syms[i]), 0);
		addrs[i] = syms[i].addr + syms[i].size / 2;
	}
	/* the directory missing: a Hotspot by extent, no name */
	symbolizer_set_debug_dirs(NULL, 0, NULL, 0);
	assert_int_equal(attribution_attribute_module(tool, stripped_path, NULL, NULL, addrs, N_HOT,
						      out, NULL, NULL, 0),
			 0);
	for (i = 0; i < N_HOT; i++) {
		assert_int_equal(out[i].level, RESOLUTION_UNRESOLVED);
		attributed_address_release(&out[i]);
	}
	/* a missing directory is left out and said; the other one is used */
	assert_int_equal(symbolizer_set_debug_dirs(dirs, 2, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "debug directory '/nonexistent/debug' left out"));
	assert_int_equal(attribution_attribute_module(tool, stripped_path, NULL, NULL, addrs, N_HOT,
						      out, NULL, NULL, 0),
			 0);
	for (i = 0; i < N_HOT; i++) {
		assert_string_equal(out[i].function, hot_names[i]);
		assert_int_equal(out[i].level, RESOLUTION_LINE);
		assert_true(out[i].line >= 3 && out[i].line <= 10);
		assert_non_null(out[i].source_file);
		assert_non_null(strstr(out[i].source_file, "hot.c"));
		assert_int_equal(out[i].function_start, syms[i].addr);
		attributed_address_release(&out[i]);
	}
}

/* a directory another user could write is never given to the tool */
static void test_untrusted_debug_dir_left_out(void **state)
{
	char open_dir[PATH_MAX + 32], err[512];
	const char *dirs[1] = {open_dir};
	struct attributed_address out;
	struct nm_symbol sym = {0};
	uint64_t addr;

	(void)state;
	NEED_BUILT();
	snprintf(open_dir, sizeof(open_dir), "%s/open", tmpdir);
	assert_int_equal(
	    run_cmd("cp -a '%s' '%s' && chmod 0777 '%s'", debug_root, open_dir, open_dir), 0);
	assert_int_equal(symbolizer_set_debug_dirs(dirs, 1, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, open_dir));
	assert_int_equal(nm_lookup(full_path, "hot_xor", &sym), 0);
	addr = sym.addr + 1;
	assert_int_equal(attribution_attribute_module(tool, stripped_path, NULL, NULL, &addr, 1,
						      &out, NULL, NULL, 0),
			 0);
	assert_int_equal(out.level, RESOLUTION_UNRESOLVED);
	attributed_address_release(&out);
	/* relative: refused before anything is looked at */
	dirs[0] = "debug";
	assert_int_equal(symbolizer_set_debug_dirs(dirs, 1, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_extents_name_stripped_functions),
	    cmocka_unit_test(test_stripped_run_has_n_hotspots),
	    cmocka_unit_test(test_debug_dirs_name_stripped_functions),
	    cmocka_unit_test(test_untrusted_debug_dir_left_out),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
