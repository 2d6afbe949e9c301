/* summary_inside — see summary_inside.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "report/summary_format.h"
#include "report/summary_inside.h"
#include "userspace/log/json_text.h"

#define PROBES_WHAT                                                                          \
	"the uprobe traps, BPF programs and trampoline of nunatak's probes: nunatak's "  \
	"cost, not the application's, left out of every Hotspot's share"

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void print_call(FILE *out, const struct hotspot_share *h, const struct hotspot_mpi_call *c)
{
	char share[32];

	fprintf(out, "          inside ");
	summary_print_text(out, c->function[0] ? c->function : "the MPI library (no MPI call in "
								 "the stack)");
	fprintf(out, " (%s of it)",
		summary_fmt_share(share, sizeof(share),
				  h->samples ? (double)c->samples / (double)h->samples : NAN));
	if (!c->caller_module) {
		fprintf(out, ", call site not in the stack (truncated)\n");
		return;
	}
	fprintf(out, ", called from ");
	summary_print_text(out, c->caller ? c->caller : c->caller_module);
	if (c->caller_file) {
		fprintf(out, " (");
		summary_print_text(out, base_name(c->caller_file));
		if (c->caller_line)
			fprintf(out, ":%d", c->caller_line);
		fputc(')', out);
	}
	fputc('\n', out);
}

void summary_print_hotspot_inside(FILE *out, const struct hotspot_share *h)
{
	size_t i, shown = h->n_mpi_calls < SUMMARY_MAX_MPI_CALLS ? h->n_mpi_calls
								 : SUMMARY_MAX_MPI_CALLS;
	uint64_t rest = 0;

	for (i = 0; i < shown; i++)
		print_call(out, h, &h->mpi_calls[i]);
	for (; i < h->n_mpi_calls; i++)
		rest += h->mpi_calls[i].samples;
	if (rest)
		fprintf(out, "          inside %zu other MPI call site%s (%" PRIu64 " samples)\n",
			h->n_mpi_calls - shown, h->n_mpi_calls - shown == 1 ? "" : "s", rest);
}

void summary_print_inside(FILE *out, const struct diagnosis *d)
{
	char share[32], seconds[32];

	if (d->inside_mpi.samples)
		fprintf(out,
			"\ninside MPI calls: %" PRIu64 " samples, %s of the application's time "
			"(the Hotspots marked 'inside MPI_...': MPI time at the call site named)\n",
			d->inside_mpi.samples,
			summary_fmt_share(share, sizeof(share), d->inside_mpi.share));
	if (d->probes.samples)
		fprintf(out,
			"%snunatak's probes: %" PRIu64 " samples (%s s), %s of the samples — "
			"nunatak's cost, not the application's: left out of the Hotspots above\n",
			d->inside_mpi.samples ? "" : "\n", d->probes.samples,
			summary_fmt_seconds(seconds, sizeof(seconds), d->probes.seconds),
			summary_fmt_share(share, sizeof(share), d->probes.share));
}

/* a call site's names come from the pivot, so from outside */
static json_t *call_json(const struct hotspot_mpi_call *c)
{
	json_t *site = json_null();

	if (c->caller_module)
		site = json_pack("{s:o, s:o, s:o, s:o}", "function", json_text(c->caller), "module",
				 json_text(c->caller_module), "file", json_text(c->caller_file),
				 "line", c->caller_line ? json_integer(c->caller_line) : json_null());
	if (!site)
		return NULL;
	return json_pack("{s:o, s:o, s:I}", "function",
			 c->function[0] ? json_text(c->function) : json_null(), "call_site", site,
			 "samples", (json_int_t)c->samples);
}

json_t *summary_hotspot_inside_json(const struct hotspot_share *h)
{
	json_t *calls, *o;
	size_t i;

	if (!h->mpi_samples)
		return json_null();
	calls = json_array();
	for (i = 0; calls && i < h->n_mpi_calls; i++) {
		o = call_json(&h->mpi_calls[i]);
		if (!o || json_array_append_new(calls, o))
			calls = (json_decref(calls), NULL);
	}
	if (!calls)
		return NULL;
	return json_pack("{s:I, s:o, s:o}", "samples", (json_int_t)h->mpi_samples, "share",
			 summary_json_number(h->samples ? (double)h->mpi_samples / (double)h->samples
							: NAN),
			 "calls", calls);
}

int summary_inside_json(json_t *root, const struct diagnosis *d)
{
	json_t *o;

	o = json_pack("{s:I, s:o, s:o}", "samples", (json_int_t)d->inside_mpi.samples, "seconds",
		      summary_json_number(d->inside_mpi.seconds), "share",
		      summary_json_number(d->inside_mpi.share));
	if (!o || json_object_set_new(root, "inside_mpi", o))
		return -ENOMEM;
	o = json_pack("{s:I, s:o, s:o, s:s}", "samples", (json_int_t)d->probes.samples, "seconds",
		      summary_json_number(d->probes.seconds), "share",
		      summary_json_number(d->probes.share), "what", PROBES_WHAT);
	if (!o || json_object_set_new(root, "nunatak_probes", o))
		return -ENOMEM;
	return 0;
}
