/* test_source — source extracts (userspace/source/): MD5 against md5sum
 * and RFC 1321's examples, the parse of llvm-dwarfdump's line tables,
 * path resolution (as is, map, basename, ambiguous, missing, symbolic
 * link), the staleness guard on a file compiled with DWARF 5 checksums
 * then edited, extracts cut and marked truncated, and reads as another
 * user (a root-only file never read for a Run of nobody).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/test_helpers.h"
#include "userspace/launch/tool.h"
#include "userspace/source/dwarf_checksums.h"
#include "userspace/source/md5.h"
#include "userspace/source/source.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(dir, sizeof(dir), "source");
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(dir);
}

static void hex(const unsigned char *md5, char out[33])
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", md5[i]);
}

static void test_md5_rfc_examples(void **state)
{
	static const char *const cases[][2] = {
	    {"", "d41d8cd98f00b204e9800998ecf8427e"},
	    {"a", "0cc175b9c0f1b6a831c399e269772661"},
	    {"abc", "900150983cd24fb0d6963f7d28e17f72"},
	    {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
	    {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
	    {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
	     "57edf4a22be3c955ac49da2e2107b67a"},
	};
	unsigned char md5[16], parsed[16];
	char text[33];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		md5_buffer(cases[i][0], strlen(cases[i][0]), md5);
		hex(md5, text);
		assert_string_equal(text, cases[i][1]);
		assert_int_equal(md5_parse_hex(cases[i][1], parsed), 0);
		assert_memory_equal(parsed, md5, 16);
	}
	assert_int_equal(md5_parse_hex("0x900150983cd24fb0d6963f7d28e17f72", parsed), 0);
	assert_int_equal(md5_parse_hex("900150983cd24fb0d6963f7d28e17f7", parsed), -EINVAL);
	assert_int_equal(md5_parse_hex("900150983cd24fb0d6963f7d28e17f72a", parsed), -EINVAL);
	assert_int_equal(md5_parse_hex("z00150983cd24fb0d6963f7d28e17f72", parsed), -EINVAL);
}

/* every length around the 55/56/64-byte block edges, against md5sum */
static void test_md5_against_md5sum(void **state)
{
	char buf[300], cmd[PATH_MAX + 64], want[64], got[33];
	unsigned char md5[16];
	size_t len, i;
	FILE *p;

	(void)state;
	SKIP_UNLESS(have_command("md5sum"), "no md5sum");
	for (len = 0; len < sizeof(buf); len += len < 140 ? 1 : 37) {
		for (i = 0; i < len; i++)
			buf[i] = (char)(i * 7 + len);
		p = fopen(path_in(dir, "m"), "w");
		assert_non_null(p);
		assert_int_equal(fwrite(buf, 1, len, p), len);
		fclose(p);
		snprintf(cmd, sizeof(cmd), "md5sum '%s'", path_in(dir, "m"));
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(want, sizeof(want), p));
		pclose(p);
		want[32] = '\0';
		md5_buffer(buf, len, md5);
		hex(md5, got);
		assert_string_equal(got, want);
	}
}

