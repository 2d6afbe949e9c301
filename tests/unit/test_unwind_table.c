/* test_unwind_table — unwind_table_compile() against what does not go
 * through our code: objdump's disassembly of a workload this test builds
 * (where the pushes and the frame pointer set-up are), readelf's
 * interpretation of libc's CFI (every rsp/rbp row, the signal FDE, the
 * return-address-undefined rows), the section headers (the PLT); the
 * table's invariants; malformed input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <gelf.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/unwind_fixture.h"
#include "userspace/elf/elf_file.h"
#include "userspace/log/log.h"
#include "userspace/unwind/unwind_table.h"

static char tmpdir[PATH_MAX];
static char workload[PATH_MAX];

static const char workload_src[] =
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "__attribute__((noinline)) long leaf_c(long x) { return x * 3 + 1; }\n"
    /* an indirect call clobbers every caller-saved register: mid_b pushes */
    "long (*volatile leaf_ptr)(long) = leaf_c;\n"
    "__attribute__((noinline)) long mid_b(long x) {\n"
    "  long s = 0, t = 1;\n"
    "  for (long i = 0; i < x; i++) { s += leaf_ptr(i); t ^= leaf_ptr(s); }\n"
    "  return s + t; }\n"
    /* a variable-size alloca keeps a frame pointer even with -fomit-frame-pointer */
    "__attribute__((noinline)) long with_fp(long n) {\n"
    "  char *p = __builtin_alloca(n); memset(p, 1, n); return p[n / 2] + mid_b(n); }\n"
    /* an over-aligned local and a VLA: gcc realigns the stack through
     * r10 (DRAP): CFA = *(rbp - 8), rbp saved at rbp + 0 */
    "long (*volatile sink)(long *, char *);\n"
    "__attribute__((noinline)) long realigned(long a, long b) {\n"
    "  long __attribute__((aligned(64))) buf[16]; char vla[a]; buf[0] = a; buf[1] = b; vla[0] = 1;\n"
    "  return sink ? sink(buf, vla) : buf[a & 1] + b + vla[0]; }\n"
    "int main(int argc, char **argv) {\n"
    "  return (int)with_fp(argc > 1 ? atol(argv[1]) : 10) + (int)realigned(argc, 2); }\n";

static int group_setup(void **state)
{
	static const char *const opts[] = { "-O2", "-fomit-frame-pointer", NULL };

	(void)state;
	log_set_level(LOG_QUIET);
	if (make_tmpdir(tmpdir, sizeof(tmpdir), "unwind-table"))
		return -1;
	snprintf(workload, sizeof(workload), "%s/w", tmpdir);
	return build_c(tmpdir, "w", workload_src, opts) ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return tmpdir[0] ? remove_tree(tmpdir) : 0;
}

/* (d) sorted, strictly increasing, last row INVALID, no two neighbours
 * with one rule, every index in the dictionary, index 0 all zero */
static void assert_sane_table(const struct table_fixture *t)
{
	const struct unwind_rule *zero = unwind_rules_get(t->rules, 0);
	size_t count = unwind_rules_count(t->rules);

	assert_true(t->n >= 1);
	assert_int_equal(t->st.rows, t->n);
	assert_non_null(zero);
	assert_int_equal(zero->cfa_type, UNWIND_CFA_INVALID);
	assert_int_equal(zero->cfa_offset | zero->rbp_offset | zero->rbp_type, 0);
	assert_int_equal(t->rows[t->n - 1].rule, 0);
	for (size_t i = 0; i < t->n; i++) {
		assert_true(t->rows[i].rule < count);
		if (i) {
			assert_true(t->rows[i - 1].pc < t->rows[i].pc);
			assert_true(t->rows[i - 1].rule != t->rows[i].rule);
		}
	}
	for (size_t i = 0; i < count; i++)
		assert_int_equal(unwind_rules_get(t->rules, (uint32_t)i)->pad |
				 unwind_rules_get(t->rules, (uint32_t)i)->reserved, 0);
}

