/* Tests of userspace/pivot/pivot_read_loci (the Loci, the samples of each
 * Stack per Locus, the MPI Events, the modules) and of report/export_stacks
 * (the Stacks loaded once for the exports) on the Run of export_fixture.h:
 * rows in their documented order with absent values absent, in_kernel
 * summed, a walk stopped by its callback, and the loader's invariants
 * (sums equal to the pivot's, distinct frames, root first, [truncated],
 * [no frames], UTF-8 names). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/export_stacks.h"
#include "tests/unit/export_fixture.h"
#include "tests/unit/test_helpers.h"
#include "userspace/log/json_text.h"
#include "userspace/pivot/pivot_read_loci.h"

static char tmpdir[PATH_MAX];

struct rows {
	int n, stop_at;
	char text[2048];
};

static void rows_add(struct rows *r, const char *fmt, ...)
{
	size_t len = strlen(r->text);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->text + len, sizeof(r->text) - len, fmt, ap);
	va_end(ap);
}

static int locus_row(const struct pivot_locus *l, void *ctx)
{
	struct rows *r = ctx;

	rows_add(r, "%lld %s %d:%d/%d %lld %lld %s %s\n", (long long)l->id, l->node, l->has_rank,
		 l->rank, l->world_size, (long long)l->tgid, (long long)l->tid,
		 l->comm ? l->comm : "-", l->exe ? l->exe : "-");
	return ++r->n == r->stop_at ? 42 : 0;
}

static void test_read_loci(void **state)
{
	struct pivot *p = efx_build(tmpdir, "loci.sqlite", EFX_ALL);
	struct rows r = {0};

	(void)state;
	assert_int_equal(pivot_for_each_locus(p, locus_row, &r), 0);
	assert_string_equal(r.text, "1 n1 1:0/2 10 10 app /opt/app/app\n"
				    "2 n1 1:0/2 10 11 app /opt/app/app\n"
				    "3 n1 1:1/2 20 20 app /opt/app/app\n"
				    "4 n1 0:0/0 5 5 launcher /usr/bin/launcher\n"
				    "5 n1 0:0/0 5 6 - -\n");
	memset(&r, 0, sizeof(r));
	r.stop_at = 2;
	assert_int_equal(pivot_for_each_locus(p, locus_row, &r), 42);
	assert_int_equal(r.n, 2);
	assert_int_equal(pivot_for_each_locus(NULL, locus_row, &r), -EINVAL);
	pivot__free(p);
}

static int locus_stack_row(const struct pivot_locus_stack *s, void *ctx)
{
	struct rows *r = ctx;

	rows_add(r, "%lld/%lld %llu %.0f\n", (long long)s->stack, (long long)s->locus,
		 (unsigned long long)s->sample_count, s->value / 1e6);
	return ++r->n == r->stop_at ? 7 : 0;
}

static void test_read_locus_stacks(void **state)
{
	struct pivot *p = efx_build(tmpdir, "ls.sqlite", EFX_ALL);
	struct rows r = {0};

	(void)state;
	assert_int_equal(pivot_for_each_locus_stack(p, "cpu-clock", locus_stack_row, &r), 0);
	/* by stack then locus; (locus 1, stack 4) in and out of the kernel: one row */
	assert_string_equal(r.text, "1/1 6 6\n1/2 4 4\n1/3 10 10\n2/1 5 5\n3/2 3 3\n"
				    "4/1 6 6\n5/3 2 2\n6/4 1 1\n7/4 6 6\n");
	memset(&r, 0, sizeof(r));
	assert_int_equal(pivot_for_each_locus_stack(p, "cycles", locus_stack_row, &r), 0);
	assert_int_equal(r.n, 0);
	r.stop_at = 1;
	assert_int_equal(pivot_for_each_locus_stack(p, "cpu-clock", locus_stack_row, &r), 7);
	assert_int_equal(pivot_for_each_locus_stack(p, NULL, locus_stack_row, &r), -EINVAL);
	pivot__free(p);
}

static int event_row(const struct pivot_event *e, void *ctx)
{
	struct rows *r = ctx;

	rows_add(r, "%lld %s %lld+%lld", (long long)e->locus, e->name, (long long)e->start_ns,
		 (long long)e->duration_ns);
	if (e->has_bytes)
		rows_add(r, " bytes=%llu", (unsigned long long)e->bytes);
	if (e->has_peer)
		rows_add(r, " peer=%lld", (long long)e->peer);
	rows_add(r, "\n");
	return ++r->n == r->stop_at ? 3 : 0;
}

