/* test_kernel_symbols — /proc/kallsyms read into offsets from the text
 * base and the function holding each: on fixture files written here
 * (aliases, gaps, modules, a hidden table, no base) and on this machine's
 * /proc/kallsyms (the address of `schedule` and one inside it, as the file
 * itself lists them), where a BPF program loaded here is named over its
 * whole JIT image and no further, though kallsyms lists no size (and it
 * may be the last program listed), and named as nunatak's when it has the
 * name of one of nunatak's programs (own_code.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <cmocka.h>
#include <linux/bpf.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/kernel_symbols.h"
#include "userspace/attribution/own_code.h"

/* Every symbol sorted, disjoint, of positive size: the invariant of the
 * table, checked through the public lookups at each symbol's ends. */
static void assert_sane_symbols(const struct kernel_symbols *ks, const uint64_t *starts, size_t n)
{
	struct kernel_symbol s, t;
	uint64_t off;
	size_t i;

	for (i = 0; i < n; i++) {
		assert_int_equal(kernel_symbols_resolve(ks, starts[i], &off, &s), 0);
		assert_true(s.size > 0);
		assert_non_null(s.name);
		assert_int_equal(kernel_symbols_resolve(ks, starts[i] + s.size - 1, &off, &t), 0);
		assert_int_equal(t.start, s.start);
		assert_string_equal(t.name, s.name);
	}
}

static const char fixture[] = "0000000000001000 A fixed_percpu_data\n"
			      "ffffffff81000000 T __pi__text\n"
			      "ffffffff81000000 T _stext\n"
			      "ffffffff81000000 T _text\n"
			      "ffffffff81000000 T srso_alias_untrain_ret\n"
			      "ffffffff81000040 t local_helper\n"
			      "ffffffff81000080 W weak_one\n"
			      "ffffffff81000080 t __weak_alias\n"
			      "ffffffff810000c0 T schedule\n"
			      "ffffffff81000200 T _etext\n"
			      "ffffffff81000300 D some_data\n"
			      "ffffffffa0001000 t mod_fn\t[mymod]\n"
			      "ffffffffa0001100 t mod_fn2\t[mymod]\n"
			      "ffffffffa0002000 t other_fn\t[othermod]\n"
			      "ffffffffa0002040 t other_last\t[othermod]\n";

struct fixture_dir {
	char dir[PATH_MAX];
};

static int setup(void **state)
{
	struct fixture_dir *f = calloc(1, sizeof(*f));

	if (!f || make_tmpdir(f->dir, sizeof(f->dir), "kallsyms"))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture_dir *f = *state;

	remove_tree(f->dir);
	free(f);
	return 0;
}

static struct kernel_symbols *load_fixture(struct fixture_dir *f, const char *name,
					   const char *text)
{
	const char *path = path_in(f->dir, name);
	struct kernel_symbols *ks;

	assert_int_equal(write_file(path, text), 0);
	ks = kernel_symbols__new(path);
	assert_non_null(ks);
	return ks;
}

static void test_fixture_resolves(void **state)
{
	static const uint64_t starts[] = {0xffffffff81000000, 0xffffffff81000040,
					  0xffffffff81000080, 0xffffffff810000c0,
					  0xffffffffa0001000, 0xffffffffa0002000};
	struct kernel_symbols *ks = load_fixture(*state, "kallsyms", fixture);
	struct kernel_symbol s;
	uint64_t off;

	assert_false(kernel_symbols_hidden(ks));
	assert_sane_symbols(ks, starts, sizeof(starts) / sizeof(starts[0]));
	/* aliases: the fewest leading underscores wins, text before data */
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffff81000010, &off, &s), 0);
	assert_string_equal(s.name, "srso_alias_untrain_ret");
	assert_int_equal(off, 0x10);
	assert_int_equal(s.start, 0);
	assert_int_equal(s.size, 0x40);
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffff81000090, &off, &s), 0);
	assert_string_equal(s.name, "weak_one");
	/* schedule ends where _etext starts */
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffff810001ff, &off, &s), 0);
	assert_string_equal(s.name, "schedule");
	assert_int_equal(s.start, 0xc0);
	assert_int_equal(s.size, 0x140);
	assert_int_equal(off, 0x1ff);
	/* _etext is bounded by a data symbol: it is text, it stays named;
	 * past the last symbol of the image nothing is */
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffff81000300, &off, &s), -ENOENT);
	assert_int_equal(off, 0x300);
	/* a module's symbol keeps its module; its last one has no end */
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffffa0001010, &off, &s), 0);
	assert_string_equal(s.name, "mod_fn [mymod]");
	assert_int_equal(off, 0xffffffffa0001010 - 0xffffffff81000000);
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffffa0001100, &off, &s), -ENOENT);
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffffa0002040, &off, &s), -ENOENT);
	/* below the base: offset 0, no symbol (nothing absolute leaves) */
	off = 1;
	assert_int_equal(kernel_symbols_resolve(ks, 0x1000, &off, &s), -ENOENT);
	assert_int_equal(off, 0);
	kernel_symbols__free(ks);
}

