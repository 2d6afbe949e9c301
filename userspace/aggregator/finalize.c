/* finalize — see finalize.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/aggregator/finalize.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/aggregator/stack_losses.h"
#include "userspace/attribution/attribution.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/source/source_extracts.h"
#include "userspace/wire/wire.h"
#include "userspace/log/json_text.h"

/* One module to attribute: copied out of the pivot, attributed, then
 * stored (the pivot is written once everything is symbolized). */
struct module_job {
	int64_t id;
	char *identity, *path, *display_name;
	uint64_t *offsets;
	size_t n;
	struct attributed_address *aa;
	int err, symbolizer_missing;
	char reason[512];
	int kernel; /* "[kernel]": named from syms, sent by the Agents */
	struct pseudo_symbol *syms;
	size_t n_syms;
};

struct attribute_ctx {
	struct pivot *p;
	struct module_job *jobs;
	size_t n_jobs;
	int symbolizer_missing;
	int several_nodes; /* a module not symbolized is said with its nodes */
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

static int collect_symbol(uint64_t start, uint64_t size, const char *name, void *ctx)
{
	struct module_job *job = ctx;
	struct pseudo_symbol *syms = reallocarray(job->syms, job->n_syms + 1, sizeof(*syms));

	if (!syms)
		return -ENOMEM;
	job->syms = syms;
	syms[job->n_syms] = (struct pseudo_symbol){start, size, strdup(name)};
	if (!syms[job->n_syms].name)
		return -ENOMEM;
	job->n_syms++;
	return 0;
}

static int collect_module(const struct pivot_module *m, const uint64_t *offsets, size_t n,
			  void *ctx)
{
	struct attribute_ctx *ac = ctx;
	struct module_job *jobs, *job;

	jobs = realloc(ac->jobs, (ac->n_jobs + 1) * sizeof(*jobs));
	if (!jobs)
		return -ENOMEM;
	ac->jobs = jobs;
	job = &jobs[ac->n_jobs++];
	memset(job, 0, sizeof(*job));
	job->id = m->id;
	job->n = n;
	job->identity = strdup(m->identity);
	job->path = strdup(m->path);
	job->display_name = strdup(m->display_name);
	job->offsets = malloc((n ? n : 1) * sizeof(*offsets));
	job->aa = calloc(n ? n : 1, sizeof(*job->aa));
	if (!job->identity || !job->path || !job->display_name || !job->offsets || !job->aa)
		return -ENOMEM;
	memcpy(job->offsets, offsets, n * sizeof(*offsets));
	job->kernel = attribution_is_kernel(m->identity);
	if (job->kernel)
		return pivot_for_each_module_symbol(ac->p, m->id, collect_symbol, job);
	return 0;
}

/* Every module in one llvm-symbolizer process (it takes ~0.1 s to start:
 * once per module, that was most of finalizing an MPI job with dozens of
 * libraries), then each module attributed from its share. */
static void attribute_all(struct module_job *jobs, size_t n, const char *symbolizer)
{
	struct symbolizer_batch *batches = calloc(n ? n : 1, sizeof(*batches));
	struct symbolizer_result **results = calloc(n ? n : 1, sizeof(*results));
	size_t i, nb = 0, k;
	int sym_err = -ENOMEM;

	if (batches && results) {
		for (i = 0; i < n; i++) {
			results[i] = calloc(jobs[i].n ? jobs[i].n : 1, sizeof(**results));
			if (!results[i])
				break;
			if (!strncmp(jobs[i].identity, "pseudo:", 7))
				continue; /* no file to read */
			batches[nb++] = (struct symbolizer_batch){ jobs[i].path, jobs[i].offsets,
								   jobs[i].n, results[i] };
		}
		/* "" or NULL: no symbolizer may run (missing, or refused as untrusted) */
		sym_err = i < n			     ? -ENOMEM
			  : !symbolizer || !symbolizer[0] ? -ENOENT
							  : symbolizer_run_modules(symbolizer, batches, nb);
		if (sym_err == -EINVAL) { /* an odd path: one process per module */
			for (k = 0, sym_err = 0; k < nb; k++)
				symbolizer_run(symbolizer, batches[k].path, batches[k].addrs,
					       batches[k].n, batches[k].results);
		}
		/* stopped at a bound: what it named is kept, the rest from ELF
		 * (attribute_modules() names the loss) */
		if (sym_err == -ETIMEDOUT || sym_err == -ECANCELED)
			sym_err = 0;
	}
	for (i = 0; i < n; i++) {
		struct module_job *job = &jobs[i];

		if (job->kernel)
			job->err = attribution_attribute_kernel(job->syms, job->n_syms, job->offsets,
								job->n, job->aa);
		else
			job->err = attribution_attribute_symbolized(
			    symbolizer, job->path, job->display_name, job->identity, job->offsets,
			    job->n, results && results[i] ? results[i] : NULL,
			    results && results[i] ? sym_err : -ENOMEM, job->aa,
			    &job->symbolizer_missing, job->reason, sizeof(job->reason));
		for (k = 0; results && results[i] && k < job->n; k++)
			symbolizer_result_release(&results[i][k]);
		if (results)
			free(results[i]);
	}
	free(results);
	free(batches);
}

static int append_node(const char *node, void *ctx)
{
	char *buf = ctx;
	size_t len = strlen(buf);

	snprintf(buf + len, 256 - len, "%s%s", buf[len - 1] == ' ' ? "" : ", ", node);
	return 0;
}

/* the module's path, and where it was sampled when the Run has several
 * nodes: the Aggregator's host may not be where the file is */
static void list_module(struct attribute_ctx *ac, char *list, size_t size,
			const struct module_job *job)
{
	char item[PATH_MAX + 320], nodes[256] = "sampled on ";

	if (!ac->several_nodes ||
	    pivot_for_each_module_node(ac->p, job->id, append_node, nodes) ||
	    !strcmp(nodes, "sampled on ")) {
		list_append(list, size, job->path);
		return;
	}
	snprintf(item, sizeof(item), "%s (%s)", job->path, nodes);
	list_append(list, size, item);
}

static int store_job(struct pivot *p, struct attribute_ctx *ac, struct module_job *job)
{
	const char *status = "done";

	if (!strncmp(job->identity, "pseudo:", 7)) {
		status = "pseudo";
		job->reason[0] = '\0';
	} else if (job->err == -ESTALE) {
		status = "stale";
		list_module(ac, ac->stale, sizeof(ac->stale), job);
	} else if (job->err) {
		status = "missing";
		list_module(ac, ac->missing, sizeof(ac->missing), job);
	} else if (job->symbolizer_missing) {
		status = "no-symbolizer";
		ac->symbolizer_missing = 1;
	}
	return pivot_store_attribution(p, job->id, job->aa, job->n, status, job->reason);
}

static void job_release(struct module_job *job)
{
	size_t i;

	for (i = 0; job->aa && i < job->n; i++)
		attributed_address_release(&job->aa[i]);
	free(job->aa);
	free(job->offsets);
	free(job->identity);
	free(job->path);
	free(job->display_name);
	for (i = 0; i < job->n_syms; i++)
		free((char *)job->syms[i].name);
	free(job->syms);
}

/* A symbolizer stopped at a bound, or by the user, is a named loss. */
static int budget_degradation(struct pivot *p, const char *symbolizer,
			      const struct symbolizer_budget *b)
{
	char message[640];

	if (b->stopped == -ECANCELED) {
		snprintf(message, sizeof(message),
			 "finalize stopped by the user: %zu of %zu addresses named by '%s', the "
			 "others from ELF symbols only",
			 b->answered, b->asked, symbolizer);
		return pivot_add_degradation(p, "run-interrupted", message,
					     "let the finalize end to get source lines and inline "
					     "frames (run the application again)");
	}
	if (b->stopped != -ETIMEDOUT && b->asked && b->answered < b->asked) {
		/* it ran but did not answer as llvm-symbolizer does */
		snprintf(message, sizeof(message),
			 "'%s' named %zu of %zu addresses (it failed, or its output was not "
			 "llvm-symbolizer's JSON): the others from ELF symbols only",
			 symbolizer, b->answered, b->asked);
		return pivot_add_degradation(p, "symbolizer-failed", message,
					     "point tools.llvm-symbolizer at llvm-symbolizer (apt-get "
					     "install llvm); nunatak -v says how it failed");
	}
	if (b->stopped != -ETIMEDOUT)
		return 0;
	snprintf(message, sizeof(message),
		 "'%s' was stopped after %.1f s (bounds: %.0f s of silence, %.0f s in all): %zu of "
		 "%zu addresses named by it, the others from ELF symbols only",
		 symbolizer, b->spent_ms / 1e3, b->request_ms / 1e3, b->total_ms / 1e3, b->answered,
		 b->asked);
	return pivot_add_degradation(p, "symbolizer-timeout", message,
				     "raise --symbolizer-budget, or check that tools.llvm-symbolizer "
				     "answers: echo 0x0 | llvm-symbolizer --obj=/bin/true");
}

static int attribute_modules(struct pivot *p, struct attribute_ctx *ac, const char *symbolizer)
{
	struct symbolizer_budget own, *budget = symbolizer_budget_bound();
	size_t i;
	int err;

	/* one budget for the whole finalize: the caller's, else the default */
	if (!budget) {
		symbolizer_budget_init(&own, SYMBOLIZER_REQUEST_MS, SYMBOLIZER_TOTAL_MS, -1);
		budget = &own;
		symbolizer_budget_bind(budget);
	}
	err = pivot_for_each_module_to_attribute(p, collect_module, ac);
	if (!err) {
		attribute_all(ac->jobs, ac->n_jobs, symbolizer);
		for (i = 0; i < ac->n_jobs && !err; i++)
			err = store_job(p, ac, &ac->jobs[i]);
	}
	if (!err && !ac->symbolizer_missing) /* could not run at all: said as missing */
		err = budget_degradation(p, symbolizer, budget);
	if (budget == &own)
		symbolizer_budget_bind(NULL);
	for (i = 0; i < ac->n_jobs; i++)
		job_release(&ac->jobs[i]);
	free(ac->jobs);
	ac->jobs = NULL;
	return err;
}

struct counter_degradation {
	const char *counter, *name, *what, *remedy;
};

static const struct counter_degradation counter_degradations[] = {
	{ "samples_dropped", "samples-dropped", "samples were lost: the kernel sample map was full",
	  "lower --frequency, or drain more often" },
	{ "samples_lost_in_drain", "samples-lost-in-drain",
	  "samples were lost while the Agent drained the kernel maps (it ran out of memory, or "
	  "the sample map flipped under a sample)",
	  "free memory on the node; report it if it recurs" },
	{ "sample_flip_timeouts", "sample-flip-timeout",
	  "drains did not see the sampling programs leave the old sample map within 100 ms: "
	  "samples added after it was read are lost, uncounted",
	  "report it: a sampling program runs for microseconds" },
	{ "stacks_dropped", "stacks-dropped",
	  "samples lost their call stack: the kernel's stack map was full (more distinct Stacks "
	  "in one drain than it holds); they are kept, attributed to their leaf only",
	  "lower --frequency; flame graphs miss these stacks" },
	{ "stacks_dropped_collisions", "stacks-dropped-collisions",
	  "samples lost their call stack: their Stack's digest and the next ones were held by "
	  "other Stacks; they are kept, attributed to their leaf only",
	  "report it: 64-bit digests should not collide so" },
	{ "kernel_stacks_truncated", "kernel-stacks-truncated",
	  "samples have kernel call paths deeper than 64 frames, cut there",
	  "none: the kernel frames nearest the sample are kept" },
	{ "unwind_tables_refused", "unwind-tables-full",
	  "modules got no unwind table: the kernel's row pool or rule dictionary was full; "
	  "call paths end at their frames",
	  "restart nunatakd to empty the pool (tables are kept while it runs)" },
	{ "unwind_tables_failed", "unwind-tables-failed",
	  "modules' unwind tables could not be read (file replaced or unreadable) or compiled; "
	  "call paths end at their frames",
	  "keep binaries in place while they run" },
	{ "unwind_mappings_dropped", "unwind-mappings-dropped",
	  "code mappings beyond 512 in one process were not given to the kernel's unwinder; "
	  "call paths end at their frames",
	  "fewer shared libraries per process" },
	{ "unwind_processes_refused", "unwind-processes-refused",
	  "processes were not given to the kernel's unwinder (its process map was full); their "
	  "call paths end at their leaf",
	  "profile fewer processes at once per node" },
	{ "processes_not_followed", "processes-not-followed",
	  "child processes were not followed: the target map was full", "profile fewer processes" },
	{ "task_reports_dropped", "task-reports-dropped",
	  "exec/exit reports were lost: the ring buffer was full",
	  "per-process counters of those processes are missing" },
	{ "process_totals_partial", "process-counters-partial",
	  "processes have partial CPU time and fault counts: the totals map was full",
	  "profile fewer processes at once" },
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
	{ "storage_refused_batches", "batches-refused",
	  "Batches were refused by the Aggregator (malformed, or for another Run): their samples "
	  "are missing",
	  "report it: an Agent and an Aggregator of different versions, or a bug" },
	/* storage_failed_batches: see counter_to_degradation() */
};

/* The value of counter name of node, 0 when absent. */
static uint64_t node_counter(struct pivot *p, const char *node, const char *name)
{
	sqlite3_stmt *st = NULL;
	uint64_t value = 0;

	if (sqlite3_prepare_v2(pivot_sqlite(p),
			       "SELECT value FROM counters WHERE node = ? AND name = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		value = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return value;
}

static int counter_to_degradation(const char *node, const char *name, uint64_t value, void *ctx)
{
	struct pivot *p = ctx;
	char message[512];
	size_t i;

	if (!value)
		return 0;
	/* three counters make one message: how many samples, Batches, and why */
	if (!strcmp(name, "storage_failed_batches")) {
		wire_storage_failed_message(message, sizeof(message),
					    node_counter(p, node, "storage_failed_samples"), value,
					    (int)node_counter(p, node, "storage_failed_errno"));
		snprintf(message + strlen(message), sizeof(message) - strlen(message),
			 " (node %s)", node);
		return pivot_add_node_degradation(
		    p, node, "storage-failed", message,
		    wire_storage_failed_remedy((int)node_counter(p, node, "storage_failed_errno")));
	}
	for (i = 0; i < sizeof(counter_degradations) / sizeof(counter_degradations[0]); i++) {
		const struct counter_degradation *cd = &counter_degradations[i];

		if (strcmp(cd->counter, name))
			continue;
		snprintf(message, sizeof(message), "%llu %s (node %s)", (unsigned long long)value,
			 cd->what, node);
		return pivot_add_node_degradation(p, node, cd->name, message, cd->remedy);
	}
	return 0;
}

/* the stacks-truncated Degradation of a node, from its stacks_* counters */
static int node_stack_losses(const char *node, void *ctx)
{
	return stack_losses_truncated(ctx, node, node_counter);
}

static int collect_node(const char *node, void *ctx)
{
	return json_array_append_new(ctx, json_text(node)) ? -ENOMEM : 0;
}

static int collect_degradation(const char *node, const char *name, const char *message,
			       const char *remedy, void *ctx)
{
	/* a message quotes paths (module-changed, module-gone): json_text;
	 * node "": the Run's as a whole */
	json_t *d = json_pack("{s:o, s:o, s:o, s:o}", "name", json_text(name), "node",
			      json_text(node), "message", json_text(message), "remedy",
			      json_text(remedy));

	return !d || json_array_append_new(ctx, d) ? -ENOMEM : 0;
}

static int count_node(const char *node, void *ctx)
{
	(void)node;
	(*(size_t *)ctx)++;
	return 0;
}

int finalize_run(struct pivot *p, int run_dir_fd, json_t *manifest, const char *symbolizer)
{
	struct attribute_ctx ac = {.p = p};
	size_t n_nodes = 0;
	char message[1400];
	json_t *nodes, *degradations;
	int err;

	ac.several_nodes = !pivot_nodes(p, count_node, &n_nodes) && n_nodes > 1;
	err = attribute_modules(p, &ac, symbolizer);
	if (err)
		return err;
	/* "": the caller refused the tool and recorded why */
	if (ac.symbolizer_missing && symbolizer && symbolizer[0])
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
	/* a Run without its extracts is still whole: said, not returned */
	source_extracts_store(p, run_dir_fd, manifest, symbolizer);
	err = pivot_for_each_counter(p, counter_to_degradation, p);
	if (!err)
		err = pivot_nodes(p, node_stack_losses, p);
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
	err = err ?: pivot_for_each_node_degradation(p, collect_degradation, degradations);
	err = err ?: manifest_write(run_dir_fd, manifest);
	if (!err)
		pivot_seal(p); /* on failure (logged) the Run is complete, in WAL mode:
				* the next `nunatak summary` seals it */
	return err;
}
