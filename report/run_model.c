/* run_model — see run_model.h. */
#include <errno.h>
#include <string.h>

#include "analysis/balance.h"
#include "analysis/components.h"
#include "analysis/components_run.h"
#include "analysis/diagnose.h"
#include "analysis/processes.h"
#include "report/run_model.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

static const char *const metric_names[RUN_MODEL_METRICS] = {"wall_s", "cpu_s"};

static int count_node(const char *node, void *ctx)
{
	(void)node;
	(*(size_t *)ctx)++;
	return 0;
}

static int count_degradation(const char *name, const char *message, const char *remedy, void *ctx)
{
	(void)name;
	(void)message;
	(void)remedy;
	(*(size_t *)ctx)++;
	return 0;
}

/* the Component tables of m (none when the Run has no Component): 0 or
 * -errno. A table that cannot be made (a metric the Run lacks) stays NULL:
 * the payload says so */
static int components_build(struct run_model *m)
{
	struct component_options opt = {0};
	char why[256];
	size_t k, v;

	m->components = components_run__load(m->p);
	if (!m->components)
		return -errno;
	if (!m->components->in.n_components) {
		components_run__free(m->components);
		m->components = NULL;
		return 0;
	}
	for (k = 0; k < RUN_MODEL_METRICS; k++) {
		for (v = 0; v < RUN_MODEL_VIEWS; v++) {
			opt.metric = component_metric_find(metric_names[k]);
			opt.inclusive = v == RUN_MODEL_INCLUSIVE;
			why[0] = '\0';
			m->component_tables[k][v] =
			    component_table__new(&m->components->in, &opt, why, sizeof(why));
			if (!m->component_tables[k][v] && errno == ENOMEM)
				return -ENOMEM;
			if (!m->component_tables[k][v])
				pr_debug("run_model: no %s table: %s\n", metric_names[k], why);
		}
	}
	return 0;
}

int run_model_build_on(struct run_model *m, const struct diagnosis *d, struct pivot *p,
		       const json_t *manifest, unsigned flags)
{
	size_t nodes = 0;
	int err = 0;

	if (!m || !d)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->p = p;
	m->manifest = manifest;
	m->d = d;
	m->no_source = !!(flags & RUN_MODEL_NO_SOURCE);
	if (!p)
		return 0;
	m->b = balance__new(p);
	m->ps = m->b ? processes__new(p, d->counter) : NULL;
	if (!m->ps) {
		err = -errno;
		goto cleanup;
	}
	err = pivot_nodes(p, count_node, &nodes);
	m->several_nodes = !err && nodes > 1;
	err = pivot_for_each_degradation(p, count_degradation, &m->n_degradations);
	if (!err && (flags & RUN_MODEL_COMPONENTS))
		err = components_build(m);
cleanup:
	if (err)
		run_model_release(m);
	return err;
}

int run_model_build(struct run_model *m, struct pivot *p, const json_t *manifest,
		    unsigned flags)
{
	struct diagnosis *d;
	int err;

	if (!m)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	if (!p)
		return -EINVAL;
	d = diagnosis__new_on(p, manifest ? json_object_get(manifest, "machine") : NULL);
	if (!d)
		return -errno;
	err = run_model_build_on(m, d, p, manifest, flags);
	if (err) {
		diagnosis__free(d);
		return err;
	}
	m->owned_d = d;
	return 0;
}

void run_model_release(struct run_model *m)
{
	size_t k, v;

	if (!m)
		return;
	for (k = 0; k < RUN_MODEL_METRICS; k++)
		for (v = 0; v < RUN_MODEL_VIEWS; v++)
			component_table__free(m->component_tables[k][v]);
	components_run__free(m->components);
	processes__free(m->ps);
	balance__free(m->b);
	diagnosis__free(m->owned_d);
	memset(m, 0, sizeof(*m));
}
