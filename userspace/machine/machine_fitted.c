/* machine_fitted — the Ceilings `nunatak fit` fitted, as the configuration
 * gives them (machine.h, machine_set_fitted_ceilings): held for the
 * process (the configuration is loaded once, the Machine snapshot taken
 * later, by the Agent), put over the cached and theoretical Ceilings. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/log/log.h"
#include "userspace/machine/machine.h"

static struct {
	char *backend, *reason; /* reason NULL: none */
	double peak_flops, peak_bandwidth;
	int warned;
} fitted;
static pthread_mutex_t fitted_lock = PTHREAD_MUTEX_INITIALIZER;

static int peak_ok(double v)
{
	return isnan(v) || (v > 0 && isfinite(v));
}

int machine_set_fitted_ceilings(const char *backend, double peak_flops, double peak_bandwidth,
				const char *reason, const char *file)
{
	char *b = NULL, *r = NULL;

	if (reason && (!peak_ok(peak_flops) || !peak_ok(peak_bandwidth)))
		return -EINVAL;
	if (reason && ((backend && !(b = strdup(backend))) ||
		       asprintf(&r, "fitted Ceiling ([ceilings] of %s): %s", file ? file : "?", reason) < 0)) {
		free(b);
		return -ENOMEM;
	}
	pthread_mutex_lock(&fitted_lock);
	free(fitted.backend);
	free(fitted.reason);
	fitted.backend = b;
	fitted.reason = r;
	fitted.peak_flops = peak_flops;
	fitted.peak_bandwidth = peak_bandwidth;
	fitted.warned = 0;
	pthread_mutex_unlock(&fitted_lock);
	return 0;
}

/* the Ceiling @name of @ceilings replaced by the fitted @value: 0 or -ENOMEM */
static int put(json_t *ceilings, const char *name, const char *unit, double value)
{
	const json_t *old = machine_ceiling_find(ceilings, name);
	json_t *c;
	size_t i;

	if (isnan(value))
		return 0;
	c = machine_ceiling_new(name, json_real(value), unit, "measured", fitted.reason, "fit");
	if (!c)
		return -ENOMEM;
	for (i = 0; old && i < json_array_size(ceilings); i++)
		if (json_array_get(ceilings, i) == old)
			return json_array_set_new(ceilings, i, c) ? -ENOMEM : 0;
	return json_array_append_new(ceilings, c) ? -ENOMEM : 0;
}

int machine_apply_fitted_ceilings(const json_t *machine, json_t *ceilings)
{
	const char *identity = json_string_value(json_object_get(machine, "identity"));
	int ret = 0;

	pthread_mutex_lock(&fitted_lock);
	if (!fitted.reason)
		goto out;
	if (fitted.backend && (!identity || strcmp(identity, fitted.backend))) {
		if (!fitted.warned++)
			pr_warn("ignoring the [ceilings] of the configuration: fitted on Machine "
				"'%s', this one is '%s'",
				fitted.backend, identity ? identity : "unknown");
		goto out;
	}
	ret = put(ceilings, "flops_dp", "flop/s", fitted.peak_flops);
	ret = ret ? ret : put(ceilings, "dram_bandwidth", "B/s", fitted.peak_bandwidth);
out:
	pthread_mutex_unlock(&fitted_lock);
	return ret;
}
