/* test_modules — the Agent's module table, driven by hand with mappings
 * built from real files.
 *
 * The group setup builds, in a mkdtemp directory, two PIE executables (the
 * images before and after an exec) and a shared library with a data object.
 * Mappings are laid out as the kernel lays out each executable PT_LOAD
 * (page-aligned start and pgoff) from what `readelf -lW` prints; expected
 * module-relative addresses are what nm prints, never what the table says.
 *
 * Without gcc or binutils the tests that need them are SKIPPED.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/modules.h"

/* 8 KiB of code in each file, so that the middle of its code mapping is
 * inside the PT_LOAD (see test_bias_small_code_segment for why it matters) */
#define PAD_FN(name) "void " name "(void) { __asm__ volatile(\".skip 8192, 0x90\"); }\n"

static const char prog_a_src[] = PAD_FN("nt_a_pad")
    "__attribute__((noinline)) int nt_a_first(int x) { return x * 7 + 3; }\n"
    "__attribute__((noinline)) int nt_a_second(int x) { return (x ^ 0x55) * 5; }\n"
    "int main(int argc, char **argv) { (void)argv; return nt_a_first(argc) + "
    "nt_a_second(argc); }\n";

/* B's functions sit elsewhere than A's: a padding function comes first */
static const char prog_b_src[] = PAD_FN("nt_b_pad8k")
    "__attribute__((noinline)) int nt_b_pad(int x) { volatile int a[64]; int i; "
    "for (i = 0; i < 64; i++) a[i] = x + i; return a[x & 63]; }\n"
    "__attribute__((noinline)) int nt_b_func(int x) { return x * 13 - 2; }\n"
    "int main(int argc, char **argv) { (void)argv; return nt_b_pad(argc) + nt_b_func(argc); }\n";

static const char lib_src[] = PAD_FN("nt_lib_pad")
    "int nt_table[64] = { 1, 2, 3 };\n"
    "__attribute__((noinline)) int nt_lib_func(int x) { return nt_table[x & 63] * 9; }\n";

/* a library whose code is under half a page: a realistic small plugin */
static const char small_lib_src[] =
    "int nt_small_table[16] = { 1 };\n"
    "__attribute__((noinline)) int nt_small_func(int x) { return nt_small_table[x & 15]; }\n";

#define PID_A 4242
#define PID_CHILD 4243
#define PIE_BASE 0x555555554000ull
#define LIB_BASE 0x7f1234560000ull
#define PAGE 0x1000ull

static char dir[PATH_MAX];
static int have_tools;

#define SKIP_WITHOUT_TOOLS()                                                                       \
	SKIP_UNLESS(have_tools, "gcc, readelf or nm not found in PATH, cannot build test ELF files")

static int group_setup(void **state)
{
	char tmp[PATH_MAX];

	(void)state;
	have_tools = have_command("gcc") && have_command("readelf") && have_command("nm");
	if (!have_tools)
		return 0;
	if (make_tmpdir(tmp, sizeof(tmp), "modules"))
		return -1;
	/* the paths the kernel would report: no symlink in them */
	if (!realpath(tmp, dir))
		return -1;
	if (write_file(path_in(dir, "a.c"), prog_a_src) ||
	    write_file(path_in(dir, "b.c"), prog_b_src) ||
	    write_file(path_in(dir, "lib.c"), lib_src) ||
	    write_file(path_in(dir, "small.c"), small_lib_src))
		return -1;
	return run_cmd("cd %s && gcc -O1 -fPIE -pie -Wl,--build-id a.c -o prog_a && "
		       "gcc -O1 -fPIE -pie -Wl,--build-id b.c -o prog_b && "
		       "gcc -O1 -shared -fPIC -Wl,--build-id lib.c -o libnt.so && "
		       "gcc -O1 -shared -fPIC -Wl,--build-id small.c -o libsmall.so && "
		       "ln -s libnt.so libnt_link.so",
		       dir)
		       ? -1
		       : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

/* --- what binutils says ------------------------------------------------ */

/* The executable PT_LOAD of path, as readelf -lW prints it. */
struct load {
	uint64_t offset, vaddr, filesz;
};

static int exec_load(const char *path, struct load *out)
{
	char cmd[PATH_MAX + 32], line[512];
	int found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long off, va, pa, fs, ms;
		char flags[64];

		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx %63[^\n]", &off, &va, &pa,
			   &fs, &ms, flags) == 6 &&
		    strchr(flags, 'E') && !found) {
			*out = (struct load){ off, va, fs };
			found = 1;
		}
	}
	pclose(p);
	return found ? 0 : -1;
}