static void assert_rule(const struct unwind_rule *r, int cfa_type, int cfa_offset, int rbp_type,
			int rbp_offset)
{
	if (r->cfa_type != cfa_type || r->cfa_offset != cfa_offset || r->rbp_type != rbp_type ||
	    (rbp_type == UNWIND_RBP_AT_CFA && r->rbp_offset != rbp_offset))
		fail_msg("rule {cfa %u%+d, rbp %u%+d} != expected {cfa %d%+d, rbp %d%+d}", r->cfa_type,
			 r->cfa_offset, r->rbp_type, r->rbp_offset, cfa_type, cfa_offset, rbp_type,
			 rbp_offset);
}

static uint64_t file_offset(const struct elf_file *f, uint64_t vaddr)
{
	uint64_t off = 0;

	assert_int_equal(elf_file__vaddr_to_offset(f, vaddr, &off), 0);
	return off;
}

/* the address of the instruction following the first one of function fn
 * whose text contains needle, from objdump: 0 when none */
static uint64_t insn_after(const char *bin, const char *fn, const char *needle)
{
	char disas[PATH_MAX + 32], *text, *line, *save = NULL;
	char *const argv[] = { "objdump", "-d", "--no-show-raw-insn", disas, (char *)bin, NULL };
	const char *out = path_in(tmpdir, "objdump.txt");
	uint64_t found = 0;
	int seen = 0;

	snprintf(disas, sizeof(disas), "--disassemble=%s", fn);
	assert_int_equal(spawn_tool(argv, out), 0);
	text = slurp(out, NULL);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long a;

		if (sscanf(line, " %llx:", &a) != 1 || !strchr(line, '\t'))
			continue;
		if (seen) {
			found = a;
			break;
		}
		seen = strstr(line, needle) != NULL;
	}
	free(text);
	return found;
}

/* (a) rules of known functions of a -O2 -fomit-frame-pointer program */
static void test_workload_rules(void **state)
{
	struct elf_file *f = elf_file__open(workload);
	struct table_fixture t;
	struct elf_symbol s;
	uint64_t after_push, after_fp;

	(void)state;
	assert_non_null(f);
	assert_int_equal(table_compile_path(workload, &t), 0);
	assert_sane_table(&t);
	assert_true(t.st.has_eh_frame);
	/* realigned's CFA = r10 + 0 rows, before rbp is set */
	assert_true(t.st.invalid_rows >= 1 && t.st.invalid_rows <= 4);
	/* entry of every function: CFA = rsp + 8, rbp untouched */
	static const char *const fns[] = { "leaf_c", "mid_b", "with_fp", "main" };
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(elf_file__lookup_name(f, fns[i], &s), 0);
		assert_rule(table_rule_at(&t, file_offset(f, s.start)), UNWIND_CFA_RSP, 8,
			    UNWIND_RBP_SAME, 0);
	}
	/* after mid_b's first push: rsp + 16 */
	after_push = insn_after(workload, "mid_b", "push");
	assert_true(after_push != 0);
	assert_int_equal(table_rule_at(&t, file_offset(f, after_push))->cfa_type, UNWIND_CFA_RSP);
	assert_int_equal(table_rule_at(&t, file_offset(f, after_push))->cfa_offset, 16);
	assert_int_equal(table_rule_at(&t, file_offset(f, after_push) - 1)->cfa_offset, 8);
	/* with_fp once rbp is set: CFA = rbp + 16, rbp saved at CFA - 16 */
	after_fp = insn_after(workload, "with_fp", "mov    %rsp,%rbp");
	assert_true(after_fp != 0);
	assert_rule(table_rule_at(&t, file_offset(f, after_fp)), UNWIND_CFA_RBP, 16,
		    UNWIND_RBP_AT_CFA, -16);
	/* realigned, once rbp is set and r10 pushed (before, CFA = r10: INVALID) */
	after_fp = insn_after(workload, "realigned", "push   %r10");
	assert_true(after_fp != 0);
	assert_rule(table_rule_at(&t, file_offset(f, after_fp)), UNWIND_CFA_DEREF_RBP, -8,
		    UNWIND_RBP_AT_RBP, 0);
	assert_int_equal(table_rule_at(&t, file_offset(f, after_fp))->rbp_offset, 0);
	/* _start: the outermost frame (crt1 marks its return address undefined) */
	assert_int_equal(elf_file__lookup_name(f, "_start", &s), 0);
	assert_int_equal(table_rule_at(&t, file_offset(f, s.start) + 1)->cfa_type, UNWIND_CFA_STOP);
	table_release(&t);
	elf_file__free(f);
}

