/* Tests of userspace/calibration/calibration_rows: the row round trip
 * (12 columns, every field), times floored never rounded (a double just
 * below a 6-decimal value, where printf rounds up; a sweep of values whose
 * written decimal must read back to no more than the value and within
 * 1e-6 ms of it, and be written again unchanged), tabs and newlines in
 * routine and label, the older 11-column rows, malformed lines (column
 * count, numbers, flags, kernels, negatives) rejected with the column
 * named, a file with comments read and one with a bad line failing whole
 * with file:line, and appending to a file (0600, a symbolic link refused). */
#include <fcntl.h>
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

static struct calibration_row sample(void)
{
	return (struct calibration_row){
		.backend = "m1",
		.digest = "abc123",
		.routine = "triad",
		.label = "threads=2 n=100 rep=3",
		.measured_ms = 301.25,
		.model_ms = 250.5,
		.kernels = 1,
		.flops = 2e9,
		.bytes = 24e9,
		.flops_approx = false,
		.bytes_approx = true,
		.opaque = false,
	};
}

static char *format(const struct calibration_row *r)
{
	char *line = NULL;

	assert_int_equal(calibration_row_format(r, &line), 0);
	assert_non_null(line);
	return line;
}

static void parse_ok(const char *line, struct calibration_row *r)
{
	char why[256] = "";
	int ret = calibration_row_parse(line, strlen(line), r, why, sizeof(why));

	if (ret)
		fail_msg("'%s' refused: %s", line, why);
}

static void test_round_trip(void **state)
{
	struct calibration_row in = sample(), out;
	char *line, *again, name[128];

	(void)state;
	line = format(&in);
	assert_string_equal(line, "m1\tabc123\ttriad\tthreads=2 n=100 rep=3\t301.250000\t"
				  "250.500000\t1\t2000000000\t24000000000\t0\t1\t0");
	parse_ok(line, &out);
	assert_string_equal(out.backend, "m1");
	assert_string_equal(out.digest, "abc123");
	assert_string_equal(out.routine, "triad");
	assert_string_equal(out.label, "threads=2 n=100 rep=3");
	assert_true(out.measured_ms == 301.25 && out.model_ms == 250.5);
	assert_int_equal(out.kernels, 1);
	assert_true(out.flops == 2e9 && out.bytes == 24e9);
	assert_false(out.flops_approx);
	assert_true(out.bytes_approx);
	assert_false(out.opaque);
	assert_string_equal(calibration_row_name(&out, name, sizeof(name)),
			    "triad/threads=2 n=100 rep=3");
	again = format(&out);
	assert_string_equal(again, line);
	calibration_row_release(&out);
	free(again);
	free(line);

	/* no model coverage: an empty column, NAN again; an odd count kept exactly */
	in.model_ms = NAN;
	in.opaque = true;
	in.flops = 0.1 + 0.2;
	in.kernels = 3;
	line = format(&in);
	assert_non_null(strstr(line, "\t301.250000\t\t3\t"));
	parse_ok(line, &out);
	assert_true(isnan(out.model_ms));
	assert_true(out.opaque);
	assert_true(out.flops == 0.1 + 0.2);
	assert_int_equal(out.kernels, 3);
	calibration_row_release(&out);
	free(line);
}

