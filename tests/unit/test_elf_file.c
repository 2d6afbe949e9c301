/* test_elf_file — elf_file against ELF files built at run time with gcc.
 *
 * The group setup builds, in a mkdtemp directory, a PIE and a non-PIE
 * executable, a shared library, files without build-id, a stripped library
 * and a -g executable, all with known noinline functions. Expected values come
 * from binutils (readelf -n, nm -S), never from elf_file itself. The
 * end-to-end cases run the programs (and this test) and follow a real
 * function address through /proc/PID/maps: ip -> (map start, pgoff) -> file
 * offset -> vaddr -> symbol.
 *
 * Without gcc every test is SKIPPED with the reason.
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
#include <elf.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/proc_maps.h"
#include "userspace/elf/elf_dynamic.h"
#include "userspace/elf/elf_file.h"
#include "userspace/elf/elf_open.h"

static const char prog_src[] =
    "#include <dlfcn.h>\n"
    "#include <stdint.h>\n"
    "#include <stdio.h>\n"
    "__attribute__((noinline)) int nt_prog_exported(int x) { return x * 7 + 3; }\n"
    "__attribute__((noinline)) static int nt_prog_static(int x) { return (x ^ 0x55) * 5; }\n"
    "__attribute__((noinline, aligned(256))) int nt_prog_aligned(int x) { return x + 11; }\n"
    "static void show(const char *name, void *p) { printf(\"FN %s %lx\\n\", name, (unsigned "
    "long)(uintptr_t)p); }\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "	char line[8192];\n"
    "	volatile int v = nt_prog_exported(argc) + nt_prog_static(argc) + nt_prog_aligned(argc);\n"
    "	FILE *maps;\n"
    "	(void)v;\n"
    "	show(\"nt_prog_exported\", (void *)&nt_prog_exported);\n"
    "	show(\"nt_prog_static\", (void *)&nt_prog_static);\n"
    "	show(\"nt_prog_aligned\", (void *)&nt_prog_aligned);\n"
    "	if (argc > 1) {\n"
    "		void *h = dlopen(argv[1], RTLD_NOW);\n"
    "		int (*fn)(int);\n"
    "		if (!h) { fprintf(stderr, \"%s\\n\", dlerror()); return 1; }\n"
    "		fn = (int (*)(int))dlsym(h, \"nt_lib_exported\");\n"
    "		if (!fn) return 1;\n"
    "		v = fn(argc);\n"
    "		show(\"nt_lib_exported\", (void *)fn);\n"
    "	}\n"
    "	puts(\"MAPS\");\n"
    "	maps = fopen(\"/proc/self/maps\", \"r\");\n"
    "	if (!maps) return 1;\n"
    "	while (fgets(line, sizeof(line), maps)) fputs(line, stdout);\n"
    "	fclose(maps);\n"
    "	return 0;\n"
    "}\n";

static const char lib_src[] =
    "__attribute__((noinline)) static int nt_lib_static(int x) { return (x ^ 0x33) * 9; }\n"
    "__attribute__((noinline)) int nt_lib_exported(int x) { return nt_lib_static(x) + 1; }\n"
    "__attribute__((noinline)) int nt_lib_target(int x) { return x * 13 - 2; }\n"
    "int nt_lib_weak_alias(int) __attribute__((weak, alias(\"nt_lib_target\")));\n"
    "static int nt_lib_local_alias(int) __attribute__((alias(\"nt_lib_target\"), used));\n";

static char dir[256];
static int have_gcc;

#define SKIP_WITHOUT_GCC()                                                                         \
	SKIP_UNLESS(have_gcc, "gcc not found in PATH, cannot build test ELF files")

static int build_all(void)
{
	const char *d = dir;

	if (write_file(path_in(dir, "prog.c"), prog_src) ||
	    write_file(path_in(dir, "lib.c"), lib_src))
		return -1;
	return run_cmd("cd %s && "
		       "gcc -O1 -fPIE -pie -Wl,--build-id prog.c -o prog_pie -ldl && "
		       "gcc -O1 -fno-pie -no-pie -Wl,--build-id prog.c -o prog_nopie -ldl && "
		       "gcc -O1 -shared -fPIC -Wl,--build-id lib.c -o libnt.so && "
		       "gcc -O1 -Wl,--build-id=none prog.c -o prog_nobid -ldl && "
		       "gcc -O1 -shared -fPIC -Wl,--build-id=none lib.c -o libnt_nobid.so && "
		       "cp prog_nobid prog_nobid_copy && "
		       "cp libnt.so libnt_stripped.so && strip libnt_stripped.so && "
		       "gcc -O1 -g prog.c -o prog_g -ldl && "
		       ": > empty",
		       d);
}

static int group_setup(void **state)
{
	(void)state;
	have_gcc = have_command("gcc");
	if (!have_gcc)
		return 0;
	if (make_tmpdir(dir, sizeof(dir), "elf"))
		return -1;
	return build_all() ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (have_gcc)
		remove_tree(dir);
	return 0;
}

/* --- what binutils says ------------------------------------------------ */

