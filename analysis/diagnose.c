/* diagnose — Hotspot shares, the statistical floor and the unresolved
 * share, from the sampling Measurements of the pivot. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "analysis/diagnose_stacks.h"
#include "analysis/diagnostic.h"
#include "userspace/launch/launcher.h"
#include "userspace/pivot/pivot.h"

/* time first: shares are shares of time when time was sampled */
static const char *const sampling_counters[] = {"cpu-clock", "cycles"};

struct collect {
	struct hotspot_share *all;
	size_t n, cap;
	struct unresolved_module *mods;
	size_t n_mods;
	uint64_t launcher_samples;
	double launcher_value;
};

static void hotspot_share_release(struct hotspot_share *h)
{
	size_t i;

	for (i = 0; i < h->n_mpi_calls; i++)
		diagnose_mpi_call_release(&h->mpi_calls[i]);
	free(h->mpi_calls);
	free(h->name);
	free(h->module);
	free(h->source_file);
	free(h->resolution_level);
	free(h->diagnostic);
}

static void unresolved_module_release(struct unresolved_module *m)
{
	free(m->module);
	free(m->path);
	free(m->identity);
}

/* adds an unresolved Hotspot's samples to its module's */
static int collect_unresolved(struct collect *c, const struct pivot_hotspot_total *t)
{
	const char *identity = t->module_identity ? t->module_identity : "";
	struct unresolved_module *m;
	size_t i;

	for (i = 0; i < c->n_mods && strcmp(c->mods[i].identity, identity); i++)
		;
	if (i == c->n_mods) {
		m = reallocarray(c->mods, c->n_mods + 1, sizeof(*m));
		if (!m)
			return -ENOMEM;
		c->mods = m;
		m = &c->mods[c->n_mods++];
		memset(m, 0, sizeof(*m));
		m->identity = strdup(identity);
		m->module = strdup(t->module ? t->module : "");
		m->path = strdup(t->module_path ? t->module_path : "");
		if (!m->identity || !m->module || !m->path)
			return -ENOMEM;
	}
	c->mods[i].samples += t->sample_count;
	c->mods[i].share += t->value; /* the value until compute() */
	return 0;
}

/* the index + 1 of t's module among the unresolved ones, 0 when absent */
static size_t unresolved_index(const struct collect *c, const struct pivot_hotspot_total *t)
{
	const char *identity = t->module_identity ? t->module_identity : "";
	size_t i;

	for (i = 0; i < c->n_mods; i++)
		if (!strcmp(c->mods[i].identity, identity))
			return i + 1;
	return 0;
}

static int collect_one(const struct pivot_hotspot_total *t, void *ctx)
{
	struct collect *c = ctx;
	struct hotspot_share *h;

	if (!t->sample_count && t->value <= 0)
		return 0;
	if (t->comm && launcher_is_launcher_process(t->comm)) {
		c->launcher_samples += t->sample_count;
		c->launcher_value += t->value;
		return 0;
	}
	if (t->resolution_level && !strcmp(t->resolution_level, "unresolved") &&
	    collect_unresolved(c, t))
		return -ENOMEM;
	if (c->n && c->all[c->n - 1].id == t->id) { /* the same Hotspot in other processes */
		if (!c->all[c->n - 1].unresolved_module && t->resolution_level &&
		    !strcmp(t->resolution_level, "unresolved"))
			c->all[c->n - 1].unresolved_module = unresolved_index(c, t);
		c->all[c->n - 1].samples += t->sample_count;
		c->all[c->n - 1].value += t->value;
		return 0;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 32;

		h = reallocarray(c->all, cap, sizeof(*h));
		if (!h)
			return -ENOMEM;
		c->all = h;
		c->cap = cap;
	}
	h = &c->all[c->n++];
	memset(h, 0, sizeof(*h));
	h->id = t->id;
	h->samples = t->sample_count;
	h->value = t->value;
	h->name = strdup(t->name ? t->name : "");
	h->module = strdup(t->module ? t->module : "");
	h->resolution_level = strdup(t->resolution_level ? t->resolution_level : "unresolved");
	h->source_file = t->source_file ? strdup(t->source_file) : NULL;
	if (!strcmp(h->resolution_level, "unresolved"))
		h->unresolved_module = unresolved_index(c, t);
	if (!h->name || !h->module || !h->resolution_level || (t->source_file && !h->source_file))
		return -ENOMEM;
	return 0;
}

