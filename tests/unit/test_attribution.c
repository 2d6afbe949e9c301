/* Tests of userspace/attribution/attribution against binaries built at run
 * time with gcc/g++ in a mkdtemp directory: inline chains, demangling,
 * Resolution levels (line, function, symbol, unresolved), the extent rule
 * in gaps, a module rebuilt after sampling, a missing symbolizer and one
 * large batch. Addresses come from nm. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/attribution/attribution.h"
#include "userspace/elf/elf_file.h"

#define MISSING_TOOL "/nonexistent/llvm-symbolizer"

static char tmpdir[PATH_MAX];
static const char *tool;
static int have_tool, have_gxx;

/* every built module: path, whether it built */
static char prog_path[PATH_MAX + 32], nodebug_path[PATH_MAX + 32], lib_path[PATH_MAX + 32],
    stripped_path[PATH_MAX + 32], cxx_path[PATH_MAX + 32];
static int have_prog, have_nodebug, have_lib, have_cxx;

/* An address after the end of a sized text symbol that no symbol covers and
 * that lies before the next symbol: the padding between two functions. */
static int nm_find_gap(const char *path, uint64_t *gap)
{
	struct nm_symbol syms[512];
	char cmd[PATH_MAX + 64], line[1024];
	size_t n = 0, i, j;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -n -S --defined-only '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (n < 512 && fgets(line, sizeof(line), p)) {
		unsigned long long a, s = 0;
		char type;

		if (sscanf(line, "%llx %llx %c", &a, &s, &type) == 3 &&
		    (type == 'T' || type == 't'))
			syms[n++] = (struct nm_symbol){a, s};
		else if (sscanf(line, "%llx %c", &a, &type) == 2 && (type == 'T' || type == 't'))
			syms[n++] = (struct nm_symbol){a, 0};
	}
	pclose(p);
	for (i = 0; i + 1 < n; i++) {
		uint64_t end = syms[i].addr + syms[i].size;
		int covered = 0;

		if (!syms[i].size || end >= syms[i + 1].addr)
			continue;
		for (j = 0; j < n; j++) {
			if (syms[j].addr <= end && end < syms[j].addr + syms[j].size)
				covered = 1;
		}
		if (!covered) {
			*gap = end;
			return 0;
		}
	}
	return -ENOENT;
}

static int identity_of(const char *path, char *buf, size_t len)
{
	struct elf_file *f = elf_file__open(path);

	if (!f)
		return -errno;
	snprintf(buf, len, "%s", elf_file__identity(f));
	elf_file__free(f);
	return 0;
}

/* the invariants every attributed address keeps, whatever happened */
static void assert_sane_attributed(const struct attributed_address *a, const char *display)
{
	size_t i;

	assert_non_null(a->function);
	assert_true(a->level <= RESOLUTION_UNRESOLVED);
	if (a->level == RESOLUTION_UNRESOLVED) {
		char expect[PATH_MAX + 32];

		/* named by its start: the address, or its FDE extent's */
		snprintf(expect, sizeof(expect), "%s+0x%llx", display,
			 (unsigned long long)a->function_start);
		assert_string_equal(a->function, expect);
		assert_true(a->function_start <= a->address);
		assert_int_equal(a->n_frames, 0);
		assert_null(a->source_file);
		assert_int_equal(a->line, 0);
	} else {
		assert_true(a->function[0]);
		assert_string_not_equal(a->function, "??");
		assert_true(a->function_start <= a->address);
	}
	if (a->level == RESOLUTION_LINE)
		assert_true(a->line > 0);
	if (a->n_frames) {
		assert_non_null(a->frames);
		assert_int_equal(a->line, a->frames[0].line);
	}
	for (i = 0; i < a->n_frames; i++) {
		if (a->frames[i].function)
			assert_true(a->frames[i].function[0]);
	}
}