struct nm_sym {
	char name[256];
	uint64_t addr;
	uint64_t size;
	char type;
};

struct nm_list {
	struct nm_sym *syms;
	size_t n;
};

static int cmp_nm_addr(const void *a, const void *b)
{
	const struct nm_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return 0;
}

/* Function-like symbols with a size, sorted by address. */
static struct nm_list nm_load(const char *path, int dynamic)
{
	struct nm_list l = {0};
	size_t cap = 0;
	char cmd[PATH_MAX + 64], line[1024];
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only %s '%s' 2>/dev/null", dynamic ? "-D" : "",
		 path);
	fp = popen(cmd, "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		struct nm_sym s;
		unsigned long long addr, size;

		if (sscanf(line, "%llx %llx %c %255s", &addr, &size, &s.type, s.name) != 4)
			continue;
		if (!strchr("TtWwi", s.type) || !size)
			continue;
		s.addr = addr;
		s.size = size;
		if (l.n == cap) {
			cap = cap ? 2 * cap : 64;
			l.syms = realloc(l.syms, cap * sizeof(*l.syms));
			assert_non_null(l.syms);
		}
		l.syms[l.n++] = s;
	}
	assert_int_equal(pclose(fp), 0);
	qsort(l.syms, l.n, sizeof(*l.syms), cmp_nm_addr);
	return l;
}

static const struct nm_sym *nm_find(const struct nm_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->syms[i].name, name))
			return &l->syms[i];
	fail_msg("nm has no symbol '%s'", name);
	return NULL;
}

static int nm_covers(const struct nm_list *l, uint64_t addr)
{
	for (size_t i = 0; i < l->n; i++)
		if (addr >= l->syms[i].addr && addr - l->syms[i].addr < l->syms[i].size)
			return 1;
	return 0;
}

/* "" when readelf -n shows no build-id. */
static void readelf_build_id(const char *path, char *hex, size_t len)
{
	char cmd[PATH_MAX + 64], line[1024];
	FILE *fp;

	hex[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	fp = popen(cmd, "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		char *p = strstr(line, "Build ID: ");

		if (p)
			snprintf(hex, len, "%.*s", (int)strcspn(p + 10, " \n"), p + 10);
	}
	pclose(fp);
}

static struct elf_file *open_ok(const char *name)
{
	struct elf_file *f = elf_file__open(path_in(dir, name));

	if (!f)
		fail_msg("cannot open '%s': %s", name, strerror(errno));
	return f;
}

/* --- identity ----------------------------------------------------------- */

static void test_build_id_matches_readelf(void **state)
{
	static const char *const names[] = {"prog_pie", "prog_nopie", "libnt.so",
					    "libnt_stripped.so", "prog_g"};
	char expected[256], hex[256];

	(void)state;
	SKIP_WITHOUT_GCC();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct elf_file *f = open_ok(names[i]);

		readelf_build_id(path_in(dir, names[i]), expected, sizeof(expected));
		assert_true(strlen(expected) >= 16);
		assert_non_null(elf_file__build_id(f));
		assert_string_equal(elf_file__build_id(f), expected);
		assert_string_equal(elf_file__identity(f), expected);
		assert_int_equal(elf_read_build_id(path_in(dir, names[i]), hex, sizeof(hex)), 0);
		assert_string_equal(hex, expected);
		elf_file__free(f);
	}
	assert_int_equal(elf_read_build_id(path_in(dir, "prog_pie"), hex, 8), -ENOSPC);
	assert_int_equal(elf_read_build_id(path_in(dir, "prog_nobid"), hex, sizeof(hex)), -ENODATA);
	assert_int_equal(elf_read_build_id(path_in(dir, "nope"), hex, sizeof(hex)), -ENOENT);
}