/* A file mapping as mmap gives it for one PT_LOAD at load bias base. */
struct fmap {
	const char *path;
	uint64_t start, len, pgoff, dev, inode;
};

static struct fmap file_map(const char *name, uint64_t base)
{
	struct fmap m = { .path = path_in(dir, name) };
	struct load l;
	struct stat st;
	uint64_t va_page;

	assert_int_equal(exec_load(m.path, &l), 0);
	assert_int_equal(stat(m.path, &st), 0);
	va_page = l.vaddr & ~(PAGE - 1);
	m.start = base + va_page;
	m.pgoff = l.offset & ~(PAGE - 1);
	m.len = ((l.vaddr + l.filesz + PAGE - 1) & ~(PAGE - 1)) - va_page;
	m.dev = ((uint64_t)major(st.st_dev) << 20) | minor(st.st_dev);
	m.inode = st.st_ino;
	return m;
}

static void map_file(struct module_table *t, pid_t pid, const struct fmap *m)
{
	assert_int_equal(
	    module_table_map(t, pid, m->start, m->len, m->pgoff, m->dev, m->inode, m->path), 0);
}

static uint64_t nm_addr(const char *name, const char *sym)
{
	struct nm_symbol s;

	assert_int_equal(nm_lookup(path_in(dir, name), sym, &s), 0);
	return s.addr;
}

/* resolve and check module path (or pseudo name) and offset */
static void expect(struct module_table *t, pid_t pid, uint32_t seq, uint64_t ip,
		   const char *path, uint64_t offset)
{
	struct module *m = NULL;
	uint64_t off = 0xdeadbeef;

	module_table_resolve(t, pid, seq, ip, &m, &off);
	assert_non_null(m);
	assert_string_equal(m->path, path);
	assert_int_equal(off, offset);
}

/* --- tests ----------------------------------------------------------------- */

static void test_resolve_pie_and_library(void **state)
{
	struct module_table *t;
	struct fmap a, lib;
	struct module *m;
	uint64_t fa, fs, fl, off;

	(void)state;
	SKIP_WITHOUT_TOOLS();
	t = module_table__new();
	assert_non_null(t);
	a = file_map("prog_a", PIE_BASE);
	lib = file_map("libnt.so", LIB_BASE);
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	assert_int_equal(module_table_has_process(t, PID_A), 1);
	map_file(t, PID_A, &a);
	map_file(t, PID_A, &lib);

	fa = nm_addr("prog_a", "nt_a_first");
	fs = nm_addr("prog_a", "nt_a_second");
	fl = nm_addr("libnt.so", "nt_lib_func");
	expect(t, PID_A, 0, PIE_BASE + fa, a.path, fa);
	expect(t, PID_A, 0, PIE_BASE + fs + 3, a.path, fs + 3);
	expect(t, PID_A, 0, LIB_BASE + fl + 1, lib.path, fl + 1);

	module_table_resolve(t, PID_A, 0, LIB_BASE + fl, &m, &off);
	assert_string_equal(m->display_name, "libnt.so");
	assert_int_equal(m->has_build_id, 1);
	assert_non_null(m->elf);
	assert_int_equal(m->dev, lib.dev);
	assert_int_equal(m->inode, lib.inode);
	/* identity: the build-id, lowercase hex (40 digits for sha1) */
	assert_int_equal(strlen(m->identity), 40);
	assert_int_equal(strspn(m->identity, "0123456789abcdef"), 40);

	/* an unknown process maps nothing, a map into it is refused */
	expect(t, PID_A + 100, 0, PIE_BASE + fa, "[unmapped]", 0);
	assert_int_equal(module_table_map(t, PID_A + 100, a.start, a.len, a.pgoff, a.dev, a.inode,
					  a.path),
			 -ESRCH);
	assert_int_equal(module_table_exec(t, PID_A + 100, "x"), -ESRCH);
	module_table__free(t);
}

