/* envelope_fit — see envelope_fit.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/envelope_fit.h"

static int usable(const struct calibration_row *r)
{
	return !r->opaque && r->measured_ms > 0 && isfinite(r->measured_ms);
}

/* ms x 1e-3, not ms / 1e3: the autotuner's arithmetic, so that a fit of
 * its rows gives its constants to the last bit */
static double seconds(const struct calibration_row *r)
{
	return r->measured_ms * 1e-3;
}

static int fully_exact(const struct calibration_row *r)
{
	return !r->flops_approx && !r->bytes_approx;
}

/* a leg's achieved rate on row i when it has an exact, positive count */
static void raise_leg(struct fit_value *leg, double count, int approx, double seconds, long i)
{
	double rate = count / seconds;

	if (approx || !(count > 0))
		return;
	if (leg->row < 0 || rate > leg->value) {
		leg->value = rate;
		leg->row = i;
	}
}

/* count / peak: 0 for no count, NAN without a usable peak */
static double leg_s(double count, double peak)
{
	if (!(count > 0))
		return 0;
	return peak > 0 && isfinite(peak) ? count / peak : NAN;
}

double envelope_bound_s(double peak_flops, double peak_bandwidth, double flops, double bytes,
			int kernels)
{
	double f = leg_s(flops, peak_flops), b = leg_s(bytes, peak_bandwidth);

	if (isnan(f) || isnan(b))
		return NAN;
	return kernels > 1 ? f + b : f > b ? f : b;
}

static void fit_backend(const struct calibration_row *rows, size_t n, struct envelope_fit *f)
{
	size_t i;

	f->fission_slack = f->peak_flops = f->peak_memory_bandwidth = (struct fit_value){ NAN, -1 };
	for (i = 0; i < n; i++) {
		const struct calibration_row *r = &rows[i];

		if (strcmp(r->backend, f->backend))
			continue;
		if (r->opaque) {
			f->opaque++;
			continue;
		}
		f->violations += fully_exact(r) && r->model_ms > r->measured_ms;
		if (!usable(r))
			continue;
		f->timed++;
		f->flops_approx += r->flops_approx;
		f->bytes_approx += r->bytes_approx;
		f->multi_kernel += r->kernels > 1;
		if (r->flops_approx && r->bytes_approx)
			continue;
		f->rows++;
		raise_leg(&f->peak_flops, r->flops, r->flops_approx, seconds(r), (long)i);
		raise_leg(&f->peak_memory_bandwidth, r->bytes, r->bytes_approx, seconds(r), (long)i);
	}
	for (i = 0; i < n; i++) {
		const struct calibration_row *r = &rows[i];
		double slack;

		if (strcmp(r->backend, f->backend) || !usable(r) || r->kernels < 2 ||
		    !fully_exact(r))
			continue;
		slack = envelope_bound_s(f->peak_flops.value, f->peak_memory_bandwidth.value, r->flops,
					 r->bytes, r->kernels) /
			seconds(r);
		if (slack > 1 && (f->fission_slack.row < 0 || slack > f->fission_slack.value))
			f->fission_slack = (struct fit_value){ slack, (long)i };
	}
	if (f->fission_slack.row >= 0) {
		f->peak_flops.value *= f->fission_slack.value;
		f->peak_memory_bandwidth.value *= f->fission_slack.value;
	}
}

int envelope_fit(const struct calibration_row *rows, size_t n, struct envelope_fit **fits,
		 size_t *nfits)
{
	struct envelope_fit *out;
	size_t i, j, k = 0;

	if ((!rows && n) || !fits || !nfits)
		return -EINVAL;
	out = calloc(n ? n : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		for (j = 0; j < k && strcmp(out[j].backend, rows[i].backend); j++)
			;
		if (j < k)
			continue;
		out[k].backend = rows[i].backend;
		fit_backend(rows, n, &out[k++]);
	}
	*fits = out;
	*nfits = k;
	return 0;
}
