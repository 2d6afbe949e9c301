/* Tests of the [ceilings] table (userspace/config/config_ceilings.c) and
 * of the fitted Ceilings in the Machine snapshot (userspace/machine/
 * machine_fitted.c): the block `nunatak fit` prints (fit_report_text)
 * loads as it is; integers and floats are peaks; unknown keys, a missing
 * reason, no peak, a peak <= 0 or a string refused with file:line:col; a
 * later file replaces the table; the fitted values replace flops_dp and
 * dram_bandwidth (measured, source fit, the reason naming the fit and the
 * file), a peak not given leaves its Ceiling, another Machine's table is
 * ignored. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "report/fit_report.h"
#include "tests/unit/test_helpers.h"
#include "userspace/config/config.h"
#include "userspace/machine/machine.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	return make_tmpdir(dir, sizeof(dir), "ceilings");
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

/* loads @text as a configuration file: config_load_file()'s return */
static int load(struct config *cfg, const char *name, const char *text, char *err, size_t len)
{
	const char *path = path_in(dir, name);

	assert_int_equal(write_file(path, text), 0);
	assert_int_equal(chmod(path, 0600), 0);
	return config_load_file(cfg, path, err, len);
}

static void test_fit_block_loads(void **state)
{
	struct calibration_row rows[] = {
		{ "m1", "d", "fma", "t=1", 100, NAN, 1, 8.5e9, 0, false, false, false },
		{ "m1", "d", "triad", "n=1", 100, NAN, 1, 1e8, 2.1e9, false, false, false },
	};
	const char *const files[] = { "cal.tsv" };
	struct fit_report_input in = { rows, NULL, 0, files, 1, 1, "2026-12-02" };
	struct envelope_fit *fits = NULL;
	struct config cfg;
	char *text = NULL, err[512] = "";
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	(void)state;
	assert_int_equal(envelope_fit(rows, 2, &fits, &in.nfits), 0);
	in.fits = fits;
	assert_int_equal(fit_report_text(out, &in), 0);
	fclose(out);
	config_init(&cfg);
	if (load(&cfg, "fit.toml", text, err, sizeof(err)))
		fail_msg("the fit's block does not load: %s\n%s", err, text);
	assert_true(cfg.ceilings.present);
	assert_string_equal(cfg.ceilings.backend, "m1");
	assert_true(cfg.ceilings.peak_flops >= 8.5e10);
	assert_true(cfg.ceilings.peak_flops <= 8.5e10 * (1 + 3e-6));
	assert_true(cfg.ceilings.peak_memory_bandwidth >= 2.1e10);
	assert_string_equal(cfg.ceilings.reason,
			    "envelope fit of 2 rows (nunatak fit cal.tsv) on 2026-12-02");
	assert_non_null(strstr(cfg.ceilings.source, "fit.toml"));

	/* a later file replaces the whole table: its peak only, no backend */
	assert_int_equal(load(&cfg, "later.toml",
			      "[ceilings]\npeak_flops = 12\nreason = \"by hand\"\n", err,
			      sizeof(err)),
			 0);
	assert_null(cfg.ceilings.backend);
	assert_true(cfg.ceilings.peak_flops == 12);
	assert_true(isnan(cfg.ceilings.peak_memory_bandwidth));
	config_release(&cfg);
	assert_false(cfg.ceilings.present);
	free(fits);
	free(text);
}

static void refused(const char *text, const char *position, const char *what)
{
	struct config cfg;
	char err[512] = "";

	config_init(&cfg);
	assert_int_equal(load(&cfg, "bad.toml", text, err, sizeof(err)), -EINVAL);
	if (!strstr(err, position) || !strstr(err, what))
		fail_msg("'%s' not in '%s'", what, err);
	assert_false(cfg.ceilings.present);
	config_release(&cfg);
}

