/* fit_report — see fit_report.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/fit_report.h"

#define NAME_MAX_LEN 512

double fit_report_bumped(double value, double margin)
{
	return value * (1 + FIT_REPORT_BUMP) * margin;
}

/* a TOML basic string: quotes, backslashes and control characters escaped */
static void toml_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* "# <what> bound by <name> (digest <d>): <achieved>" or why there is none */
static void comment_leg(FILE *out, const struct fit_report_input *in, const char *what,
			const struct fit_value *v, const char *unit, const char *none, int slack)
{
	char name[NAME_MAX_LEN];
	const struct calibration_row *r;

	if (v->row < 0) {
		fprintf(out, "# %s: none (%s)\n", what, none);
		return;
	}
	r = &in->rows[v->row];
	fprintf(out, "# %s bound by '%s' (digest %s): %.9g %s%s\n", what,
		calibration_row_name(r, name, sizeof(name)), r->digest, v->value, unit,
		slack ? " with the fission slack" : "");
}

static void comment_fit(FILE *out, const struct fit_report_input *in, const struct envelope_fit *f)
{
	char name[NAME_MAX_LEN];
	const struct calibration_row *r;

	fprintf(out, "# backend %s: %zu rows used, %zu opaque excluded, %zu skipped by peak_flops "
		     "(approximate FLOP), %zu skipped by peak_memory_bandwidth (approximate bytes), "
		     "%zu multi-kernel, %zu violations (model_ms above measured_ms)\n",
		f->backend, f->rows, f->opaque, f->flops_approx, f->bytes_approx, f->multi_kernel,
		f->violations);
	comment_leg(out, in, "peak_flops", &f->peak_flops, "FLOP/s",
		    "no row with an exact, positive FLOP count", f->fission_slack.row >= 0);
	comment_leg(out, in, "peak_memory_bandwidth", &f->peak_memory_bandwidth, "B/s",
		    "no row with an exact, positive byte count", f->fission_slack.row >= 0);
	if (f->fission_slack.row < 0) {
		fprintf(out, "# fission slack: none (%s)\n",
			f->multi_kernel ? "every fully exact multi-kernel row is within the maxima"
					: "no multi-kernel row");
		return;
	}
	r = &in->rows[f->fission_slack.row];
	fprintf(out, "# fission slack %.9g forced by '%s' (digest %s): both legs raised by it\n",
		f->fission_slack.value, calibration_row_name(r, name, sizeof(name)), r->digest);
}

static void reason_text(FILE *out, const struct fit_report_input *in, const struct envelope_fit *f)
{
	char text[4096];
	size_t used, i;

	used = (size_t)snprintf(text, sizeof(text), "envelope fit of %zu rows (nunatak fit", f->rows);
	for (i = 0; i < in->nfiles && used < sizeof(text); i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, " %s", in->files[i]);
	if (used < sizeof(text))
		snprintf(text + used, sizeof(text) - used, ") on %s", in->date);
	toml_string(out, text);
}

static void block(FILE *out, const struct fit_report_input *in, const struct envelope_fit *f)
{
	if (f->peak_flops.row < 0 && f->peak_memory_bandwidth.row < 0) {
		fprintf(out, "# no [ceilings] block: neither leg could be fitted\n");
		return;
	}
	fprintf(out, "[ceilings]\nbackend = ");
	toml_string(out, f->backend);
	fputc('\n', out);
	if (f->peak_flops.row >= 0)
		fprintf(out, "peak_flops = %.6e  # FLOP/s\n",
			fit_report_bumped(f->peak_flops.value, in->margin));
	if (f->peak_memory_bandwidth.row >= 0)
		fprintf(out, "peak_memory_bandwidth = %.6e  # B/s\n",
			fit_report_bumped(f->peak_memory_bandwidth.value, in->margin));
	fprintf(out, "reason = ");
	reason_text(out, in, f);
	fputc('\n', out);
}

int fit_report_text(FILE *out, const struct fit_report_input *in)
{
	size_t i;

	if (!in->nfits)
		fprintf(out, "# no rows: nothing to fit\n");
	if (in->nfits > 1)
		fprintf(out, "# %zu backends: paste the [ceilings] block of this Machine's backend "
			     "(its identity: nunatak calibrate --json) into nunatak.toml\n",
			in->nfits);
	for (i = 0; i < in->nfits; i++) {
		fprintf(out, "%s", i ? "\n" : "");
		comment_fit(out, in, &in->fits[i]);
		if (in->margin != 1)
			fprintf(out, "# constants below x %g (--margin), then bumped by %g so that "
				     "7 digits never print below the fit\n",
				in->margin, FIT_REPORT_BUMP);
		else
			fprintf(out, "# constants below bumped by %g so that 7 digits never print "
				     "below the fit\n",
				FIT_REPORT_BUMP);
		block(out, in, &in->fits[i]);
	}
	return fflush(out) || ferror(out) ? -EIO : 0;
}

