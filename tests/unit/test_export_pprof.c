/* Tests of report/export_pprof on the Run of export_fixture.h, read back
 * as a consumer does: gunzip (zlib), then unpack with the protobuf-c code
 * generated from pprof's profile.proto. Checked: string_table[0] "", the
 * sample types, Σ values equal to the pivot's, one Sample per (Stack,
 * Locus) with its labels, leaf-first Locations whose address - its
 * Mapping's start is the frame's offset, Functions by (name, file), the
 * [truncated] root without Mapping, build-ids, disjoint Mappings, period
 * and times from the manifest, a Run without samples, a failed write. */
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
#include <zlib.h>

#include "report/export_pprof.h"
#include "report/pprof/profile.pb-c.h"
#include "tests/unit/export_fixture.h"
#include "tests/unit/test_helpers.h"

typedef Perftools__Profiles__Profile Profile;

static char tmpdir[PATH_MAX];

/* the profile of p, written, gunzipped and unpacked */
static Profile *export_and_decode(struct pivot *p, const json_t *manifest,
				  struct export_pprof_stats *st)
{
	char *gz = NULL;
	size_t gz_len = 0, cap = 1 << 20;
	unsigned char *raw = malloc(cap);
	FILE *f = open_memstream(&gz, &gz_len);
	z_stream z = {0};
	Profile *prof;

	assert_non_null(f);
	assert_non_null(raw);
	assert_int_equal(export_pprof(p, manifest, f, st), 0);
	fclose(f);
	assert_int_equal(st->bytes, gz_len);
	assert_true(gz_len > 2 && (unsigned char)gz[0] == 0x1f && (unsigned char)gz[1] == 0x8b);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = gz_len;
	z.next_out = raw;
	z.avail_out = cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	prof = perftools__profiles__profile__unpack(NULL, z.total_out, raw);
	assert_non_null(prof);
	inflateEnd(&z);
	free(raw);
	free(gz);
	return prof;
}

static const char *str(const Profile *prof, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < prof->n_string_table);
	return prof->string_table[i];
}

