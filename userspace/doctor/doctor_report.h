/* doctor_report — what `nunatak doctor` found: a list of checks, each
 * {name, status, detail, remedy}, and the Degradations they imply, each
 * {name, message, remedy} (GLOSSARY.md), in the order they were added.
 *
 * A check's status is one of three words: "ok" (a Run here has it),
 * "warning" (it works, with less: a Run here has a caveat), "missing" (a
 * Run here goes without it). A Degradation is named once: a second one of
 * the same name is not added (two checks may imply the same loss).
 * A report never fails half-way: a failed allocation is remembered and
 * reported by doctor_report_json()/doctor_report_print() as -ENOMEM.
 */
#ifndef NUNATAK_DOCTOR_REPORT_H
#define NUNATAK_DOCTOR_REPORT_H

#include <jansson.h>
#include <stdio.h>

enum doctor_status {
	DOCTOR_OK,
	DOCTOR_WARNING,
	DOCTOR_MISSING,
};

struct doctor_report;

/* NULL + errno (ENOMEM); free with doctor_report__free() (NULL-safe) */
struct doctor_report *doctor_report__new(void);
void doctor_report__free(struct doctor_report *r);

/* "ok", "warning", "missing" */
const char *doctor_status_name(enum doctor_status status);

/* Adds a check; detail is printf-formatted; remedy may be NULL (nothing
 * to do, normal for "ok"). */
void doctor_check(struct doctor_report *r, const char *name, enum doctor_status status,
		  const char *remedy, const char *detail_fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Adds the Degradation a check implies (once per name). */
void doctor_degradation(struct doctor_report *r, const char *name, const char *message,
			const char *remedy);

/* status of the check named name, or -ENOENT (for tests and callers that
 * build on an earlier check) */
int doctor_check_status(const struct doctor_report *r, const char *name);

/* {checks: [{name, status, detail, remedy}], degradations: [{name,
 * message, remedy}]}: a new reference, or NULL + errno (ENOMEM). */
json_t *doctor_report_json(const struct doctor_report *r);

/* The text a user reads: one line per check ("  ok       BTF  ..."), the
 * remedy under it, then the Degradations. 0 or -errno of the write. */
int doctor_report_print(const struct doctor_report *r, FILE *out);

#endif