static void test_pseudo_modules(void **state)
{
	struct module_table *t = module_table__new();
	struct module *m;
	uint64_t off;

	(void)state;
	assert_non_null(t);
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	assert_int_equal(module_table_map(t, PID_A, 0x7fff00000000ull, 0x2000, 0, 0, 0, "[vdso]"), 0);
	assert_int_equal(module_table_map(t, PID_A, 0x7e0000000000ull, 0x10000, 0, 0, 0, ""), 0);

	/* nobody maps it: [unmapped], offset 0, never the absolute address */
	module_table_resolve(t, PID_A, 0, 0x400123, &m, &off);
	assert_string_equal(m->path, "[unmapped]");
	assert_string_equal(m->identity, "pseudo:unmapped");
	assert_null(m->elf);
	assert_int_equal(off, 0);
	/* just past the end of the vdso mapping */
	expect(t, PID_A, 0, 0x7fff00002000ull, "[unmapped]", 0);

	module_table_resolve(t, PID_A, 0, 0x7e0000001234ull, &m, &off);
	assert_string_equal(m->path, "[anon]");
	assert_string_equal(m->identity, "pseudo:anon");
	assert_int_equal(off, 0);

	module_table_resolve(t, PID_A, 0, 0x7fff00000abcull, &m, &off);
	assert_string_equal(m->path, "[vdso]");
	assert_string_equal(m->display_name, "[vdso]");
	assert_string_equal(m->identity, "pseudo:vdso");
	assert_int_equal(off, 0xabc);
	expect(t, PID_A, 0, 0x7fff00001fffull, "[vdso]", 0x1fff);
	module_table__free(t);
}

static void test_overlapping_map_replaces(void **state)
{
	struct module_table *t;
	struct fmap a;
	uint64_t fa;

	(void)state;
	SKIP_WITHOUT_TOOLS();
	t = module_table__new();
	assert_non_null(t);
	a = file_map("prog_a", PIE_BASE);
	fa = nm_addr("prog_a", "nt_a_first");
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	map_file(t, PID_A, &a);
	expect(t, PID_A, 0, PIE_BASE + fa, a.path, fa);
	/* a MAP_FIXED anonymous remap over the page of nt_a_first */
	assert_int_equal(module_table_map(t, PID_A, (PIE_BASE + fa) & ~(PAGE - 1), PAGE, 0, 0, 0, ""),
			 0);
	expect(t, PID_A, 0, PIE_BASE + fa, "[anon]", 0);
	module_table__free(t);
}

/* a remap of one page inside a file's text (an mprotect splitting libc's
 * text, as a runtime patching it does): the rest of the text stays the
 * file's, at the same offsets */
static void test_overlap_keeps_the_rest(void **state)
{
	struct module_table *t;
	struct fmap a;
	uint64_t mid, before, after, page_off;

	(void)state;
	SKIP_WITHOUT_TOOLS();
	t = module_table__new();
	assert_non_null(t);
	a = file_map("prog_a", PIE_BASE);
	a.len = 3 * PAGE; /* as if the text had three pages */
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	map_file(t, PID_A, &a);
	mid = a.start + PAGE;
	before = a.start + 0x10;
	after = a.start + 2 * PAGE + 0x20;
	page_off = a.pgoff + PAGE; /* the middle page's file offset */
	assert_int_equal(module_table_map(t, PID_A, mid, PAGE, page_off, a.dev, a.inode, a.path), 0);
	assert_int_equal(module_table_map(t, PID_A, mid + 0x100, 0x100, 0, 0, 0, ""), 0);
	expect(t, PID_A, 0, mid + 0x180, "[anon]", 0);
	/* the parts outside the remaps are still the file's */
	{
		struct module *m = NULL;
		uint64_t off_before, off_after, off_mid;

		module_table_resolve(t, PID_A, 0, before, &m, &off_before);
		assert_non_null(m);
		assert_string_equal(m->path, a.path);
		module_table_resolve(t, PID_A, 0, after, &m, &off_after);
		assert_string_equal(m->path, a.path);
		module_table_resolve(t, PID_A, 0, mid + 0x20, &m, &off_mid);
		assert_string_equal(m->path, a.path);
		/* offsets keep their distances: one mapping's arithmetic */
		assert_int_equal(off_after - off_before, (after - before));
		assert_int_equal(off_mid - off_before, (mid + 0x20 - before));
	}
	module_table__free(t);
}