/* a program whose own code has only .debug_frame (crt files keep
 * .eh_frame): its functions are tabled from .debug_frame */
static void test_debug_frame_rules(void **state)
{
	static const char *const opts[] = { "-O2", "-g", "-fomit-frame-pointer",
					    "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
					    NULL };
	const char *bin = path_in(tmpdir, "wdbg");
	struct elf_file *f;
	struct table_fixture t;
	struct elf_symbol s;
	uint64_t after_push;

	(void)state;
	assert_int_equal(build_c(tmpdir, "wdbg", workload_src, opts), 0);
	f = elf_file__open(bin);
	assert_non_null(f);
	assert_int_equal(table_compile_path(bin, &t), 0);
	assert_sane_table(&t);
	assert_true(t.st.has_debug_frame);
	assert_int_equal(elf_file__lookup_name(f, "mid_b", &s), 0);
	assert_rule(table_rule_at(&t, file_offset(f, s.start)), UNWIND_CFA_RSP, 8, UNWIND_RBP_SAME, 0);
	after_push = insn_after(bin, "mid_b", "push");
	assert_true(after_push != 0);
	assert_int_equal(table_rule_at(&t, file_offset(f, after_push))->cfa_offset, 16);
	table_release(&t);
	elf_file__free(f);
}

/* the file offset and size of section name of path (0, 0 when absent) */
static void section_extent(const char *path, const char *name, uint64_t *off, uint64_t *size)
{
	int fd = open_ro(path);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	*off = *size = 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name)) {
			*off = sh.sh_offset;
			*size = sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
}

/* the executable's PLT gets UNWIND_CFA_PLT (threshold 10 or 11) */
static void test_workload_plt(void **state)
{
	struct table_fixture t;
	const struct unwind_rule *r;
	uint64_t plt_off, plt_size;

	(void)state;
	section_extent(workload, ".plt", &plt_off, &plt_size);
	SKIP_UNLESS(plt_size >= 32, "the workload has no lazy-binding .plt");
	assert_int_equal(table_compile_path(workload, &t), 0);
	/* the PLT0 push stub, then the first entry */
	r = table_rule_at(&t, plt_off);
	assert_rule(r, UNWIND_CFA_RSP, 16, UNWIND_RBP_SAME, 0);
	r = table_rule_at(&t, plt_off + 16);
	assert_int_equal(r->cfa_type, UNWIND_CFA_PLT);
	assert_true(r->cfa_offset == 10 || r->cfa_offset == 11);
	assert_int_equal(table_rule_at(&t, plt_off + plt_size - 1)->cfa_type, UNWIND_CFA_PLT);
	table_release(&t);
}

/* readelf --debug-dump=frames-interp of libc, compared row by row */
struct readelf_check {
	struct table_fixture *t;
	const struct elf_file *f;
	size_t rows_compared, stop_rows, gaps_checked;
	uint64_t signal_start, signal_end; /* the 'S' CIE's FDE */
	struct fde_extent *fdes;
	size_t n_fdes, cap_fdes;
};

