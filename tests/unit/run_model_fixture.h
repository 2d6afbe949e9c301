/* run_model_fixture — the summary of a diagnosis a test made itself,
 * through a run_model built around it (report/run_model.h), as the CLI
 * renders it. */
#ifndef NUNATAK_TEST_RUN_MODEL_FIXTURE_H
#define NUNATAK_TEST_RUN_MODEL_FIXTURE_H

#include <errno.h>
#include <stdio.h>

#include <jansson.h>

#include "report/run_model.h"
#include "report/summary.h"

/* summary_json() of d and p (p may be NULL); NULL + errno as it gives */
static inline json_t *summary_json_of(const struct diagnosis *d, struct pivot *p)
{
	struct run_model m;
	json_t *j;
	int err;

	err = run_model_build_on(&m, d, p, NULL, 0);
	if (err) {
		errno = -err;
		return NULL;
	}
	j = summary_json(&m);
	err = errno;
	run_model_release(&m);
	errno = err;
	return j;
}

/* summary_print() of d and p */
static inline int summary_print_of(FILE *out, const struct diagnosis *d, struct pivot *p)
{
	struct run_model m;
	int err;

	err = run_model_build_on(&m, d, p, NULL, 0);
	if (err)
		return err;
	err = summary_print(out, &m);
	run_model_release(&m);
	return err;
}

#endif