static void test_exec_generations(void **state)
{
	struct module_table *t;
	struct fmap a, b;
	uint64_t fa, fb, ip;

	(void)state;
	SKIP_WITHOUT_TOOLS();
	t = module_table__new();
	assert_non_null(t);
	a = file_map("prog_a", PIE_BASE);
	b = file_map("prog_b", PIE_BASE);
	fa = nm_addr("prog_a", "nt_a_second");
	fb = nm_addr("prog_b", "nt_b_func");
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	map_file(t, PID_A, &a);
	assert_int_equal(module_table_exec_seq(t, PID_A), 0);
	assert_null(module_table_exe(t, PID_A)); /* followed, never seen exec */

	assert_int_equal(module_table_exec(t, PID_A, "prog_b_with_a_long_name"), 0);
	map_file(t, PID_A, &b);
	assert_int_equal(module_table_exec_seq(t, PID_A), 1);
	assert_string_equal(module_table_comm(t, PID_A), "prog_b_with_a_l"); /* 15 + NUL */
	assert_string_equal(module_table_exe(t, PID_A), b.path);

	/* the same ip, before and after the exec */
	ip = PIE_BASE + fa;
	expect(t, PID_A, 0, ip, a.path, fa);
	ip = PIE_BASE + fb;
	expect(t, PID_A, 1, ip, b.path, fb);
	expect(t, PID_A, 2, ip, "[unmapped]", 0); /* not yet happened */
	expect(t, PID_A, UINT32_MAX, ip, "[unmapped]", 0);

	assert_int_equal(module_table_exec(t, PID_A, "c"), 0);
	assert_int_equal(module_table_exec_seq(t, PID_A), 2);
	expect(t, PID_A, 0, PIE_BASE + fa, "[unmapped]", 0); /* two images back */
	expect(t, PID_A, 1, ip, b.path, fb);
	expect(t, PID_A, 2, ip, "[unmapped]", 0); /* the new image maps nothing yet */
	module_table__free(t);
}

static void test_fork_copies_mappings(void **state)
{
	struct module_table *t;
	struct fmap a, lib;
	struct module *mp, *mc;
	uint64_t fa, fl, op, oc;

	(void)state;
	SKIP_WITHOUT_TOOLS();
	t = module_table__new();
	assert_non_null(t);
	a = file_map("prog_a", PIE_BASE);
	lib = file_map("libnt.so", LIB_BASE);
	fa = nm_addr("prog_a", "nt_a_first");
	fl = nm_addr("libnt.so", "nt_lib_func");
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	map_file(t, PID_A, &a);
	map_file(t, PID_A, &lib);
	assert_int_equal(module_table_add_process(t, PID_CHILD, PID_A), 0);
	assert_int_equal(module_table_has_process(t, PID_CHILD), 1);
	expect(t, PID_CHILD, 0, PIE_BASE + fa, a.path, fa);
	expect(t, PID_CHILD, 0, LIB_BASE + fl, lib.path, fl);
	/* one module per file, shared by both processes */
	module_table_resolve(t, PID_A, 0, LIB_BASE + fl, &mp, &op);
	module_table_resolve(t, PID_CHILD, 0, LIB_BASE + fl, &mc, &oc);
	assert_ptr_equal(mp, mc);

	/* the child's own mappings do not leak into the parent */
	assert_int_equal(module_table_map(t, PID_CHILD, lib.start, lib.len, 0, 0, 0, ""), 0);
	expect(t, PID_CHILD, 0, LIB_BASE + fl, "[anon]", 0);
	expect(t, PID_A, 0, LIB_BASE + fl, lib.path, fl);

	/* adding a known process again is a no-op: its mappings stay */
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	expect(t, PID_A, 0, PIE_BASE + fa, a.path, fa);
	module_table__free(t);
}

