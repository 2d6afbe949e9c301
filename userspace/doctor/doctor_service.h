/* doctor_service — what is running and cached around nunatak here: the
 * local node service (nunatakd) and the Aggregators it publishes to, asked
 * over the control socket exactly as `nunatak status` asks (never started,
 * never written to beyond one status request), and the cached Machine
 * profile of this Machine (machine_cache.h), which `nunatak run` uses for
 * its Ceilings.
 */
#ifndef NUNATAK_DOCTOR_SERVICE_H
#define NUNATAK_DOCTOR_SERVICE_H

#include <jansson.h>

#include "userspace/doctor/doctor_report.h"

#define DOCTOR_STATUS_TIMEOUT_MS 3000

/* The checks "nunatakd" and "aggregator" from a status exchange: e is
 * control_ask_status()'s result, err its message, reply its answer (NULL
 * unless e is 0), path the socket. Pure: tested with answers built by
 * hand and with a real service's. */
void doctor_service_from_status(struct doctor_report *r, const char *path, int e, const char *err,
				const json_t *reply);

/* Asks the node service at path and adds its checks. */
void doctor_service_checks(struct doctor_report *r, const char *path);

/* The "machine_profile" check: the cache file of this Machine's identity,
 * its calibration time and Ceilings, or why none is used (no
 * Degradation: a Run's manifest says which Ceilings are estimated or
 * unavailable, and why). */
void doctor_machine_profile_check(struct doctor_report *r);

#endif
