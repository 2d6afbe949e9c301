/* diagnose — Hotspot shares, the statistical floor and the unresolved
 * share, from the sampling Measurements of the pivot. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "userspace/launch/launcher.h"
#include "userspace/pivot/pivot.h"

/* time first: shares are shares of time when time was sampled */
static const char *const sampling_counters[] = {"cpu-clock", "cycles"};

struct collect {
	struct hotspot_share *all;
	size_t n, cap;
	uint64_t launcher_samples;
	double launcher_value;
};

static void hotspot_share_release(struct hotspot_share *h)
{
	free(h->name);
	free(h->module);
	free(h->source_file);
	free(h->resolution_level);
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
	if (c->n && c->all[c->n - 1].id == t->id) { /* the same Hotspot in other processes */
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
	if (!h->name || !h->module || !h->resolution_level || (t->source_file && !h->source_file))
		return -ENOMEM;
	return 0;
}

static int by_share(const void *a, const void *b)
{
	const struct hotspot_share *x = a, *y = b;
	int c;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void compute(struct diagnosis *d, struct collect *c)
{
	int is_time = !strcmp(d->counter, "cpu-clock");
	double unresolved = 0;
	size_t i, kept = 0;

	for (i = 0; i < c->n; i++) {
		d->total_samples += c->all[i].samples;
		d->total_value += c->all[i].value;
	}
	d->total_hotspots = c->n;
	d->others.share = 0;
	d->total_seconds = is_time ? d->total_value / 1e9 : NAN;
	d->others.seconds = is_time ? 0 : NAN;
	qsort(c->all, c->n, sizeof(*c->all), by_share);
	for (i = 0; i < c->n; i++) {
		struct hotspot_share *h = &c->all[i];

		h->share = d->total_value > 0 ? h->value / d->total_value : 0;
		h->seconds = is_time ? h->value / 1e9 : NAN;
		if (!strcmp(h->resolution_level, "unresolved"))
			unresolved += h->value;
		if (h->samples >= DIAGNOSIS_SAMPLE_FLOOR) {
			c->all[kept++] = *h; /* kept <= i: moves down, order kept */
			continue;
		}
		d->others.hotspots++;
		d->others.samples += h->samples;
		d->others.share += h->share;
		if (is_time)
			d->others.seconds += h->seconds;
		hotspot_share_release(h);
	}
	d->unresolved_share = d->total_value > 0 ? unresolved / d->total_value : NAN;
	if (!(d->total_value > 0))
		d->others.share = NAN;
	d->n_hotspots = kept;
	d->hotspots = c->all;
	c->all = NULL;
	c->n = 0;
}

struct diagnosis *diagnosis__new(struct pivot *p)
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
		d->counter = sampling_counters[k];
		compute(d, &c);
	}
	free(c.all);
	return d;
cleanup:
	for (i = 0; i < c.n; i++)
		hotspot_share_release(&c.all[i]);
	free(c.all);
	diagnosis__free(d);
	errno = -err;
	return NULL;
}

void diagnosis__free(struct diagnosis *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n_hotspots; i++)
		hotspot_share_release(&d->hotspots[i]);
	free(d->hotspots);
	free(d);
}