/* The rule stated in elf_file.h, computed independently. */
static void expected_fallback_identity(const char *path, char *out, size_t len)
{
	const size_t window = 64 * 1024;
	uint64_t h = 0xcbf29ce484222325ULL;
	unsigned char *buf;
	struct stat st;
	size_t w;
	FILE *fp;

	assert_int_equal(stat(path, &st), 0);
	for (int i = 0; i < 8; i++) {
		h ^= (unsigned char)((uint64_t)st.st_size >> (8 * i));
		h *= 0x100000001b3ULL;
	}
	w = (size_t)st.st_size < window ? (size_t)st.st_size : window;
	buf = malloc(w + 1);
	assert_non_null(buf);
	fp = fopen(path, "rb");
	assert_non_null(fp);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(fseeko(fp, pass ? st.st_size - (off_t)w : 0, SEEK_SET), 0);
		assert_int_equal(fread(buf, 1, w, fp), w);
		for (size_t i = 0; i < w; i++) {
			h ^= buf[i];
			h *= 0x100000001b3ULL;
		}
	}
	fclose(fp);
	free(buf);
	snprintf(out, len, "nobuildid:%016llx", (unsigned long long)h);
}

static void test_fallback_identity(void **state)
{
	struct elf_file *a, *a2, *copy, *lib, *with_id;
	char expected[64], hex[64];

	(void)state;
	SKIP_WITHOUT_GCC();
	readelf_build_id(path_in(dir, "prog_nobid"), hex, sizeof(hex));
	assert_string_equal(hex, ""); /* the toolchain honoured --build-id=none */
	a = open_ok("prog_nobid");
	a2 = open_ok("prog_nobid");
	copy = open_ok("prog_nobid_copy");
	lib = open_ok("libnt_nobid.so");
	with_id = open_ok("prog_pie");

	assert_null(elf_file__build_id(a));
	assert_non_null(elf_file__identity(a));
	assert_int_equal(strlen(elf_file__identity(a)), strlen("nobuildid:") + 16);
	expected_fallback_identity(path_in(dir, "prog_nobid"), expected, sizeof(expected));
	assert_string_equal(elf_file__identity(a), expected);
	/* stable for the same content, whatever the path */
	assert_string_equal(elf_file__identity(a), elf_file__identity(a2));
	assert_string_equal(elf_file__identity(a), elf_file__identity(copy));
	/* different for a different file */
	assert_null(elf_file__build_id(lib));
	assert_string_not_equal(elf_file__identity(a), elf_file__identity(lib));
	expected_fallback_identity(path_in(dir, "libnt_nobid.so"), expected, sizeof(expected));
	assert_string_equal(elf_file__identity(lib), expected);
	assert_null(strstr(elf_file__identity(with_id), "nobuildid:"));

	elf_file__free(with_id);
	elf_file__free(lib);
	elf_file__free(copy);
	elf_file__free(a2);
	elf_file__free(a);
}

static void test_open_errors(void **state)
{
	(void)state;
	SKIP_WITHOUT_GCC();
	errno = 0;
	assert_null(elf_file__open(path_in(dir, "does-not-exist")));
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_null(elf_file__open(path_in(dir, "prog.c")));
	assert_int_equal(errno, ENOEXEC);
	errno = 0;
	assert_null(elf_file__open(path_in(dir, "empty")));
	assert_int_equal(errno, ENOEXEC);
	errno = 0;
	assert_null(elf_file__open(dir));
	assert_int_equal(errno, EISDIR);
	elf_file__free(NULL);
}

/* A FIFO, a device or another file at a module's path: refused without
 * blocking (alarm: a blocked open fails the test instead of hanging it),
 * a device never opened; the mapped inode is the one read. */