/* one "LOC CFA reg... ra" row under a header naming the columns */
static void check_readelf_row(struct readelf_check *c, char *line, char cols[][8], int ncols)
{
	char *save = NULL, *tok = strtok_r(line, " ", &save);
	char cfa[32] = "", rbp[16] = "u", ra[16] = "";
	unsigned long long loc = strtoull(tok, NULL, 16);
	const struct unwind_rule *r;
	int off;

	for (int i = 0; i < ncols && (tok = strtok_r(NULL, " ", &save)); i++) {
		if (tok[0] == '(') { /* "r10 (r10)": a register rule's name, one column */
			i--;
			continue;
		}
		if (!strcmp(cols[i], "CFA"))
			snprintf(cfa, sizeof(cfa), "%s", tok);
		else if (!strcmp(cols[i], "rbp"))
			snprintf(rbp, sizeof(rbp), "%s", tok);
		else if (!strcmp(cols[i], "ra"))
			snprintf(ra, sizeof(ra), "%s", tok);
	}
	if (loc >= c->signal_start && loc < c->signal_end)
		return;
	r = table_rule_at(c->t, file_offset(c->f, loc));
	if (!strcmp(ra, "u")) {
		if (r->cfa_type != UNWIND_CFA_STOP)
			fail_msg("%#llx: readelf ra undefined, ours type %u", loc, r->cfa_type);
		c->stop_rows++;
		return;
	}
	if (strcmp(ra, "c-8") || (strncmp(cfa, "rsp+", 4) && strncmp(cfa, "rbp+", 4)))
		return; /* a rule this comparison does not cover */
	if (r->cfa_type != (cfa[1] == 's' ? UNWIND_CFA_RSP : UNWIND_CFA_RBP) ||
	    r->cfa_offset != atoi(cfa + 4))
		fail_msg("%#llx: readelf CFA %s, ours type %u offset %d", loc, cfa, r->cfa_type,
			 r->cfa_offset);
	if (sscanf(rbp, "c%d", &off) == 1) {
		assert_int_equal(r->rbp_type, UNWIND_RBP_AT_CFA);
		assert_int_equal(r->rbp_offset, off);
	} else if (!strcmp(rbp, "u")) {
		assert_int_equal(r->rbp_type, UNWIND_RBP_SAME);
	}
	c->rows_compared++;
}

static void add_readelf_fde(struct readelf_check *c, uint64_t a, uint64_t b)
{
	if (c->n_fdes == c->cap_fdes) {
		c->cap_fdes = c->cap_fdes ? 2 * c->cap_fdes : 4096;
		c->fdes = realloc(c->fdes, c->cap_fdes * sizeof(*c->fdes));
		assert_non_null(c->fdes);
	}
	c->fdes[c->n_fdes].start = a;
	c->fdes[c->n_fdes++].end = b;
}

static void parse_readelf(struct readelf_check *c, char *text)
{
	char cols[32][8], *line, *save = NULL;
	unsigned long signal_cie = ~0ul;
	int ncols = 0, in_fde = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long off, cie;
		unsigned long long a, b;

		if (sscanf(line, "%lx %*x %*x CIE", &off) == 1 && strstr(line, " CIE ")) {
			in_fde = ncols = 0; /* the CIE's initial rows are no address's */
			if (strstr(line, "\"zRS\""))
				signal_cie = off;
		}
		if (sscanf(line, "%*x %*x %*x FDE cie=%lx pc=%llx..%llx", &cie, &a, &b) == 3) {
			ncols = 0;
			in_fde = 1;
			add_readelf_fde(c, a, b);
			if (cie == signal_cie) {
				c->signal_start = a;
				c->signal_end = b;
			}
		} else if (in_fde && !strncmp(line, "   LOC", 6)) {
			char *s2 = NULL, *tok = strtok_r(line, " ", &s2);

			for (ncols = 0; (tok = strtok_r(NULL, " ", &s2)) && ncols < 32; ncols++)
				snprintf(cols[ncols], sizeof(cols[ncols]), "%s", tok);
		} else if (ncols && line[0] != ' ' && strlen(line) > 16 && line[16] == ' ') {
			check_readelf_row(c, line, cols, ncols);
		}
	}
}

