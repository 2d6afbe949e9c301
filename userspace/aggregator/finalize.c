/* finalize — see finalize.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/aggregator/finalize.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/attribution/attribution.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

struct attribute_ctx {
	struct pivot *pivot;
	const char *symbolizer;
	int symbolizer_missing;
	char stale[1024];   /* modules whose file changed since sampling */
	char missing[1024]; /* modules whose file is gone */
};

static void list_append(char *list, size_t size, const char *item)
{
	size_t len = strlen(list);

	if (len + 2 + strlen(item) + 4 >= size) {
		if (!strstr(list, ", ..."))
			snprintf(list + len, size - len, ", ...");
		return;
	}
	snprintf(list + len, size - len, "%s%s", len ? ", " : "", item);
}

static int attribute_module(const struct pivot_module *m, const uint64_t *offsets, size_t n,
			    void *ctx)
{
	struct attribute_ctx *ac = ctx;
	struct attributed_address *aa;
	const char *status = "done";
	char reason[512] = "";
	int missing = 0, err;
	size_t i;

	aa = calloc(n ? n : 1, sizeof(*aa));
	if (!aa)
		return -ENOMEM;
	err = attribution_attribute_module(ac->symbolizer, m->path, m->display_name, m->identity,
					   offsets, n, aa, &missing, reason, sizeof(reason));
	if (!strncmp(m->identity, "pseudo:", 7)) {
		status = "pseudo";
		reason[0] = '\0';
	} else if (err == -ESTALE) {
		status = "stale";
		list_append(ac->stale, sizeof(ac->stale), m->path);
	} else if (err) {
		status = "missing";
		list_append(ac->missing, sizeof(ac->missing), m->path);
	} else if (missing) {
		status = "no-symbolizer";
		ac->symbolizer_missing = 1;
	}
	err = pivot_store_attribution(ac->pivot, m->id, aa, n, status, reason);
	for (i = 0; i < n; i++)
		attributed_address_release(&aa[i]);
	free(aa);
	return err;
}

struct counter_degradation {
	const char *counter, *name, *what, *remedy;
};

static const struct counter_degradation counter_degradations[] = {
	{ "samples_dropped", "samples-dropped", "samples were lost: the kernel sample map was full",
	  "lower --frequency, or drain more often" },
	{ "stacks_dropped", "stacks-dropped",
	  "samples have no call stack (unwinding failed or the stack map was full); they are kept, "
	  "attributed to their leaf only",
	  "build with -fno-omit-frame-pointer for complete stacks; flame graphs miss these" },
	{ "processes_not_followed", "processes-not-followed",
	  "child processes were not followed: the target map was full", "profile fewer processes" },
	{ "task_reports_dropped", "task-reports-dropped",
	  "exec/exit reports were lost: the ring buffer was full",
	  "per-process counters of those processes are missing" },
	{ "mpi_sites_dropped", "mpi-calls-dropped",
	  "MPI calls were not counted: the call-site map was full",
	  "fewer distinct MPI call sites per process, or raise MAX_MPI_SITES" },
	{ "mpi_calls_untimed", "mpi-calls-untimed",
	  "MPI calls were not timed: the per-thread state map was full", "fewer MPI threads" },
	{ "mpi_events_dropped", "mpi-events-dropped",
	  "MPI Events were lost: the event ring buffer was full (statistics are complete)",
	  "record Events on a shorter run, or drain more often" },
	{ "mapping_records_lost", "mappings-lost",
	  "code mapping records were lost: some addresses may stay [unmapped]",
	  "the kernel's sideband buffer overflowed; retry on a quieter machine" },
};

static int counter_to_degradation(const char *node, const char *name, uint64_t value, void *ctx)
{
	struct pivot *p = ctx;
	char message[512];
	size_t i;

	if (!value)
		return 0;
	for (i = 0; i < sizeof(counter_degradations) / sizeof(counter_degradations[0]); i++) {
		const struct counter_degradation *cd = &counter_degradations[i];

		if (strcmp(cd->counter, name))
			continue;
		snprintf(message, sizeof(message), "%llu %s (node %s)", (unsigned long long)value,
			 cd->what, node);
		return pivot_add_degradation(p, cd->name, message, cd->remedy);
	}
	return 0;
}

static int collect_node(const char *node, void *ctx)
{
	return json_array_append_new(ctx, json_string(node)) ? -ENOMEM : 0;
}

static int collect_degradation(const char *name, const char *message, const char *remedy,
			       void *ctx)
{
	json_t *d = json_pack("{s:s, s:s, s:s}", "name", name, "message", message, "remedy",
			      remedy);

	return !d || json_array_append_new(ctx, d) ? -ENOMEM : 0;
}

int finalize_run(struct pivot *p, const char *run_dir, json_t *manifest, const char *symbolizer)
{
	struct attribute_ctx ac = { .pivot = p, .symbolizer = symbolizer };
	char message[1400];
	json_t *nodes, *degradations;
	int err;

	err = pivot_for_each_module_to_attribute(p, attribute_module, &ac);
	if (err)
		return err;
	if (ac.symbolizer_missing)
		pivot_add_degradation(p, "symbolizer-missing",
				      "llvm-symbolizer could not be run: names come from ELF symbols "
				      "only, without source lines or inline frames",
				      "apt-get install llvm, or set tools.llvm-symbolizer in nunatak.toml");
	if (ac.stale[0]) {
		snprintf(message, sizeof(message),
			 "not symbolized, the file changed after sampling: %s", ac.stale);
		pivot_add_degradation(p, "module-changed", message,
				      "do not rebuild or replace binaries while a Run is finalized");
	}
	if (ac.missing[0]) {
		snprintf(message, sizeof(message), "not symbolized, the file is gone: %s",
			 ac.missing);
		pivot_add_degradation(p, "module-missing", message,
				      "keep the binaries in place until the Run is finalized");
	}
	err = pivot_derive_measurements(p);
	if (err)
		return err;
	err = pivot_for_each_counter(p, counter_to_degradation, p);
	if (err)
		return err;

	nodes = json_array();
	degradations = json_array();
	if (!nodes || !degradations) {
		json_decref(nodes);
		json_decref(degradations);
		return -ENOMEM;
	}
	json_object_set_new(manifest, "nodes", nodes);
	json_object_set_new(manifest, "degradations", degradations);
	err = pivot_nodes(p, collect_node, nodes);
	err = err ?: pivot_for_each_degradation(p, collect_degradation, degradations);
	return err ?: manifest_write(run_dir, manifest);
}