static void test_open_not_regular(void **state)
{
	const char *fifo = path_in(dir, "fifo.so");
	struct elf_dynamic dyn;
	struct stat st, lib;
	int fd, flags;

	(void)state;
	SKIP_WITHOUT_GCC();
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10);
	errno = 0;
	assert_null(elf_file__open(fifo));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(elf_dynamic_read(fifo, &dyn), -EINVAL);
	assert_int_equal(elf_open_regular(fifo, 0, &st), -EINVAL);
	assert_int_equal(elf_open_regular("/dev/null", 0, &st), -EINVAL);
	assert_int_equal(elf_open_regular(dir, 0, &st), -EISDIR);
	errno = 0;
	assert_null(elf_file__open("/dev/zero"));
	assert_int_equal(errno, EINVAL);
	alarm(0);
	unlink(fifo);

	/* a regular file: opened blocking again, the inode checked */
	assert_int_equal(stat(path_in(dir, "libnt.so"), &lib), 0);
	fd = elf_open_regular(path_in(dir, "libnt.so"), lib.st_ino, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_ino, lib.st_ino);
	flags = fcntl(fd, F_GETFL);
	assert_int_equal(flags & O_NONBLOCK, 0);
	close(fd);
	assert_int_equal(elf_open_regular(path_in(dir, "libnt.so"), lib.st_ino + 1, &st), -ESTALE);
	errno = 0;
	assert_null(elf_file__open_mapped(path_in(dir, "libnt.so"), lib.st_ino + 1));
	assert_int_equal(errno, ESTALE);
	elf_file__free(elf_file__open_mapped(path_in(dir, "libnt.so"), lib.st_ino));
}

static void test_kind_and_sections(void **state)
{
	struct elf_file *pie, *nopie, *lib, *stripped, *g;

	(void)state;
	SKIP_WITHOUT_GCC();
	pie = open_ok("prog_pie");
	nopie = open_ok("prog_nopie");
	lib = open_ok("libnt.so");
	stripped = open_ok("libnt_stripped.so");
	g = open_ok("prog_g");

	assert_int_equal(elf_file__is_pie_or_shared(pie), 1);
	assert_int_equal(elf_file__is_pie_or_shared(nopie), 0);
	assert_int_equal(elf_file__is_pie_or_shared(lib), 1);
	assert_int_equal(elf_file__has_symtab(pie), 1);
	assert_int_equal(elf_file__has_symtab(lib), 1);
	assert_int_equal(elf_file__has_symtab(stripped), 0);
	assert_int_equal(elf_file__has_debug_info(g), 1);
	assert_int_equal(elf_file__has_debug_info(pie), 0);
	assert_int_equal(elf_file__has_debug_info(stripped), 0);

	elf_file__free(g);
	elf_file__free(stripped);
	elf_file__free(lib);
	elf_file__free(nopie);
	elf_file__free(pie);
}

/* --- symbols: the extent rule ------------------------------------------ */

static void assert_named(const struct elf_file *f, uint64_t vaddr, const char *name,
			 int from_dynsym)
{
	struct elf_symbol s;
	int err = elf_file__find_symbol(f, vaddr, &s);

	if (err)
		fail_msg("no symbol at 0x%llx, expected '%s' (%d)", (unsigned long long)vaddr, name,
			 err);
	assert_string_equal(s.name, name);
	assert_int_equal(s.from_dynsym, from_dynsym);
	assert_true(vaddr >= s.start && vaddr - s.start < s.size);
}

/* Every nm function symbol names its own first and last byte (or an alias of
 * the same extent), and a gap after some function's end exists and is
 * unnamed. */
static void check_extent_rule(const char *name)
{
	struct elf_file *f = open_ok(name);
	struct nm_list l = nm_load(path_in(dir, name), 0);
	int gaps = 0;

	assert_true(l.n > 3);
	for (size_t i = 0; i < l.n; i++) {
		const struct nm_sym *s = &l.syms[i];
		uint64_t end = s->addr + s->size;
		struct elf_symbol got;

		assert_int_equal(elf_file__find_symbol(f, s->addr, &got), 0);
		assert_true(s->addr >= got.start && s->addr - got.start < got.size);
		assert_int_equal(elf_file__find_symbol(f, end - 1, &got), 0);
		assert_int_equal(got.from_dynsym, 0);
		if (!nm_covers(&l, end)) {
			int err = elf_file__find_symbol(f, end, &got);

			if (err != -ENOENT)
				fail_msg("%s: gap at 0x%llx after '%s' named '%s'", name,
					 (unsigned long long)end, s->name, got.name);
			gaps++;
		}
	}
	assert_true(gaps > 0);
	free(l.syms);
	elf_file__free(f);
}