static void test_read_events(void **state)
{
	struct pivot *p = efx_build(tmpdir, "ev.sqlite", EFX_ALL);
	struct pivot *none = efx_build(tmpdir, "noev.sqlite", EFX_SAMPLES | EFX_MPI);
	struct rows r = {0};

	(void)state;
	assert_int_equal(pivot_event_count(p), EFX_N_EVENTS);
	assert_int_equal(pivot_for_each_event(p, event_row, &r), 0);
	/* by locus, then start */
	assert_string_equal(r.text, "1 MPI_Init 1000+500\n"
				    "1 MPI_Send 5000+2000 bytes=4096 peer=1\n"
				    "3 MPI_Barrier 900+100\n"
				    "3 MPI_Recv 4000+3500 bytes=4096 peer=0\n");
	memset(&r, 0, sizeof(r));
	r.stop_at = 3;
	assert_int_equal(pivot_for_each_event(p, event_row, &r), 3);
	memset(&r, 0, sizeof(r));
	assert_int_equal(pivot_event_count(none), 0);
	assert_int_equal(pivot_for_each_event(none, event_row, &r), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal(pivot_event_count(NULL), -EINVAL);
	pivot__free(p);
	pivot__free(none);
}

static int module_row(const struct pivot_module *m, void *ctx)
{
	struct rows *r = ctx;

	rows_add(r, "%lld %s %s %s %d\n", (long long)m->id, m->identity, m->path, m->display_name,
		 m->has_build_id);
	r->n++;
	return 0;
}

static void test_read_modules(void **state)
{
	struct pivot *p = efx_build(tmpdir, "mod.sqlite", EFX_ALL);
	struct rows r = {0};

	(void)state;
	assert_int_equal(pivot_for_each_module(p, module_row, &r), 0);
	assert_string_equal(r.text, "1 ab12 /opt/app/app app 1\n"
				    "2 cd34 /opt/app/libx.so libx.so 1\n"
				    "3 pseudo:kernel [kernel] [kernel] 0\n");
	pivot__free(p);
}

/* the frames of stack st, root first, joined by '|' */
static void stack_names(const struct export_stacks *s, const struct export_stack *st, char *buf,
			size_t len)
{
	size_t k;

	buf[0] = '\0';
	for (k = 0; k < st->n_frames; k++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", k ? "|" : "",
			 s->frames[st->frames[k]].name);
}

static void test_load(void **state)
{
	static const char *const expected[] = {
	    "main|b;weird|c", "main|b;weird|c",
	    "[truncated]|c",  "main|libx.so+0x7000|c|clear_page_erms",
	    "a\nnew\\xff",    "main|libx.so+0x7000",
	    "[no frames]",
	};
	struct pivot *p = efx_build(tmpdir, "load.sqlite", EFX_ALL);
	struct export_stacks s;
	uint64_t total = 0, by_stack = 0, by_sample = 0;
	char names[256];
	size_t i, j;

	(void)state;
	assert_int_equal(export_stacks_load(&s, p), 0);
	assert_string_equal(s.counter, "cpu-clock");
	assert_int_equal(pivot_sample_total(p, &total), 0);
	assert_int_equal(total, EFX_TOTAL);
	assert_int_equal(s.n_stacks, 7);
	for (i = 0; i < s.n_stacks; i++) {
		stack_names(&s, &s.stacks[i], names, sizeof(names));
		assert_string_equal(names, expected[i]);
		by_stack += s.stacks[i].sample_count;
	}
	for (i = 0; i < s.n_samples; i++)
		by_sample += s.samples[i].sample_count;
	assert_int_equal(by_stack, total);
	assert_int_equal(by_sample, total);
	assert_int_equal(s.sample_count, total);
	assert_int_equal(s.truncated_samples, 3);
	assert_int_equal(s.n_samples, 9);
	/* frames distinct by (module, offset), names valid UTF-8, two
	 * addresses of c: two frames of one name */
	assert_int_equal(s.n_frames, 9); /* 7 addresses, [truncated], [no frames] */
	for (i = 0; i < s.n_frames; i++) {
		assert_true(json_text_is_clean(s.frames[i].name, strlen(s.frames[i].name)));
		for (j = 0; j < i; j++)
			assert_false(s.frames[i].module == s.frames[j].module &&
				     s.frames[i].offset == s.frames[j].offset);
	}
	/* the kernel module known as such, libx's frame offset its largest */
	assert_true(s.modules[2].kernel && !s.modules[0].kernel);
	assert_int_equal(s.modules[1].max_offset, 0x7000);
	assert_int_equal(s.n_loci, 5);
	assert_null(s.loci[4].comm);
	export_stacks_release(&s);
	pivot__free(p);
}

static void test_load_empty_and_names(void **state)
{
	struct pivot *p = efx_build(tmpdir, "empty.sqlite", EFX_MPI);
	struct export_locus l = {
	    .node = "n1", .has_rank = 1, .rank = 3, .tgid = 7, .tid = 8, .comm = "app"};
	struct export_stacks s;
	char *name;

	(void)state;
	assert_int_equal(export_stacks_load(&s, p), 0);
	assert_null(s.counter);
	assert_int_equal(s.n_stacks + s.n_samples + s.sample_count, 0);
	assert_int_equal(s.n_loci, 5);
	export_stacks_release(&s);
	export_stacks_release(NULL);
	assert_int_equal(export_stacks_load(&s, NULL), -EINVAL);
	pivot__free(p);

	name = export_locus_name(&l, 0, 0);
	assert_string_equal(name, "rank 3");
	free(name);
	name = export_locus_name(&l, 1, 1);
	assert_string_equal(name, "rank 3 app (tid 8) on n1");
	free(name);
	l.has_rank = 0;
	l.comm = NULL;
	name = export_locus_name(&l, 0, 0);
	assert_string_equal(name, "? (pid 7)");
	free(name);
	name = export_locus_name(&l, 1, 0);
	assert_string_equal(name, "? (pid 7, tid 8)");
	free(name);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "export_stacks") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_loci),	cmocka_unit_test(test_read_locus_stacks),
	    cmocka_unit_test(test_read_events), cmocka_unit_test(test_read_modules),
	    cmocka_unit_test(test_load),	cmocka_unit_test(test_load_empty_and_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