/* a DWARF 5 prologue as llvm-dwarfdump 14 prints it, then rows */
static void test_dwarf_parse(void **state)
{
	static const char *const text[] = {
	    "debug_line[0x00000000]", "Line table prologue:", "         version: 5",
	    "include_directories[  0] = \"/home/u/proj\"",
	    "include_directories[  1] = \"src\"",
	    "include_directories[  2] = \"/usr/include\"", "file_names[  0]:",
	    "           name: \"main.c\"", "      dir_index: 0",
	    "   md5_checksum: 900150983cd24fb0d6963f7d28e17f72", "file_names[  1]:",
	    "           name: \"util.c\"", "      dir_index: 1",
	    "   md5_checksum: 0cc175b9c0f1b6a831c399e269772661", "file_names[  2]:",
	    "           name: \"stdio.h\"", "      dir_index: 2", "",
	    "Address            Line   Column File   ISA Discriminator Flags",
	    "0x0000000000001130      3      0      0   0             0  is_stmt",
	    "debug_line[0x00000100]", "include_directories[  0] = \"/other\"",
	    "file_names[  0]:", "           name: \"/abs/./x.c\"", "      dir_index: 0",
	    "   md5_checksum: d41d8cd98f00b204e9800998ecf8427e",
	};
	struct dwarf_checksums dc;
	unsigned char md5[16];
	char got[33];
	size_t i;

	(void)state;
	dwarf_checksums_init(&dc);
	for (i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		assert_int_equal(dwarf_checksums_feed(&dc, text[i]), 0);
	assert_int_equal(dwarf_checksums_finish(&dc), 0);
	assert_int_equal(dc.n, 4);
	assert_int_equal(dwarf_checksums_lookup(&dc, "/home/u/proj/main.c", md5), 1);
	hex(md5, got);
	assert_string_equal(got, "900150983cd24fb0d6963f7d28e17f72");
	assert_int_equal(dwarf_checksums_lookup(&dc, "/home/u/proj/src/util.c", md5), 1);
	hex(md5, got);
	assert_string_equal(got, "0cc175b9c0f1b6a831c399e269772661");
	assert_int_equal(dwarf_checksums_lookup(&dc, "/usr/include/stdio.h", md5), 0);
	assert_int_equal(dwarf_checksums_lookup(&dc, "/abs/x.c", md5), 1);
	assert_int_equal(dwarf_checksums_lookup(&dc, "/home/u/proj/util.c", md5), 0);
	dwarf_checksums_release(&dc);
}

static struct source_options no_options(void)
{
	return (struct source_options){0};
}

static void test_resolve(void **state)
{
	const char *old = "/build/tree", *new_dir;
	struct source_options o = no_options();
	char out[PATH_MAX], reason[1024], real[PATH_MAX];

	(void)state;
	assert_int_equal(mkdir(path_in(dir, "proj"), 0755), 0);
	assert_int_equal(mkdir(path_in(dir, "proj/src"), 0755), 0);
	assert_int_equal(mkdir(path_in(dir, "proj/.git"), 0755), 0);
	assert_int_equal(write_file(path_in(dir, "proj/src/a.c"), "int a;\n"), 0);
	assert_int_equal(write_file(path_in(dir, "proj/.git/hidden.c"), "x\n"), 0);
	snprintf(real, sizeof(real), "%s/proj/src/a.c", dir);

	/* as is */
	assert_int_equal(source_resolve(&o, real, out, sizeof(out), reason, sizeof(reason)), 0);
	assert_string_equal(out, real);
	/* missing, no root, no map */
	assert_int_equal(source_resolve(&o, "/build/tree/src/a.c", out, sizeof(out), reason,
					sizeof(reason)),
			 -ENOENT);
	assert_non_null(strstr(reason, "not found"));
	/* the map, whole components only */
	new_dir = path_in(dir, "proj");
	o.map_old = &old;
	o.map_new = &new_dir;
	o.n_map = 1;
	assert_int_equal(source_resolve(&o, "/build/tree/src/a.c", out, sizeof(out), reason,
					sizeof(reason)),
			 0);
	assert_string_equal(out, real);
	assert_int_equal(source_resolve(&o, "/build/treex/src/a.c", out, sizeof(out), reason,
					sizeof(reason)),
			 -ENOENT);
	/* the base name under the root; .git is not searched */
	o.n_map = 0;
	o.root = path_in(dir, "proj");
	assert_int_equal(source_resolve(&o, "/elsewhere/a.c", out, sizeof(out), reason,
					sizeof(reason)),
			 0);
	assert_string_equal(out, real);
	assert_int_equal(source_resolve(&o, "/elsewhere/hidden.c", out, sizeof(out), reason,
					sizeof(reason)),
			 -ENOENT);
	assert_non_null(strstr(reason, "hidden.c"));
	/* two of that name: ambiguous, both named */
	assert_int_equal(mkdir(path_in(dir, "proj/other"), 0755), 0);
	assert_int_equal(write_file(path_in(dir, "proj/other/a.c"), "int b;\n"), 0);
	assert_int_equal(source_resolve(&o, "/elsewhere/a.c", out, sizeof(out), reason,
					sizeof(reason)),
			 -ENOTUNIQ);
	assert_non_null(strstr(reason, "several"));
	assert_non_null(strstr(reason, "/src/a.c"));
	assert_non_null(strstr(reason, "/other/a.c"));
	/* the runs directory is never searched */
	{
		struct stat st;

		assert_int_equal(stat(path_in(dir, "proj/other"), &st), 0);
		o.has_skip = 1;
		o.skip_dev = st.st_dev;
		o.skip_ino = st.st_ino;
		assert_int_equal(source_resolve(&o, "/elsewhere/a.c", out, sizeof(out), reason,
						sizeof(reason)),
				 0);
		assert_string_equal(out, real);
	}
}

static void fetch(const char *path, uint32_t first, uint32_t last, const unsigned char *md5,
		  struct source_answer *a)
{
	struct source_options o = no_options();
	struct source_request rq = {.dwarf_path = path, .first_line = first, .last_line = last};

	if (md5) {
		rq.has_md5 = 1;
		memcpy(rq.md5, md5, 16);
	}
	assert_int_equal(source_fetch_one(&o, &rq, a), 0);
}

static void test_extract_bounds(void **state)
{
	char text[8192] = "", line[32], path[PATH_MAX];
	struct source_answer a;
	int i;

	(void)state;
	for (i = 1; i <= 300; i++) {
		snprintf(line, sizeof(line), "line %d\n", i);
		strcat(text, line);
	}
	snprintf(path, sizeof(path), "%s", path_in(dir, "long.c"));
	assert_int_equal(write_file(path, text), 0);
	/* 3 lines of context each side */
	fetch(path, 10, 12, NULL, &a);
	assert_int_equal(a.status, SOURCE_NOT_VERIFIED);
	assert_string_equal(a.reason, "not verified: no checksum in the debug info");
	assert_int_equal(a.first_line, 7);
	assert_int_equal(a.last_line, 15);
	assert_int_equal(a.n_lines, 9);
	assert_string_equal(a.lines[0], "line 7");
	assert_string_equal(a.lines[8], "line 15");
	assert_false(a.truncated);
	source_answer_release(&a);
	/* longer than the bound: cut, marked */
	fetch(path, 2, 290, NULL, &a);
	assert_int_equal(a.first_line, 1);
	assert_int_equal(a.last_line, SOURCE_MAX_LINES);
	assert_int_equal(a.n_lines, SOURCE_MAX_LINES);
	assert_true(a.truncated);
	source_answer_release(&a);
	/* at the end of the file: no line past it */
	fetch(path, 299, 300, NULL, &a);
	assert_int_equal(a.last_line, 300);
	source_answer_release(&a);
	/* lines past the end: the file changed */
	fetch(path, 310, 312, NULL, &a);
	assert_int_equal(a.status, SOURCE_STALE);
	assert_non_null(strstr(a.reason, "changed since the build"));
	assert_int_equal(a.n_lines, 0);
	source_answer_release(&a);
	/* a symbolic link is not followed */
	assert_int_equal(symlink(path, path_in(dir, "link.c")), 0);
	fetch(path_in(dir, "link.c"), 1, 2, NULL, &a);
	assert_int_equal(a.status, SOURCE_MISSING);
	assert_non_null(strstr(a.reason, "symbolic link"));
	assert_int_equal(a.n_lines, 0);
	source_answer_release(&a);
}

/* a file compiled with DWARF 5 checksums: embedded as it is, stale once
 * edited; a DWARF 4 build: not verified */
static void test_staleness(void **state)
{
	char src[PATH_MAX], bin[PATH_MAX], tool[PATH_MAX], why[512];
	struct dwarf_checksums dc;
	struct source_answer a;
	unsigned char md5[16];

	(void)state;
	SKIP_UNLESS(have_command("clang"), "no clang to build with DWARF 5 checksums");
	SKIP_UNLESS(!tool_resolve_trusted("llvm-dwarfdump", tool, sizeof(tool), why, sizeof(why)),
		    "no trusted llvm-dwarfdump");
	snprintf(src, sizeof(src), "%s", path_in(dir, "tiny.c"));
	snprintf(bin, sizeof(bin), "%s", path_in(dir, "tiny"));
	assert_int_equal(write_file(src, "int work(int x)\n{\n\treturn x * 3;\n}\n\nint "
					 "main(void)\n{\n\treturn work(1) - 3;\n}\n"),
			 0);
	assert_int_equal(run_cmd("clang -g -gdwarf-5 -O0 -o '%s' '%s'", bin, src), 0);
	dwarf_checksums_init(&dc);
	assert_int_equal(dwarf_checksums_read(tool, bin, DWARF_CHECKSUMS_TIMEOUT_MS, &dc), 0);
	assert_int_equal(dwarf_checksums_lookup(&dc, src, md5), 1);
	dwarf_checksums_release(&dc);

	fetch(src, 1, 3, md5, &a);
	assert_int_equal(a.status, SOURCE_EMBEDDED);
	assert_string_equal(a.reason, "");
	assert_string_equal(a.lines[2], "\treturn x * 3;");
	source_answer_release(&a);

	/* edited after the build, even keeping its length */
	assert_int_equal(write_file(src, "int work(int x)\n{\n\treturn x * 4;\n}\n\nint "
					 "main(void)\n{\n\treturn work(1) - 3;\n}\n"),
			 0);
	fetch(src, 1, 3, md5, &a);
	assert_int_equal(a.status, SOURCE_STALE);
	assert_non_null(strstr(a.reason, "changed since the build"));
	assert_int_equal(a.n_lines, 0);
	source_answer_release(&a);

	/* DWARF 4: no checksum */
	if (have_command("gcc")) {
		assert_int_equal(run_cmd("gcc -g -gdwarf-4 -O0 -o '%s' '%s'", bin, src), 0);
		dwarf_checksums_init(&dc);
		assert_int_equal(dwarf_checksums_read(tool, bin, DWARF_CHECKSUMS_TIMEOUT_MS, &dc), 0);
		assert_int_equal(dwarf_checksums_lookup(&dc, src, md5), 0);
		dwarf_checksums_release(&dc);
	}
	/* not a module: the tool fails, said */
	dwarf_checksums_init(&dc);
	assert_int_equal(dwarf_checksums_read(tool, src, DWARF_CHECKSUMS_TIMEOUT_MS, &dc), -EIO);
	dwarf_checksums_release(&dc);
}

/* as root for a Run of nobody: what nobody may read, and nothing else */
static void test_fetch_as_owner(void **state)
{
	char secret[PATH_MAX], open_file[PATH_MAX], group_file[PATH_MAX];
	struct source_options o = no_options();
	struct source_request rq[3] = {0};
	struct source_answer a[3];
	size_t i;

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "needs root to read as another user");
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(secret, sizeof(secret), "%s", path_in(dir, "secret.c"));
	snprintf(open_file, sizeof(open_file), "%s", path_in(dir, "open.c"));
	snprintf(group_file, sizeof(group_file), "%s", path_in(dir, "group.c"));
	assert_int_equal(write_file(secret, "root only\n"), 0);
	assert_int_equal(write_file(open_file, "anyone\n"), 0);
	assert_int_equal(write_file(group_file, "root's group\n"), 0);
	assert_int_equal(chmod(secret, 0600), 0);
	assert_int_equal(chmod(open_file, 0644), 0);
	assert_int_equal(chown(group_file, 0, 0), 0);
	assert_int_equal(chmod(group_file, 0640), 0);
	rq[0] = (struct source_request){.dwarf_path = secret, .first_line = 1, .last_line = 1};
	rq[1] = (struct source_request){.dwarf_path = open_file, .first_line = 1, .last_line = 1};
	rq[2] = (struct source_request){.dwarf_path = group_file, .first_line = 1, .last_line = 1};

	assert_int_equal(source_fetch(&o, rq, 3, 65534, 65534, a), 0);
	assert_int_equal(a[0].status, SOURCE_MISSING);
	assert_non_null(strstr(a[0].reason, "cannot be read as the Run's owner"));
	assert_int_equal(a[0].n_lines, 0);
	assert_int_equal(a[1].status, SOURCE_NOT_VERIFIED);
	assert_string_equal(a[1].lines[0], "anyone");
	/* root's supplementary group is not the owner's */
	assert_int_equal(a[2].status, SOURCE_MISSING);
	assert_int_equal(a[2].n_lines, 0);
	for (i = 0; i < 3; i++)
		source_answer_release(&a[i]);

	/* as root itself: all three */
	assert_int_equal(source_fetch(&o, rq, 3, 0, 0, a), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(a[i].status, SOURCE_NOT_VERIFIED);
		source_answer_release(&a[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_md5_rfc_examples),
	    cmocka_unit_test_setup_teardown(test_md5_against_md5sum, setup, teardown),
	    cmocka_unit_test(test_dwarf_parse),
	    cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_extract_bounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_staleness, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch_as_owner, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
