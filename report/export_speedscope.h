/* export_speedscope — a Run's Stacks in speedscope's file format (JSON,
 * https://www.speedscope.app/file-format-schema.json), which speedscope
 * opens by drag and drop.
 *
 * One "sampled" profile per MPI rank (its threads together), and for the
 * Loci that are not ranks (a launcher, a program without MPI) one per
 * process and thread; ranks first by rank, then by pid and tid. A profile's
 * samples are Stacks as lists of indexes into shared.frames, ROOT FIRST;
 * its weights are sample counts (unit "none"), and its endValue their sum.
 * Frames are export_stacks.h's (the Hotspot, else MODULE+0xOFFSET; a
 * truncated Stack starts with "[truncated]"), with "file" and "line" when
 * known. The weights add up to the pivot's Σ sample_count of the counter
 * exported (export_stacks.h). A Run without samples gives one empty
 * profile, so speedscope still opens it and says so.
 */
#ifndef NUNATAK_REPORT_EXPORT_SPEEDSCOPE_H
#define NUNATAK_REPORT_EXPORT_SPEEDSCOPE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

struct pivot;

struct export_speedscope_stats {
	const char *counter; /* static: NULL when the Run has no sample */
	uint64_t samples;    /* Σ weights */
	uint64_t profiles, frames;
};

/* Writes the speedscope JSON of p to out; manifest (may be NULL) names
 * it (run.name). stats may be NULL. 0, -EINVAL, -ENOMEM, -EIO (out failed;
 * errno of the write when known), or export_stacks_load's error. */
int export_speedscope(struct pivot *p, const json_t *manifest, FILE *out,
		      struct export_speedscope_stats *stats);

#endif