static int cmp_extent(const void *a, const void *b)
{
	const struct fde_extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* (c) every readelf row whose CFA is rsp+N or rbp+N (return address at
 * CFA - 8) has our rule at its address; every gap between FDEs is INVALID */
static void test_libc_matches_readelf(void **state)
{
	char *const argv[] = { "readelf", "--debug-dump=frames-interp", LIBC_PATH, NULL };
	const char *out = path_in(tmpdir, "libc.interp");
	struct elf_file *f;
	struct table_fixture t;
	struct readelf_check c = { .t = &t };
	char *text;
	int rc;

	(void)state;
	SKIP_UNLESS(access(LIBC_PATH, R_OK) == 0, LIBC_PATH " not readable");
	SKIP_UNLESS(have_command("readelf"), "readelf not installed (binutils)");
	rc = spawn_tool(argv, out); /* 1: no .debug_frame to dump, after a full dump */
	assert_true(rc == 0 || rc == 1);
	text = slurp(out, NULL);
	assert_non_null(text);
	f = elf_file__open(LIBC_PATH);
	assert_non_null(f);
	c.f = f;
	assert_int_equal(table_compile_path(LIBC_PATH, &t), 0);
	assert_sane_table(&t);
	parse_readelf(&c, text);
	free(text);
	assert_true(c.rows_compared > 20000);
	assert_true(c.stop_rows >= 2); /* clone and clone3 child paths */
	assert_int_equal(t.st.fdes, c.n_fdes);
	qsort(c.fdes, c.n_fdes, sizeof(*c.fdes), cmp_extent);
	for (size_t i = 0; i + 1 < c.n_fdes; i++) {
		if (c.fdes[i].end >= c.fdes[i + 1].start)
			continue;
		if (c.fdes[i + 1].start == c.signal_start && c.fdes[i].end + 1 == c.signal_start)
			continue;
		assert_int_equal(table_rule_at(&t, file_offset(f, c.fdes[i].end))->cfa_type,
				 UNWIND_CFA_INVALID);
		c.gaps_checked++;
	}
	assert_true(c.gaps_checked > 100);
	print_message("libc: %zu readelf rows compared, %zu return-address-undefined rows, %zu gaps\n",
		      c.rows_compared, c.stop_rows, c.gaps_checked);
	/* (b) __restore_rt: the FDE of the 'S' CIE, one byte earlier than it */
	assert_true(c.signal_end > c.signal_start);
	for (uint64_t a = c.signal_start; a < c.signal_end; a++)
		assert_int_equal(table_rule_at(&t, file_offset(f, a))->cfa_type, UNWIND_CFA_SIGNAL);
	assert_int_equal(t.rows[table_row_at(&t, file_offset(f, c.signal_start))].pc,
			 file_offset(f, c.signal_start) - 1);
	assert_int_equal(table_rule_at(&t, file_offset(f, c.signal_end))->cfa_type,
			 UNWIND_CFA_INVALID);
	free(c.fdes);
	table_release(&t);
	elf_file__free(f);
}

/* copies the first len bytes of src to dst (len 0: all); 0 or -1 */
static int copy_prefix(const char *src, const char *dst, size_t len)
{
	size_t n;
	char *buf = slurp(src, &n);
	FILE *fp;
	int ok;

	if (!buf)
		return -1;
	fp = fopen(dst, "w");
	ok = fp && fwrite(buf, 1, len && len < n ? len : n, fp) == (len && len < n ? len : n);
	if (fp && fclose(fp))
		ok = 0;
	free(buf);
	return ok ? 0 : -1;
}

static int compile_path_err(const char *path, struct unwind_rules *rules)
{
	struct unwind_row *rows = (void *)1;
	size_t n = 9;
	int fd = open_ro(path), err;

	err = unwind_table_compile(fd, rules, &rows, &n, NULL);
	close(fd);
	if (err) {
		assert_null(rows);
		assert_int_equal(n, 0);
	}
	free(err ? NULL : rows);
	return err;
}

/* (e) truncated, not ELF, no CFI: errors, never a crash */
static void test_malformed(void **state)
{
	struct unwind_rules *rules = unwind_rules__new();
	const char *cut = path_in(tmpdir, "cut");
	size_t sizes[] = { 4, 63, 64, 700, 4096 };
	char *const strip[] = { "objcopy", "-R", ".eh_frame", "-R", ".eh_frame_hdr", workload,
				(char *)path_in(tmpdir, "nocfi"), NULL };

	(void)state;
	assert_non_null(rules);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(copy_prefix(workload, cut, sizes[i]), 0);
		assert_int_equal(compile_path_err(cut, rules), -ENOEXEC);
	}
	assert_int_equal(write_file(cut, "not an ELF file\n"), 0);
	assert_int_equal(compile_path_err(cut, rules), -ENOEXEC);
	assert_int_equal(spawn_tool(strip, NULL), 0);
	assert_int_equal(compile_path_err(path_in(tmpdir, "nocfi"), rules), -ENODATA);
	unwind_rules__free(rules);
}