void fit_report_ocannl_number(double v, char *buf, size_t len)
{
	char s[64], *e, *digits;
	int mantissa;

	snprintf(s, sizeof(s), "%.*e", FIT_REPORT_OCANNL_PREC + 3, v);
	e = strchr(s, 'e');
	if (!e || e - s < 3 || !isdigit((unsigned char)e[-1]) || !isdigit((unsigned char)e[-2]) ||
	    !isdigit((unsigned char)e[-3])) { /* inf, nan: as printf wrote them */
		snprintf(buf, len, "%s", s);
		return;
	}
	mantissa = (int)(e - s) - 3; /* the 3 extra digits dropped, not rounded */
	for (digits = e + 2; *digits == '0'; digits++)
		;
	if (!*digits) /* e+00: no exponent */
		snprintf(buf, len, "%.*s", mantissa, s);
	else
		snprintf(buf, len, "%.*se%c%s", mantissa, s, e[1], digits);
}

/* "routine/label (digest)" */
static const char *ocannl_witness(const struct fit_report_input *in, long row, char *buf,
				  size_t len)
{
	char name[NAME_MAX_LEN];
	const struct calibration_row *r = &in->rows[row];

	snprintf(buf, len, "%s (%s)", calibration_row_name(r, name, sizeof(name)), r->digest);
	return buf;
}

static void ocannl_constant(FILE *out, const struct fit_report_input *in, const char *key,
			    const char *leg, const struct fit_value *v)
{
	char witness[NAME_MAX_LEN + 128], number[64];

	if (v->row < 0) {
		fprintf(out, "# no scoreable row constrains %s\n", key);
		return;
	}
	fprintf(out, "# %s-leg binding row: %s\n", leg,
		ocannl_witness(in, v->row, witness, sizeof(witness)));
	fit_report_ocannl_number(fit_report_bumped(v->value, in->margin), number, sizeof(number));
	fprintf(out, "%s=%s\n", key, number);
}

int fit_report_ocannl(FILE *out, const struct fit_report_input *in)
{
	char witness[NAME_MAX_LEN + 128], number[64];
	size_t i;

	for (i = 0; i < in->nfits; i++) {
		const struct envelope_fit *f = &in->fits[i];

		fprintf(out,
			"# backend %s: %zu timed row%s (%zu opaque excluded, %zu approx-flops / %zu "
			"approx-bytes excluded per leg, %zu multi-kernel), %zu recorded bound "
			"violation%s\n",
			f->backend, f->timed, f->timed == 1 ? "" : "s", f->opaque, f->flops_approx,
			f->bytes_approx, f->multi_kernel, f->violations, f->violations == 1 ? "" : "s");
		if (f->fission_slack.row >= 0) {
			fit_report_ocannl_number(f->fission_slack.value, number, sizeof(number));
			fprintf(out,
				"# fission slack %s applied to both legs, forced by multi-kernel "
				"row: %s\n",
				number,
				ocannl_witness(in, f->fission_slack.row, witness, sizeof(witness)));
		}
		if (in->margin != 1)
			fprintf(out, "# constants below x %g (nunatak fit --margin)\n", in->margin);
		ocannl_constant(out, in, "model_peak_flops", "compute", &f->peak_flops);
		ocannl_constant(out, in, "model_peak_memory_bandwidth", "memory",
				&f->peak_memory_bandwidth);
	}
	return fflush(out) || ferror(out) ? -EIO : 0;
}

/* {value, row: {name, digest}} or null */
static json_t *value_json(const struct fit_report_input *in, const struct fit_value *v,
			  double scale)
{
	char name[NAME_MAX_LEN];
	const struct calibration_row *r;

	if (v->row < 0)
		return json_null();
	r = &in->rows[v->row];
	return json_pack("{s:f, s:{s:s, s:s}}", "value", v->value * scale, "row", "name",
			 calibration_row_name(r, name, sizeof(name)), "digest", r->digest);
}

json_t *fit_report_json(const struct fit_report_input *in)
{
	json_t *list = json_array(), *doc = json_pack("{s:o}", "fits", list);
	size_t i;

	for (i = 0; doc && i < in->nfits; i++) {
		const struct envelope_fit *f = &in->fits[i];
		json_t *o = json_pack(
			"{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "backend",
			f->backend, "timed", (json_int_t)f->timed, "rows", (json_int_t)f->rows,
			"opaque", (json_int_t)f->opaque, "flops_approx", (json_int_t)f->flops_approx,
			"bytes_approx", (json_int_t)f->bytes_approx, "multi_kernel",
			(json_int_t)f->multi_kernel, "violations", (json_int_t)f->violations,
			"fission_slack", value_json(in, &f->fission_slack, 1), "peak_flops",
			value_json(in, &f->peak_flops, in->margin), "peak_memory_bandwidth",
			value_json(in, &f->peak_memory_bandwidth, in->margin));

		if (!o || json_array_append_new(list, o)) {
			json_decref(doc);
			doc = NULL;
		}
	}
	if (!doc)
		errno = ENOMEM;
	return doc;
}
