/* batch_components — the Component entries of a Batch (batch.h): the
 * Components, their costs per (thread, phase, Step, parent) and the Steps. */
#include <errno.h>
#include <string.h>

#include "userspace/agent/batch.h"
#include "userspace/agent/batch_components.h"

int batch_builder_add_component(struct batch_builder *b, const char *name, const char *pattern,
				int is_step, uint32_t *index)
{
	Nunatak__Wire__Component *c = batch_builder_alloc(b, sizeof(*c));

	if (!c)
		return -ENOMEM;
	nunatak__wire__component__init(c);
	c->name = batch_builder_strdup(b, name);
	c->pattern = batch_builder_strdup(b, pattern);
	c->is_step = !!is_step;
	if (!c->name || !c->pattern)
		return -ENOMEM;
	return batch_builder_push_component(b, BATCH_COMPONENTS, c, index);
}

static const char *const phase_names[] = {"setup", "step", "between", "teardown"};

int batch_builder_add_component_cost(struct batch_builder *b, const struct batch_locus *thread,
				     const struct batch_component_cost *cost)
{
	Nunatak__Wire__ComponentCost *c;
	uint32_t li;
	int err;

	if (cost->phase >= sizeof(phase_names) / sizeof(phase_names[0]))
		return -EINVAL;
	err = batch_builder_locus(b, thread, &li);
	if (err)
		return err;
	c = batch_builder_alloc(b, sizeof(*c));
	if (!c)
		return -ENOMEM;
	nunatak__wire__component_cost__init(c);
	c->locus = li;
	c->phase = (char *)phase_names[cost->phase]; /* static string */
	c->step = cost->step;
	c->component = cost->component;
	c->has_parent = cost->has_parent;
	c->parent = cost->parent;
	c->calls = cost->calls;
	c->wall_ns = cost->self.wall_ns;
	c->cpu_ns = cost->self.cpu_ns;
	c->minor_page_faults = cost->self.minor_faults;
	c->major_page_faults = cost->self.major_faults;
	c->voluntary_context_switches = cost->self.voluntary_switches;
	c->involuntary_context_switches = cost->self.involuntary_switches;
	c->peak_rss_increase_bytes = cost->self.peak_rss_increase;
	/* instructions and cycles: not collected (absent = unavailable) */
	return batch_builder_push_component(b, BATCH_COMPONENT_COSTS, c, NULL);
}

int batch_builder_add_step(struct batch_builder *b, const struct batch_locus *process,
			   uint32_t step, uint64_t start_ns, uint64_t end_ns)
{
	Nunatak__Wire__Step *s;
	uint32_t li;
	int err;

	err = batch_builder_locus(b, process, &li);
	if (err)
		return err;
	s = batch_builder_alloc(b, sizeof(*s));
	if (!s)
		return -ENOMEM;
	nunatak__wire__step__init(s);
	s->locus = li;
	s->step = step;
	s->start_ns = start_ns;
	s->has_end_ns = end_ns != 0;
	s->end_ns = end_ns;
	return batch_builder_push_component(b, BATCH_STEPS, s, NULL);
}
