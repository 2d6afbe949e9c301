/* machine — the snapshot of the Machine a Run embeds: hardware and the
 * allocation shape (cores granted, cgroup limits), as manifest.json's
 * `machine` object (DESIGN.md section 7), plus its `identity` (the Machine
 * profile cache key), `microarchitecture` and `rated_hz`.
 *
 * What cannot be read is null with no guess. Ceilings come from the
 * Machine profile cache when this Machine was calibrated (source
 * "calibration"), else from the theory table for flops (quality
 * "estimated", source "theory"), else they are "unavailable" with the
 * reason. Nothing here ever calibrates.
 *
 * Each Ceiling: {name, value|null, unit, quality, reason|null,
 * source: "calibration"|"theory"|"fit"|null}. Ceilings fitted by `nunatak
 * fit` and given by the configuration (machine_set_fitted_ceilings) win
 * over the cached and theoretical ones in machine_snapshot().
 */
#ifndef NUNATAK_MACHINE_H
#define NUNATAK_MACHINE_H

#include <stddef.h>

#include <jansson.h>

/* reason of a Ceiling nobody measured */
#define MACHINE_NOT_CALIBRATED "not calibrated on this Machine: run `nunatak calibrate`"

/* The machine object without "ceilings" (with "identity",
 * "microarchitecture", "rated_hz"). NULL + errno (ENOMEM). */
json_t *machine_describe(void);

/* The ceilings array for a machine object as machine_describe builds it
 * (borrowed): cached measured Ceilings when the cache holds its identity,
 * theory for the flops it lacks, unavailable otherwise. New reference;
 * NULL + errno (ENOMEM, EINVAL). */
json_t *machine_ceilings(const json_t *machine_without_ceilings);

/* A new Ceiling {name, value (stolen; NULL: null, unavailable), unit,
 * quality, reason, source} (reason and source left out when NULL), or
 * NULL (ENOMEM) */
json_t *machine_ceiling_new(const char *name, json_t *value, const char *unit,
			    const char *quality, const char *reason, const char *source);

/* The Ceiling called @name in the array @ceilings (borrowed), or NULL */
const json_t *machine_ceiling_find(const json_t *ceilings, const char *name);
/* its value, NAN when absent or null (unavailable) */
double machine_ceiling_value(const json_t *ceilings, const char *name);

/* The cores a machine object's allocation grants: min(visible cores,
 * ceil(cpu quota)); 0 when it gives no visible cores. The one rule for the
 * theoretical peak and the Diagnostic's per-core roof. */
int machine_cores(const json_t *machine);

/* The theoretical peak FLOP/s (dp, sp) of a machine object as
 * machine_describe builds it: its microarchitecture × its rated frequency
 * (else the current one, said so) × allocation threads (min(visible cores,
 * ceil(quota))). reason (len bytes) says how, or why there is none. 0,
 * -ENOENT (unknown microarchitecture, no frequency), -EINVAL. Calibration
 * uses it for its "above 1.25 × the theoretical peak" rule. */
int machine_theory_flops(const json_t *machine, double *dp, double *sp, char *reason,
			 size_t len);

/* machine_describe + "ceilings": machine_ceilings, with the fitted
 * Ceilings over them. NULL + errno (ENOMEM) */
json_t *machine_snapshot(void);

/* The Ceilings `nunatak fit` fitted, as the configuration gives them
 * ([ceilings], config.h), for this process: from this call on
 * machine_snapshot() gives flops_dp = @peak_flops and dram_bandwidth =
 * @peak_bandwidth (NAN: that one left as it was), quality "measured",
 * source "fit", reason "fitted Ceiling ([ceilings] of @file): @reason" — unless
 * @backend (NULL: any Machine) is not the Machine's identity: then they
 * are ignored, with one warning naming both. @reason NULL forgets them.
 * 0, -EINVAL (a peak neither NAN nor > 0), -ENOMEM. */
int machine_set_fitted_ceilings(const char *backend, double peak_flops, double peak_bandwidth,
				const char *reason, const char *file);

/* Puts the fitted Ceilings over @ceilings (machine_ceilings of @machine):
 * 0 or -ENOMEM. machine_snapshot() does it; for callers with their own. */
int machine_apply_fitted_ceilings(const json_t *machine, json_t *ceilings);

#endif