static const Perftools__Profiles__Location *location(const Profile *prof, uint64_t id)
{
	size_t i;

	for (i = 0; i < prof->n_location; i++)
		if (prof->location[i]->id == id)
			return prof->location[i];
	fail_msg("no location %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Mapping *mapping(const Profile *prof, uint64_t id)
{
	size_t i;

	for (i = 0; i < prof->n_mapping; i++)
		if (prof->mapping[i]->id == id)
			return prof->mapping[i];
	return NULL;
}

static const char *function_name(const Profile *prof, const Perftools__Profiles__Location *l)
{
	size_t i;

	assert_int_equal(l->n_line, 1);
	for (i = 0; i < prof->n_function; i++)
		if (prof->function[i]->id == l->line[0]->function_id)
			return str(prof, prof->function[i]->name);
	fail_msg("no function %llu", (unsigned long long)l->line[0]->function_id);
	return NULL;
}

/* a Sample's frames root first joined by '|', and its labels */
static void describe(const Profile *prof, const Perftools__Profiles__Sample *s, char *buf,
		     size_t len)
{
	size_t k;

	buf[0] = '\0';
	for (k = s->n_location_id; k-- > 0;)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
			 k + 1 < s->n_location_id ? "|" : "",
			 function_name(prof, location(prof, s->location_id[k])));
	for (k = 0; k < s->n_label; k++) {
		const Perftools__Profiles__Label *l = s->label[k];

		if (l->str)
			snprintf(buf + strlen(buf), len - strlen(buf), " %s=%s", str(prof, l->key),
				 str(prof, l->str));
		else
			snprintf(buf + strlen(buf), len - strlen(buf), " %s=%lld",
				 str(prof, l->key), (long long)l->num);
	}
}

static void test_pprof_samples(void **state)
{
	struct pivot *p = efx_build(tmpdir, "pprof.sqlite", EFX_ALL);
	json_t *manifest =
	    json_pack("{s:{s:i}, s:[{s:s, s:s}]}", "run", "frequency", 997, "passes", "start",
		      "2026-12-02T06:51:08Z", "end", "2026-12-02T06:51:11Z");
	struct export_pprof_stats st;
	Profile *prof;
	uint64_t total = 0, count = 0, value = 0;
	char buf[512];
	int seen = 0;
	size_t i;

	(void)state;
	prof = export_and_decode(p, manifest, &st);
	assert_string_equal(str(prof, 0), "");
	assert_int_equal(prof->n_sample_type, 2);
	assert_string_equal(str(prof, prof->sample_type[0]->type), "samples");
	assert_string_equal(str(prof, prof->sample_type[0]->unit), "count");
	assert_string_equal(str(prof, prof->sample_type[1]->type), "cpu");
	assert_string_equal(str(prof, prof->sample_type[1]->unit), "nanoseconds");
	assert_string_equal(str(prof, prof->default_sample_type), "cpu");
	assert_string_equal(str(prof, prof->period_type->type), "cpu");
	assert_int_equal(prof->period, 1003009); /* 1e9 / 997 */
	assert_int_equal(prof->time_nanos, 1796194268LL * 1000000000LL);
	assert_int_equal(prof->duration_nanos, 3000000000LL);
	/* one Sample per (Stack, Locus); values add up to the pivot's */
	assert_int_equal(prof->n_sample, 9);
	assert_int_equal(st.records, 9);
	for (i = 0; i < prof->n_sample; i++) {
		assert_int_equal(prof->sample[i]->n_value, 2);
		count += prof->sample[i]->value[0];
		value += prof->sample[i]->value[1];
		describe(prof, prof->sample[i], buf, sizeof(buf));
		if (!strcmp(buf, "main|libx.so+0x7000|c|clear_page_erms rank=0 pid=10 tid=10 "
				 "thread=app node=n1"))
			seen |= 1; /* 4 in the kernel + 2 out, one Sample */
		if (!strcmp(buf, "[truncated]|c rank=0 pid=10 tid=11 thread=app node=n1"))
			seen |= 2;
		if (!strcmp(buf, "[no frames] pid=5 tid=5 thread=launcher node=n1"))
			seen |= 4; /* no rank label off MPI */
		if (!strcmp(buf, "a\nnew\\xff rank=1 pid=20 tid=20 thread=app node=n1"))
			seen |= 8;
		if (strstr(buf, "clear_page_erms"))
			assert_int_equal(prof->sample[i]->value[0], 6);
	}
	if (seen != 15)
		fail_msg("samples seen: %d (the last: %s)", seen, buf);
	assert_int_equal(pivot_sample_total(p, &total), 0);
	assert_int_equal(count, EFX_TOTAL);
	assert_int_equal(count, total);
	assert_int_equal(value, total * 1000000);
	assert_int_equal(st.samples, total);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	json_decref(manifest);
	pivot__free(p);
}

static void test_pprof_mappings(void **state)
{
	struct pivot *p = efx_build(tmpdir, "map.sqlite", EFX_ALL);
	struct export_pprof_stats st;
	Profile *prof;
	size_t i, j;
	int app = 0, kernel = 0;

	(void)state;
	prof = export_and_decode(p, NULL, &st);
	assert_int_equal(prof->period, 0); /* no manifest: unknown */
	assert_int_equal(prof->time_nanos, 0);
	assert_int_equal(prof->n_mapping, 3);
	/* the main binary first: the executable of the busiest Locus */
	assert_string_equal(str(prof, prof->mapping[0]->filename), "/opt/app/app");
	for (i = 0; i < prof->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = prof->mapping[i];

		assert_true(m->memory_start < m->memory_limit);
		assert_true(m->has_functions);
		for (j = 0; j < i; j++) /* disjoint */
			assert_true(m->memory_start >= prof->mapping[j]->memory_limit ||
				    m->memory_limit <= prof->mapping[j]->memory_start);
		if (!strcmp(str(prof, m->filename), "/opt/app/app")) {
			assert_string_equal(str(prof, m->build_id), "ab12");
			app = 1;
		}
		if (!strcmp(str(prof, m->filename), "[kernel]")) {
			assert_string_equal(str(prof, m->build_id), "");
			kernel = 1;
		}
	}
	assert_true(app && kernel);
	/* each Location: address - its Mapping's start is the frame's offset */
	assert_int_equal(prof->n_location, 9);
	for (i = 0; i < prof->n_location; i++) {
		const Perftools__Profiles__Location *l = prof->location[i];
		const Perftools__Profiles__Mapping *m = mapping(prof, l->mapping_id);
		const char *name = function_name(prof, l);

		if (!strcmp(name, "[truncated]") || !strcmp(name, "[no frames]")) {
			assert_int_equal(l->mapping_id, 0);
			continue;
		}
		assert_non_null(m);
		assert_true(l->address >= m->memory_start && l->address < m->memory_limit);
		if (!strcmp(name, "main"))
			assert_int_equal(l->address - m->memory_start, 0x300);
		if (!strcmp(name, "clear_page_erms"))
			assert_int_equal(l->address - m->memory_start, 0x50);
		if (!strcmp(name, "libx.so+0x7000"))
			assert_int_equal(l->address - m->memory_start, 0x7000);
	}
	/* c at two addresses: two Locations, one Function */
	assert_int_equal(prof->n_function, 8);
	assert_int_equal(st.functions, 8);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	pivot__free(p);
}

static void test_pprof_empty_and_errors(void **state)
{
	struct pivot *p = efx_build(tmpdir, "empty.sqlite", EFX_MPI);
	struct export_pprof_stats st;
	Profile *prof;
	FILE *out;

	json_t *manifest =
	    json_pack("{s:{s:s}, s:{s:{s:{s:i}}}}", "run", "created", "2026-12-02T06:51:08Z",
		      "provenance", "effective_configuration", "sampling.frequency", "value", 1000);

	(void)state;
	/* no run.frequency, no passes: the configuration's frequency, the
	 * Run's creation, no duration */
	prof = export_and_decode(p, manifest, &st);
	json_decref(manifest);
	assert_int_equal(prof->period, 1000000);
	assert_int_equal(prof->time_nanos, 1796194268LL * 1000000000LL);
	assert_int_equal(prof->duration_nanos, 0);
	assert_null(st.counter);
	assert_int_equal(prof->n_sample, 0);
	assert_int_equal(prof->n_sample_type, 2);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	pivot__free(p);
	assert_int_equal(export_pprof(NULL, NULL, stdout, NULL), -EINVAL);
	out = fopen("/dev/full", "w");
	if (!out) {
		print_message("SKIPPED: /dev/full cannot be opened here\n");
		return;
	}
	p = efx_build(tmpdir, "full.sqlite", EFX_ALL);
	assert_int_equal(export_pprof(p, NULL, out, NULL), -ENOSPC);
	fclose(out);
	pivot__free(p);
}

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(tmpdir, sizeof(tmpdir), "export_pprof") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pprof_samples),
	    cmocka_unit_test(test_pprof_mappings),
	    cmocka_unit_test(test_pprof_empty_and_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