static void test_exit_and_reap(void **state)
{
	struct module_table *t = module_table__new();

	(void)state;
	assert_non_null(t);
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	assert_int_equal(module_table_add_process(t, PID_CHILD, PID_A), 0);
	assert_int_equal(module_table_map(t, PID_CHILD, 0x7e0000000000ull, PAGE, 0, 0, 0, ""), 0);
	module_table_reap(t); /* nobody exited */
	assert_int_equal(module_table_has_process(t, PID_A), 1);
	assert_int_equal(module_table_has_process(t, PID_CHILD), 1);

	module_table_exit(t, PID_CHILD);
	module_table_reap(t); /* its last samples are still to come */
	assert_int_equal(module_table_has_process(t, PID_CHILD), 1);
	expect(t, PID_CHILD, 0, 0x7e0000000010ull, "[anon]", 0);
	module_table_exit(t, PID_CHILD); /* a second exit does not reset the count */
	module_table_reap(t);
	assert_int_equal(module_table_has_process(t, PID_CHILD), 0);
	assert_int_equal(module_table_has_process(t, PID_A), 1);
	expect(t, PID_CHILD, 0, 0x7e0000000010ull, "[unmapped]", 0);
	module_table_exit(t, PID_CHILD + 1000); /* unknown: nothing happens */
	module_table_reap(t);
	assert_int_equal(module_table_has_process(t, PID_A), 1);
	module_table__free(t);
}

static void test_bias_and_data_object(void **state)
{
	struct module_table *t;
	struct fmap a, lib;
	struct module *m, *ma;
	struct nm_symbol table;
	const char *name = NULL;
	uint64_t off, bias = 0;

	(void)state;
	SKIP_WITHOUT_TOOLS();
	t = module_table__new();
	assert_non_null(t);
	a = file_map("prog_a", PIE_BASE);
	lib = file_map("libnt.so", LIB_BASE);
	assert_int_equal(nm_lookup(lib.path, "nt_table", &table), 0);
	assert_int_equal(table.size, 64 * sizeof(int));
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	map_file(t, PID_A, &a);
	map_file(t, PID_A, &lib);
	module_table_resolve(t, PID_A, 0, LIB_BASE + nm_addr("libnt.so", "nt_lib_func"), &m, &off);
	module_table_resolve(t, PID_A, 0, PIE_BASE + nm_addr("prog_a", "main"), &ma, &off);
	assert_string_equal(ma->path, a.path);

	assert_int_equal(module_table_bias(t, PID_A, m, &bias), 0);
	assert_int_equal(bias, LIB_BASE);
	assert_int_equal(module_table_bias(t, PID_A, ma, &bias), 0);
	assert_int_equal(bias, PIE_BASE);
	assert_int_equal(module_table_bias(t, PID_A + 1, m, &bias), -ENOENT);

	assert_int_equal(module_table_find_object(t, PID_A, LIB_BASE + table.addr, &name), 0);
	assert_non_null(name);
	assert_string_equal(name, "nt_table");
	name = NULL;
	assert_int_equal(module_table_find_object(t, PID_A, LIB_BASE + table.addr + 32 * sizeof(int),
						  &name),
			 -ENOENT);
	assert_null(name);
	/* a function is not a data object */
	assert_int_equal(module_table_find_object(t, PID_A,
						  LIB_BASE + nm_addr("libnt.so", "nt_lib_func"),
						  &name),
			 -ENOENT);
	/* another process does not map it */
	assert_int_equal(module_table_find_object(t, PID_A + 1, LIB_BASE + table.addr, &name),
			 -ENOENT);

	/* a module the process does not map */
	assert_int_equal(module_table_add_process(t, PID_CHILD, 0), 0);
	assert_int_equal(module_table_bias(t, PID_CHILD, m, &bias), -ENOENT);
	module_table__free(t);
}

