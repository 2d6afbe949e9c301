/* stack_class — see stack_class.h. */
#include <errno.h>
#include <string.h>

#include "analysis/stack_class.h"
#include "userspace/attribution/mpi_library.h"
#include "userspace/attribution/own_code.h"
#include "userspace/pivot/pivot.h"

static int is_kernel(const struct pivot_stack_frame *f)
{
	return f->module && !strcmp(f->module, "[kernel]");
}

static int is_probe_frame(const struct pivot_stack_frame *f)
{
	if (is_kernel(f))
		return own_code_is_probe_kernel_function(f->hotspot) ||
		       own_code_is_own_bpf_program(f->hotspot);
	return f->module && !strcmp(f->module, OWN_CODE_UPROBES_PATH);
}

static int is_api_frame(const struct pivot_stack_frame *f)
{
	return !is_kernel(f) &&
	       (mpi_library_is_api(f->module) || mpi_library_is_api_function(f->hotspot));
}

static int is_mpi_frame(const struct pivot_stack_frame *f)
{
	return !is_kernel(f) && (mpi_library_is_mpi(f->module) || is_api_frame(f));
}

int stack_classify(const struct pivot_stack_frame *frames, size_t n,
		   struct stack_classification *out)
{
	size_t i, innermost_mpi = STACK_CLASS_NONE;

	if (!out || (n && !frames))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->api_frame = out->call_site = STACK_CLASS_NONE;
	for (i = 0; i < n; i++) {
		if (is_probe_frame(&frames[i])) {
			out->class = STACK_PROBE;
			return 0;
		}
		if (innermost_mpi == STACK_CLASS_NONE && is_mpi_frame(&frames[i]))
			innermost_mpi = i;
		if (is_api_frame(&frames[i]))
			out->api_frame = i; /* the outermost one wins */
	}
	if (innermost_mpi == STACK_CLASS_NONE) {
		out->class = STACK_APPLICATION;
		return 0;
	}
	out->class = STACK_INSIDE_MPI;
	/* the caller: the first frame above the outermost API frame (else
	 * above the innermost MPI frame) outside every MPI library */
	i = out->api_frame != STACK_CLASS_NONE ? out->api_frame : innermost_mpi;
	for (i++; i < n && is_mpi_frame(&frames[i]); i++)
		;
	out->call_site = i < n ? i : STACK_CLASS_NONE;
	if (out->api_frame != STACK_CLASS_NONE &&
	    mpi_library_function_name(frames[out->api_frame].hotspot, out->mpi_function,
				      sizeof(out->mpi_function)))
		out->mpi_function[0] = '\0'; /* an internal or unnamed function */
	return 0;
}

const char *stack_class_name(enum stack_class c)
{
	switch (c) {
	case STACK_PROBE:
		return "nunatak's probe";
	case STACK_INSIDE_MPI:
		return "inside MPI";
	default:
		return "application";
	}
}