/* garbage in .eh_frame: an error or a table that keeps its invariants */
static void test_corrupt_eh_frame(void **state)
{
	const char *bad = path_in(tmpdir, "bad");
	uint64_t eh_off, eh_size;
	struct table_fixture t;
	unsigned seed = 12345;
	size_t n = 0;

	(void)state;
	section_extent(workload, ".eh_frame", &eh_off, &eh_size);
	assert_true(eh_size > 64);
	for (int round = 0; round < 50; round++) {
		char *buf = slurp(workload, &n);
		FILE *fp;
		int err;

		assert_non_null(buf);
		assert_true(eh_off + eh_size <= n);
		for (int k = 0; k < 1 + round % 8; k++)
			buf[eh_off + rand_r(&seed) % eh_size] ^= (char)(1 + rand_r(&seed) % 255);
		fp = fopen(bad, "w");
		assert_non_null(fp);
		assert_int_equal(fwrite(buf, 1, n, fp), n);
		assert_int_equal(fclose(fp), 0);
		free(buf);
		err = table_compile_path(bad, &t);
		if (err == 0)
			assert_sane_table(&t);
		else
			assert_true(err == -ENOEXEC || err == -ENODATA);
		table_release(&t);
	}
}

/* a full dictionary: -ENOSPC, nothing returned */
static void test_rules_full(void **state)
{
	struct unwind_rules *rules = unwind_rules__new();
	uint32_t index, again;

	(void)state;
	assert_non_null(rules);
	assert_int_equal(unwind_rules_count(rules), 1);
	for (int32_t i = 1; unwind_rules_count(rules) < MAX_UNWIND_RULES; i++) {
		struct unwind_rule r = { .cfa_type = UNWIND_CFA_RSP, .cfa_offset = 1000000 + i };

		assert_int_equal(unwind_rules_intern(rules, &r, &index), 0);
		assert_int_equal(index, (uint32_t)i);
		assert_int_equal(unwind_rules_intern(rules, &r, &again), 0);
		assert_int_equal(again, index);
	}
	assert_int_equal(unwind_rules_intern(rules, &(struct unwind_rule){ .cfa_type = 1 }, &index),
			 -ENOSPC);
	assert_int_equal(unwind_rules_intern(rules, &(struct unwind_rule){ 0 }, &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(compile_path_err(workload, rules), -ENOSPC);
	unwind_rules__free(rules);
}

/* one dictionary for two modules: the second reuses the first's rules */
static void test_shared_dictionary(void **state)
{
	struct unwind_rules *rules = unwind_rules__new();
	struct unwind_row *a = NULL, *b = NULL;
	size_t na, nb, after_first;
	int fd = open_ro(workload);

	(void)state;
	assert_int_equal(unwind_table_compile(fd, rules, &a, &na, NULL), 0);
	after_first = unwind_rules_count(rules);
	assert_int_equal(unwind_table_compile(fd, rules, &b, &nb, NULL), 0);
	close(fd);
	assert_int_equal(unwind_rules_count(rules), after_first);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, na * sizeof(*a));
	free(a);
	free(b);
	unwind_rules__free(rules);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_workload_rules),
	    cmocka_unit_test(test_workload_plt),
	    cmocka_unit_test(test_debug_frame_rules),
	    cmocka_unit_test(test_libc_matches_readelf),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_corrupt_eh_frame),
	    cmocka_unit_test(test_rules_full),
	    cmocka_unit_test(test_shared_dictionary),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
