/* test_library_closure — the libraries a program will load, found before
 * it runs (userspace/launch/library_closure.h, userspace/elf/elf_dynamic.h),
 * on programs and libraries this test builds. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/elf/elf_dynamic.h"
#include "userspace/launch/library_closure.h"

static char dir[PATH_MAX];
static int have_gcc;

struct found {
	char paths[64][PATH_MAX];
	size_t n;
};

static void collect(const char *path, void *ctx)
{
	struct found *f = ctx;

	if (f->n < 64)
		snprintf(f->paths[f->n++], PATH_MAX, "%s", path);
}

static int found_suffix(const struct found *f, const char *suffix)
{
	size_t i, len = strlen(suffix);

	for (i = 0; i < f->n; i++) {
		size_t plen = strlen(f->paths[i]);

		if (plen >= len && !strcmp(f->paths[i] + plen - len, suffix))
			return 1;
	}
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	have_gcc = have_command("gcc");
	if (make_tmpdir(dir, sizeof(dir), "closure"))
		return -1;
	if (!have_gcc)
		return 0;
	/* inner.so ← outer.so ($ORIGIN/sub) ← app (RUNPATH $ORIGIN/lib) */
	if (write_file(path_in(dir, "inner.c"), "int inner(int x) { return x + 1; }\n") ||
	    write_file(path_in(dir, "outer.c"),
		       "int inner(int);\nint outer(int x) { return inner(x) * 2; }\n") ||
	    write_file(path_in(dir, "app.c"),
		       "int outer(int);\nint main(int c, char **v) { (void)v; return outer(c); }\n") ||
	    write_file(path_in(dir, "script.sh"), "#!/bin/sh\ntrue\n"))
		return -1;
	return run_cmd("mkdir -p %s/lib/sub && "
		       "gcc -shared -fPIC -o %s/lib/sub/libinner.so %s/inner.c && "
		       "gcc -shared -fPIC -o %s/lib/libouter.so %s/outer.c -L%s/lib/sub -linner "
		       "-Wl,-rpath,'$ORIGIN/sub' && "
		       "gcc -o %s/app %s/app.c -L%s/lib -louter -Wl,--enable-new-dtags "
		       "-Wl,-rpath,'$ORIGIN/lib'",
		       dir, dir, dir, dir, dir, dir, dir, dir, dir);
}

static int group_teardown(void **state)
{
	(void)state;
	return remove_tree(dir);
}

static void test_dynamic_section(void **state)
{
	struct elf_dynamic d;

	(void)state;
	SKIP_UNLESS(have_gcc, "gcc not found");
	assert_int_equal(elf_dynamic_read(path_in(dir, "app"), &d), 0);
	assert_int_equal(d.n_needed, 2);
	assert_string_equal(d.needed[0], "libouter.so");
	assert_string_equal(d.needed[1], "libc.so.6");
	assert_non_null(d.runpath);
	assert_string_equal(d.runpath, "$ORIGIN/lib");
	elf_dynamic_release(&d);

	assert_int_equal(elf_dynamic_read(path_in(dir, "script.sh"), &d), -ENOEXEC);
	assert_int_equal(elf_dynamic_read(path_in(dir, "missing"), &d), -ENOENT);
}

static void test_closure_follows_runpath_and_origin(void **state)
{
	struct found f = {0};

	(void)state;
	SKIP_UNLESS(have_gcc, "gcc not found");
	assert_int_equal(library_closure(path_in(dir, "app"), collect, &f), 0);
	/* not in any cache: only $ORIGIN finds them, two levels down */
	assert_true(found_suffix(&f, "/lib/libouter.so"));
	assert_true(found_suffix(&f, "/lib/sub/libinner.so"));
	assert_true(found_suffix(&f, "/libc.so.6"));
	/* each library once, the program itself not reported */
	for (size_t i = 0; i < f.n; i++) {
		assert_null(strstr(f.paths[i], "/app"));
		for (size_t j = i + 1; j < f.n; j++)
			assert_string_not_equal(f.paths[i], f.paths[j]);
	}
}

static void test_closure_of_what_cannot_be_known(void **state)
{
	struct found f = {0};

	(void)state;
	SKIP_UNLESS(have_gcc, "gcc not found");
	assert_int_equal(library_closure(path_in(dir, "script.sh"), collect, &f), -ENOEXEC);
	assert_int_equal(f.n, 0);
	assert_int_equal(library_closure(path_in(dir, "nothing-here"), collect, &f), -ENOENT);
}

/* the real case: an Open MPI Fortran program reaches libmpi through the
 * Fortran bindings library */
static void test_closure_reaches_libmpi(void **state)
{
	struct found f = {0};
	char app[PATH_MAX];
	int bindings = 0, libmpi = 0;

	(void)state;
	SKIP_UNLESS(have_command("mpif90.openmpi"), "mpif90.openmpi not found");
	snprintf(app, sizeof(app), "%s", path_in(dir, "f"));
	assert_int_equal(write_file(path_in(dir, "f.f90"),
				    "program f\n use mpi\n integer :: ierr\n"
				    " call MPI_Init(ierr)\n call MPI_Finalize(ierr)\nend program f\n"),
			 0);
	assert_int_equal(run_cmd("cd %s && mpif90.openmpi -o f f.f90", dir), 0);
	assert_int_equal(library_closure(app, collect, &f), 0);

	for (size_t i = 0; i < f.n; i++) {
		bindings |= strstr(f.paths[i], "/libmpi_mpifh.so") != NULL;
		libmpi |= strstr(f.paths[i], "/libmpi.so.40") != NULL;
	}
	assert_true(bindings); /* what the program links */
	assert_true(libmpi);   /* what the bindings link: the library to probe */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dynamic_section),
	    cmocka_unit_test(test_closure_follows_runpath_and_origin),
	    cmocka_unit_test(test_closure_of_what_cannot_be_known),
	    cmocka_unit_test(test_closure_reaches_libmpi),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