static void test_floor_not_round(void **state)
{
	struct calibration_row r = sample();
	double below = nextafter(1.234567, 0), v, back;
	char buf[64], *line, *end;
	static const double scale[] = { 1e-3, 1e-2, 0.1, 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
	uint64_t seed = 88172645463325252ULL;
	int i;

	(void)state;
	snprintf(buf, sizeof(buf), "%.6f", below);
	assert_string_equal(buf, "1.234567"); /* what rounding would store: above the time */
	assert_int_equal(calibration_ms_format(below, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1.234566");
	assert_int_equal(calibration_ms_format(1.2345679, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1.234567");
	assert_int_equal(calibration_ms_format(0.9999999, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0.999999");
	assert_int_equal(calibration_ms_format(1.234567, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1.234567"); /* the double of "1.234567" is written so */
	assert_int_equal(calibration_ms_format(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0.000000");
	assert_int_equal(calibration_ms_format(-1e-9, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(calibration_ms_format(NAN, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(calibration_ms_format(1e10, buf, sizeof(buf)), -EINVAL);

	r.measured_ms = below;
	r.model_ms = nextafter(2.5, 0);
	line = format(&r);
	assert_non_null(strstr(line, "\t1.234566\t2.499999\t"));
	free(line);

	/* a sweep: never above the value, within 1e-6 ms, written again unchanged */
	for (i = 0; i < 20000; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		v = (double)(seed >> 11) / (double)(1ULL << 53) * scale[seed % 10];
		assert_int_equal(calibration_ms_format(v, buf, sizeof(buf)), 0);
		back = strtod(buf, &end);
		if (!(back <= v && v - back < 1e-6 * (1 + 1e-9)))
			fail_msg("%.17g written '%s'", v, buf);
		{
			char again[64];

			assert_int_equal(calibration_ms_format(back, again, sizeof(again)), 0);
			assert_string_equal(again, buf);
		}
	}
}

static void test_tabs_in_names(void **state)
{
	struct calibration_row r = sample(), out;
	char *line = NULL, name[128];

	(void)state;
	r.routine = "pair\tlj";
	r.label = "n=4\nrep=1\r";
	line = format(&r);
	parse_ok(line, &out);
	assert_string_equal(out.routine, "pair lj");
	assert_string_equal(out.label, "n=4 rep=1 ");
	assert_string_equal(calibration_row_name(&out, name, sizeof(name)), "pair lj/n=4 rep=1 ");
	calibration_row_release(&out);
	free(line);

	r = sample();
	r.backend = "m\t1";
	assert_int_equal(calibration_row_format(&r, &line), -EINVAL);
	assert_null(line);
	r = sample();
	r.digest = "abc\n";
	assert_int_equal(calibration_row_format(&r, &line), -EINVAL);
	r = sample();
	r.kernels = 0;
	assert_int_equal(calibration_row_format(&r, &line), -EINVAL);
	r = sample();
	r.bytes = -1;
	assert_int_equal(calibration_row_format(&r, &line), -EINVAL);
}

static void test_old_eleven_columns(void **state)
{
	struct calibration_row out;
	char name[128];

	(void)state;
	parse_ok("m1\td9\tcand-7\t12.5\t\t2\t1e6\t2e6\t1\t0\t0", &out);
	assert_string_equal(out.routine, "");
	assert_string_equal(out.label, "cand-7");
	assert_string_equal(calibration_row_name(&out, name, sizeof(name)), "cand-7");
	assert_true(out.measured_ms == 12.5 && isnan(out.model_ms));
	assert_int_equal(out.kernels, 2);
	assert_true(out.flops == 1e6 && out.bytes == 2e6 && out.flops_approx && !out.bytes_approx);
	calibration_row_release(&out);
}

static void refused(const char *line, const char *column)
{
	struct calibration_row r;
	char why[256] = "";

	assert_int_equal(calibration_row_parse(line, strlen(line), &r, why, sizeof(why)), -EINVAL);
	if (!strstr(why, column))
		fail_msg("'%s': the reason '%s' does not name '%s'", line, why, column);
	assert_null(r.backend);
}

static void test_malformed(void **state)
{
	(void)state;
	refused("m1\td\tr\tl\t1\t\t1\t1\t0\t0", "10 columns");
	refused("m1\td\tr\tl\t1\t\t1\t1\t1\t0\t0\t0\t0", "13 columns");
	refused("", "1 columns");
	refused("m1\td\tr\tl\tfast\t\t1\t1\t1\t0\t0\t0", "measured_ms");
	refused("m1\td\tr\tl\t\t\t1\t1\t1\t0\t0\t0", "measured_ms");
	refused("m1\td\tr\tl\t1.5ms\t\t1\t1\t1\t0\t0\t0", "measured_ms");
	refused("m1\td\tr\tl\t-1\t\t1\t1\t1\t0\t0\t0", "measured_ms");
	refused("m1\td\tr\tl\tnan\t\t1\t1\t1\t0\t0\t0", "measured_ms");
	refused("m1\td\tr\tl\t1\tx\t1\t1\t1\t0\t0\t0", "model_ms");
	refused("m1\td\tr\tl\t1\t\t0\t1\t1\t0\t0\t0", "kernels");
	refused("m1\td\tr\tl\t1\t\t1.5\t1\t1\t0\t0\t0", "kernels");
	refused("m1\td\tr\tl\t1\t\t1\tinf\t1\t0\t0\t0", "flops");
	refused("m1\td\tr\tl\t1\t\t1\t1\t-2\t0\t0\t0", "bytes");
	refused("m1\td\tr\tl\t1\t\t1\t1\t1\ttrue\t0\t0", "flops_approx");
	refused("m1\td\tr\tl\t1\t\t1\t1\t1\t0\t2\t0", "bytes_approx");
	refused("m1\td\tr\tl\t1\t\t1\t1\t1\t0\t0\t", "opaque");
	refused("m1\td\tr\tl\t1\t\t1\t1\t1\t0\t0\t0\r", "opaque");
}

static void test_file_read(void **state)
{
	struct calibration_rows set = { 0 };
	char dir[PATH_MAX], err[512] = "";
	const char *good, *bad;

	(void)state;
	assert_int_equal(make_tmpdir(dir, sizeof(dir), "rows"), 0);
	good = path_in(dir, "good.tsv");
	bad = path_in(dir, "bad.tsv");
	assert_int_equal(write_file(good, "# from an autotuner\n\n"
					  "m1\td\tr\ta\t1\t\t1\t1\t1\t0\t0\t0\n"
					  "   \n"
					  "m2\td\tb\t2\t\t1\t1\t1\t0\t0\t0\n"),
			 0);
	assert_int_equal(write_file(bad, "m1\td\tr\tc\t1\t\t1\t1\t1\t0\t0\t0\n"
					 "# fine\n"
					 "m1\td\tr\td\t1\t\t1\t1\t1\t0\t0\n"
					 "m1\td\tr\te\t1\t\t1\t1\t1\t0\t0\t0\n"),
			 0);
	assert_int_equal(calibration_rows_read_file(good, &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 2);
	assert_string_equal(set.rows[0].label, "a");
	assert_string_equal(set.rows[1].backend, "m2");
	assert_string_equal(set.rows[1].label, "b");
	/* the whole file fails, its first row not kept, the earlier file's are */
	assert_int_equal(calibration_rows_read_file(bad, &set, err, sizeof(err)), -EINVAL);
	assert_int_equal(set.n, 2);
	assert_non_null(strstr(err, "bad.tsv:3: "));
	/* 11 columns: the old layout, where 'd' stands as the time */
	assert_non_null(strstr(err, "column 4 (measured_ms): 'd'"));
	assert_int_equal(calibration_rows_read_file(path_in(dir, "none.tsv"), &set, err,
						    sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "none.tsv: "));
	calibration_rows_release(&set);
	assert_int_equal(set.n, 0);
	remove_tree(dir);
}

static void test_append(void **state)
{
	struct calibration_row rows[2] = { sample(), sample() };
	struct calibration_rows set = { 0 };
	char dir[PATH_MAX], err[512];
	const char *file, *link;
	struct stat st;
	int fd;

	(void)state;
	assert_int_equal(make_tmpdir(dir, sizeof(dir), "rows"), 0);
	file = path_in(dir, "r.tsv");
	link = path_in(dir, "link.tsv");
	rows[1].routine = "fma_dp";
	rows[1].model_ms = NAN;
	for (int pass = 0; pass < 2; pass++) { /* created, then appended to */
		fd = calibration_rows_open(file);
		assert_true(fd >= 0);
		assert_int_equal(calibration_rows_append_fd(fd, file, rows, 2), 0);
		close(fd);
	}
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(calibration_rows_read_file(file, &set, err, sizeof(err)), 0);
	assert_int_equal(set.n, 4);
	assert_string_equal(set.rows[3].routine, "fma_dp");
	assert_true(isnan(set.rows[3].model_ms));
	assert_true(set.rows[2].model_ms == 250.5);
	calibration_rows_release(&set);
	assert_int_equal(chmod(file, 0606), 0); /* anyone may write it: refused */
	fd = calibration_rows_open(file);
	assert_int_equal(calibration_rows_append_fd(fd, file, rows, 1), -EPERM);
	close(fd);
	assert_int_equal(symlink(file, link), 0);
	assert_int_equal(calibration_rows_open(link), -ELOOP);
	/* a directory is not a rows file */
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(calibration_rows_append_fd(fd, dir, rows, 1), -EINVAL);
	close(fd);
	remove_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),	cmocka_unit_test(test_floor_not_round),
		cmocka_unit_test(test_tabs_in_names),	cmocka_unit_test(test_old_eleven_columns),
		cmocka_unit_test(test_malformed),	cmocka_unit_test(test_file_read),
		cmocka_unit_test(test_append),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