static void test_hidden(void **state)
{
	static const char hidden[] = "0000000000000000 T _text\n"
				     "0000000000000000 T schedule\n"
				     "0000000000000000 t mod_fn\t[mymod]\n";
	struct kernel_symbols *ks = load_fixture(*state, "hidden", hidden);
	char message[256];
	uint64_t off = 1;

	assert_true(kernel_symbols_hidden(ks));
	assert_int_equal(kernel_symbols_count(ks), 0);
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffff81000010, &off, NULL), -ENOENT);
	assert_int_equal(off, 0);
	kernel_symbols_degradation_message(0, message, sizeof(message));
	assert_non_null(strstr(message, "kernel addresses are hidden (kptr_restrict="));
	assert_non_null(strstr(message, "perf_event_paranoid="));
	assert_non_null(strstr(message, "[kernel] Hotspot"));
	assert_non_null(strstr(kernel_symbols_degradation_remedy(0), "kptr_restrict=0"));
	kernel_symbols_degradation_message(-ENOENT, message, sizeof(message));
	assert_non_null(strstr(message, "cannot read /proc/kallsyms (no such file"));
	kernel_symbols__free(ks);
}

static void test_no_base_or_file(void **state)
{
	struct fixture_dir *f = *state;
	const char *path = path_in(f->dir, "nobase");

	assert_int_equal(write_file(path, "ffffffff81000000 T foo\n"), 0);
	errno = 0;
	assert_null(kernel_symbols__new(path));
	assert_int_equal(errno, ENODATA);
	errno = 0;
	assert_null(kernel_symbols__new(path_in(f->dir, "absent")));
	assert_int_equal(errno, ENOENT);
}

/* _stext stands in for a missing _text; a reload sees a new module and a
 * failed reload keeps the table */
static void test_stext_and_reload(void **state)
{
	struct fixture_dir *f = *state;
	const char *path = path_in(f->dir, "reload");
	struct kernel_symbols *ks;
	struct kernel_symbol s;
	uint64_t off;

	assert_int_equal(write_file(path, "ffffffff81000100 T _stext\n"
					  "ffffffff81000100 T fn\n"
					  "ffffffff81000200 T _etext\n"),
			 0);
	ks = kernel_symbols__new(path);
	assert_non_null(ks);
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffff81000180, &off, &s), 0);
	assert_int_equal(off, 0x80);
	assert_string_equal(s.name, "fn");
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffffa0000010, &off, &s), -ENOENT);
	assert_int_equal(write_file(path, "ffffffff81000100 T _stext\n"
					  "ffffffff81000100 T fn\n"
					  "ffffffff81000200 T _etext\n"
					  "ffffffffa0000000 t new_fn\t[new]\n"
					  "ffffffffa0000100 t new_end\t[new]\n"),
			 0);
	assert_int_equal(kernel_symbols_reload(ks), 0);
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffffa0000010, &off, &s), 0);
	assert_string_equal(s.name, "new_fn [new]");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(kernel_symbols_reload(ks), -ENOENT);
	assert_int_equal(kernel_symbols_resolve(ks, 0xffffffffa0000010, &off, &s), 0);
	assert_string_equal(s.name, "new_fn [new]");
	kernel_symbols__free(ks);
}

/* the address the file gives for a text symbol of the kernel image */
static int kallsyms_lookup(const char *name, uint64_t *addr)
{
	char line[512], sym[256], type;
	unsigned long long a;
	int found = -ENOENT;
	FILE *fp = fopen("/proc/kallsyms", "re");

	if (!fp)
		return -errno;
	while (found && fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && !strchr(line, '\t') &&
		    strchr("tT", type) && !strcmp(sym, name)) {
			*addr = a;
			found = 0;
		}
	}
	fclose(fp);
	return found;
}

