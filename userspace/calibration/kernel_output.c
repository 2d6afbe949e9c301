/* kernel_output — see kernel_output.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/calibration/kernel_output.h"

#define PREFIX "nunatak-calibration "

/* copies a field's value [v, end) into dst (len bytes): 0 or -EINVAL */
static int copy_word(char *dst, size_t len, const char *v, const char *end)
{
	size_t n = (size_t)(end - v);

	if (!n || n >= len)
		return -EINVAL;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return 0;
}

static int number(const char *v, const char *end, double *out)
{
	char *stop;

	if (v == end)
		return -EINVAL;
	errno = 0;
	*out = strtod(v, &stop);
	return errno || stop != end || !isfinite(*out) ? -EINVAL : 0;
}

static int integer(const char *v, const char *end, int *out)
{
	double d;

	if (number(v, end, &d) || d != floor(d) || d < 0 || d > 1e6)
		return -EINVAL;
	*out = (int)d;
	return 0;
}

/* an exact count: a whole number >= 0 */
static int count(const char *v, const char *end, double *out)
{
	return number(v, end, out) || *out < 0 || *out != floor(*out) ? -EINVAL : 0;
}

/* every required field seen: kernel, unit, rep, seconds, value */
#define REQUIRED_ALL 31u

/* one KEY=VALUE field: 0, or -EINVAL; *seen gets the bit of a required key */
static int field(const char *key, size_t klen, const char *v, const char *end,
		 struct kernel_rep *out, unsigned *seen)
{
#define IS(k) (klen == sizeof(k) - 1 && !memcmp(key, k, klen))
	if (IS("kernel")) {
		*seen |= 1;
		return copy_word(out->kernel, sizeof(out->kernel), v, end);
	}
	if (IS("unit")) {
		*seen |= 2;
		return copy_word(out->unit, sizeof(out->unit), v, end);
	}
	if (IS("rep")) {
		*seen |= 4;
		return integer(v, end, &out->rep);
	}
	if (IS("seconds")) {
		*seen |= 8;
		return number(v, end, &out->seconds);
	}
	if (IS("value")) {
		*seen |= 16;
		return number(v, end, &out->value);
	}
	if (IS("threads"))
		return integer(v, end, &out->threads);
	if (IS("flops"))
		return count(v, end, &out->flops);
	if (IS("bytes"))
		return count(v, end, &out->bytes);
	if (IS("ns")) {
		double ns;
		int err = count(v, end, &ns);

		if (err || !(ns <= 9e18))
			return err ? err : -EINVAL; /* never converted out of range */
		out->ns = (long long)ns;
		return 0;
	}
	if (IS("simd"))
		return copy_word(out->simd, sizeof(out->simd), v, end);
	return 0; /* a field a later kernel may add */
#undef IS
}

int kernel_line_parse(const char *line, struct kernel_rep *out)
{
	const char *p, *eol;
	unsigned seen = 0;

	if (!line || !out)
		return -EINVAL;
	if (strncmp(line, PREFIX, sizeof(PREFIX) - 1))
		return 0;
	memset(out, 0, sizeof(*out));
	out->flops = out->bytes = NAN;
	eol = line + strcspn(line, "\n");
	for (p = line + sizeof(PREFIX) - 1; p < eol;) {
		const char *end = p, *eq;

		while (end < eol && *end != ' ')
			end++;
		if (end > p) {
			eq = memchr(p, '=', (size_t)(end - p));
			if (!eq || eq == p || field(p, (size_t)(eq - p), eq + 1, end, out, &seen))
				return -EINVAL;
		}
		p = end + 1;
	}
	if (seen != REQUIRED_ALL || out->value <= 0 || out->seconds <= 0 || out->rep < 1)
		return -EINVAL;
	return 1;
}

int kernel_output_parse(const char *text, const char *kernel, struct kernel_rep *reps, int max,
			int *malformed)
{
	const char *line;
	int n = 0, bad = 0;

	for (line = text; line && *line && n < max;) {
		int r = kernel_line_parse(line, &reps[n]);

		if (r < 0)
			bad++;
		else if (r == 1 && !strcmp(reps[n].kernel, kernel))
			n++;
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	if (malformed)
		*malformed = bad;
	return n;
}
