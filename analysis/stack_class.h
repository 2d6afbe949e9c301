/* stack_class — what a sampled Stack was doing, decided once per Stack
 * for every reader (the summary's Hotspots, the report):
 *
 *  - STACK_PROBE, nunatak's MPI (or component) probe: a kernel frame is
 *    the uprobe machinery or one of nunatak's BPF programs
 *    (userspace/attribution/own_code.h), or a user frame is in the
 *    "[uprobes]" page (the uretprobe trampoline). Its time is nunatak's
 *    cost, not the application's.
 *  - STACK_INSIDE_MPI: a frame is in an MPI library
 *    (userspace/attribution/mpi_library.h: the API libraries and the
 *    implementation's own beneath them), or is an MPI function by its
 *    name. The MPI function is the outermost MPI API frame (its name
 *    normalised: PMPI_Send, mpi_send_ -> MPI_Send; none when the Stack
 *    holds no API frame: the library's own threads, or a truncated Stack);
 *    the call site is the first frame above it (outer) outside every MPI
 *    library (none when the Stack ends first: truncated).
 *  - STACK_APPLICATION: anything else.
 * Probe wins over MPI: a trap taken on entry to MPI_Send is the probe's.
 *
 * Frames innermost first, as pivot_for_each_stack_total() walks them; a
 * frame is the kernel's when its module is "[kernel]". Pure; thread-safe.
 */
#ifndef NUNATAK_ANALYSIS_STACK_CLASS_H
#define NUNATAK_ANALYSIS_STACK_CLASS_H

#include <stddef.h>

struct pivot_stack_frame;

enum stack_class {
	STACK_APPLICATION,
	STACK_INSIDE_MPI,
	STACK_PROBE,
};

#define STACK_CLASS_NONE ((size_t)-1)

struct stack_classification {
	enum stack_class class;
	/* STACK_INSIDE_MPI: */
	char mpi_function[64];	/* "MPI_Send"; "" when no API frame */
	size_t api_frame;	/* the outermost API frame, STACK_CLASS_NONE: none */
	size_t call_site;	/* the caller's frame, STACK_CLASS_NONE: none */
};

/* Classifies frames[0..n). 0, or -EINVAL (frames NULL with n > 0, out
 * NULL). */
int stack_classify(const struct pivot_stack_frame *frames, size_t n,
		   struct stack_classification *out);

/* "nunatak's probe", "inside MPI", "application" */
const char *stack_class_name(enum stack_class c);

#endif
