/* test_machine_cache — the Machine profile cache under a private
 * XDG_CACHE_HOME: SHA-256 against sha256sum, the identity (what changes it
 * and what does not), store then load (a hit, modes 0700/0600), a stale
 * calibration_version, a symbolic link, a foreign owner (file and
 * directory) refused; machine_ceilings from cache, theory and neither; and
 * machine_snapshot on this machine. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
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

#include "tests/unit/test_helpers.h"
#include "userspace/calibration/calibration_rows.h"
#include "userspace/machine/machine.h"
#include "userspace/machine/machine_cache.h"
#include "userspace/machine/sha256.h"

static char home[PATH_MAX], dir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	if (make_tmpdir(home, sizeof(home), "machine-cache"))
		return -1;
	setenv("XDG_CACHE_HOME", home, 1);
	snprintf(dir, sizeof(dir), "%s/nunatak/machines", home);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(home);
	return 0;
}

/* a machine object as machine_describe shapes it: this repository's Zen 3
 * fixture (tests/unit/data/cpuinfo/this-machine-amd-epyc-zen3.cpuinfo) */
static json_t *zen3_machine(json_int_t memory_limit)
{
	json_t *m = json_pack(
		"{s:s, s:s, s:o, s:{s:s, s:i, s:i, s:i, s:[s,s,s,s,s]}, s:s, s:n, s:f, s:i, "
		"s:{s:i, s:[i,i], s:n, s:o}}",
		"architecture", "x86_64", "cpu_model", "AMD EPYC", "microarchitecture",
		json_string("zen3"), "cpu", "vendor", "AuthenticAMD", "family", 25, "model", 1,
		"stepping", 1, "simd", "sse2", "avx", "avx2", "fma", "neon", "rated_hz_source",
		"none", "rated_hz", "current_hz", 2445.404e6, "logical_cores", 2, "allocation",
		"visible_cores", 2, "affinity_mask", 0, 1, "cpu_quota", "memory_limit_bytes",
		memory_limit < 0 ? json_null() : json_integer(memory_limit));
	char *id;

	assert_non_null(m);
	json_array_remove(json_object_get(json_object_get(m, "cpu"), "simd"), 4); /* no neon */
	id = machine_identity(m);
	assert_non_null(id);
	json_object_set_new(m, "identity", json_string(id));
	free(id);
	return m;
}

static void test_sha256_matches_sha256sum(void **state)
{
	static const size_t lengths[] = { 0, 3, 55, 56, 63, 64, 65, 1000 };
	char text[1001], hex[SHA256_HEX_LEN + 1], want[128], cmd[256];
	size_t i;

	(void)state;
	SKIP_UNLESS(have_command("sha256sum"), "sha256sum is not installed");
	for (i = 0; i < sizeof(text) - 1; i++)
		text[i] = (char)('a' + i % 26);
	for (i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		FILE *p;

		snprintf(cmd, sizeof(cmd), "head -c %zu %s | sha256sum", lengths[i],
			 path_in(home, "text"));
		text[lengths[i]] = '\0';
		assert_int_equal(write_file(path_in(home, "text"), text), 0);
		text[lengths[i]] = (char)('a' + lengths[i] % 26);
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(want, sizeof(want), p));
		pclose(p);
		want[SHA256_HEX_LEN] = '\0';
		sha256_hex(text, lengths[i], hex);
		assert_string_equal(hex, want);
	}
}

static void test_identity(void **state)
{
	json_t *a = zen3_machine(-1), *b = zen3_machine(-1), *c = zen3_machine(1 << 30);
	const char *ia = json_string_value(json_object_get(a, "identity"));

	(void)state;
	assert_int_equal(strlen(ia), 64);
	assert_string_equal(ia, json_string_value(json_object_get(b, "identity")));
	/* another memory limit: another allocation shape, another Machine */
	assert_string_not_equal(ia, json_string_value(json_object_get(c, "identity")));
	/* the current frequency, the Ceilings, the kernel are not the identity */
	json_object_set_new(b, "current_hz", json_real(3e9));
	json_object_set_new(b, "kernel", json_string("7.0"));
	json_object_set_new(b, "ceilings", json_array());
	json_object_del(b, "identity");
	{
		char *ib = machine_identity(b);

		assert_string_equal(ia, ib);
		free(ib);
	}
	json_object_set_new(json_object_get(b, "allocation"), "visible_cores", json_integer(1));
	{
		char *ib = machine_identity(b);

		assert_string_not_equal(ia, ib);
		free(ib);
	}
	assert_null(machine_identity(NULL));
	json_decref(a), json_decref(b), json_decref(c);
}

