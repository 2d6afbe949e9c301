/* calibration_rows — see calibration_rows.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/calibration/calibration_rows.h"
#include "userspace/log/log.h"

/* 9e9 ms: the micro-ms count stays below 2^53, where every integer is a
 * double, so the decimal written converts back exactly */
#define MS_MAX 9e9

void calibration_row_release(struct calibration_row *r)
{
	if (!r)
		return;
	free(r->backend);
	free(r->digest);
	free(r->routine);
	free(r->label);
	memset(r, 0, sizeof(*r));
}

/* floor(ms x 10^6) exactly: ms = mantissa x 2^exp from its bits, the
 * product in 128-bit integers */
static uint64_t micro_ms_floor(double ms)
{
	uint64_t bits, mantissa;
	int exp;

	memcpy(&bits, &ms, sizeof(bits));
	exp = (int)((bits >> 52) & 0x7ff);
	mantissa = bits & ((1ULL << 52) - 1);
	if (exp == 0)
		exp = 1; /* subnormal */
	else
		mantissa |= 1ULL << 52;
	exp -= 1075; /* ms = mantissa x 2^exp */
	if (exp >= 0)
		return (uint64_t)((unsigned __int128)mantissa * 1000000u << exp);
	if (exp < -120)
		return 0;
	return (uint64_t)(((unsigned __int128)mantissa * 1000000u) >> -exp);
}

int calibration_ms_format(double ms, char *buf, size_t len)
{
	uint64_t n;

	if (!(ms >= 0) || !(ms <= MS_MAX))
		return -EINVAL;
	n = micro_ms_floor(ms);
	/* the decimal one above converts to this very double: it is this
	 * double's own decimal (a row read back and written again is
	 * unchanged), and reads back to no more than the time written */
	if ((double)(n + 1) / 1e6 == ms)
		n++;
	snprintf(buf, len, "%llu.%06llu", (unsigned long long)(n / 1000000),
		 (unsigned long long)(n % 1000000));
	return 0;
}

/* a copy of s with every tab or newline a space */
static char *flatten(const char *s)
{
	char *copy = strdup(s ? s : ""), *p;

	for (p = copy; p && *p; p++)
		if (*p == '\t' || *p == '\n' || *p == '\r')
			*p = ' ';
	return copy;
}

static int count_ok(double v)
{
	return v >= 0 && isfinite(v);
}

int calibration_count_format(double count, bool *approx, char *buf, size_t len)
{
	double up;

	if (!count_ok(count))
		return -EINVAL;
	if (count >= CALIBRATION_COUNT_LIMIT)
		return -ERANGE;
	up = ceil(count); /* below 2^62, so below 2^63: an exact uint64_t */
	if (up != count)
		*approx = true;
	snprintf(buf, len, "%llu", (unsigned long long)up);
	return 0;
}

static const char *flag_text(bool flag)
{
	return flag ? "true" : "false";
}

int calibration_row_format(const struct calibration_row *r, char **line)
{
	char measured[32], model[32] = "", flops[32], bytes[32], *routine = NULL, *label = NULL;
	bool flops_approx = r->flops_approx, bytes_approx = r->bytes_approx;
	int n, err;

	*line = NULL;
	if (!r->backend || !r->digest || strpbrk(r->backend, "\t\n\r") ||
	    strpbrk(r->digest, "\t\n\r") || r->kernels < 1 ||
	    calibration_ms_format(r->measured_ms, measured, sizeof(measured)))
		return -EINVAL;
	if (!isnan(r->model_ms) && calibration_ms_format(r->model_ms, model, sizeof(model)))
		return -EINVAL;
	err = calibration_count_format(r->flops, &flops_approx, flops, sizeof(flops));
	if (!err)
		err = calibration_count_format(r->bytes, &bytes_approx, bytes, sizeof(bytes));
	if (err)
		return err;
	routine = flatten(r->routine);
	label = flatten(r->label);
	err = -ENOMEM;
	if (!routine || !label)
		goto cleanup;
	n = asprintf(line, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s", r->backend, r->digest,
		     routine, label, measured, model, r->kernels, flops, bytes,
		     flag_text(flops_approx), flag_text(bytes_approx), flag_text(r->opaque));
	if (n < 0)
		*line = NULL;
	else
		err = 0;
cleanup:
	free(routine);
	free(label);
	return err;
}

const char *calibration_row_name(const struct calibration_row *r, char *buf, size_t len)
{
	if (r->routine && r->routine[0])
		snprintf(buf, len, "%s/%s", r->routine, r->label ? r->label : "");
	else
		snprintf(buf, len, "%s", r->label ? r->label : "");
	return buf;
}

