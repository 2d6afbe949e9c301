/* test_mpi_datatypes — datatype sizes against the MPI libraries themselves,
 * and the elf_file queries the Agent uses to get there.
 *
 * The group setup builds one small program twice, with mpicc.mpich and with
 * mpicc.openmpi, in a mkdtemp directory, and runs each as a singleton (no
 * mpirun). The program prints, for every predefined datatype macro of its
 * mpi.h, the handle and what MPI_Type_size says; the same for two derived
 * types; for Open MPI also for every exported ompi_mpi_* datatype object
 * named on its command line (the list comes from nm -D, not from the code
 * under test); and the libmpi/libmpich lines of its /proc/self/maps.
 *
 * Expected sizes come from MPI_Type_size, never from mpi_datatypes.c. The
 * Open MPI cases follow the Agent's real path: handle (a process address) -
 * load bias of a module -> vaddr -> elf_file__find_object() -> symbol name ->
 * mpi_datatype_size_openmpi(). They are run for a PIE probe, whose handles are
 * copy-relocated objects in the executable's .bss (no file offset), and for a
 * -fPIC probe, whose handles are libmpi's own objects in its .data (where the
 * file-offset way, handle - map start + pgoff -> vaddr, agrees).
 *
 * Without mpicc.mpich (resp. mpicc.openmpi) the cases needing it are
 * SKIPPED with the reason.
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
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/mpi_datatypes.h"
#include "userspace/agent/proc_maps.h"
#include "userspace/elf/elf_file.h"

/* Every predefined datatype macro of MPI-3 C, C++ and Fortran, guarded: a
 * runtime that lacks one simply does not print it. MPI_LB/MPI_UB are macros
 * that fail to compile in Open MPI 4 (removed in MPI-3): MPICH only. */
