/* agent_components — the Agent's side of Component costs
 * (component_probes.h): a Target that names Components registers its
 * patterns, the modules known and to come are searched for them, and its
 * Batches carry their costs, the Steps, the probe cost measured on this
 * machine, what was lost, and the patterns that named nothing. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "userspace/agent/agent_internal.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/component_report.h"
#include "userspace/agent/modules.h"
#include "userspace/agent/sampler.h"
#include "userspace/launch/library_closure.h"
#include "userspace/log/log.h"

int agent_components_of_json(const json_t *req, struct agent_target_opts *o, const char **patterns)
{
	const json_t *list = json_object_get(req, "components"), *p;
	const json_t *step = json_object_get(req, "step");
	size_t i;

	if (step && (!json_is_string(step) || !json_string_length(step)))
		return -EINVAL;
	if (list && (!json_is_array(list) || json_array_size(list) > AGENT_MAX_COMPONENTS))
		return -EINVAL;
	json_array_foreach(list, i,
			   p) if (!json_is_string(p) || !json_string_length(p)) return -EINVAL;
	if (!o)
		return 0;
	json_array_foreach(list, i, p) patterns[i] = json_string_value(p);
	o->components = patterns;
	o->n_components = json_array_size(list);
	o->step = json_string_value(step);
	return 0;
}

/* the functions of m that t's patterns name, probed */
static void consider(struct agent *a, struct agent_target *t, struct module *m)
{
	char err[512];

	if (component_probes_consider(a->components, t->id, m, err, sizeof(err)) < 0)
		agent_add_node_degradation(a, "component-probes-failed", err,
					   "the costs of these Components are missing; run as root "
					   "on a kernel with uprobes and BTF");
}

void agent_components_mapped(pid_t tgid, struct module *m, void *agent)
{
	struct agent *a = agent;
	struct agent_target *t;

	if (!a->components)
		return;
	t = agent_target_of_tgid(a, tgid);
	if (t && t->components)
		consider(a, t, m);
}

/* the program a Target starts, and its DT_NEEDED closure, before it runs */
struct start_ctx {
	struct agent *a;
	struct agent_target *t;
};

static void consider_file(const char *path, void *ctx)
{
	struct start_ctx *sc = ctx;
	struct module *m = module_table_open_file(sc->a->modules, path);

	if (m)
		consider(sc->a, sc->t, m);
}

int agent_components_start(struct agent *a, struct agent_target *t,
			   const struct agent_target_opts *o)
{
	uint64_t probe_ns, empty_ns;
	char err[256] = "";
	const char *why;
	int e;

	if (!o->n_components && !o->step)
		return 0;
	if (!a->components && a->sampler)
		a->components =
		    component_probes__new(sampler_targets_fd(a->sampler), -1, err, sizeof(err));
	if (!a->components) {
		if (!err[0])
			snprintf(err, sizeof(err), "BPF is not available to this Agent");
		return degradation_list_add(&t->degradations, "component-probes-unavailable", err,
					    "run as root on a kernel with uprobes and BTF");
	}
	e = component_probes_add_target(a->components, t->id, agent_target_uid(t), o->components,
					o->n_components, o->step);
	if (e)
		return degradation_list_add(&t->degradations, "component-probes-unavailable",
					    strerror(-e), "fewer Runs with --step at once");
	t->components = 1;
	component_probes_read_counters(a->components, t->base.components);
	/* the program and its libraries now, so that its first calls are
	 * seen; what its processes map later, as they map it (never the
	 * image of nunatak a launched child runs until its exec) */
	if (o->target_exe) {
		struct start_ctx sc = {a, t};

		consider_file(o->target_exe, &sc);
		library_closure(o->target_exe, consider_file, &sc);
	}
	/* the probe cost, before the application starts (it waits for the
	 * Run's start): reported with the costs it inflates */
	if (component_probes_cost(a->components, &probe_ns, &empty_ns, &why))
		pr_info("run %s: the probe cost could not be measured: %s", t->run_id, why);
	return 0;
}

