/* derived — a value derived from others, that says how sure it is and
 * where it comes from (GLOSSARY: Quality, Diagnostic).
 *
 * A derived value is {name, value, unit, quality, reason, lineage,
 * formula}. An *input* (a Measurement summed, a Ceiling of the Machine) is
 * made by derived_input(); every other value is made by derived_combine()
 * from its inputs, which computes, never takes from its caller:
 *  - quality = the worst of the inputs' (measured < estimated <
 *    unavailable); a NAN value from available inputs (0 / 0) is
 *    unavailable too, with the caller's reason for it;
 *  - reason = the reason of the first input of that worst quality (the
 *    caller lists the most telling input first); "" when measured;
 *  - lineage = the names of the inputs, in order;
 *  - value = NAN whenever the quality is unavailable: unavailable is not
 *    zero. An infinite value (x / 0 with x > 0) keeps its quality and
 *    carries the caller's note as its reason.
 * Everything is held by value (fixed buffers, static names): nothing to
 * free, nothing that can fail; a reason longer than DERIVED_REASON_MAX is
 * cut. Names, units and formulas are static strings the caller keeps.
 */
#ifndef NUNATAK_ANALYSIS_DERIVED_H
#define NUNATAK_ANALYSIS_DERIVED_H

#include <stddef.h>

enum quality {
	QUALITY_MEASURED = 0,
	QUALITY_ESTIMATED = 1,
	QUALITY_UNAVAILABLE = 2, /* the worst: the order is the comparison */
};

#define DERIVED_REASON_MAX 320
#define DERIVED_LINEAGE_MAX 6

struct derived {
	const char *name; /* static: "attainable", "flops_dp", ... */
	double value;	  /* NAN when unavailable */
	const char *unit; /* static: "flop/s", "B/s", "flop/B", "fraction", ... */
	enum quality quality;
	char reason[DERIVED_REASON_MAX]; /* "" when measured (or an infinite value's note) */
	const char *lineage[DERIVED_LINEAGE_MAX]; /* the inputs' names */
	size_t n_lineage;
	const char *formula; /* static; NULL for an input */
};

/* "measured", "estimated", "unavailable" */
const char *quality_name(enum quality q);
/* 0, or -EINVAL for anything else (NULL included) */
int quality_parse(const char *text, enum quality *q);
/* the worse of two */
enum quality quality_worst(enum quality a, enum quality b);

/* An input. A NAN value makes it unavailable whatever quality says; an
 * unavailable or estimated input without a reason gets "no reason given"
 * (a motivated downgrade always says why). reason may be NULL. */
void derived_input(struct derived *out, const char *name, double value, const char *unit,
		   enum quality quality, const char *reason);

/* out = value computed by the caller from inputs[0..n) (n <=
 * DERIVED_LINEAGE_MAX; more are ignored), with quality, reason and lineage
 * computed as the header says. not_finite: why a NAN value of available
 * inputs is unavailable, or the note of an infinite one (may be NULL). */
void derived_combine(struct derived *out, const char *name, const char *unit, const char *formula,
		     const struct derived *const inputs[], size_t n, double value,
		     const char *not_finite);

/* 1 when the value can be used (not unavailable) */
int derived_available(const struct derived *v);

#endif