static json_t *measured_ceilings(void)
{
	return json_pack("[{s:s, s:f, s:s, s:s, s:n}, {s:s, s:f, s:s, s:s, s:s},"
			 " {s:s, s:n, s:s, s:s, s:s}]",
			 "name", "flops_dp", "value", 7.0e10, "unit", "flop/s", "quality",
			 "measured", "reason", "name", "dram_bandwidth", "value", 1.9e10, "unit",
			 "B/s", "quality", "estimated", "reason", "spread 14 % between repetitions",
			 "name", "network_latency", "value", "unit", "s", "quality", "unavailable",
			 "reason", "not measured: give an MPI launcher");
}

static void test_store_then_load(void **state)
{
	json_t *m = zen3_machine(-1), *ceilings = measured_ceilings(), *profile = NULL;
	const char *id = json_string_value(json_object_get(m, "identity"));
	char file[PATH_MAX];
	struct stat st;

	(void)state;
	assert_int_equal(machine_cache_load(id, &profile), -ENOENT); /* nothing yet */
	assert_int_equal(machine_cache_store_profile(id, m, ceilings), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(stat(path_in(home, "nunatak"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	snprintf(file, sizeof(file), "%s/%s.json", dir, id);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(machine_cache_load(id, &profile), 0);
	assert_string_equal(json_string_value(json_object_get(profile, "identity")), id);
	assert_int_equal(json_integer_value(json_object_get(profile, "calibration_version")),
			 CALIBRATION_VERSION);
	assert_int_equal(strlen(json_string_value(json_object_get(profile, "calibrated"))), 20);
	assert_true(json_equal(json_object_get(profile, "ceilings"), ceilings));
	assert_true(json_equal(json_object_get(profile, "machine"), m));
	json_decref(profile);
	/* no temporary left behind */
	assert_int_equal(run_cmd("test $(ls -A '%s' | wc -l) -eq 1", dir), 0);
	json_decref(m), json_decref(ceilings);
}

static void test_stale_version(void **state)
{
	json_t *m = zen3_machine(-1), *ceilings = measured_ceilings(), *profile = NULL;
	const char *id = json_string_value(json_object_get(m, "identity"));
	char file[PATH_MAX];

	(void)state;
	assert_int_equal(machine_cache_store_profile(id, m, ceilings), 0);
	snprintf(file, sizeof(file), "%s/%s.json", dir, id);
	assert_int_equal(run_cmd("sed -i 's/\"calibration_version\": %d/\"calibration_version\": %d/' "
				 "'%s'",
				 CALIBRATION_VERSION, CALIBRATION_VERSION + 1, file),
			 0);
	assert_int_equal(machine_cache_load(id, &profile), -ENOENT);
	assert_null(profile);
	json_decref(m), json_decref(ceilings);
}

static void test_refused(void **state)
{
	json_t *m = zen3_machine(-1), *ceilings = measured_ceilings(), *profile = NULL;
	const char *id = json_string_value(json_object_get(m, "identity"));
	char file[PATH_MAX], elsewhere[PATH_MAX];

	(void)state;
	assert_int_equal(machine_cache_store_profile(id, m, ceilings), 0);
	snprintf(file, sizeof(file), "%s/%s.json", dir, id);
	/* a symbolic link at the name, to a valid profile */
	snprintf(elsewhere, sizeof(elsewhere), "%s/planted.json", home);
	assert_int_equal(rename(file, elsewhere), 0);
	assert_int_equal(symlink(elsewhere, file), 0);
	assert_int_equal(machine_cache_load(id, &profile), -ELOOP);
	assert_null(profile);
	/* store replaces the link itself, never writes through it */
	assert_int_equal(machine_cache_store_profile(id, m, ceilings), 0);
	assert_int_equal(machine_cache_load(id, &profile), 0);
	json_decref(profile);
	/* the machines directory replaced by a link: refused */
	assert_int_equal(run_cmd("mv '%s' '%s.real' && ln -s '%s.real' '%s'", dir, dir, dir, dir), 0);
	assert_int_equal(machine_cache_load(id, &profile), -ELOOP);
	assert_int_equal(machine_cache_store_profile(id, m, ceilings), -ELOOP);
	assert_int_equal(run_cmd("rm '%s' && mv '%s.real' '%s'", dir, dir, dir), 0);
	/* owned by someone else: file, then directory */
	if (geteuid() == 0) {
		assert_int_equal(chown(file, 65534, 65534), 0);
		assert_int_equal(machine_cache_load(id, &profile), -EPERM);
		assert_int_equal(chown(file, 0, 0), 0);
		assert_int_equal(chown(dir, 65534, 65534), 0);
		assert_int_equal(machine_cache_load(id, &profile), -EPERM);
		assert_int_equal(machine_cache_store_profile(id, m, ceilings), -EPERM);
		assert_int_equal(chown(dir, 0, 0), 0);
		assert_int_equal(machine_cache_load(id, &profile), 0);
		json_decref(profile);
	} else {
		printf("SKIPPED: the foreign-owner half needs root to chown\n");
	}
	/* an identity that could leave the directory */
	assert_int_equal(machine_cache_load("../x", &profile), -EINVAL);
	assert_int_equal(machine_cache_store_profile("ABC", m, ceilings), -EINVAL);
	json_decref(m), json_decref(ceilings);
}

/* the Machine's calibration rows file: created 0600 in the cache directory
 * beside the profile, appended to, refused as a link or another's file */
static void test_rows_file(void **state)
{
	struct calibration_row row = { "abc", "d", "triad", "rep=1", 1.5, NAN, 1, 2, 24,
				       false, false, false };
	struct calibration_rows set = { 0 };
	char shown[PATH_MAX], file[PATH_MAX], err[256];
	struct stat st;
	int fd, i;

	(void)state;
	for (i = 0; i < 2; i++) {
		fd = machine_cache_open_rows("abc", shown, sizeof(shown));
		assert_true(fd >= 0);
		assert_int_equal(calibration_rows_append_fd(fd, shown, &row, 1), 0);
		close(fd);
	}
	snprintf(file, sizeof(file), "%s/abc.rows.tsv", dir);
	assert_string_equal(shown, file);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(calibration_rows_read_file(file, &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 2);
	calibration_rows_release(&set);
	if (geteuid() == 0) {
		assert_int_equal(chown(file, 65534, 65534), 0);
		fd = machine_cache_open_rows("abc", shown, sizeof(shown));
		assert_true(fd >= 0);
		assert_int_equal(calibration_rows_append_fd(fd, shown, &row, 1), -EPERM);
		close(fd);
	}
	assert_int_equal(unlink(file), 0);
	assert_int_equal(symlink("/etc/passwd", file), 0);
	assert_int_equal(machine_cache_open_rows("abc", shown, sizeof(shown)), -ELOOP);
	assert_int_equal(machine_cache_open_rows("../x", shown, sizeof(shown)), -EINVAL);
}

/* the Ceiling called name in list */
static json_t *find(json_t *list, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(list, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	fail_msg("no Ceiling '%s'", name);
	return NULL;
}

static const char *str(json_t *c, const char *key)
{
	return json_string_value(json_object_get(c, key));
}

static void test_ceilings_theory_then_cache(void **state)
{
	json_t *m = zen3_machine(-1), *list, *c, *ceilings = measured_ceilings();
	const char *id = json_string_value(json_object_get(m, "identity"));

	(void)state;
	list = machine_ceilings(m);
	assert_int_equal(json_array_size(list), 5);
	/* not cached: Zen 3 theory, 16 dp flop/cycle x the current frequency x 2 cores */
	c = find(list, "flops_dp");
	assert_near(json_number_value(json_object_get(c, "value")), 16 * 2445.404e6 * 2, 1);
	assert_string_equal(str(c, "quality"), "estimated");
	assert_string_equal(str(c, "source"), "theory");
	assert_string_equal(str(c, "unit"), "flop/s");
	assert_non_null(strstr(str(c, "reason"), "not the rated one"));
	assert_non_null(strstr(str(c, "reason"), "nunatak calibrate"));
	c = find(list, "flops_sp");
	assert_near(json_number_value(json_object_get(c, "value")), 32 * 2445.404e6 * 2, 1);
	c = find(list, "dram_bandwidth");
	assert_true(json_is_null(json_object_get(c, "value")));
	assert_string_equal(str(c, "quality"), "unavailable");
	assert_string_equal(str(c, "reason"), MACHINE_NOT_CALIBRATED);
	assert_true(json_is_null(json_object_get(c, "source")));
	json_decref(list);

	/* cached: measured values win, flops_sp still from theory, the cached
	 * reason why the network was not measured is kept */
	assert_int_equal(machine_cache_store_profile(id, m, ceilings), 0);
	list = machine_ceilings(m);
	c = find(list, "flops_dp");
	assert_near(json_number_value(json_object_get(c, "value")), 7.0e10, 0);
	assert_string_equal(str(c, "quality"), "measured");
	assert_string_equal(str(c, "source"), "calibration");
	c = find(list, "dram_bandwidth");
	assert_string_equal(str(c, "quality"), "estimated");
	assert_string_equal(str(c, "reason"), "spread 14 % between repetitions");
	assert_string_equal(str(find(list, "flops_sp"), "source"), "theory");
	c = find(list, "network_latency");
	assert_string_equal(str(c, "reason"), "not measured: give an MPI launcher");
	assert_string_equal(str(c, "quality"), "unavailable");
	c = find(list, "network_bandwidth");
	assert_string_equal(str(c, "reason"), MACHINE_NOT_CALIBRATED);
	json_decref(list);
	json_decref(m), json_decref(ceilings);
}

static void test_ceilings_unknown_processor(void **state)
{
	json_t *m = zen3_machine(-1), *list, *c;

	(void)state;
	json_object_set_new(m, "microarchitecture", json_null());
	list = machine_ceilings(m);
	c = find(list, "flops_dp");
	assert_true(json_is_null(json_object_get(c, "value")));
	assert_string_equal(str(c, "quality"), "unavailable");
	assert_non_null(strstr(str(c, "reason"), "no theoretical peak"));
	json_decref(list), json_decref(m);
}

static void test_theory_follows_the_allocation(void **state)
{
	json_t *m = zen3_machine(-1), *a = json_object_get(m, "allocation");
	char reason[768];
	double dp, sp;

	(void)state;
	/* half a core of quota: calibration may use 1 thread, the peak is 1 core's */
	json_object_set_new(a, "cpu_quota", json_real(0.5));
	assert_int_equal(machine_theory_flops(m, &dp, &sp, reason, sizeof(reason)), 0);
	assert_near(dp, 16 * 2445.404e6, 1);
	assert_near(sp, 32 * 2445.404e6, 1);
	assert_non_null(strstr(reason, "x 1 core;"));
	/* a rated frequency wins over the current one */
	json_object_set_new(m, "rated_hz", json_real(3.0e9));
	json_object_set_new(m, "rated_hz_source", json_string("the rated frequency in the model name"));
	json_object_set_new(a, "cpu_quota", json_null());
	assert_int_equal(machine_theory_flops(m, &dp, &sp, reason, sizeof(reason)), 0);
	assert_near(dp, 16 * 3.0e9 * 2, 1);
	assert_non_null(strstr(reason, "model name"));
	/* no frequency at all: no peak */
	json_object_set_new(m, "rated_hz", json_null());
	json_object_set_new(m, "current_hz", json_null());
	assert_int_equal(machine_theory_flops(m, &dp, &sp, reason, sizeof(reason)), -ENOENT);
	json_decref(m);
}

static void test_snapshot_here(void **state)
{
	json_t *s = machine_snapshot(), *c;
	const char *keys[] = { "name", "value", "unit", "quality", "reason", "source" };
	char *again;
	size_t i, k;

	(void)state;
	assert_non_null(s);
	assert_int_equal(strlen(str(s, "identity")), 64);
	assert_true(json_is_object(json_object_get(s, "allocation")));
	assert_true(json_object_get(s, "rated_hz") != NULL);
	assert_true(json_object_get(s, "microarchitecture") != NULL);
	assert_int_equal(json_array_size(json_object_get(s, "ceilings")), 5);
	json_array_foreach(json_object_get(s, "ceilings"), i, c)
	{
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			assert_non_null(json_object_get(c, keys[k]));
		assert_true(!strcmp(str(c, "quality"), "measured") ||
			    !strcmp(str(c, "quality"), "estimated") ||
			    !strcmp(str(c, "quality"), "unavailable"));
		/* unavailable is null, never zero */
		assert_true(strcmp(str(c, "quality"), "unavailable") ||
			    json_is_null(json_object_get(c, "value")));
	}
	json_object_del(s, "ceilings");
	json_object_del(s, "identity");
	again = machine_identity(s);
	json_decref(s);
	s = machine_describe();
	assert_string_equal(again, str(s, "identity"));
	free(again);
	json_decref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sha256_matches_sha256sum, setup, teardown),
		cmocka_unit_test(test_identity),
		cmocka_unit_test_setup_teardown(test_store_then_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rows_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ceilings_theory_then_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ceilings_unknown_processor, setup, teardown),
		cmocka_unit_test(test_theory_follows_the_allocation),
		cmocka_unit_test_setup_teardown(test_snapshot_here, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