void agent_components_end(struct agent_target *t)
{
	if (t->components && t->a->components)
		component_probes_remove_target(t->a->components, t->id);
	t->components = 0;
}

static void thread_locus(void *ctx, pid_t tgid, pid_t tid, struct batch_locus *l)
{
	agent_locus(((struct agent_target *)ctx)->a, tgid, tid, l);
}

static int want_process(void *ctx, pid_t tgid)
{
	struct agent_target *t = ctx;

	return agent_target_of_tgid(t->a, tgid) == t;
}

static int not_found(const char *pattern, int is_step, void *ctx)
{
	char message[512];

	snprintf(message, sizeof(message),
		 "%s '%s' named no function of the executable or of the libraries its processes "
		 "loaded: its costs are missing",
		 is_step ? "the step function" : "the Component pattern", pattern);
	return batch_builder_add_degradation(ctx, "component-not-found", message,
					     "give the demangled name (nm -C) or a glob over it; "
					     "a static function needs the .symtab of an unstripped "
					     "build; a user's Run searches only the files the user "
					     "owns");
}

/* the probe cost per call and the calls lost, as counters, and at the end
 * what was lost and what was never found, as Degradations */
static int add_counters(struct agent_target *t, struct batch_builder *b, int last)
{
	struct component_probes *cp = t->a->components;
	uint64_t c[COMPONENT_COUNTERS], probe_ns, empty_ns, lost = 0;
	const char *why;
	char message[256];
	int i, err = 0;

	component_probes_read_counters(cp, c);
	for (i = COMPONENT_LOST_DEPTH; i < COMPONENT_COUNTERS; i++)
		if (i != COMPONENT_LOST_STEPS)
			lost += c[i] - t->base.components[i];
	err = batch_builder_add_counter(b, "component_calls_seen",
					c[COMPONENT_CALLS_SEEN] -
					    t->base.components[COMPONENT_CALLS_SEEN]);
	err = err ?: batch_builder_add_counter(b, "component_calls_lost", lost);
	err = err
		  ?: batch_builder_add_counter(b, "component_steps_lost",
					       c[COMPONENT_LOST_STEPS] -
						   t->base.components[COMPONENT_LOST_STEPS]);
	if (!err && !component_probes_cost(cp, &probe_ns, &empty_ns, &why)) {
		err = batch_builder_add_counter(b, "component_probe_ns", probe_ns);
		err = err ?: batch_builder_add_counter(b, "empty_uprobe_pair_ns", empty_ns);
	} else if (!err && last) {
		err = batch_builder_add_degradation(b, "component-probe-cost-unmeasured", why,
						    "the costs are measured all the same; their "
						    "inflation by the probes is not known");
	}
	if (err || !last)
		return err;
	if (lost) {
		snprintf(message, sizeof(message),
			 "%llu Component calls were not measured (nesting deeper than %d, the "
			 "totals map full, or returns never seen)",
			 (unsigned long long)lost, MAX_COMPONENT_DEPTH);
		err = batch_builder_add_degradation(b, "component-costs-lost", message,
						    "probe fewer or less nested Components");
	}
	if (!err && component_probes_unprobed(cp, t->id)) {
		snprintf(message, sizeof(message),
			 "%zu functions the Component patterns named were not probed: %d are "
			 "probed at most (each traps in every process that runs its file)",
			 component_probes_unprobed(cp, t->id), MAX_COMPONENT_FUNCTIONS);
		err = batch_builder_add_degradation(b, "component-too-many", message,
						    "narrow the patterns (a glob such as '*' names "
						    "every function of every library)");
	}
	return err ?: component_probes_for_each_unmatched(cp, t->id, not_found, b);
}

int agent_add_components(struct agent_target *t, struct batch_builder *b, int last)
{
	struct agent *a = t->a;
	int err = 0;

	if (!t->components || !a->components)
		return 0;
	if (!last)
		err = component_report_of(a->components, b, t->id, want_process, thread_locus, t);
	return err ?: add_counters(t, b, last);
}