static const char prog_src[] =
    "#include <mpi.h>\n"
    "#include <dlfcn.h>\n"
    "#include <stdint.h>\n"
    "#include <stdio.h>\n"
    "#include <string.h>\n"
    "#include <unistd.h>\n"
    "#ifdef OPEN_MPI\n"
    "#define HANDLE(t) ((unsigned long long)(uintptr_t)(t))\n"
    "#else\n"
    "#define HANDLE(t) ((unsigned long long)(unsigned)(t))\n"
    "#endif\n"
    "static void show(const char *kind, const char *name, MPI_Datatype t)\n"
    "{\n"
    "	int size = -1, rc = MPI_Type_size(t, &size);\n"
    "	printf(\"%s %s %llx %d %d\\n\", kind, name, HANDLE(t), rc == MPI_SUCCESS, size);\n"
    "}\n"
    "#define T(x) show(\"T\", #x, x)\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "	MPI_Datatype contig, vec;\n"
    "	char line[8192], exe[4096];\n"
    "	FILE *maps;\n"
    "	ssize_t n;\n"
    "	MPI_Init(NULL, NULL);\n"
    "	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);\n"
    "	MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);\n"
    "	T(MPI_CHAR); T(MPI_SIGNED_CHAR); T(MPI_UNSIGNED_CHAR); T(MPI_BYTE); T(MPI_PACKED);\n"
    "	T(MPI_WCHAR); T(MPI_SHORT); T(MPI_UNSIGNED_SHORT); T(MPI_INT); T(MPI_UNSIGNED);\n"
    "	T(MPI_LONG); T(MPI_UNSIGNED_LONG); T(MPI_LONG_LONG_INT); T(MPI_LONG_LONG);\n"
    "	T(MPI_UNSIGNED_LONG_LONG); T(MPI_FLOAT); T(MPI_DOUBLE); T(MPI_LONG_DOUBLE);\n"
    "	T(MPI_INT8_T); T(MPI_UINT8_T); T(MPI_INT16_T); T(MPI_UINT16_T); T(MPI_INT32_T);\n"
    "	T(MPI_UINT32_T); T(MPI_INT64_T); T(MPI_UINT64_T); T(MPI_C_BOOL); T(MPI_C_COMPLEX);\n"
    "	T(MPI_C_FLOAT_COMPLEX); T(MPI_C_DOUBLE_COMPLEX); T(MPI_C_LONG_DOUBLE_COMPLEX);\n"
    "	T(MPI_AINT); T(MPI_OFFSET); T(MPI_COUNT);\n"
    "	T(MPI_FLOAT_INT); T(MPI_DOUBLE_INT); T(MPI_LONG_INT); T(MPI_2INT); T(MPI_SHORT_INT);\n"
    "	T(MPI_LONG_DOUBLE_INT);\n"
    "	T(MPI_CXX_BOOL); T(MPI_CXX_FLOAT_COMPLEX); T(MPI_CXX_DOUBLE_COMPLEX);\n"
    "	T(MPI_CXX_LONG_DOUBLE_COMPLEX);\n"
    "	T(MPI_CHARACTER); T(MPI_LOGICAL); T(MPI_INTEGER); T(MPI_REAL);\n"
    "	T(MPI_DOUBLE_PRECISION); T(MPI_COMPLEX); T(MPI_DOUBLE_COMPLEX); T(MPI_2INTEGER);\n"
    "	T(MPI_2REAL); T(MPI_2DOUBLE_PRECISION); T(MPI_INTEGER1); T(MPI_INTEGER2);\n"
    "	T(MPI_INTEGER4); T(MPI_INTEGER8); T(MPI_REAL4); T(MPI_REAL8); T(MPI_REAL16);\n"
    "	T(MPI_COMPLEX8); T(MPI_COMPLEX16); T(MPI_COMPLEX32);\n"
    "#ifdef MPI_INTEGER16\n"
    "	T(MPI_INTEGER16);\n"
    "#endif\n"
    "#ifdef MPI_REAL2\n"
    "	T(MPI_REAL2);\n"
    "#endif\n"
    "#ifdef MPI_LOGICAL1\n"
    "	T(MPI_LOGICAL1); T(MPI_LOGICAL2); T(MPI_LOGICAL4); T(MPI_LOGICAL8);\n"
    "#endif\n"
    "#ifndef OPEN_MPI\n"
    "	T(MPI_LB); T(MPI_UB);\n"
    "#endif\n"
    "	T(MPI_DATATYPE_NULL);\n"
    "	MPI_Type_contiguous(3, MPI_DOUBLE, &contig);\n"
    "	MPI_Type_commit(&contig);\n"
    "	MPI_Type_vector(4, 2, 5, MPI_INT, &vec);\n"
    "	MPI_Type_commit(&vec);\n"
    "	show(\"D\", \"contiguous\", contig);\n"
    "	show(\"D\", \"vector\", vec);\n"
    "#ifdef OPEN_MPI\n"
    "	for (int i = 1; i < argc; i++) {\n"
    "		void *p = dlsym(RTLD_DEFAULT, argv[i]);\n"
    "		if (p)\n"
    "			show(\"S\", argv[i], (MPI_Datatype)p);\n"
    "		else\n"
    "			printf(\"S %s missing\\n\", argv[i]);\n"
    "	}\n"
    "#endif\n"
    "	n = readlink(\"/proc/self/exe\", exe, sizeof(exe) - 1);\n"
    "	if (n <= 0)\n"
    "		return 1;\n"
    "	exe[n] = '\\0';\n"
    "	maps = fopen(\"/proc/self/maps\", \"r\");\n"
    "	if (!maps)\n"
    "		return 1;\n"
    "	while (fgets(line, sizeof(line), maps))\n"
    "		if (strstr(line, \"/libmpi.so\") || strstr(line, \"/libmpich.so\") ||\n"
    "		    strstr(line, exe))\n"
    "			printf(\"M %s\", line);\n"
    "	fclose(maps);\n"
    "	MPI_Type_free(&vec);\n"
    "	MPI_Type_free(&contig);\n"
    "	MPI_Finalize();\n"
    "	return 0;\n"
    "}\n";

/* Open MPI datatype objects whose size is deliberately unknown to
 * mpi_datatype_size_openmpi() (see mpi_datatypes.h). */
static const char *const openmpi_unknown[] = {"ompi_mpi_datatype_null", "ompi_mpi_unavailable",
					      "ompi_mpi_integer16", "ompi_mpi_real2"};

#define MAX_LINES 512
#define MAX_MAPS 32

struct dt_line {
	char kind; /* 'T' macro, 'D' derived, 'S' symbol named on the command line */
	char name[128];
	uint64_t handle;
	int ok; /* MPI_Type_size succeeded */
	int size;
};

struct run_output {
	struct dt_line lines[MAX_LINES];
	size_t nlines;
	struct proc_map maps[MAX_MAPS];
	size_t nmaps;
};

