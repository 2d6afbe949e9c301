/* export_pprof — a Run's Stacks as a pprof profile: the profile.proto of
 * the pprof project (perftools.profiles.Profile, the C code generated at
 * build time from Debian's golang-github-google-pprof-dev), gzip-compressed,
 * as `go tool pprof`, Grafana/Parca/Pyroscope read it.
 *
 * What it holds (the samples export_stacks.h loads, so the values add up
 * to the pivot's):
 *  - sample_type [samples/count, cpu/nanoseconds] ([samples/count,
 *    cycles/count] for a Run sampled on cycles only), default cpu (cycles);
 *  - one Sample per (Stack, Locus): location_id leaf first, values
 *    [sample_count, Σ value], labels rank (a string, "0": pprof drops a
 *    number label of 0; MPI ranks only), pid, tid (numbers), thread (the
 *    comm, when known), node;
 *  - one Location per distinct frame (module, offset), one Line → Function
 *    (name, filename = the Hotspot's source file, line of the address);
 *    Functions distinct by (name, filename); a truncated Stack ends at a
 *    root Location "[truncated]" with no Mapping;
 *  - one Mapping per module with frames, the main binary first (the
 *    executable of the Locus with the most samples): filename the module's path,
 *    build_id its build-id (empty for the kernel and other pseudo
 *    modules), memory_start.. a range of its own in a synthetic address
 *    space, file_offset 0, so Location.address - memory_start is the
 *    module-relative offset; has_functions set (nothing to symbolize);
 *  - period_type cpu/nanoseconds, period 1e9 / the sampling frequency
 *    (manifest run.frequency, else the effective configuration's
 *    sampling.frequency; 0 when unknown), time_nanos and duration_nanos
 *    from the manifest's passes (time_nanos from run.created without
 *    passes; 0 when unknown).
 */
#ifndef NUNATAK_REPORT_EXPORT_PPROF_H
#define NUNATAK_REPORT_EXPORT_PPROF_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

struct pivot;

struct export_pprof_stats {
	const char *counter; /* static: NULL when the Run has no sample */
	uint64_t samples;    /* Σ sample_count written */
	uint64_t records;    /* pprof Samples */
	uint64_t locations, functions, mappings;
	uint64_t bytes; /* compressed, written */
};

/* Writes the gzip-compressed profile of p to out; manifest (may be NULL)
 * gives the period and times. A Run without samples writes a valid
 * profile without Sample. stats may be NULL. 0, -EINVAL, -ENOMEM, -EIO
 * (out failed; errno of the write when known), or export_stacks_load's
 * error. */
int export_pprof(struct pivot *p, const json_t *manifest, FILE *out,
		 struct export_pprof_stats *stats);

#endif