/* above the floor first, then by decreasing share */
static int by_share(const void *a, const void *b)
{
	const struct hotspot_share *x = a, *y = b;
	int c;

	if (x->above_floor != y->above_floor)
		return y->above_floor - x->above_floor;
	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_module_share(const void *a, const void *b)
{
	const struct unresolved_module *x = a, *y = b;

	if (x->share != y->share)
		return x->share > y->share ? -1 : 1;
	return strcmp(x->identity, y->identity);
}

static void compute_unresolved(struct diagnosis *d, struct collect *c)
{
	double unresolved = 0;
	size_t i;

	for (i = 0; i < c->n_mods; i++) {
		unresolved += c->mods[i].share;
		c->mods[i].share = d->total_value > 0 ? c->mods[i].share / d->total_value : NAN;
	}
	if (c->n_mods) /* qsort of NULL: undefined */
		qsort(c->mods, c->n_mods, sizeof(*c->mods), by_module_share);
	d->unresolved_share = d->total_value > 0 ? unresolved / d->total_value : NAN;
	d->unresolved_modules = c->mods;
	d->n_unresolved_modules = c->n_mods;
	c->mods = NULL;
	c->n_mods = 0;
}

static void compute(struct diagnosis *d, struct collect *c)
{
	int is_time = !strcmp(d->counter, "cpu-clock");
	size_t i;

	for (i = 0; i < c->n; i++) {
		d->inside_mpi.samples += c->all[i].mpi_samples;
		d->inside_mpi.value += c->all[i].mpi_value;
		d->total_samples += c->all[i].samples;
		d->total_value += c->all[i].value;
		c->all[i].above_floor = c->all[i].samples >= DIAGNOSIS_SAMPLE_FLOOR;
	}
	d->total_hotspots = c->n;
	d->others.share = 0;
	d->total_seconds = is_time ? d->total_value / 1e9 : NAN;
	d->probes.seconds = is_time ? d->probes.value / 1e9 : NAN;
	d->probes.share = d->total_value + d->probes.value > 0
			      ? d->probes.value / (d->total_value + d->probes.value)
			      : NAN;
	d->inside_mpi.seconds = is_time ? d->inside_mpi.value / 1e9 : NAN;
	d->inside_mpi.share = d->total_value > 0 ? d->inside_mpi.value / d->total_value : NAN;
	d->others.seconds = is_time ? 0 : NAN;
	qsort(c->all, c->n, sizeof(*c->all), by_share);
	for (i = 0; i < c->n; i++) {
		struct hotspot_share *h = &c->all[i];

		h->share = d->total_value > 0 ? h->value / d->total_value : 0;
		h->seconds = is_time ? h->value / 1e9 : NAN;
		if (h->above_floor) {
			d->n_hotspots++;
			continue;
		}
		d->others.hotspots++;
		d->others.samples += h->samples;
		d->others.share += h->share;
		if (is_time)
			d->others.seconds += h->seconds;
	}
	compute_unresolved(d, c);
	if (!(d->total_value > 0))
		d->others.share = NAN;
	d->n_all = c->n;
	d->hotspots = c->all;
	c->all = NULL;
	c->n = 0;
}

struct diagnosis *diagnosis__new_on(struct pivot *p, const json_t *machine)
{
	struct collect c = {0};
	struct diagnosis *d;
	size_t i, k;
	int err = 0;

	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->total_seconds = NAN;
	d->unresolved_share = NAN;
	d->probes.seconds = d->probes.share = NAN;
	d->inside_mpi.seconds = d->inside_mpi.share = NAN;
	d->others.seconds = NAN;
	d->others.share = NAN;
	for (k = 0; k < sizeof(sampling_counters) / sizeof(sampling_counters[0]); k++) {
		err = pivot_for_each_hotspot_total(p, sampling_counters[k], collect_one, &c);
		if (err || c.n)
			break;
	}
	if (err)
		goto cleanup;
	d->launchers.samples = c.launcher_samples;
	d->launchers.value = c.launcher_value;
	if (c.n) {
		struct diagnose_stacks st = {c.all, c.n, c.mods, c.n_mods, 0, 0};

		d->counter = sampling_counters[k];
		err = diagnose_stacks(p, d->counter, &st);
		c.n = st.n; /* it drops the Hotspots that were only probes */
		if (err)
			goto cleanup;
		d->probes.samples = st.probe_samples;
		d->probes.value = st.probe_value;
		compute(d, &c);
	}
	free(c.all);
	c.all = NULL;
	err = diagnostic_compute(d, p, machine);
	if (err)
		goto cleanup;
	return d;
cleanup:
	for (i = 0; i < c.n; i++)
		hotspot_share_release(&c.all[i]);
	free(c.all);
	for (i = 0; i < c.n_mods; i++)
		unresolved_module_release(&c.mods[i]);
	free(c.mods);
	diagnosis__free(d);
	errno = -err;
	return NULL;
}

struct diagnosis *diagnosis__new(struct pivot *p)
{
	return diagnosis__new_on(p, NULL);
}

void diagnosis__free(struct diagnosis *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n_all; i++)
		hotspot_share_release(&d->hotspots[i]);
	free(d->hotspots);
	for (i = 0; i < d->n_unresolved_modules; i++)
		unresolved_module_release(&d->unresolved_modules[i]);
	free(d->unresolved_modules);
	free(d->diagnostic_run);
	free(d);
}