/* ---- reading ---- */

enum column { BACKEND, DIGEST, ROUTINE, LABEL, MEASURED, MODEL, KERNELS, FLOPS, BYTES,
	      FLOPS_APPROX, BYTES_APPROX, OPAQUE };

static const char *const column_names[CALIBRATION_ROW_COLUMNS] = {
	"backend", "digest",  "routine", "label",	 "measured_ms",	 "model_ms",
	"kernels", "flops",   "bytes",	 "flops_approx", "bytes_approx", "opaque",
};

/* a number filling the whole field, finite, >= 0 */
static int parse_number(const char *s, double *out)
{
	char *end;

	if (!*s || *s == ' ' || *s == '+' || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtod(s, &end);
	return errno || *end || !count_ok(*out) ? -EINVAL : 0;
}

/* "true"/"false" as rows are written, "0"/"1" as nunatak wrote them before */
static int parse_flag(const char *s, bool *out)
{
	if (!strcmp(s, "true") || !strcmp(s, "1"))
		*out = true;
	else if (!strcmp(s, "false") || !strcmp(s, "0"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static int parse_kernels(const char *s, int *out)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v > 1000000000)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* the numeric column c of field s into r: 0 or -EINVAL */
static int parse_column(enum column c, const char *s, struct calibration_row *r)
{
	switch (c) {
	case MEASURED:
		return parse_number(s, &r->measured_ms);
	case MODEL:
		if (!*s) {
			r->model_ms = NAN;
			return 0;
		}
		return parse_number(s, &r->model_ms);
	case KERNELS:
		return parse_kernels(s, &r->kernels);
	case FLOPS:
		return parse_number(s, &r->flops);
	case BYTES:
		return parse_number(s, &r->bytes);
	case FLOPS_APPROX:
		return parse_flag(s, &r->flops_approx);
	case BYTES_APPROX:
		return parse_flag(s, &r->bytes_approx);
	case OPAQUE:
		return parse_flag(s, &r->opaque);
	default:
		return 0;
	}
}

/* splits copy at its tabs into fields (at most max); how many there are */
static size_t split_tabs(char *copy, char **fields, size_t max)
{
	size_t n = 0;
	char *p = copy;

	for (;;) {
		char *tab = strchr(p, '\t');

		if (n < max)
			fields[n] = p;
		n++;
		if (!tab)
			return n;
		*tab = '\0';
		p = tab + 1;
	}
}

int calibration_row_parse(const char *line, size_t len, struct calibration_row *r, char *why,
			  size_t whylen)
{
	char *copy = strndup(line, len), *fields[CALIBRATION_ROW_COLUMNS + 1];
	char **strings[] = { &r->backend, &r->digest, &r->routine, &r->label };
	size_t n, i;
	int err = -ENOMEM;

	memset(r, 0, sizeof(*r));
	if (!copy)
		return -ENOMEM;
	if (memchr(line, '\0', len) || memchr(line, '\n', len)) {
		snprintf(why, whylen, "a NUL or newline inside the row");
		err = -EINVAL;
		goto cleanup;
	}
	n = split_tabs(copy, fields, CALIBRATION_ROW_COLUMNS);
	if (n != CALIBRATION_ROW_COLUMNS && n != CALIBRATION_ROW_COLUMNS_OLD) {
		snprintf(why, whylen, "%zu columns, not %d (or the older %d without routine)", n,
			 CALIBRATION_ROW_COLUMNS, CALIBRATION_ROW_COLUMNS_OLD);
		err = -EINVAL;
		goto cleanup;
	}
	if (n == CALIBRATION_ROW_COLUMNS_OLD) { /* routine is the column they lack */
		memmove(fields + ROUTINE + 1, fields + ROUTINE, (n - ROUTINE) * sizeof(*fields));
		fields[ROUTINE] = "";
	}
	for (i = 0; i < CALIBRATION_ROW_COLUMNS; i++) {
		if (i <= LABEL && !(*strings[i] = strdup(fields[i])))
			goto cleanup;
		if (parse_column((enum column)i, fields[i], r)) {
			/* the file's own column number, in either layout */
			snprintf(why, whylen, "column %zu (%s): '%.40s' is not %s",
				 i + 1 - (n == CALIBRATION_ROW_COLUMNS_OLD && i > ROUTINE),
				 column_names[i], fields[i],
				 i >= FLOPS_APPROX ? "true, false, 0 or 1"
				 : i == KERNELS	   ? "an integer >= 1"
						   : "a non-negative number");
			err = -EINVAL;
			goto cleanup;
		}
	}
	err = 0;
cleanup:
	free(copy);
	if (err)
		calibration_row_release(r);
	return err;
}

void calibration_rows_release(struct calibration_rows *set)
{
	size_t i;

	for (i = 0; set && i < set->n; i++)
		calibration_row_release(&set->rows[i]);
	if (set) {
		free(set->rows);
		memset(set, 0, sizeof(*set));
	}
}

int calibration_rows_push(struct calibration_rows *set, struct calibration_row *r)
{
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		struct calibration_row *rows = realloc(set->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		set->rows = rows;
		set->cap = cap;
	}
	set->rows[set->n++] = *r;
	return 0;
}

/* blank (spaces and tabs only) or a '#' comment */
static int is_comment(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	return i == len || (i == 0 && line[0] == '#');
}

int calibration_rows_read_text(const char *text, size_t len, const char *shown,
			       struct calibration_rows *set, char *err, size_t errlen)
{
	size_t before = set->n, lineno = 0, pos = 0;
	struct calibration_row r;
	char why[256];
	int ret = 0;

	while (!ret && pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;

		pos += n + 1;
		lineno++;
		if (is_comment(line, n))
			continue;
		ret = calibration_row_parse(line, n, &r, why, sizeof(why));
		if (ret == -EINVAL)
			snprintf(err, errlen, "%s:%zu: %s", shown, lineno, why);
		if (!ret && (ret = calibration_rows_push(set, &r)))
			calibration_row_release(&r);
	}
	while (ret && set->n > before)
		calibration_row_release(&set->rows[--set->n]);
	return ret;
}

int calibration_rows_read_file(const char *path, struct calibration_rows *set, char *err,
			       size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "re"), *mem = NULL;
	char buf[65536];
	size_t n;
	int ret = 0;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	mem = open_memstream(&text, &len);
	if (!mem) {
		fclose(f);
		return -ENOMEM;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (fwrite(buf, 1, n, mem) != n)
			ret = -ENOMEM;
	if (ferror(f)) {
		ret = -EIO;
		snprintf(err, errlen, "%s: %s", path, strerror(EIO));
	}
	fclose(f);
	if (fclose(mem) && !ret)
		ret = -ENOMEM;
	if (!ret)
		ret = calibration_rows_read_text(text, len, path, set, err, errlen);
	free(text);
	return ret;
}

/* ---- appending ---- */

int calibration_rows_open_at(int at, const char *name, const char *shown)
{
	int fd = openat(at, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
			0600);

	if (fd < 0 && errno == ELOOP)
		pr_warn("refusing rows file '%s': a symbolic link", shown);
	return fd < 0 ? -errno : fd;
}

int calibration_rows_open(const char *path)
{
	return calibration_rows_open_at(AT_FDCWD, path, path);
}

/* regular and ours: 0, or -errno said */
static int check_rows_file(int fd, const char *shown)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		pr_warn("refusing rows file '%s': not a regular file", shown);
		return -EINVAL;
	}
	if (st.st_uid != geteuid()) {
		pr_warn("refusing rows file '%s': owned by uid %u, not %u", shown,
			(unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & S_IWOTH) { /* anyone could have changed the rows before */
		pr_warn("refusing rows file '%s': writable by anyone (mode %03o)", shown,
			(unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

int calibration_rows_append_fd(int fd, const char *shown, const struct calibration_row *rows,
			       size_t n)
{
	char *text = NULL, *line = NULL;
	size_t len = 0, i;
	FILE *mem;
	ssize_t w;
	int ret = check_rows_file(fd, shown);

	if (ret)
		return ret;
	mem = open_memstream(&text, &len);
	if (!mem)
		return -ENOMEM;
	for (i = 0; !ret && i < n; i++) {
		ret = calibration_row_format(&rows[i], &line);
		if (!ret && fprintf(mem, "%s\n", line) < 0)
			ret = -ENOMEM;
		free(line);
	}
	if (fclose(mem) && !ret)
		ret = -ENOMEM;
	/* one write: rows of two calibrations never interleave within a line */
	for (i = 0; !ret && i < len; i += (size_t)w) {
		w = write(fd, text + i, len - i);
		if (w < 0 && errno != EINTR)
			ret = -errno;
		w = w < 0 ? 0 : w;
	}
	free(text);
	return ret;
}