/* Known bug (modules.c:481): module_table_bias() converts the middle of the
 * code mapping, map->pgoff + len/2, through the PT_LOAD; when the code
 * segment is under half a page that offset is past p_filesz, so the bias of
 * a mapped module is -ENOENT and module_table_find_object() misses every
 * data object of it. */
static void test_bias_small_code_segment(void **state)
{
	struct module_table *t;
	struct nm_symbol obj;
	struct fmap small;
	struct module *m;
	const char *name = NULL;
	uint64_t off, bias = 0;

	(void)state;
	SKIP_WITHOUT_TOOLS();
	t = module_table__new();
	assert_non_null(t);
	small = file_map("libsmall.so", LIB_BASE);
	assert_int_equal(nm_lookup(small.path, "nt_small_table", &obj), 0);
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	map_file(t, PID_A, &small);
	module_table_resolve(t, PID_A, 0, LIB_BASE + nm_addr("libsmall.so", "nt_small_func"), &m,
			     &off);
	assert_string_equal(m->path, small.path);
	assert_int_equal(module_table_bias(t, PID_A, m, &bias), 0);
	assert_int_equal(bias, LIB_BASE);
	assert_int_equal(module_table_find_object(t, PID_A, LIB_BASE + obj.addr, &name), 0);
	assert_string_equal(name, "nt_small_table");
	module_table__free(t);
}

struct count_ctx {
	int files, pseudo;
	const char *last_path;
};

static void count_new(struct module *m, void *ctx)
{
	struct count_ctx *c = ctx;

	c->files++;
	c->last_path = m->path;
}

static void count_all(struct module *m, void *ctx)
{
	struct count_ctx *c = ctx;

	if (!strncmp(m->identity, "pseudo:", 7))
		c->pseudo++;
	else
		c->files++;
}

static void test_open_file_resolves_symlinks(void **state)
{
	struct module_table *t;
	struct count_ctx news = { 0 }, all = { 0 };
	struct module *opened, *mapped;
	struct fmap lib;
	uint64_t fl, off;

	(void)state;
	SKIP_WITHOUT_TOOLS();
	t = module_table__new();
	assert_non_null(t);
	module_table_on_new_module(t, count_new, &news);
	lib = file_map("libnt.so", LIB_BASE);
	fl = nm_addr("libnt.so", "nt_lib_func");

	opened = module_table_open_file(t, path_in(dir, "libnt_link.so"));
	assert_non_null(opened);
	assert_string_equal(opened->path, lib.path); /* the real path */
	assert_string_equal(opened->display_name, "libnt.so");
	assert_int_equal(news.files, 1);
	assert_int_equal(module_table_open_file(t, lib.path) == opened, 1);

	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	map_file(t, PID_A, &lib);
	module_table_resolve(t, PID_A, 0, LIB_BASE + fl, &mapped, &off);
	assert_ptr_equal(mapped, opened);
	assert_int_equal(off, fl);
	assert_int_equal(news.files, 1); /* opened once */

	errno = 0;
	assert_null(module_table_open_file(t, path_in(dir, "no-such-file.so")));
	assert_int_equal(errno, ENOENT);

	module_table_for_each_module(t, count_all, &all);
	assert_int_equal(all.files, 1);
	assert_int_equal(all.pseudo, 5); /* [vdso], [anon], [uprobes], [unmapped], [kernel] */
	assert_string_equal(module_table_kernel(t)->identity, "pseudo:kernel");
	assert_string_equal(module_table_kernel(t)->display_name, "[kernel]");
	assert_null(module_table_kernel(t)->elf);
	module_table__free(t);
}

