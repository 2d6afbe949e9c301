/* summary_format — numbers as the summary writes them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/summary_format.h"

const char *summary_fmt_double(char *buf, size_t len, const char *fmt, double v)
{
	if (isnan(v))
		return SUMMARY_UNAVAILABLE;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(buf, len, fmt, v);
#pragma GCC diagnostic pop
	return buf;
}

const char *summary_fmt_seconds(char *buf, size_t len, double seconds)
{
	return summary_fmt_double(buf, len, "%.3f", seconds);
}

const char *summary_fmt_share(char *buf, size_t len, double share)
{
	return summary_fmt_double(buf, len, "%.1f%%", 100.0 * share);
}

const char *summary_fmt_estimate(char *buf, size_t len, const char *fmt, double v,
				 int estimated, double err)
{
	char value[48], error[48];

	if (!estimated || isnan(v))
		return summary_fmt_double(buf, len, fmt, v);
	snprintf(buf, len, "≈%s ± %s", summary_fmt_double(value, sizeof(value), fmt, v),
		 summary_fmt_double(error, sizeof(error), fmt, err));
	return buf;
}

int summary_text_width(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80; /* not a continuation byte */
	return n;
}

void summary_print_right(FILE *out, int width, const char *s)
{
	int pad = width - summary_text_width(s);

	fprintf(out, "%*s%s", pad > 0 ? pad : 0, "", s);
}

void summary_print_text(FILE *out, const char *text)
{
	const unsigned char *c;

	for (c = (const unsigned char *)text; *c; c++)
		fputc(*c < 0x20 && *c != '\t' ? '?' : *c == 0x7f ? '?' : *c, out);
}

void summary_print_lines(FILE *out, const char *text, const char *indent)
{
	const char *nl;

	for (; (nl = strchr(text, '\n')); text = nl + 1) {
		char *line = strndup(text, (size_t)(nl - text));

		if (line)
			summary_print_text(out, line);
		free(line);
		fprintf(out, "\n%s", indent);
	}
	summary_print_text(out, text);
	fputc('\n', out);
}

void summary_print_degradation(FILE *out, const char *lead, int indent, const char *name,
			       const char *node, const char *message, const char *remedy)
{
	char pad[48];

	indent = indent < 0 ? 0 : indent > 32 ? 32 : indent;
	fprintf(out, "%sdegradation ", lead);
	summary_print_text(out, name);
	if (node && node[0]) {
		fputs(" on ", out);
		summary_print_text(out, node);
	}
	fputs(": ", out);
	snprintf(pad, sizeof(pad), "%*s", indent, "");
	summary_print_lines(out, message, pad);
	fprintf(out, "%sremedy: ", pad);
	snprintf(pad, sizeof(pad), "%*s", indent + (int)strlen("remedy: "), "");
	summary_print_lines(out, remedy, pad);
}

json_t *summary_json_number(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}