static void test_extent_rule(void **state)
{
	(void)state;
	SKIP_WITHOUT_GCC();
	check_extent_rule("prog_pie");
	check_extent_rule("prog_nopie");
	check_extent_rule("libnt.so");
	check_extent_rule("prog_g");
}

static void test_named_functions_and_gap(void **state)
{
	struct elf_file *f;
	struct nm_list l;
	const struct nm_sym *aligned;
	struct elf_symbol got;
	uint64_t gap;

	(void)state;
	SKIP_WITHOUT_GCC();
	f = open_ok("prog_pie");
	l = nm_load(path_in(dir, "prog_pie"), 0);
	assert_named(f, nm_find(&l, "nt_prog_exported")->addr + 1, "nt_prog_exported", 0);
	assert_named(f, nm_find(&l, "nt_prog_static")->addr, "nt_prog_static", 0);
	aligned = nm_find(&l, "nt_prog_aligned");
	assert_named(f, aligned->addr + aligned->size - 1, "nt_prog_aligned", 0);
	/* the padding before the 256-aligned function belongs to no one */
	gap = aligned->addr - 1;
	assert_false(nm_covers(&l, gap));
	assert_int_equal(elf_file__find_symbol(f, gap, &got), -ENOENT);
	assert_int_equal(elf_file__find_symbol(f, 0, &got), -ENOENT);
	assert_int_equal(elf_file__find_symbol(f, UINT64_MAX, &got), -ENOENT);
	free(l.syms);
	elf_file__free(f);
}

static void test_stripped_uses_dynsym(void **state)
{
	struct elf_file *lib, *stripped;
	struct nm_list full, dyn;
	const struct nm_sym *exported, *stat;
	struct elf_symbol got;

	(void)state;
	SKIP_WITHOUT_GCC();
	lib = open_ok("libnt.so");
	stripped = open_ok("libnt_stripped.so");
	full = nm_load(path_in(dir, "libnt.so"), 0);
	dyn = nm_load(path_in(dir, "libnt_stripped.so"), 1);

	exported = nm_find(&dyn, "nt_lib_exported");
	assert_named(stripped, exported->addr + 1, "nt_lib_exported", 1);
	assert_named(lib, exported->addr + 1, "nt_lib_exported", 0);

	stat = nm_find(&full, "nt_lib_static"); /* strip keeps addresses */
	assert_named(lib, stat->addr, "nt_lib_static", 0);
	assert_int_equal(elf_file__find_symbol(stripped, stat->addr, &got), -ENOENT);
	assert_int_equal(elf_file__find_symbol(stripped, stat->addr + stat->size - 1, &got),
			 -ENOENT);

	free(dyn.syms);
	free(full.syms);
	elf_file__free(stripped);
	elf_file__free(lib);
}

static void test_aliases_prefer_global(void **state)
{
	struct elf_file *lib, *stripped;
	struct nm_list l;
	const struct nm_sym *target;

	(void)state;
	SKIP_WITHOUT_GCC();
	lib = open_ok("libnt.so");
	stripped = open_ok("libnt_stripped.so");
	l = nm_load(path_in(dir, "libnt.so"), 0);
	target = nm_find(&l, "nt_lib_target");
	assert_int_equal(nm_find(&l, "nt_lib_weak_alias")->addr, target->addr);
	assert_int_equal(nm_find(&l, "nt_lib_local_alias")->addr, target->addr);
	/* global beats weak and local, in both tables, at every byte */
	for (uint64_t a = target->addr; a < target->addr + target->size; a++) {
		assert_named(lib, a, "nt_lib_target", 0);
		assert_named(stripped, a, "nt_lib_target", 1);
	}
	free(l.syms);
	elf_file__free(stripped);
	elf_file__free(lib);
}

/* --- offsets: the full path ip -> file offset -> vaddr ------------------ */

/* ip -> file offset through the maps line covering it; 0 when found. */
static int ip_to_file_offset(const struct proc_map *maps, size_t n, uint64_t ip,
			     uint64_t *file_offset, const char **path)
{
	for (size_t i = 0; i < n; i++) {
		if (ip >= maps[i].start && ip < maps[i].end && maps[i].perms[2] == 'x') {
			*file_offset = ip - maps[i].start + maps[i].pgoff;
			*path = maps[i].path;
			return 0;
		}
	}
	return -ENOENT;
}

