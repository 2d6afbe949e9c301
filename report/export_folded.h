/* export_folded — a Run's Stacks in Brendan Gregg's folded format, the
 * input of flamegraph.pl, inferno, speedscope and most flame graph tools.
 *
 * One line per distinct folded stack: its frames from the root (main, the
 * thread's start) to the leaf, separated by ';', then one space and the
 * number of samples taken on it. Lines are sorted (byte order), so the
 * same Run always gives the same file.
 *
 * What is counted: every sample of the Run's time counter ("cpu-clock";
 * "cycles" when only cycles were sampled, as the summary does), on every
 * Locus, launcher processes included, in or out of the kernel: the counts
 * add up to Σ sample_count of that counter in the pivot's `samples`.
 *
 * Frame names:
 *  - the Hotspot of the frame's address (its function: inline frames are
 *    not expanded, a frame is the physical function it ran in, as the
 *    summary counts them); kernel frames are named by their Hotspot too
 *    (module [kernel]);
 *  - an address without a Hotspot: MODULE+0xOFFSET (module display name,
 *    module-relative offset in hex);
 *  - a Stack the sampler stored truncated gets a first (root) frame
 *    "[truncated]", so a flame graph never draws a partial path as if it
 *    started at main; a Stack stored without any frame is "[no frames]".
 * So that the format stays parseable, in a name: ';' becomes ':' (as perf's
 * stackcollapse does), a control character (newline, tab, ...) becomes
 * '?', and a byte that is not UTF-8 becomes \xNN (json_text's escape).
 * Spaces are kept: every folded reader takes the count after the last
 * space of the line, and C++ names hold spaces ("operator new(unsigned
 * long)").
 */
#ifndef NUNATAK_REPORT_EXPORT_FOLDED_H
#define NUNATAK_REPORT_EXPORT_FOLDED_H

#include <stdint.h>
#include <stdio.h>

struct pivot;

struct export_folded_stats {
	const char *counter; /* static: the counter exported, NULL when none */
	uint64_t samples;    /* Σ of the counts written */
	uint64_t stacks;     /* Stacks read */
	uint64_t lines;	     /* lines written (folded stacks) */
	uint64_t truncated;  /* samples on truncated Stacks */
};

/* Writes the folded stacks of p to out; stats (may be NULL) says what was
 * written. A Run without samples writes nothing and returns 0. 0, -EINVAL,
 * -ENOMEM, -EIO (out failed; errno of the failed write when known), or
 * the pivot's error. */
int export_folded(struct pivot *p, FILE *out, struct export_folded_stats *stats);

/* name made safe for a folded line (see above), as a new string the
 * caller frees; NULL + ENOMEM */
char *export_folded_name(const char *name);

#endif
