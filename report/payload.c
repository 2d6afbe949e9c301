/* payload — see payload.h. The trunk, the summary with its two additions,
 * the roofline and the Components; the flame graph, Events, Loci and
 * inline chains are in payload_flame.c, payload_events.c and
 * payload_inline.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/components_run.h"
#include "analysis/diagnose.h"
#include "analysis/diagnostic.h"
#include "analysis/roofline.h"
#include "report/components_report.h"
#include "report/payload.h"
#include "report/run_model.h"
#include "report/summary.h"
#include "report/summary_format.h"
#include "userspace/log/json_text.h"
#include "version.h" /* generated: NUNATAK_COMMIT */

/* {value|null, unit, quality, reason|null} */
static json_t *value_json(const struct derived *v)
{
	return json_pack("{s:o, s:s, s:s, s:o}", "value", summary_json_number(v->value), "unit",
			 v->unit, "quality", quality_name(v->quality), "reason",
			 v->reason[0] ? json_text(v->reason) : json_null());
}

/* the worst Quality of a Diagnostic's own values: a value that is not
 * applicable (imbalance) or missing for the whole Run (every placement when
 * the Run has no FLOP or DRAM counter: said once, run-level) is no flaw of
 * this Hotspot's */
static const char *diagnostic_quality(const struct diagnostic *g,
				      const struct diagnostic_run *run)
{
	const struct derived *v[] = {&g->share,	     &g->imbalance,	    &g->dram_intensity,
				     &g->achieved,   &g->attainable,	    &g->envelope_fraction,
				     &g->ridge};
	int no_placement = run && run->no_placement[0];
	enum quality q = QUALITY_MEASURED;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (v[i] == &g->imbalance && g->imbalance_not_applicable)
			continue;
		if (i >= 2 && no_placement)
			continue;
		q = quality_worst(q, v[i]->quality);
	}
	return quality_name(q);
}

/* the summary, each Hotspot with its quality and inline chains */
static json_t *summary_part(const struct run_model *m)
{
	json_t *s = summary_json(m), *hotspots;
	size_t i;
	int err;

	if (!s)
		return NULL;
	hotspots = json_object_get(s, "hotspots");
	for (i = 0; i < json_array_size(hotspots) && i < m->d->n_all; i++) {
		const struct diagnostic *g = m->d->hotspots[i].diagnostic;
		const char *q = g ? diagnostic_quality(g, m->d->diagnostic_run) : NULL;

		if (json_object_set_new(json_array_get(hotspots, i), "quality",
					q ? json_string(q) : json_null()))
			goto nomem;
	}
	err = payload_inline_attach(hotspots, m);
	if (err) {
		json_decref(s);
		errno = -err;
		return NULL;
	}
	return s;
nomem:
	json_decref(s);
	errno = ENOMEM;
	return NULL;
}

/* exactly what summary_print writes */
static json_t *summary_text(const struct run_model *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *t;
	int err;

	if (!f)
		return NULL;
	err = summary_print(f, m);
	if (fclose(f) && !err)
		err = -EIO;
	t = err ? NULL : json_textn(buf, len);
	free(buf);
	if (err)
		errno = -err;
	return t;
}

/* The Run's roof per core (the Diagnostics' achieved and attainable are
 * per core): flops_dp and dram_bandwidth over the cores they cover */
static json_t *roofline_json(const struct diagnosis *d)
{
	const struct diagnostic_run *run = d->diagnostic_run;
	struct derived peak, bandwidth, ridge;
	const struct derived *in[2];
	struct roof roof;
	const char *reason = NULL;

	if (!run)
		return json_pack("{s:n, s:n, s:n, s:s}", "peak", "bandwidth", "ridge", "reason",
				 "the Run has no Diagnostic: nothing was sampled");
	in[0] = &run->flops_dp;
	in[1] = &run->cores;
	derived_combine(&peak, "peak", "flop/s", "flops_dp / cores", in, 2,
			run->flops_dp.value / run->cores.value, NULL);
	in[0] = &run->dram_bandwidth;
	derived_combine(&bandwidth, "bandwidth", "B/s", "dram_bandwidth / cores", in, 2,
			run->dram_bandwidth.value / run->cores.value, NULL);
	roof.peak = peak.value;
	roof.bandwidth = bandwidth.value;
	in[0] = &peak;
	in[1] = &bandwidth;
	derived_combine(&ridge, "ridge", "flop/B", "peak / bandwidth", in, 2, roofline_ridge(&roof),
			NULL);
	if (!derived_available(&ridge))
		reason = ridge.reason;
	return json_pack("{s:o, s:o, s:o, s:o}", "peak", value_json(&peak), "bandwidth",
			 value_json(&bandwidth), "ridge",
			 derived_available(&ridge) ? value_json(&ridge) : json_null(), "reason",
			 reason ? json_text(reason) : json_null());
}

/* {"self": ..., "inclusive": ...} of one metric; a table that could not
 * be made is null */
static json_t *components_metric(const struct run_model *m, int k)
{
	json_t *o = json_object(), *t;
	int v;

	for (v = 0; o && v < RUN_MODEL_VIEWS; v++) {
		t = m->component_tables[k][v]
			? components_json(m->component_tables[k][v], m->components)
			: json_null();
		if (!t || json_object_set_new(o, v == RUN_MODEL_SELF ? "self" : "inclusive", t))
			o = (json_decref(o), NULL);
	}
	return o;
}

static json_t *components_part(const struct run_model *m)
{
	if (!m->components)
		return json_null();
	return json_pack("{s:o, s:o}", "wall_s", components_metric(m, RUN_MODEL_WALL_S), "cpu_s",
			 components_metric(m, RUN_MODEL_CPU_S));
}

static json_t *format_json(void)
{
	return json_pack("{s:s, s:i, s:s}", "name", "nunatak-report", "schema", PAYLOAD_SCHEMA,
			 "generated_by", "nunatak " NUNATAK_COMMIT);
}

static json_t *generated_json(void)
{
	char buf[32];
	time_t now = time(NULL);
	struct tm tm;

	if (!gmtime_r(&now, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return json_null();
	return json_string(buf);
}

/* a section that failed sets errno; json_pack's "o" takes NULL as a failure */
json_t *payload_json(const struct run_model *m, unsigned flags)
{
	json_t *root;
	int no_source;

	if (!m || !m->d || ((flags & PAYLOAD_NO_SOURCE) && !m->no_source)) {
		errno = EINVAL;
		return NULL;
	}
	no_source = m->no_source;
	errno = 0;
	root = json_pack("{s:o, s:o, s:b, s:o, s:O?, s:o, s:o, s:o}", "format", format_json(),
			 "generated", generated_json(), "no_source", no_source, "run_dir",
			 json_text(m->run_dir), "manifest", m->manifest, "summary",
			 summary_part(m), "summary_text", summary_text(m), "roofline",
			 roofline_json(m->d));
	if (!root)
		goto fail;
	if (json_object_set_new(root, "loci", m->p ? payload_loci_json(m->p) : json_array()) ||
	    json_object_set_new(root, "flame", payload_flame_json(m->p, m->d->counter)) ||
	    json_object_set_new(root, "events", payload_events_json(m->p)) ||
	    json_object_set_new(root, "components", components_part(m)))
		goto fail;
	return root;
fail:
	json_decref(root);
	if (!errno)
		errno = ENOMEM;
	return NULL;
}