/* a file that cannot be read keeps its name and says it is unidentified */
static void test_unreadable_file(void **state)
{
	struct module_table *t = module_table__new();
	struct module *m;
	uint64_t off;

	(void)state;
	assert_non_null(t);
	assert_int_equal(module_table_add_process(t, PID_A, 0), 0);
	assert_int_equal(module_table_map(t, PID_A, 0x10000, 0x1000, 0x3000, 0x801, 77,
					  "/nonexistent/libgone.so"),
			 0);
	module_table_resolve(t, PID_A, 0, 0x10010, &m, &off);
	assert_string_equal(m->path, "/nonexistent/libgone.so");
	assert_string_equal(m->display_name, "libgone.so");
	assert_string_equal(m->identity, "unreadable:801:77");
	assert_null(m->elf);
	assert_int_equal(off, 0x3010); /* the file offset, still module-relative */
	module_table__free(t);
}

static __attribute__((noinline)) int nt_self_marker(int x)
{
	return x * 3 + 1;
}

static void test_load_proc_self(void **state)
{
	struct module_table *t = module_table__new();
	char exe[PATH_MAX];
	struct nm_symbol s = {0};
	struct module *m;
	uint64_t off;
	volatile int v = nt_self_marker(2);

	(void)state;
	(void)v;
	assert_non_null(t);
	assert_non_null(realpath("/proc/self/exe", exe));
	SKIP_UNLESS(have_command("nm"), "nm not found in PATH");
	assert_int_equal(nm_lookup(exe, "nt_self_marker", &s), 0);

	assert_int_equal(module_table_load_proc(t, getpid(), 0), 0);
	assert_int_equal(module_table_has_process(t, getpid()), 1);
	module_table_resolve(t, getpid(), 0, (uint64_t)(uintptr_t)&nt_self_marker + 2, &m, &off);
	assert_string_equal(m->path, exe);
	assert_int_equal(off, s.addr + 2);
	assert_string_equal(module_table_exe(t, getpid()), exe);
	assert_string_equal(module_table_comm(t, getpid()), "test_modules");
	/* libc's code is found too */
	module_table_resolve(t, getpid(), 0, (uint64_t)(uintptr_t)&getpid, &m, &off);
	assert_non_null(strstr(m->display_name, "libc"));
	module_table__free(t);
}

/* a process whose exec records the table never saw (adopted, then
 * exec'd again at once): behind the kernel's count, it is read again as
 * that image; in step, nothing happens */
static void test_catch_up(void **state)
{
	struct module_table *t = module_table__new();
	char exe[PATH_MAX];
	struct module *m;
	uint64_t off;

	(void)state;
	assert_non_null(t);
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_int_equal(module_table_catch_up(t, getpid(), 2), 0); /* unknown: not its job */
	assert_int_equal(module_table_load_proc(t, getpid(), 0), 0);
	assert_int_equal(module_table_catch_up(t, getpid(), 0), 0);
	assert_int_equal(module_table_catch_up(t, getpid(), 2), 1);
	assert_int_equal(module_table_exec_seq(t, getpid()), 2);
	module_table_resolve(t, getpid(), 2, (uint64_t)(uintptr_t)&nt_self_marker, &m, &off);
	assert_string_equal(m->path, exe);
	/* the image the table had is the previous one */
	module_table_resolve(t, getpid(), 1, (uint64_t)(uintptr_t)&nt_self_marker, &m, &off);
	assert_string_equal(m->path, exe);
	assert_int_equal(module_table_catch_up(t, getpid(), 2), 0);
	assert_int_equal(module_table_catch_up(t, getpid(), 1), 0);
	module_table__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resolve_pie_and_library),
	    cmocka_unit_test(test_pseudo_modules),
	    cmocka_unit_test(test_overlapping_map_replaces),
	    cmocka_unit_test(test_overlap_keeps_the_rest),
	    cmocka_unit_test(test_exec_generations),
	    cmocka_unit_test(test_fork_copies_mappings),
	    cmocka_unit_test(test_exit_and_reap),
	    cmocka_unit_test(test_bias_and_data_object),
	    cmocka_unit_test(test_bias_small_code_segment),
	    cmocka_unit_test(test_open_file_resolves_symlinks),
	    cmocka_unit_test(test_unreadable_file),
	    cmocka_unit_test(test_load_proc_self),
	    cmocka_unit_test(test_catch_up),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