static int ends_with(const char *s, const char *suffix)
{
	size_t ls = s ? strlen(s) : 0, lx = strlen(suffix);

	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* attributes one address; the caller releases *out */
static int attribute_one(const char *symbolizer, const char *path, uint64_t addr,
			 struct attributed_address *out, int *missing)
{
	char reason[512];
	int m = -1, err;

	err = attribution_attribute_module(symbolizer, path, NULL, NULL, &addr, 1, out, &m, reason,
					   sizeof(reason));
	assert_true(m == 0 || m == 1);
	if (missing)
		*missing = m;
	return err;
}

static const char PROG_C[] =
    "static inline int sq(int x) { return x * x + 3; }\n"
    "__attribute__((noinline)) int caller(int x)\n"
    "{\n"
    "\tint s = 0;\n"
    "\tfor (int i = 0; i < x; i++)\n"
    "\t\ts += sq(i);\n"
    "\treturn s;\n"
    "}\n"
    "__attribute__((noinline)) int other(int x) { return x ^ 0x55; }\n"
    "int main(int c, char **v) { (void)v; return caller(c) + other(c); }\n";

static const char LIB_C[] = "__attribute__((noinline)) static int hidden(int x)\n"
			    "{\n\tvolatile int y = x;\n\treturn y * 7 + 1;\n}\n"
			    "int exported(int x) { return hidden(x) + hidden(x + 1); }\n";

static const char CXX_CPP[] = "namespace ns {\n"
			      "__attribute__((noinline)) int foo(int x) { return x * 3 + 1; }\n"
			      "}\n"
			      "int main(int c, char **) { return ns::foo(c); }\n";

static int group_setup(void **state)
{
	char src[PATH_MAX + 32];

	(void)state;
	tool = symbolizer_tool();
	have_tool = have_command(tool);
	have_gxx = have_command("g++");

	if (make_tmpdir(tmpdir, sizeof(tmpdir), "attribution"))
		return -1;

	snprintf(src, sizeof(src), "%s/prog.c", tmpdir);
	snprintf(prog_path, sizeof(prog_path), "%s/prog", tmpdir);
	snprintf(nodebug_path, sizeof(nodebug_path), "%s/prog-nodebug", tmpdir);
	if (write_file(src, PROG_C))
		return -1;
	have_prog = run_cmd("gcc -O2 -g -Wl,--build-id '%s' -o '%s'", src, prog_path) == 0;
	have_nodebug = run_cmd("gcc -O2 -Wl,--build-id '%s' -o '%s'", src, nodebug_path) == 0;

	snprintf(src, sizeof(src), "%s/lib.c", tmpdir);
	snprintf(lib_path, sizeof(lib_path), "%s/libfull.so", tmpdir);
	snprintf(stripped_path, sizeof(stripped_path), "%s/libstripped.so", tmpdir);
	if (write_file(src, LIB_C))
		return -1;
	have_lib = run_cmd("gcc -O2 -shared -fPIC '%s' -o '%s' && cp '%s' '%s' && "
			   "strip --strip-all '%s'",
			   src, lib_path, lib_path, stripped_path, stripped_path) == 0;

	if (have_gxx) {
		snprintf(src, sizeof(src), "%s/ns.cpp", tmpdir);
		snprintf(cxx_path, sizeof(cxx_path), "%s/cxxprog", tmpdir);
		if (write_file(src, CXX_CPP))
			return -1;
		have_cxx = run_cmd("g++ -O2 -g '%s' -o '%s'", src, cxx_path) == 0;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	remove_tree(tmpdir);
	return 0;
}

#define NEED_TOOL()                                                                                \
	SKIP_UNLESS(have_tool, "llvm-symbolizer not found (set NUNATAK_LLVM_SYMBOLIZER)")

static void test_level_names(void **state)
{
	(void)state;
	assert_string_equal(resolution_level_name(RESOLUTION_LINE), "line");
	assert_string_equal(resolution_level_name(RESOLUTION_FUNCTION), "function");
	assert_string_equal(resolution_level_name(RESOLUTION_SYMBOL), "symbol");
	assert_string_equal(resolution_level_name(RESOLUTION_UNRESOLVED), "unresolved");
	assert_string_equal(resolution_level_name((enum resolution_level)42), "invalid");
}

/* every byte of caller: one Hotspot, one function_start; somewhere the
 * inlined sq shows as a chain of 2, innermost first */
static void test_inline_chain(void **state)
{
	struct attributed_address *out;
	struct nm_symbol caller = {0};
	uint64_t *addrs;
	int saw_chain = 0, missing = -1;
	size_t i, n;

	(void)state;
	NEED_TOOL();
	SKIP_UNLESS(have_prog, "cannot build the -O2 -g test program with gcc");
	assert_int_equal(nm_lookup(prog_path, "caller", &caller), 0);

	n = caller.size;
	addrs = calloc(n, sizeof(*addrs));
	out = calloc(n, sizeof(*out));
	assert_non_null(addrs);
	assert_non_null(out);
	for (i = 0; i < n; i++)
		addrs[i] = caller.addr + i;
	assert_int_equal(attribution_attribute_module(tool, prog_path, "prog", NULL, addrs, n, out,
						      &missing, NULL, 0),
			 0);
	assert_int_equal(missing, 0);
	for (i = 0; i < n; i++) {
		assert_sane_attributed(&out[i], "prog");
		assert_int_equal(out[i].address, addrs[i]);
		assert_string_equal(out[i].function, "caller");
		assert_int_equal(out[i].function_start, caller.addr);
		if (out[i].level != RESOLUTION_LINE)
			continue; /* a line-0 byte stays at function level */
		assert_true(ends_with(out[i].source_file, "/prog.c"));
		assert_true(out[i].n_frames >= 1);
		assert_string_equal(out[i].frames[out[i].n_frames - 1].function, "caller");
		if (out[i].n_frames == 2) {
			assert_string_equal(out[i].frames[0].function, "sq");
			assert_int_equal(out[i].frames[0].line, 1);
			assert_int_equal(out[i].line, 1);
			assert_true(ends_with(out[i].frames[0].file, "/prog.c"));
			assert_true(out[i].frames[1].line >= 2 && out[i].frames[1].line <= 8);
			saw_chain = 1;
		}
	}
	assert_int_equal(out[0].level, RESOLUTION_LINE);
	assert_true(saw_chain);
	for (i = 0; i < n; i++)
		attributed_address_release(&out[i]);
	free(out);
	free(addrs);
}

static void test_cxx_demangled(void **state)
{
	struct attributed_address a;
	struct nm_symbol foo;

	(void)state;
	NEED_TOOL();
	SKIP_UNLESS(have_gxx, "g++ not found");
	SKIP_UNLESS(have_cxx, "cannot build the C++ test program with g++");
	assert_int_equal(nm_lookup(cxx_path, "_ZN2ns3fooEi", &foo), 0);

	assert_int_equal(attribute_one(tool, cxx_path, foo.addr + 1, &a, NULL), 0);
	assert_sane_attributed(&a, "cxxprog");
	assert_string_equal(a.function, "ns::foo(int)");
	assert_int_equal(a.level, RESOLUTION_LINE);
	assert_int_equal(a.function_start, foo.addr);
	assert_true(ends_with(a.source_file, "/ns.cpp"));
	attributed_address_release(&a);

	/* without the symbolizer, names stay raw */
	assert_int_equal(attribute_one(MISSING_TOOL, cxx_path, foo.addr + 1, &a, NULL), 0);
	assert_string_equal(a.function, "_ZN2ns3fooEi");
	assert_int_equal(a.level, RESOLUTION_FUNCTION);
	attributed_address_release(&a);
}

static void test_no_debug_info(void **state)
{
	struct attributed_address a;
	struct nm_symbol caller = {0};

	(void)state;
	NEED_TOOL();
	SKIP_UNLESS(have_nodebug, "cannot build the test program with gcc");
	assert_int_equal(nm_lookup(nodebug_path, "caller", &caller), 0);

	assert_int_equal(attribute_one(tool, nodebug_path, caller.addr + 2, &a, NULL), 0);
	assert_sane_attributed(&a, "prog-nodebug");
	assert_string_equal(a.function, "caller");
	assert_int_equal(a.level, RESOLUTION_FUNCTION);
	assert_int_equal(a.function_start, caller.addr);
	assert_null(a.source_file);
	assert_int_equal(a.line, 0);
	assert_int_equal(a.n_frames, 0);
	attributed_address_release(&a);
}

static void test_stripped_library(void **state)
{
	struct nm_symbol exported, hidden;
	struct attributed_address out[2];
	uint64_t addrs[2];
	char expect[64];

	(void)state;
	NEED_TOOL();
	SKIP_UNLESS(have_lib, "cannot build and strip the test library");
	assert_int_equal(nm_lookup(lib_path, "exported", &exported), 0);
	assert_int_equal(nm_lookup(lib_path, "hidden", &hidden), 0);
	assert_int_not_equal(nm_lookup(stripped_path, "exported", &(struct nm_symbol){0}), 0);

	addrs[0] = exported.addr + 1;
	addrs[1] = hidden.addr + 1;
	assert_int_equal(attribution_attribute_module(tool, stripped_path, "libstripped.so", NULL,
						      addrs, 2, out, NULL, NULL, 0),
			 0);
	assert_sane_attributed(&out[0], "libstripped.so");
	assert_sane_attributed(&out[1], "libstripped.so");
	assert_string_equal(out[0].function, "exported");
	assert_int_equal(out[0].level, RESOLUTION_SYMBOL);
	assert_int_equal(out[0].function_start, exported.addr);
	/* no symbol left: the function its FDE describes, by its start */
	assert_int_equal(out[1].level, RESOLUTION_UNRESOLVED);
	snprintf(expect, sizeof(expect), "libstripped.so+0x%llx", (unsigned long long)hidden.addr);
	assert_string_equal(out[1].function, expect);
	assert_int_equal(out[1].function_start, hidden.addr);
	attributed_address_release(&out[0]);
	attributed_address_release(&out[1]);
}

/* the padding after a function is nobody's: never named after a neighbour */
static void test_gap_unresolved(void **state)
{
	const char *paths[] = {prog_path, nodebug_path};
	const char *names[] = {"prog", "prog-nodebug"};
	struct attributed_address a;
	char expect[64];
	uint64_t gap;
	size_t i;

	(void)state;
	NEED_TOOL();
	SKIP_UNLESS(have_prog && have_nodebug, "cannot build the test program with gcc");
	for (i = 0; i < 2; i++) {
		if (nm_find_gap(paths[i], &gap)) {
			printf("SKIPPED: no padding between functions in '%s'\n", paths[i]);
			skip();
		}
		assert_int_equal(attribute_one(tool, paths[i], gap, &a, NULL), 0);
		assert_sane_attributed(&a, names[i]);
		assert_int_equal(a.level, RESOLUTION_UNRESOLVED);
		snprintf(expect, sizeof(expect), "%s+0x%llx", names[i], (unsigned long long)gap);
		assert_string_equal(a.function, expect);
		assert_int_equal(a.function_start, gap);
		attributed_address_release(&a);

		/* the ELF fallback obeys the same rule */
		assert_int_equal(attribute_one(MISSING_TOOL, paths[i], gap, &a, NULL), 0);
		assert_int_equal(a.level, RESOLUTION_UNRESOLVED);
		attributed_address_release(&a);
	}
}

/* rebuilt after sampling: another build-id, so nothing is symbolized */
static void test_rebuilt_is_stale(void **state)
{
	char src[PATH_MAX + 32], path[PATH_MAX + 32], old_id[128], new_id[128], reason[1024];
	struct attributed_address out[2];
	struct nm_symbol caller = {0};
	uint64_t addrs[2];
	int missing = -1;
	size_t i;

	(void)state;
	NEED_TOOL();
	SKIP_UNLESS(have_prog, "cannot build the test program with gcc");
	snprintf(src, sizeof(src), "%s/prog.c", tmpdir);
	snprintf(path, sizeof(path), "%s/rebuilt", tmpdir);
	assert_int_equal(run_cmd("gcc -O2 -g -Wl,--build-id '%s' -o '%s'", src, path), 0);
	assert_int_equal(identity_of(path, old_id, sizeof(old_id)), 0);
	assert_int_equal(nm_lookup(path, "caller", &caller), 0);

	/* the sampled identity still matches: attributed */
	addrs[0] = caller.addr;
	addrs[1] = caller.addr + 4;
	assert_int_equal(attribution_attribute_module(tool, path, "rebuilt", old_id, addrs, 2, out,
						      &missing, reason, sizeof(reason)),
			 0);
	assert_string_equal(out[0].function, "caller");
	assert_string_equal(reason, "");
	for (i = 0; i < 2; i++)
		attributed_address_release(&out[i]);

	assert_int_equal(run_cmd("gcc -O2 -g -Wl,--build-id -DREBUILT=1 -x c - -o '%s' <<'EOF'\n"
				 "%s\nint rebuilt_marker(void) { return 7; }\nEOF",
				 path, PROG_C),
			 0);
	assert_int_equal(identity_of(path, new_id, sizeof(new_id)), 0);
	assert_string_not_equal(old_id, new_id);

	assert_int_equal(attribution_attribute_module(tool, path, "rebuilt", old_id, addrs, 2, out,
						      &missing, reason, sizeof(reason)),
			 -ESTALE);
	for (i = 0; i < 2; i++) {
		assert_sane_attributed(&out[i], "rebuilt");
		assert_int_equal(out[i].level, RESOLUTION_UNRESOLVED);
		attributed_address_release(&out[i]);
	}
	assert_non_null(strstr(reason, path));
	assert_non_null(strstr(reason, old_id));
	assert_non_null(strstr(reason, new_id));
	assert_true(reason[0] >= 'a' && reason[0] <= 'z');
	assert_null(strchr(reason, '\n'));
	printf("stale reason: %s\n", reason);

	/* gone: -ENOENT, still storable */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(attribution_attribute_module(tool, path, "rebuilt", old_id, addrs, 2, out,
						      &missing, reason, sizeof(reason)),
			 -ENOENT);
	for (i = 0; i < 2; i++) {
		assert_sane_attributed(&out[i], "rebuilt");
		attributed_address_release(&out[i]);
	}
}

static void test_missing_symbolizer(void **state)
{
	struct attributed_address a;
	struct nm_symbol caller = {0};
	int missing = -1;

	(void)state;
	SKIP_UNLESS(have_prog, "cannot build the test program with gcc");
	assert_int_equal(nm_lookup(prog_path, "caller", &caller), 0);

	assert_int_equal(attribute_one(MISSING_TOOL, prog_path, caller.addr + 3, &a, &missing), 0);
	assert_int_equal(missing, 1);
	assert_sane_attributed(&a, "prog");
	assert_string_equal(a.function, "caller");
	assert_int_equal(a.level, RESOLUTION_FUNCTION);
	assert_int_equal(a.function_start, caller.addr);
	assert_int_equal(a.n_frames, 0);
	attributed_address_release(&a);
}

/* 5000 addresses, one invocation; every answer agrees with the extent rule */
static void test_large_batch(void **state)
{
	const size_t n = 5000;
	struct nm_symbol caller, other;
	struct attributed_address *out;
	uint64_t *addrs;
	size_t i;

	(void)state;
	NEED_TOOL();
	SKIP_UNLESS(have_prog, "cannot build the test program with gcc");
	assert_int_equal(nm_lookup(prog_path, "caller", &caller), 0);
	assert_int_equal(nm_lookup(prog_path, "other", &other), 0);

	addrs = calloc(n, sizeof(*addrs));
	out = calloc(n, sizeof(*out));
	assert_non_null(addrs);
	assert_non_null(out);
	for (i = 0; i < n; i++) {
		switch (i % 3) {
		case 0:
			addrs[i] = caller.addr + (i / 3) % caller.size;
			break;
		case 1:
			addrs[i] = other.addr + (i / 3) % other.size;
			break;
		default:
			addrs[i] = 0x7f0000000000ULL + i; /* no symbol there */
		}
	}
	assert_int_equal(attribution_attribute_module(tool, prog_path, "prog", NULL, addrs, n, out,
						      NULL, NULL, 0),
			 0);
	for (i = 0; i < n; i++) {
		assert_sane_attributed(&out[i], "prog");
		assert_int_equal(out[i].address, addrs[i]);
		switch (i % 3) {
		case 0:
			assert_string_equal(out[i].function, "caller");
			assert_int_equal(out[i].function_start, caller.addr);
			break;
		case 1:
			assert_string_equal(out[i].function, "other");
			assert_int_equal(out[i].function_start, other.addr);
			break;
		default:
			assert_int_equal(out[i].level, RESOLUTION_UNRESOLVED);
		}
		attributed_address_release(&out[i]);
	}
	free(out);
	free(addrs);
}

static void test_bad_arguments(void **state)
{
	struct attributed_address a;
	uint64_t addr = 1;

	(void)state;
	assert_int_equal(
	    attribution_attribute_module(tool, NULL, NULL, NULL, &addr, 1, &a, NULL, NULL, 0),
	    -EINVAL);
	assert_int_equal(
	    attribution_attribute_module(tool, "/bin/sh", NULL, NULL, NULL, 1, &a, NULL, NULL, 0),
	    -EINVAL);
	assert_int_equal(attribution_attribute_module(tool, "/nonexistent", NULL, NULL, NULL, 0,
						      NULL, NULL, NULL, 0),
			 0);
	attributed_address_release(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_level_names),	     cmocka_unit_test(test_inline_chain),
	    cmocka_unit_test(test_cxx_demangled),    cmocka_unit_test(test_no_debug_info),
	    cmocka_unit_test(test_stripped_library), cmocka_unit_test(test_gap_unresolved),
	    cmocka_unit_test(test_rebuilt_is_stale), cmocka_unit_test(test_missing_symbolizer),
	    cmocka_unit_test(test_large_batch),	     cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
