/* Tests of userspace/calibration/calibration_rows: the row round trip
 * (12 columns, every field, flags true/false and counts as integers as
 * OCANNL's autotuner writes them), counts that are not integers (rounded
 * up, their leg's flag set) or beyond an OCaml int (refused), every row
 * written kept by a reader of the autotuner's own rules (of_line: 12
 * fields, Bool.of_string, Int.of_string, Float.of_string, written here
 * anew), the autotuner's rows and nunatak's older 0/1 ones read, times
 * floored never rounded (a double just
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
				  "250.500000\t1\t2000000000\t24000000000\tfalse\ttrue\tfalse");
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

	/* no model coverage: an empty column, NAN again */
	in.model_ms = NAN;
	in.opaque = true;
	in.kernels = 3;
	line = format(&in);
	assert_non_null(strstr(line, "\t301.250000\t\t3\t2000000000\t"));
	assert_non_null(strstr(line, "\tfalse\ttrue\ttrue"));
	parse_ok(line, &out);
	assert_true(isnan(out.model_ms));
	assert_true(out.opaque);
	assert_int_equal(out.kernels, 3);
	calibration_row_release(&out);
	free(line);
}

/* what %d of an OCaml int writes, no more: the counts of a row */
static void test_counts(void **state)
{
	struct calibration_row in = sample(), out;
	char buf[32], *line;
	bool approx = false;

	(void)state;
	/* an integer, even above 2^53, exactly its decimal, exact */
	assert_int_equal(calibration_count_format(9007199254740994.0, &approx, buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "9007199254740994");
	assert_false(approx);
	/* the largest double below 2^62, the first OCaml int cannot hold */
	assert_int_equal(calibration_count_format(nextafter(CALIBRATION_COUNT_LIMIT, 0), &approx,
						  buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "4611686018427387392");
	assert_int_equal(calibration_count_format(CALIBRATION_COUNT_LIMIT, &approx, buf,
						  sizeof(buf)),
			 -ERANGE);
	assert_int_equal(calibration_count_format(-1, &approx, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(calibration_count_format(NAN, &approx, buf, sizeof(buf)), -EINVAL);
	assert_false(approx);
	/* not an integer: rounded up (still an upper bound), no longer exact */
	assert_int_equal(calibration_count_format(2.25, &approx, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "3");
	assert_true(approx);

	/* in a row: the leg of a rounded count written approximate, not the other */
	in.flops = 0.1 + 0.2;
	in.bytes_approx = false;
	line = format(&in);
	assert_non_null(strstr(line, "\t1\t1\t24000000000\ttrue\tfalse\tfalse"));
	parse_ok(line, &out);
	assert_true(out.flops == 1 && out.flops_approx && !out.bytes_approx);
	calibration_row_release(&out);
	free(line);
	in = sample();
	in.bytes = 1e19; /* beyond an OCaml int: the row refused, not clamped */
	assert_int_equal(calibration_row_format(&in, &line), -ERANGE);
	assert_null(line);
}

/* an OCaml digit's value, -1 for none */
static int ocaml_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* OCaml's int_of_string (what Base's Int.of_string calls), 63-bit ints:
 * an optional sign, an optional 0x/0o/0b/0u prefix (then unsigned, below
 * 2^63), a digit first, then digits and '_' to the end; signed decimal in
 * [-2^62, 2^62 - 1]. Written from those rules, not from calibration_rows.c */
static bool ocaml_int_of_string(const char *s)
{
	unsigned __int128 res = 0, limit = (unsigned __int128)1 << 62;
	int base = 10, is_signed = 1, negative = 0, d;
	const char *p = s;

	if (*p == '-' || *p == '+')
		negative = *p++ == '-';
	if (p[0] == '0' && p[1] && strchr("xXoObBuU", p[1])) {
		base = strchr("xX", p[1])   ? 16
		       : strchr("oO", p[1]) ? 8
		       : strchr("bB", p[1]) ? 2
					    : 10;
		is_signed = 0;
		p += 2;
	}
	d = ocaml_digit(*p);
	if (d < 0 || d >= base)
		return false;
	for (; *p; p++) {
		if (*p == '_')
			continue;
		d = ocaml_digit(*p);
		if (d < 0 || d >= base)
			return false;
		res = res * (unsigned)base + (unsigned)d;
		if (res >> 64)
			return false;
	}
	if (!is_signed)
		return !(res >> 63);
	return negative ? res <= limit : res < limit;
}

/* Float.of_string, strictly: a number filling the field */
static bool ocaml_float_of_string(const char *s)
{
	char *end;

	if (!*s)
		return false;
	(void)strtod(s, &end);
	return !*end;
}

/* would OCANNL's of_line keep @line (12 fields, or the older 11)? */
static bool ocannl_of_line_keeps(const char *line)
{
	char *copy = strdup(line), *f[13], *p = copy;
	size_t n = 0;
	bool keep;

	assert_non_null(copy);
	for (;;) {
		char *tab = strchr(p, '\t');

		if (n < 13)
			f[n] = p;
		n++;
		if (!tab)
			break;
		*tab = '\0';
		p = tab + 1;
	}
	if (n == 11) {
		memmove(f + 3, f + 2, 9 * sizeof(*f));
		f[2] = "";
	}
	keep = (n == 11 || n == 12) && ocaml_float_of_string(f[4]) &&
	       (!*f[5] || ocaml_float_of_string(f[5])) && ocaml_int_of_string(f[6]) &&
	       ocaml_int_of_string(f[7]) && ocaml_int_of_string(f[8]);
	for (int i = 9; keep && i < 12; i++)
		keep = !strcmp(f[i], "true") || !strcmp(f[i], "false");
	free(copy);
	return keep;
}

/* every row nunatak writes, the autotuner keeps: a sweep of times, counts
 * (integers, fractions, up to the largest below 2^62), flags, no model */
static void test_autotuner_keeps_rows(void **state)
{
	static const double scale[] = { 1, 1e3, 1e9, 1e15, 4.6e18 };
	struct calibration_row r = sample();
	uint64_t seed = 2463534242ULL;
	char *line;
	int i;

	(void)state;
	/* the checker can say no: nunatak's older rows, a %.17g count */
	assert_false(ocannl_of_line_keeps("m\td\tr\tl\t1.000000\t\t1\t2\t3\t0\t0\t0"));
	assert_false(ocannl_of_line_keeps("m\td\tr\tl\t1.000000\t\t1\t1e+09\t3\t"
					  "false\tfalse\tfalse"));
	assert_false(ocannl_of_line_keeps("m\td\tr\tl\t1.000000\t\t1\t4611686018427387904\t3\t"
					  "false\tfalse\tfalse"));
	assert_false(ocannl_of_line_keeps("m\td\tl\t1.000000\t\t1\t2\t3\tfalse\tfalse"));
	/* and yes: the autotuner's own rows, both layouts, and int_of_string's forms */
	assert_true(ocannl_of_line_keeps("m\td\tr\tl\t1.000000\t\t1\t4611686018427387903\t3\t"
					 "false\ttrue\tfalse"));
	assert_true(ocannl_of_line_keeps("m\td\tl\t1.000000\t0.500000\t1\t2\t3\t"
					 "false\tfalse\tfalse"));
	assert_true(ocaml_int_of_string("-4611686018427387904"));
	assert_true(ocaml_int_of_string("0x7fff_ffff_ffff_ffff"));
	assert_true(ocaml_int_of_string("+1_000"));
	assert_false(ocaml_int_of_string("_1") || ocaml_int_of_string("") ||
		     ocaml_int_of_string("0x8000000000000000") || ocaml_int_of_string("1.0") ||
		     ocaml_int_of_string("4611686018427387904"));
	for (i = 0; i < 20000; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		r.measured_ms = (double)(seed % 1000000007) / 1e3;
		r.model_ms = seed & 1 ? NAN : (double)(seed % 999983) / 7.0;
		r.flops = (double)(seed >> 11) / (double)(1ULL << 53) * scale[seed % 5];
		r.bytes = seed & 2 ? floor(r.flops) : r.flops / 3;
		r.flops_approx = seed & 4;
		r.bytes_approx = seed & 8;
		r.opaque = seed & 16;
		r.kernels = 1 + (int)(seed % 3);
		line = format(&r);
		if (!ocannl_of_line_keeps(line))
			fail_msg("the autotuner would drop '%s'", line);
		free(line);
	}
}

/* rows as the autotuner writes them, and as nunatak wrote them before */
static void test_autotuner_rows_read(void **state)
{
	struct calibration_row out;

	(void)state;
	parse_ok("cc\t3f2a\tmatmul\tcand-0\t2.000000\t1.500000\t1\t4000000000\t1200000000\t"
		 "false\ttrue\tfalse",
		 &out);
	assert_true(out.measured_ms == 2 && out.model_ms == 1.5 && out.flops == 4e9 &&
		    out.bytes == 1.2e9 && !out.flops_approx && out.bytes_approx && !out.opaque);
	calibration_row_release(&out);
	parse_ok("cc\t3f2a\tcand-0\t2.000000\t\t2\t5\t6\ttrue\tfalse\ttrue", &out);
	assert_true(out.kernels == 2 && out.flops_approx && !out.bytes_approx && out.opaque);
	assert_string_equal(out.routine, "");
	calibration_row_release(&out);
	parse_ok("cc\t3f2a\tr\tl\t2.000000\t\t1\t0.30000000000000004\t2e+09\t1\t0\t1", &out);
	assert_true(out.flops == 0.1 + 0.2 && out.bytes == 2e9 && out.flops_approx && out.opaque);
	calibration_row_release(&out);
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
	refused("m1\td\tr\tl\t1\t\t1\t1\t1\tTrue\t0\t0", "flops_approx");
	refused("m1\td\tr\tl\t1\t\t1\t1\t1\tyes\tfalse\tfalse", "is not true, false, 0 or 1");
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
		cmocka_unit_test(test_round_trip),	cmocka_unit_test(test_counts),
		cmocka_unit_test(test_autotuner_keeps_rows),
		cmocka_unit_test(test_autotuner_rows_read),
		cmocka_unit_test(test_floor_not_round),
		cmocka_unit_test(test_tabs_in_names),	cmocka_unit_test(test_old_eleven_columns),
		cmocka_unit_test(test_malformed),	cmocka_unit_test(test_file_read),
		cmocka_unit_test(test_append),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