struct runtime {
	const char *compiler; /* mpicc.mpich */
	const char *cflags;
	const char *exe; /* prog_mpich */
	int available;
	struct run_output out;
};

static struct runtime mpich = {.compiler = "mpicc.mpich", .cflags = "", .exe = "prog_mpich"};
/* A PIE refers to libmpi's objects through copy relocations: MPI_DOUBLE is
 * then the address of the executable's copy, in its .bss. A -fPIC program
 * goes through the GOT: MPI_DOUBLE is libmpi's own object, in its .data. The
 * Agent meets both; each is proven. */
static struct runtime openmpi = {
    .compiler = "mpicc.openmpi", .cflags = "-fPIE -pie", .exe = "prog_openmpi"};
static struct runtime openmpi_pic = {
    .compiler = "mpicc.openmpi", .cflags = "-fPIC", .exe = "prog_openmpi_pic"};
static char dir[256];

#define SKIP_WITHOUT(rt)                                                                           \
	do {                                                                                       \
		if (!(rt)->available) {                                                            \
			print_message("SKIPPED: %s not found in PATH, cannot build the MPI "       \
				      "datatype probe\n",                                          \
				      (rt)->compiler);                                             \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

static int parse_output(const char *path, struct run_output *o)
{
	char line[PROC_MAP_PATH_MAX + 256];
	FILE *fp = fopen(path, "r");

	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		struct dt_line *l = &o->lines[o->nlines];
		unsigned long long h;

		if (line[0] == 'M' && line[1] == ' ' && o->nmaps < MAX_MAPS) {
			if (!proc_maps_parse_line(line + 2, &o->maps[o->nmaps]))
				o->nmaps++;
			continue;
		}
		if (o->nlines == MAX_LINES || !strchr("TDS", line[0]))
			continue;
		if (sscanf(line, "%c %127s %llx %d %d", &l->kind, l->name, &h, &l->ok, &l->size) !=
		    5)
			continue; /* "S name missing" */
		l->handle = h;
		o->nlines++;
	}
	fclose(fp);
	return 0;
}

/* "ompi_mpi_double ompi_mpi_int ...": the exported datatype objects, as nm
 * sees them (data, ompi_mpi_ prefix, the 512-byte ompi_predefined_datatype_t) */
static int nm_openmpi_datatypes(const char *lib, char *out, size_t len)
{
	char cmd[PATH_MAX + 128], line[512];
	size_t used = 0;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "nm -D -S --defined-only '%s'", lib);
	fp = popen(cmd, "r");
	if (!fp)
		return -errno;
	out[0] = '\0';
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long addr, size;
		char type, name[256];

		if (sscanf(line, "%llx %llx %c %255s", &addr, &size, &type, name) != 4)
			continue;
		if (type != 'D' || size != 0x200 || strncmp(name, "ompi_mpi_", 9))
			continue;
		used += snprintf(out + used, len - used, " %s", name);
		if (used >= len)
			break;
	}
	return pclose(fp) || used >= len ? -EIO : 0;
}

static const char *lib_path(const struct run_output *o, const char *needle)
{
	for (size_t i = 0; i < o->nmaps; i++)
		if (strstr(o->maps[i].path, needle))
			return o->maps[i].path;
	return NULL;
}

static int build_and_run(struct runtime *rt, const char *env, const char *args)
{
	char src[PATH_MAX], exe[PATH_MAX], out[PATH_MAX + 8];
	int err;

	rt->available = have_command(rt->compiler);
	if (!rt->available)
		return 0;
	snprintf(src, sizeof(src), "%s", path_in(dir, "prog.c"));
	snprintf(exe, sizeof(exe), "%s", path_in(dir, rt->exe));
	snprintf(out, sizeof(out), "%s.out", exe);
	err = run_cmd("%s %s -O1 '%s' -o '%s' -ldl", rt->compiler, rt->cflags, src, exe);
	if (!err)
		err = run_cmd("cd '%s' && env %s '%s' %s > '%s' </dev/null", dir, env, exe, args,
			      out);
	if (!err)
		err = parse_output(out, &rt->out);
	return err;
}