static void test_real_kallsyms(void **state)
{
	struct kernel_symbols *ks;
	struct kernel_symbol s;
	uint64_t schedule, text, off;

	(void)state;
	ks = kernel_symbols__new(NULL);
	SKIP_UNLESS(ks, "/proc/kallsyms is not readable here");
	if (kernel_symbols_hidden(ks)) {
		kernel_symbols__free(ks);
		SKIP_UNLESS(0, "kernel addresses are hidden here (kptr_restrict, not root)");
	}
	assert_int_equal(kallsyms_lookup("schedule", &schedule), 0);
	if (kallsyms_lookup("_text", &text))
		assert_int_equal(kallsyms_lookup("_stext", &text), 0);
	assert_true(kernel_symbols_count(ks) > 1000);
	assert_int_equal(kernel_symbols_resolve(ks, schedule, &off, &s), 0);
	assert_string_equal(s.name, "schedule");
	assert_int_equal(off, schedule - text);
	assert_int_equal(s.start, schedule - text);
	assert_true(s.size > 8 && s.size < 65536);
	/* an address inside it, and its last byte */
	assert_int_equal(kernel_symbols_resolve(ks, schedule + s.size / 2, &off, &s), 0);
	assert_string_equal(s.name, "schedule");
	assert_int_equal(off, schedule + s.size / 2 - text);
	assert_int_equal(kernel_symbols_resolve(ks, schedule + s.size - 1, &off, &s), 0);
	assert_string_equal(s.name, "schedule");
	assert_int_equal(kernel_symbols_resolve(ks, schedule + s.size, &off, &s) == 0 &&
			     !strcmp(s.name, "schedule"),
			 0);
	kernel_symbols__free(ks);
}

/* A program named as nunatak's mpi_return ("r0 = 0; exit"), loaded here:
 * the newest program, so likely the last [bpf] symbol of kallsyms. */
static void test_real_bpf_program(void **state)
{
	const struct bpf_insn insns[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	struct bpf_prog_info info = {0};
	uint32_t info_len = sizeof(info), len = 0;
	uint64_t addr = 0, off;
	struct kernel_symbols *ks;
	struct kernel_symbol s;
	char own[64];
	int fd;

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "not root: cannot load a BPF program and read its info");
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "mpi_return", "GPL", insns, 2, NULL);
	SKIP_UNLESS(fd >= 0, "cannot load a socket filter here");
	info.nr_jited_ksyms = 1;
	info.jited_ksyms = (uint64_t)(uintptr_t)&addr;
	info.nr_jited_func_lens = 1;
	info.jited_func_lens = (uint64_t)(uintptr_t)&len;
	assert_int_equal(bpf_obj_get_info_by_fd(fd, &info, &info_len), 0);
	if (!addr || !len)
		close(fd);
	SKIP_UNLESS(addr && len, "the BPF JIT is off or its addresses are hidden");
	ks = kernel_symbols__new(NULL);
	assert_non_null(ks);
	assert_false(kernel_symbols_hidden(ks));
	/* its first and last byte: the program, whole */
	assert_int_equal(kernel_symbols_resolve(ks, addr, &off, &s), 0);
	assert_true(strstr(s.name, "_mpi_return [bpf]") != NULL);
	assert_int_equal(s.size, len);
	assert_int_equal(kernel_symbols_resolve(ks, addr + len - 1, &off, &s), 0);
	assert_true(strstr(s.name, "_mpi_return [bpf]") != NULL);
	assert_int_equal(own_code_bpf_program(s.name, own, sizeof(own)), 1);
	assert_string_equal(own, "[nunatak BPF program mpi_return]");
	/* past its image: nobody's, or a symbol starting right there */
	if (kernel_symbols_resolve(ks, addr + len, &off, &s) == 0)
		assert_int_equal(s.start, off);
	kernel_symbols__free(ks);
	close(fd);
}

/* As nobody: hidden exactly when the file, read as nobody, shows the
 * kernel image at 0. Exit status of the child: 0 agree, 1 disagree, 2
 * not run. */
static void test_real_hidden_for_nobody(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "not root: cannot become nobody");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct kernel_symbols *ks;
		uint64_t text = 1;
		int zero;

		if (setgid(65534) || setuid(65534))
			_exit(2);
		if (kallsyms_lookup("_text", &text) && kallsyms_lookup("_stext", &text))
			_exit(2);
		zero = text == 0;
		ks = kernel_symbols__new(NULL);
		if (!ks)
			_exit(2);
		_exit(kernel_symbols_hidden(ks) == zero ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	SKIP_UNLESS(WEXITSTATUS(status) != 2, "nobody cannot read /proc/kallsyms here");
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fixture_resolves, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hidden, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_base_or_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stext_and_reload, setup, teardown),
	    cmocka_unit_test(test_real_kallsyms),
	    cmocka_unit_test(test_real_bpf_program),
	    cmocka_unit_test(test_real_hidden_for_nobody),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