static void test_refused(void **state)
{
	(void)state;
	refused("[ceilings]\npeak_flops = 1e9\nreason = \"x\"\npeak_dram = 1\n", "bad.toml:4:1: ",
		"unknown key 'ceilings.peak_dram'");
	refused("[ceilings]\npeak_flops = 1e9\n", "bad.toml:1:2: ", "needs a reason");
	refused("[ceilings]\nreason = \"x\"\nbackend = \"m\"\n", "bad.toml:1:2: ", "no peak");
	refused("[ceilings]\npeak_flops = -1.0\nreason = \"x\"\n", "bad.toml:2:14: ",
		"give a number > 0");
	refused("[ceilings]\npeak_flops = 0\nreason = \"x\"\n", "bad.toml:2:14: ", "> 0");
	refused("[ceilings]\npeak_memory_bandwidth = \"fast\"\nreason = \"x\"\n",
		"bad.toml:2:25: ", "> 0 (B/s)");
	refused("[ceilings]\npeak_flops = 1.0\nreason = \"\"\n", "bad.toml:3:10: ", "empty value");
	refused("ceilings = 3\n", "bad.toml:1:12: ", "expected a table");
	refused("[ceilings.x]\n", "bad.toml:1:", "unknown key 'ceilings.x'");
}

/* a machine object with these ceilings, and the ceilings array */
static json_t *machine_with(const char *identity)
{
	return json_pack("{s:s}", "identity", identity);
}

static json_t *ceilings_before(void)
{
	return json_pack("[{s:s, s:f, s:s, s:s, s:s, s:s}, {s:s, s:f, s:s, s:s, s:s, s:s},"
			 " {s:s, s:n, s:s, s:s, s:s, s:n}]",
			 "name", "flops_dp", "value", 1e10, "unit", "flop/s", "quality",
			 "estimated", "reason", "theory", "source", "theory", "name", "flops_sp",
			 "value", 2e10, "unit", "flop/s", "quality", "estimated", "reason",
			 "theory", "source", "theory", "name", "dram_bandwidth", "value", "unit",
			 "B/s", "quality", "unavailable", "reason", "not calibrated", "source");
}

static void test_snapshot_takes_the_fit(void **state)
{
	json_t *m = machine_with("abc"), *c = ceilings_before(), *dp, *bw;

	(void)state;
	assert_int_equal(machine_set_fitted_ceilings("abc", 8.5e10, 2.1e10, "envelope fit of 9 rows",
						     "/p/nunatak.toml"),
			 0);
	assert_int_equal(machine_apply_fitted_ceilings(m, c), 0);
	assert_int_equal(json_array_size(c), 3);
	dp = (json_t *)machine_ceiling_find(c, "flops_dp");
	bw = (json_t *)machine_ceiling_find(c, "dram_bandwidth");
	assert_true(json_real_value(json_object_get(dp, "value")) == 8.5e10);
	assert_string_equal(json_string_value(json_object_get(dp, "quality")), "measured");
	assert_string_equal(json_string_value(json_object_get(dp, "source")), "fit");
	assert_string_equal(json_string_value(json_object_get(dp, "reason")),
			    "fitted Ceiling ([ceilings] of /p/nunatak.toml): envelope fit of 9 rows");
	assert_true(json_real_value(json_object_get(bw, "value")) == 2.1e10);
	assert_string_equal(json_string_value(json_object_get(bw, "unit")), "B/s");
	assert_true(machine_ceiling_value(c, "flops_sp") == 2e10); /* not fitted: kept */
	json_decref(c);

	/* another Machine: ignored */
	c = ceilings_before();
	json_decref(m);
	m = machine_with("other");
	assert_int_equal(machine_apply_fitted_ceilings(m, c), 0);
	assert_true(machine_ceiling_value(c, "flops_dp") == 1e10);
	assert_true(isnan(machine_ceiling_value(c, "dram_bandwidth")));
	json_decref(c);

	/* any Machine, bandwidth only */
	c = ceilings_before();
	assert_int_equal(machine_set_fitted_ceilings(NULL, NAN, 3e10, "r", "f"), 0);
	assert_int_equal(machine_apply_fitted_ceilings(m, c), 0);
	assert_true(machine_ceiling_value(c, "flops_dp") == 1e10);
	assert_true(machine_ceiling_value(c, "dram_bandwidth") == 3e10);
	json_decref(c);

	/* forgotten */
	c = ceilings_before();
	assert_int_equal(machine_set_fitted_ceilings(NULL, NAN, NAN, NULL, NULL), 0);
	assert_int_equal(machine_apply_fitted_ceilings(m, c), 0);
	assert_true(isnan(machine_ceiling_value(c, "dram_bandwidth")));
	assert_int_equal(machine_set_fitted_ceilings(NULL, -1, NAN, "r", "f"), -EINVAL);
	json_decref(c);
	json_decref(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fit_block_loads),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_snapshot_takes_the_fit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