static int group_setup(void **state)
{
	static char names[16 * 1024];
	int err;

	(void)state;
	if (make_tmpdir(dir, sizeof(dir), "mpi-dt"))
		return -1;
	if (write_file(path_in(dir, "prog.c"), prog_src))
		return -1;
	err = build_and_run(&mpich, "", "");
	if (err)
		return -1;
	/* the first run only learns where libmpi is; the second names its objects */
	err = build_and_run(&openmpi, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
			    "");
	if (err)
		return -1;
	if (openmpi.available) {
		const char *lib = lib_path(&openmpi.out, "/libmpi.so");
		char libcopy[PATH_MAX];

		if (!lib) {
			print_error("no libmpi.so mapping in the Open MPI probe\n");
			return -1;
		}
		snprintf(libcopy, sizeof(libcopy), "%s", lib);
		if (nm_openmpi_datatypes(libcopy, names, sizeof(names)))
			return -1;
		memset(&openmpi.out, 0, sizeof(openmpi.out));
		err = build_and_run(
		    &openmpi, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", names);
		if (!err)
			err = build_and_run(
			    &openmpi_pic,
			    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", names);
		if (err)
			return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

static const struct dt_line *find_line(const struct run_output *o, char kind, const char *name)
{
	for (size_t i = 0; i < o->nlines; i++)
		if (o->lines[i].kind == kind && !strcmp(o->lines[i].name, name))
			return &o->lines[i];
	fail_msg("the probe printed no %c line for '%s'", kind, name);
	return NULL;
}

static struct elf_file *open_ok(const char *path)
{
	struct elf_file *f;

	assert_non_null(path);
	f = elf_file__open(path);
	if (!f)
		fail_msg("cannot open '%s': %s", path, strerror(errno));
	return f;
}

/* --- pure cases: no MPI needed ------------------------------------------ */

static void test_unknown_handles_and_symbols(void **state)
{
	(void)state;
	assert_int_equal(mpi_datatype_size_mpich(0x4c00080b), 8); /* MPI_DOUBLE */
	assert_int_equal(mpi_datatype_size_mpich(0xffffffff4c00080bULL), 8);
	assert_int_equal(mpi_datatype_size_mpich(0x8c000001), 12); /* MPI_DOUBLE_INT */
	assert_int_equal(mpi_datatype_size_mpich(0), -ENOENT);
	assert_int_equal(mpi_datatype_size_mpich(0x0c000000), -ENOENT); /* MPI_DATATYPE_NULL */
	assert_int_equal(mpi_datatype_size_mpich(0x8c000005), -ENOENT); /* a direct user type */
	assert_int_equal(mpi_datatype_size_mpich(0xcc000000), -ENOENT); /* an indirect one */
	/* builtin, but not a datatype */
	assert_int_equal(mpi_datatype_size_mpich(0x4400080b), -ENOENT);
	assert_int_equal(mpi_datatype_size_openmpi("ompi_mpi_double"), 8);
	assert_int_equal(mpi_datatype_size_openmpi("ompi_mpi_long_double"), 16);
	assert_int_equal(mpi_datatype_size_openmpi(NULL), -ENOENT);
	assert_int_equal(mpi_datatype_size_openmpi(""), -ENOENT);
	assert_int_equal(mpi_datatype_size_openmpi("ompi_mpi_comm_world"), -ENOENT);
	assert_int_equal(mpi_datatype_size_openmpi("ompi_mpi_real_addr"), -ENOENT);
	assert_int_equal(mpi_datatype_size_openmpi("ompi_mpi_doubl"), -ENOENT);
	for (size_t i = 0; i < sizeof(openmpi_unknown) / sizeof(openmpi_unknown[0]); i++)
		assert_int_equal(mpi_datatype_size_openmpi(openmpi_unknown[i]), -ENOENT);
}

/* --- MPICH: the handle is the answer ------------------------------------- */

static void test_mpich_handles(void **state)
{
	const struct run_output *o = &mpich.out;
	size_t predefined = 0, derived = 0;

	(void)state;
	SKIP_WITHOUT(&mpich);
	for (size_t i = 0; i < o->nlines; i++) {
		const struct dt_line *l = &o->lines[i];
		/* the upper half of the argument register is garbage to us */
		uint64_t dirty = l->handle | 0xdeadbeef00000000ULL;

		if (l->kind == 'D') {
			assert_true(l->ok);
			assert_int_equal(mpi_datatype_size_mpich(l->handle), -ENOENT);
			derived++;
		} else if (!l->ok) { /* MPI_DATATYPE_NULL, MPI_INTEGER16 here */
			assert_int_equal(mpi_datatype_size_mpich(l->handle), -ENOENT);
		} else {
			if (mpi_datatype_size_mpich(l->handle) != l->size)
				fail_msg("%s 0x%llx: %d, MPI_Type_size says %d", l->name,
					 (unsigned long long)l->handle,
					 mpi_datatype_size_mpich(l->handle), l->size);
			assert_int_equal(mpi_datatype_size_mpich(dirty), l->size);
			predefined++;
		}
	}
	assert_int_equal(derived, 2);
	assert_true(predefined >= 60);
	assert_int_equal(find_line(o, 'T', "MPI_DOUBLE")->handle, 0x4c00080b);
	assert_int_equal(find_line(o, 'T', "MPI_LONG_DOUBLE")->size, 16);
	assert_int_equal(find_line(o, 'T', "MPI_LONG_DOUBLE_INT")->size, 20);
}

/* --- Open MPI: address -> object -> name -> size ------------------------- */

struct module {
	const char *path;
	struct elf_file *elf;
	uint64_t bias; /* process address - ELF vaddr */
};

/* The modules of a probe run (its executable and libmpi), each with its load
 * bias from its mapping at file offset 0. */
static size_t load_modules(const struct run_output *o, struct module *mods, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < o->nmaps; i++) {
		const struct proc_map *m = &o->maps[i];
		uint64_t vaddr;

		if (m->pgoff || n == max)
			continue;
		mods[n].path = m->path;
		mods[n].elf = open_ok(m->path);
		assert_int_equal(elf_file__offset_to_vaddr(mods[n].elf, 0, &vaddr), 0);
		mods[n].bias = m->start - vaddr;
		n++;
	}
	return n;
}

static void free_modules(struct module *mods, size_t n)
{
	for (size_t i = 0; i < n; i++)
		elf_file__free(mods[i].elf);
}

/* The Agent's path for one handle: handle - bias = vaddr in one module ->
 * the data object that starts exactly there. Returns the module, or NULL
 * (a derived type on the heap). Fails when two modules claim it. */
static const struct module *resolve_openmpi(const struct module *mods, size_t nmods,
					    uint64_t handle, struct elf_symbol *sym)
{
	const struct module *found = NULL;

	for (size_t i = 0; i < nmods; i++) {
		struct elf_symbol s;
		uint64_t vaddr = handle - mods[i].bias;

		if (elf_file__find_object(mods[i].elf, vaddr, &s) || s.start != vaddr)
			continue;
		if (found)
			fail_msg("0x%llx is an object of both '%s' and '%s'",
				 (unsigned long long)handle, found->path, mods[i].path);
		found = &mods[i];
		*sym = s;
	}
	return found;
}

/* The file-offset way the brief of the Agent started from: valid only for an
 * object in a file-backed mapping (libmpi's .data), not for a .bss copy. */
static int resolve_by_file_offset(const struct run_output *o, const struct module *mod,
				  uint64_t handle, struct elf_symbol *sym)
{
	for (size_t i = 0; i < o->nmaps; i++) {
		const struct proc_map *m = &o->maps[i];
		uint64_t vaddr;

		if (strcmp(m->path, mod->path) || handle < m->start || handle >= m->end)
			continue;
		if (elf_file__offset_to_vaddr(mod->elf, handle - m->start + m->pgoff, &vaddr))
			return -ENOENT;
		return elf_file__find_object(mod->elf, vaddr, sym);
	}
	return -ENOENT;
}

static int is_openmpi_unknown(const char *name)
{
	for (size_t i = 0; i < sizeof(openmpi_unknown) / sizeof(openmpi_unknown[0]); i++)
		if (!strcmp(openmpi_unknown[i], name))
			return 1;
	return 0;
}

/* Every handle the probe printed goes the Agent's way; returns how many of
 * the macro handles resolved in libmpi (the others are copies in the
 * executable). */
static size_t check_openmpi_run(const struct run_output *o)
{
	size_t macros = 0, in_lib = 0, symbols = 0, derived = 0, nmods;
	struct module mods[4];

	nmods = load_modules(o, mods, 4);
	assert_int_equal(nmods, 2); /* the probe and libmpi */
	for (size_t i = 0; i < o->nlines; i++) {
		const struct dt_line *l = &o->lines[i];
		const struct module *mod;
		struct elf_symbol sym = {0}, by_offset = {0};

		mod = resolve_openmpi(mods, nmods, l->handle, &sym);
		if (l->kind == 'D') {
			assert_true(l->ok);
			assert_null(mod); /* heap, not an object of any module */
			derived++;
			continue;
		}
		if (!mod)
			fail_msg("%s at 0x%llx: no object starts there", l->name,
				 (unsigned long long)l->handle);
		assert_int_equal(sym.from_dynsym, !elf_file__has_symtab(mod->elf));
		if (strstr(mod->path, "/libmpi.so")) {
			assert_int_equal(resolve_by_file_offset(o, mod, l->handle, &by_offset), 0);
			assert_string_equal(by_offset.name, sym.name);
		}
		if (l->kind == 'S') {
			assert_string_equal(sym.name, l->name);
			symbols++;
		} else {
			macros++;
			in_lib += !!strstr(mod->path, "/libmpi.so");
		}
		if (is_openmpi_unknown(sym.name)) {
			assert_int_equal(mpi_datatype_size_openmpi(sym.name), -ENOENT);
			continue;
		}
		assert_true(l->ok);
		if (mpi_datatype_size_openmpi(sym.name) != l->size)
			fail_msg("%s (%s in '%s'): %d, MPI_Type_size says %d", l->name, sym.name,
				 mod->path, mpi_datatype_size_openmpi(sym.name), l->size);
	}
	assert_int_equal(derived, 2);
	assert_true(macros >= 60);
	assert_true(symbols >= 70); /* every exported datatype object was checked */
	free_modules(mods, nmods);
	return macros == in_lib ? SIZE_MAX : in_lib;
}

static void test_openmpi_pie_copy_relocations(void **state)
{
	(void)state;
	SKIP_WITHOUT(&openmpi);
	/* every macro handle is the executable's copy of the object */
	assert_int_equal(check_openmpi_run(&openmpi.out), 0);
}

static void test_openmpi_pic_libmpi_objects(void **state)
{
	(void)state;
	SKIP_WITHOUT(&openmpi_pic);
	/* every macro handle is libmpi's own object */
	assert_int_equal(check_openmpi_run(&openmpi_pic.out), SIZE_MAX);
}

/* --- elf_file additions on the real libraries ----------------------------- */

/* nm -D's address for name in lib, or fails */
static uint64_t nm_address(const char *lib, const char *name)
{
	struct nm_symbol s;

	if (nm_lookup_with("-D", lib, name, &s))
		fail_msg("nm -D has no '%s' in '%s'", name, lib);
	return s.addr;
}

static void check_lookup(const char *lib_name, const char *object)
{
	struct elf_file *lib = open_ok(lib_name);
	struct elf_symbol a, b, obj;

	assert_int_equal(elf_file__lookup_name(lib, "MPI_Init", &a), 0);
	assert_string_equal(a.name, "MPI_Init");
	assert_int_equal(a.start, nm_address(lib_name, "MPI_Init"));
	assert_true(a.size > 0);
	/* the weak MPI_ name and the strong PMPI_ name are one function */
	assert_int_equal(elf_file__lookup_name(lib, "PMPI_Init", &b), 0);
	assert_int_equal(b.start, a.start);
	assert_int_equal(elf_file__lookup_name(lib, "MPI_Allreduce", &b), 0);
	assert_int_equal(b.start, nm_address(lib_name, "PMPI_Allreduce"));
	assert_int_equal(elf_file__lookup_name(lib, "MPI_No_such_function", &b), -ENOENT);
	assert_int_equal(elf_file__lookup_name(lib, "", &b), -ENOENT);
	/* a function is not an object */
	assert_int_equal(elf_file__find_object(lib, a.start, &b), -ENOENT);
	if (object) {
		assert_int_equal(elf_file__lookup_name(lib, object, &obj), 0);
		assert_int_equal(obj.start, nm_address(lib_name, object));
		assert_true(obj.size > 8);
		assert_int_equal(elf_file__find_object(lib, obj.start + 8, &b), 0);
		assert_string_equal(b.name, object);
		assert_int_equal(b.start, obj.start);
		assert_int_equal(elf_file__find_object(lib, obj.start + obj.size - 1, &b), 0);
		assert_string_equal(b.name, object);
		/* an object is not a function */
		assert_int_equal(elf_file__find_symbol(lib, obj.start, &b), -ENOENT);
	}
	elf_file__free(lib);
}

static void test_lookup_name_mpich(void **state)
{
	(void)state;
	SKIP_WITHOUT(&mpich);
	check_lookup(lib_path(&mpich.out, "/libmpich.so"), NULL);
}

static void test_lookup_name_openmpi(void **state)
{
	(void)state;
	SKIP_WITHOUT(&openmpi);
	check_lookup(lib_path(&openmpi.out, "/libmpi.so"), "ompi_mpi_double");
}

static void test_lookup_name_symtab(void **state)
{
	struct elf_file *self = open_ok("/proc/self/exe");
	struct elf_symbol s;

	(void)state;
	/* a static function of this test: only .symtab has it */
	assert_int_equal(elf_file__lookup_name(self, "check_lookup", &s), 0);
	assert_int_equal(s.from_dynsym, 0);
	assert_int_equal(elf_file__lookup_name(self, "dir", &s), 0); /* an object */
	assert_int_equal(s.size, sizeof(dir));
	elf_file__free(self);
}

struct load {
	uint64_t offset, vaddr, filesz, memsz;
};

/* the PT_LOAD table as readelf prints it */
static size_t readelf_loads(const char *path, struct load *loads, size_t max)
{
	char cmd[PATH_MAX + 64], line[512];
	size_t n = 0;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "readelf -l -W '%s'", path);
	fp = popen(cmd, "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long off, va, pa, fs, ms;

		if (n < max &&
		    sscanf(line, " LOAD %llx %llx %llx %llx %llx", &off, &va, &pa, &fs, &ms) == 5) {
			loads[n].offset = off;
			loads[n].vaddr = va;
			loads[n].filesz = fs;
			loads[n].memsz = ms;
			n++;
		}
	}
	assert_int_equal(pclose(fp), 0);
	return n;
}

static void check_round_trip(const char *path)
{
	struct elf_file *f = open_ok(path);
	struct load loads[16];
	size_t n = readelf_loads(path, loads, 16);
	int shifted = 0;

	assert_true(n >= 2);
	for (size_t i = 0; i < n; i++) {
		const struct load *l = &loads[i];
		uint64_t deltas[] = {0, l->filesz / 2, l->filesz - 1};

		shifted |= l->offset != l->vaddr;
		for (size_t k = 0; k < 3; k++) {
			uint64_t off, va;

			assert_int_equal(elf_file__vaddr_to_offset(f, l->vaddr + deltas[k], &off),
					 0);
			assert_int_equal(off, l->offset + deltas[k]);
			assert_int_equal(elf_file__offset_to_vaddr(f, off, &va), 0);
			assert_int_equal(va, l->vaddr + deltas[k]);
		}
		if (l->memsz > l->filesz) { /* .bss: a vaddr without file contents */
			uint64_t off;

			assert_int_equal(
			    elf_file__vaddr_to_offset(f, l->vaddr + l->filesz + 0x10, &off),
			    -ENOENT);
		}
	}
	assert_true(shifted); /* the RW segment: offset != vaddr, the case that matters */
	{
		uint64_t off;

		assert_int_equal(elf_file__vaddr_to_offset(f, UINT64_MAX - 1, &off), -ENOENT);
	}
	elf_file__free(f);
}

static void test_vaddr_offset_round_trip(void **state)
{
	(void)state;
	if (!mpich.available && !openmpi.available) {
		print_message("SKIPPED: neither mpicc.mpich nor mpicc.openmpi in PATH\n");
		skip();
	}
	if (mpich.available)
		check_round_trip(lib_path(&mpich.out, "/libmpich.so"));
	if (openmpi.available)
		check_round_trip(lib_path(&openmpi.out, "/libmpi.so"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unknown_handles_and_symbols),
	    cmocka_unit_test(test_mpich_handles),
	    cmocka_unit_test(test_openmpi_pie_copy_relocations),
	    cmocka_unit_test(test_openmpi_pic_libmpi_objects),
	    cmocka_unit_test(test_lookup_name_mpich),
	    cmocka_unit_test(test_lookup_name_openmpi),
	    cmocka_unit_test(test_lookup_name_symtab),
	    cmocka_unit_test(test_vaddr_offset_round_trip),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