/* Returns the vaddr, checked against nm and named fn. */
static uint64_t check_vaddr_of(const char *path, uint64_t file_offset, const char *fn)
{
	struct elf_file *f = elf_file__open(path);
	struct nm_list l;
	uint64_t vaddr;

	if (!f)
		fail_msg("cannot open '%s': %s", path, strerror(errno));
	l = nm_load(path, 0);
	assert_int_equal(elf_file__offset_to_vaddr(f, file_offset, &vaddr), 0);
	assert_int_equal(vaddr, nm_find(&l, fn)->addr);
	assert_named(f, vaddr, fn, 0);
	free(l.syms);
	elf_file__free(f);
	return vaddr;
}

/* Runs prog (with lib dlopen'ed when given), which prints its function
 * addresses and its own /proc/self/maps; each address must come back to the
 * nm vaddr of its function. */
static void check_spawned(const char *prog, const char *lib, int expect_pie)
{
	struct proc_map *maps = NULL;
	size_t nmaps = 0, cap = 0, nfn = 0;
	struct {
		char name[64];
		uint64_t ip;
	} fns[8];
	char cmd[3 * PATH_MAX], line[8192];
	int in_maps = 0;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "'%s' %s", path_in(dir, prog), lib ? path_in(dir, lib) : "");
	fp = popen(cmd, "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long ip;

		if (!in_maps && !strcmp(line, "MAPS\n")) {
			in_maps = 1;
		} else if (!in_maps) {
			assert_true(nfn < sizeof(fns) / sizeof(fns[0]));
			assert_int_equal(sscanf(line, "FN %63s %llx", fns[nfn].name, &ip), 2);
			fns[nfn++].ip = ip;
		} else {
			if (nmaps == cap) {
				cap = cap ? 2 * cap : 64;
				maps = realloc(maps, cap * sizeof(*maps));
				assert_non_null(maps);
			}
			assert_int_equal(proc_maps_parse_line(line, &maps[nmaps]), 0);
			nmaps++;
		}
	}
	assert_int_equal(pclose(fp), 0);
	assert_int_equal(nfn, lib ? 4 : 3);
	for (size_t i = 0; i < nfn; i++) {
		const char *path = NULL;
		uint64_t off = 0, vaddr;

		assert_int_equal(ip_to_file_offset(maps, nmaps, fns[i].ip, &off, &path), 0);
		assert_string_equal(strrchr(path, '/') + 1, i < 3 ? prog : lib);
		vaddr = check_vaddr_of(path, off, fns[i].name);
		/* a non-PIE executable runs at its link addresses; PIE and .so do not */
		if (i < 3 && !expect_pie)
			assert_int_equal(fns[i].ip, vaddr);
		else
			assert_int_not_equal(fns[i].ip, vaddr);
	}
	free(maps);
}

static void test_e2e_pie_and_dlopen(void **state)
{
	(void)state;
	SKIP_WITHOUT_GCC();
	check_spawned("prog_pie", "libnt.so", 1);
}

static void test_e2e_nopie(void **state)
{
	(void)state;
	SKIP_WITHOUT_GCC();
	check_spawned("prog_nopie", NULL, 0);
}

__attribute__((noinline)) int test_elf_file_self_marker(int x)
{
	return x * 31 + 7;
}

struct self_ctx {
	uint64_t ip;
	uint64_t file_offset;
	char path[PROC_MAP_PATH_MAX];
	int found;
};

static int self_cb(const struct proc_map *m, void *ctx)
{
	struct self_ctx *c = ctx;

	if (c->ip < m->start || c->ip >= m->end)
		return 0;
	c->file_offset = c->ip - m->start + m->pgoff;
	snprintf(c->path, sizeof(c->path), "%s", m->path);
	c->found = 1;
	return 1; /* stop: found */
}

/* This test's own function, through its own /proc/self/maps. */
static void test_e2e_self(void **state)
{
	struct self_ctx c = {.ip = (uint64_t)(uintptr_t)&test_elf_file_self_marker};
	char exe[PATH_MAX];

	(void)state;
	SKIP_WITHOUT_GCC();
	assert_int_equal(test_elf_file_self_marker(1), 38);
	assert_int_equal(proc_maps_for_each_exec(getpid(), self_cb, &c), 1);
	assert_true(c.found);
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_string_equal(c.path, exe);
	check_vaddr_of(c.path, c.file_offset, "test_elf_file_self_marker");
}

