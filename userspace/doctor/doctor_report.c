/* doctor_report — see doctor_report.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/doctor/doctor_report.h"
#include "userspace/log/json_text.h"

struct doctor_report {
	json_t *checks, *degradations;
	int nomem;
};

struct doctor_report *doctor_report__new(void)
{
	struct doctor_report *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->checks = json_array();
	r->degradations = json_array();
	if (!r->checks || !r->degradations) {
		doctor_report__free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void doctor_report__free(struct doctor_report *r)
{
	if (!r)
		return;
	json_decref(r->checks);
	json_decref(r->degradations);
	free(r);
}

const char *doctor_status_name(enum doctor_status status)
{
	switch (status) {
	case DOCTOR_OK:
		return "ok";
	case DOCTOR_WARNING:
		return "warning";
	default:
		return "missing";
	}
}

/* text a JSON string can carry: a path that is not UTF-8 keeps its bytes
 * as \xNN (json_text) */
static json_t *text_or_null(const char *s)
{
	return s ? json_text(s) : json_null();
}

static void append(struct doctor_report *r, json_t *array, json_t *item)
{
	if (!item || json_array_append_new(array, item))
		r->nomem = 1;
}

void doctor_check(struct doctor_report *r, const char *name, enum doctor_status status,
		  const char *remedy, const char *detail_fmt, ...)
{
	char detail[2048];
	va_list ap;

	va_start(ap, detail_fmt);
	vsnprintf(detail, sizeof(detail), detail_fmt, ap);
	va_end(ap);
	append(r, r->checks,
	       json_pack("{s:s, s:s, s:o, s:o}", "name", name, "status", doctor_status_name(status),
			 "detail", text_or_null(detail), "remedy", text_or_null(remedy)));
}

void doctor_degradation(struct doctor_report *r, const char *name, const char *message,
			const char *remedy)
{
	const json_t *d;
	size_t i;

	json_array_foreach(
	    r->degradations, i,
	    d) if (!strcmp(json_string_value(json_object_get(d, "name")), name)) return;
	append(r, r->degradations,
	       json_pack("{s:s, s:o, s:o}", "name", name, "message", text_or_null(message),
			 "remedy", text_or_null(remedy)));
}

int doctor_check_status(const struct doctor_report *r, const char *name)
{
	const json_t *c;
	const char *s;
	size_t i;

	json_array_foreach(r->checks, i, c)
	{
		if (strcmp(json_string_value(json_object_get(c, "name")), name))
			continue;
		s = json_string_value(json_object_get(c, "status"));
		return !strcmp(s, "ok")	       ? DOCTOR_OK
		       : !strcmp(s, "warning") ? DOCTOR_WARNING
					       : DOCTOR_MISSING;
	}
	return -ENOENT;
}

json_t *doctor_report_json(const struct doctor_report *r)
{
	json_t *o;

	if (r->nomem) {
		errno = ENOMEM;
		return NULL;
	}
	o = json_pack("{s:O, s:O}", "checks", r->checks, "degradations", r->degradations);
	if (!o)
		errno = ENOMEM;
	return o;
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

int doctor_report_print(const struct doctor_report *r, FILE *out)
{
	const json_t *c;
	size_t i;

	if (r->nomem)
		return -ENOMEM;
	json_array_foreach(r->checks, i, c)
	{
		fprintf(out, "%-8s %-22s %s\n", str(c, "status"), str(c, "name"), str(c, "detail"));
		if (str(c, "remedy") && strcmp(str(c, "status"), "ok"))
			fprintf(out, "%-8s %-22s remedy: %s\n", "", "", str(c, "remedy"));
	}
	fprintf(out, "\nDegradations a Run here would have:%s\n",
		json_array_size(r->degradations) ? "" : " none");
	json_array_foreach(r->degradations, i, c)
	    fprintf(out, "  %s: %s\n    remedy: %s\n", str(c, "name"), str(c, "message"),
		    str(c, "remedy") ? str(c, "remedy") : "none");
	if (fflush(out) || ferror(out))
		return -(errno ? errno : EIO);
	return 0;
}
