/* export_stacks — the Stacks of a Run loaded once, in the shape the
 * interchange writers (pprof, speedscope) need: distinct frames, Stacks as
 * lists of frame indexes, the Loci, and the samples of each (Stack, Locus).
 * The one place that walks pivot_for_each_stack_total(),
 * pivot_for_each_locus_stack(), pivot_for_each_locus() and
 * pivot_for_each_module() for them.
 *
 * What is counted is what export_folded counts: the samples of the Run's
 * time counter ("cpu-clock"; "cycles" when only cycles were sampled), on
 * every Locus, in or out of the kernel. Invariants after a successful load:
 *  - Σ stacks[].sample_count == Σ samples[].sample_count == sample_count
 *    == the pivot's Σ sample_count of that counter;
 *  - frames are distinct by (module id, offset); a frame is named by its
 *    Hotspot, else MODULE+0xOFFSET (export_folded's rules), the name made
 *    valid UTF-8 (userspace/log/json_text.h's \xNN), so JSON and protobuf
 *    strings take it as it is;
 *  - a Stack's frame list is ROOT FIRST, and starts with the pseudo frame
 *    "[truncated]" when the sampler stored it truncated; a Stack without
 *    any frame is the one pseudo frame "[no frames]". Pseudo frames have no
 *    module (module == EXPORT_NO_MODULE).
 */
#ifndef NUNATAK_REPORT_EXPORT_STACKS_H
#define NUNATAK_REPORT_EXPORT_STACKS_H

#include <stddef.h>
#include <stdint.h>

struct pivot;
struct pivot_stack_frame;

#define EXPORT_NO_MODULE ((size_t)-1)
#define EXPORT_TRUNCATED "[truncated]"
#define EXPORT_NO_FRAMES "[no frames]"

/* each of these starts with its pivot id: the loader finds them by it */
struct export_module {
	int64_t id;
	char *identity, *path, *display_name;
	int has_build_id;    /* identity is then the build-id, in hex */
	int kernel;	     /* the kernel's pseudo module */
	uint64_t max_offset; /* the largest offset of its frames */
};

struct export_frame {
	size_t module; /* index into modules, EXPORT_NO_MODULE for a pseudo frame */
	uint64_t offset;
	char *name;	   /* valid UTF-8 */
	char *source_file; /* valid UTF-8, NULL when unknown */
	int line;	   /* 0 when unknown */
};

struct export_stack {
	int64_t id;
	int truncated;
	uint64_t sample_count;
	double value; /* in the counter's unit */
	size_t n_frames;
	size_t *frames; /* indexes into frames, root first */
};

struct export_locus {
	int64_t id;
	char *node;
	int has_rank, rank;
	int64_t tgid, tid;
	char *comm, *exe; /* valid UTF-8; NULL when unknown */
};

/* the samples one Locus took on one Stack */
struct export_sample {
	size_t stack, locus; /* indexes */
	uint64_t sample_count;
	double value;
};

struct export_stacks {
	const char *counter; /* static: the counter exported; NULL when the Run has no sample */
	struct export_module *modules; /* by id */
	size_t n_modules, cap_modules;
	struct export_frame *frames;
	size_t n_frames, cap_frames;
	struct export_stack *stacks;
	size_t n_stacks, cap_stacks;
	struct export_locus *loci;
	size_t n_loci, cap_loci;
	struct export_sample *samples; /* by stack, then locus */
	size_t n_samples, cap_samples;
	uint64_t sample_count; /* Σ over the Stacks */
	double value;
	uint64_t truncated_samples; /* of those, on truncated Stacks */
	/* private: frame lookup by (module, offset) */
	size_t *slots;
	size_t n_slots;
};

/* Loads p into s (zeroed by it first). A Run without samples loads no
 * Stack, counter NULL, and returns 0. 0, -EINVAL, -ENOMEM, -EBADMSG (a
 * samples row of a Stack or Locus the walks did not give), or the pivot's
 * -errno. On failure s is released. */
int export_stacks_load(struct export_stacks *s, struct pivot *p);

/* Only the Loci (every Locus of the Run, by id): s zeroed first; 0,
 * -EINVAL, -ENOMEM or the pivot's -errno, s released on failure. */
int export_stacks_load_loci(struct export_stacks *s, struct pivot *p);

/* NULL-tolerant; s is zeroed */
void export_stacks_release(struct export_stacks *s);

/* the name of one pivot frame by the rules above (before the folded
 * format's own replacements), as a new string; NULL + ENOMEM */
char *export_frame_name(const struct pivot_stack_frame *fr);

/* The name of the group of Loci l belongs to, as the per-rank exports
 * show it, as a new string (NULL + ENOMEM): "rank R" for an MPI rank,
 * else "COMM (pid P)" (process) or "COMM (pid P, tid T)" (thread); with
 * " on NODE" when several_nodes. */
char *export_locus_name(const struct export_locus *l, int thread, int several_nodes);

/* the index in s->loci of the Locus id, EXPORT_NO_MODULE when none */
size_t export_locus_index(const struct export_stacks *s, int64_t id);

/* 1 when the Loci of s are on more than one node */
int export_several_nodes(const struct export_stacks *s);

/* the unit of the counter's values: "nanoseconds" for cpu-clock, else
 * "count" */
const char *export_counter_unit(const char *counter);

/* the counters looked for, the first with samples exported */
extern const char *const export_counters[];
extern const size_t export_n_counters;

#endif
