/* calibration_kernel_rows — the calibration rows of the CPU kernels'
 * repetitions (calibration.h): what each repetition's line says, exactly,
 * in the schema of calibration_rows.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/envelope_fit.h"
#include "userspace/calibration/calibration.h"
#include "userspace/calibration/calibration_rows.h"
#include "userspace/calibration/kernel_output.h"
#include "userspace/calibration/kernel_sources.h"
#include "userspace/machine/machine.h"
#include "userspace/machine/sha256.h"

void calibration_kernel_digest(const char *source, const char *const *flags, char out[17])
{
	char hex[SHA256_HEX_LEN + 1], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (f) {
		fputs(kernel_source_common.text, f);
		fputs(source, f);
		for (; flags && *flags; flags++)
			fprintf(f, "%c%s", '\0', *flags);
		fclose(f);
	}
	sha256_hex(text ? text : "", text ? len : 0, hex);
	free(text);
	memcpy(out, hex, 16);
	out[16] = '\0';
}

/* the row of one repetition into r (strings owned): 0 or -ENOMEM */
static int row_of(const struct calibration_options *o, const struct kernel_rep *rep,
		  const char *kernel, const char *flops_ceiling, const char *digest,
		  const char *label, int rep_number, int opaque, struct calibration_row *r)
{
	double bound = envelope_bound_s(machine_ceiling_value(o->ceilings_before, flops_ceiling),
					machine_ceiling_value(o->ceilings_before, "dram_bandwidth"),
					rep->flops, rep->bytes, 1);

	*r = (struct calibration_row){
		.backend = strdup(o->backend ? o->backend : ""),
		.digest = strdup(digest),
		.routine = strdup(kernel),
		.measured_ms = (double)rep->ns / 1e6,
		.model_ms = isnan(bound) ? NAN : bound * 1e3,
		.kernels = 1,
		.flops = rep->flops,
		.bytes = rep->bytes,
		.opaque = opaque,
	};
	if (asprintf(&r->label, "%s rep=%d", label, rep_number) < 0)
		r->label = NULL;
	if (!r->backend || !r->digest || !r->routine || !r->label) {
		calibration_row_release(r);
		return -ENOMEM;
	}
	return 0;
}

int calibration_kernel_rows(const struct calibration_options *o, const char *kernel,
			    const char *flops_ceiling, const char *digest, const char *label,
			    int opaque, const char *output)
{
	struct kernel_rep reps[KERNEL_MAX_REPS];
	struct calibration_rows *set = o->rows;
	int i, n, ret = 0;

	if (!set)
		return 0;
	n = kernel_output_parse(output, kernel, reps, KERNEL_MAX_REPS, NULL);
	for (i = 0; !ret && i < n; i++) {
		struct calibration_row r;

		/* a line without its exact counts gives no row: never a guess */
		if (reps[i].ns <= 0 || isnan(reps[i].flops) || isnan(reps[i].bytes))
			continue;
		/* one process per repetition, each saying rep=1: numbered here */
		ret = row_of(o, &reps[i], kernel, flops_ceiling, digest, label, i + 1, opaque, &r);
		if (!ret && (ret = calibration_rows_push(set, &r)))
			calibration_row_release(&r);
	}
	return ret;
}
