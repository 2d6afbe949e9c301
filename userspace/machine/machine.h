/* machine — the snapshot of the Machine a Run embeds: hardware and the
 * allocation shape (cores granted, cgroup limits), as manifest.json's
 * `machine` object (DESIGN.md section 7).
 *
 * What cannot be read is null with no guess. Ceilings are listed with
 * quality "unavailable" and the reason until calibration measures them.
 */
#ifndef NUNATAK_MACHINE_H
#define NUNATAK_MACHINE_H

#include <jansson.h>

/* NULL + errno (ENOMEM) */
json_t *machine_snapshot(void);

#endif