static void test_offset_outside_load(void **state)
{
	struct elf_file *f;
	struct stat st;
	uint64_t vaddr = 0xdead;

	(void)state;
	SKIP_WITHOUT_GCC();
	f = open_ok("prog_pie");
	assert_int_equal(stat(path_in(dir, "prog_pie"), &st), 0);
	/* the section header table lies after every PT_LOAD */
	assert_int_equal(elf_file__offset_to_vaddr(f, (uint64_t)st.st_size - 1, &vaddr), -ENOENT);
	assert_int_equal(elf_file__offset_to_vaddr(f, UINT64_MAX, &vaddr), -ENOENT);
	assert_int_equal(vaddr, 0xdead);
	assert_int_equal(elf_file__offset_to_vaddr(f, 0, &vaddr), 0);
	assert_int_equal(vaddr, 0); /* PIE: the ELF header is mapped at vaddr 0 */
	elf_file__free(f);
}

/* Found by fuzz_elf (regression seed tests/fuzz/corpus/elf/regress-load-wraps):
 * a PT_LOAD whose extent passes 2^64 answered a vaddr for an offset that
 * no vaddr converts back from. Such a segment maps nothing and is ignored;
 * the sane segment beside it still converts both ways. */
static void test_load_extent_past_2_64_ignored(void **state)
{
	struct {
		Elf64_Ehdr ehdr;
		Elf64_Phdr phdr[2];
	} img;
	struct elf_file *f;
	uint64_t v = 0xdead, o = 0xdead;
	FILE *fp;

	(void)state;
	SKIP_WITHOUT_GCC(); /* no scratch directory without it */
	memset(&img, 0, sizeof(img));
	memcpy(img.ehdr.e_ident, ELFMAG, SELFMAG);
	img.ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	img.ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	img.ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	img.ehdr.e_type = ET_DYN;
	img.ehdr.e_machine = EM_X86_64;
	img.ehdr.e_version = EV_CURRENT;
	img.ehdr.e_phoff = sizeof(img.ehdr);
	img.ehdr.e_ehsize = sizeof(img.ehdr);
	img.ehdr.e_phentsize = sizeof(Elf64_Phdr);
	img.ehdr.e_phnum = 2;
	img.phdr[0].p_type = PT_LOAD;
	img.phdr[0].p_vaddr = 0xffff000000000000ull;
	img.phdr[0].p_filesz = UINT64_MAX;
	img.phdr[1].p_type = PT_LOAD;
	img.phdr[1].p_offset = 0;
	img.phdr[1].p_vaddr = 0x400000;
	img.phdr[1].p_filesz = sizeof(img);
	fp = fopen(path_in(dir, "load_wraps"), "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(&img, sizeof(img), 1, fp), 1);
	assert_int_equal(fclose(fp), 0);

	f = elf_file__open(path_in(dir, "load_wraps"));
	assert_non_null(f);
	assert_int_equal(elf_file__offset_to_vaddr(f, 0x10, &v), 0);
	assert_int_equal(v, 0x400010);
	assert_int_equal(elf_file__vaddr_to_offset(f, v, &o), 0);
	assert_int_equal(o, 0x10);
	/* past the sane segment, only the wrapping one would have answered */
	v = 0xdead;
	assert_int_equal(elf_file__offset_to_vaddr(f, 0x100000, &v), -ENOENT);
	assert_int_equal(v, 0xdead);
	assert_int_equal(elf_file__vaddr_to_offset(f, 0xffff000000001000ull, &o), -ENOENT);
	elf_file__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_build_id_matches_readelf),
	    cmocka_unit_test(test_fallback_identity),
	    cmocka_unit_test(test_open_errors),
	    cmocka_unit_test(test_open_not_regular),
	    cmocka_unit_test(test_kind_and_sections),
	    cmocka_unit_test(test_extent_rule),
	    cmocka_unit_test(test_named_functions_and_gap),
	    cmocka_unit_test(test_stripped_uses_dynsym),
	    cmocka_unit_test(test_aliases_prefer_global),
	    cmocka_unit_test(test_e2e_pie_and_dlopen),
	    cmocka_unit_test(test_e2e_nopie),
	    cmocka_unit_test(test_e2e_self),
	    cmocka_unit_test(test_offset_outside_load),
	    cmocka_unit_test(test_load_extent_past_2_64_ignored),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
