/* summary — renders a diagnosis for a terminal and as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/balance.h"
#include "analysis/diagnose.h"
#include "analysis/processes.h"
#include "report/run_model.h"
#include "report/summary.h"
#include "report/summary_diagnostic.h"
#include "report/summary_format.h"
#include "report/summary_inside.h"
#include "report/summary_mpi.h"
#include "report/summary_processes.h"
#include "report/summary_source.h"
#include "report/summary_unresolved.h"
#include "userspace/log/json_text.h"
#include "userspace/pivot/pivot.h"

#define MODULE_WIDTH_MAX 24

static void print_headline(FILE *out, const struct diagnosis *d)
{
	char share[32], seconds[32];
	double covered = 0;
	size_t i;

	for (i = 0; i < d->n_hotspots; i++)
		covered += d->hotspots[i].share;
	fprintf(out,
		"nunatak: %zu hotspot%s above the floor of %d samples cover%s %s of %" PRIu64
		" samples",
		d->n_hotspots, d->n_hotspots == 1 ? "" : "s", DIAGNOSIS_SAMPLE_FLOOR,
		d->n_hotspots == 1 ? "s" : "", summary_fmt_share(share, sizeof(share), covered),
		d->total_samples);
	if (isnan(d->total_seconds))
		fprintf(out, ", time sampled unavailable (only %s was sampled)\n", d->counter);
	else
		fprintf(out, ", %s s sampled\n",
			summary_fmt_seconds(seconds, sizeof(seconds), d->total_seconds));
}

struct columns {
	int module, seconds, class;
};

static void columns_measure(const struct diagnosis *d, size_t shown, struct columns *c)
{
	char buf[32];
	size_t i;
	int len;

	c->module = (int)strlen("module");
	c->seconds = (int)strlen("seconds");
	c->class = (int)strlen("class");
	for (i = 0; i < shown; i++) {
		summary_class_text(&d->hotspots[i], &len);
		if (len > c->class)
			c->class = len;
		len = (int)strlen(d->hotspots[i].module);
		if (len > c->module)
			c->module = len < MODULE_WIDTH_MAX ? len : MODULE_WIDTH_MAX;
		len = (int)strlen(summary_fmt_seconds(buf, sizeof(buf), d->hotspots[i].seconds));
		if (len > c->seconds)
			c->seconds = len;
	}
}

/* the Hotspots above the floor the text lists */
static size_t summary_shown(const struct diagnosis *d)
{
	return d->n_hotspots < SUMMARY_MAX_HOTSPOTS ? d->n_hotspots : SUMMARY_MAX_HOTSPOTS;
}

static void print_table(FILE *out, const struct diagnosis *d)
{
	size_t shown = summary_shown(d);
	size_t folded = d->n_hotspots - shown, others_n;
	double others_share = d->others.share, others_seconds = d->others.seconds;
	uint64_t others_samples = d->others.samples;
	char share[32], seconds[32];
	struct columns c;
	size_t i;
	int width;

	columns_measure(d, shown, &c);
	fprintf(out, "\n  %6s  %8s  %*s  %-10s  %-*s  %-*s  %s\n", "share", "samples", c.seconds,
		"seconds", "level", c.module, "module", c.class, "class", "hotspot");
	for (i = 0; i < shown; i++) {
		const struct hotspot_share *h = &d->hotspots[i];
		const char *class = summary_class_text(h, &width);

		fprintf(out, "  %6s  %8" PRIu64 "  %*s  %-10s  %-*.*s  %s%*s  %s",
			summary_fmt_share(share, sizeof(share), h->share), h->samples, c.seconds,
			summary_fmt_seconds(seconds, sizeof(seconds), h->seconds),
			h->resolution_level, c.module, MODULE_WIDTH_MAX, h->module, class,
			c.class - width, "", h->name);
		if (h->source_file)
			fprintf(out, " (%s)", h->source_file);
		fputc('\n', out);
		summary_print_hotspot_inside(out, h);
	}
	for (i = shown; i < d->n_hotspots; i++) {
		others_share += d->hotspots[i].share;
		others_samples += d->hotspots[i].samples;
		others_seconds += d->hotspots[i].seconds;
	}
	others_n = d->others.hotspots + folded;
	if (!others_n)
		return;
	fprintf(out, "  %6s  %8" PRIu64 "  %*s  %-10s  %-*s  %-*s  others: %zu hotspot%s",
		summary_fmt_share(share, sizeof(share), others_share), others_samples, c.seconds,
		summary_fmt_seconds(seconds, sizeof(seconds), others_seconds), "", c.module, "",
		c.class, "", others_n, others_n == 1 ? "" : "s");
	if (folded)
		fprintf(out, " (%zu above the floor not listed, %zu under %d samples)", folded,
			d->others.hotspots, DIAGNOSIS_SAMPLE_FLOOR);
	fputc('\n', out);
}

/* what shares are shares of */
static const char *share_subject(const struct diagnosis *d)
{
	return d->counter && !strcmp(d->counter, "cpu-clock") ? "time" : "cycles";
}

struct not_said {
	FILE *out;
	size_t n;
	int several_nodes; /* a Degradation says its node */
};

static int print_degradation(const char *node, const char *name, const char *message,
			     const char *remedy, void *ctx)
{
	struct not_said *ns = ctx;

	summary_print_degradation(ns->out, "  - ", 6, name, ns->several_nodes ? node : NULL,
				  message, remedy);
	ns->n++;
	return 0;
}

static int print_not_said(FILE *out, const struct run_model *m)
{
	const struct diagnosis *d = m->d;
	struct pivot *p = m->p;
	char share[32];
	int err = 0;
	struct not_said ns = {out, 0, m->several_nodes};

	fprintf(out, "\nwhat this summary does not say\n");
	if (d->others.hotspots)
		fprintf(out,
			"  - others: %zu hotspot%s under %d samples each (%" PRIu64
			" samples, %s of the %s) get no diagnostic\n",
			d->others.hotspots, d->others.hotspots == 1 ? "" : "s",
			DIAGNOSIS_SAMPLE_FLOOR, d->others.samples,
			summary_fmt_share(share, sizeof(share), d->others.share), share_subject(d));
	summary_print_unresolved(out, d, share_subject(d));
	summary_print_diagnostic_not_said(out, d);
	if (d->launchers.samples)
		fprintf(out,
			"  - launchers: %" PRIu64 " samples of the launcher processes (mpirun, its "
			"daemons, srun) are not counted as the application's\n",
			d->launchers.samples);
	summary_print_mpi_not_said(out, m->b);
	if (p)
		err = pivot_for_each_node_degradation(p, print_degradation, &ns);
	if (!err && !ns.n)
		fprintf(out, "  - degradations: none\n");
	return err;
}

int summary_print(FILE *out, const struct run_model *m)
{
	const struct diagnosis *d = m ? m->d : NULL;
	int err;

	if (!out || !d)
		return -EINVAL;
	if (!d->counter || !d->total_samples) {
		fprintf(out,
			"nunatak: no samples were recorded, so there is no hotspot to report\n");
		if (m->n_degradations)
			fprintf(out, "  sampling was degraded: the degradations below say why\n");
		else
			fprintf(out, "  no degradation was recorded: the application probably ended"
				     " before the first sample\n");
	} else {
		print_headline(out, d);
		print_table(out, d);
		summary_print_inside(out, d);
		summary_print_diagnostics(out, d, summary_shown(d));
		summary_print_kernel(out, m->ps);
		summary_print_processes(out, m->ps);
		err = summary_print_sources(out, d, m->p, m->no_source);
		if (err)
			return err;
	}
	summary_print_mpi(out, m->b);
	err = print_not_said(out, m);
	if (err)
		return err;
	if (fflush(out) || ferror(out))
		return -EIO;
	return 0;
}

/* every text of a Hotspot comes from the pivot, so from outside (file
 * names, symbols): json_text keeps a name that is not UTF-8, escaped */
static json_t *hotspot_json(const struct hotspot_share *h)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:b, s:o, s:o}", "name",
			 json_text(h->name), "module", json_text(h->module), "source_file",
			 json_text(h->source_file), "resolution_level",
			 json_text(h->resolution_level), "share", summary_json_number(h->share),
			 "samples", (json_int_t)h->samples, "seconds",
			 summary_json_number(h->seconds), "above_floor", h->above_floor,
			 "diagnostic", summary_diagnostic_json(h), "inside_mpi",
			 summary_hotspot_inside_json(h));
}

/* a Degradation's message quotes paths and names; node "": the Run's */
static int degradation_json(const char *node, const char *name, const char *message,
			    const char *remedy, void *ctx)
{
	json_t *o = json_pack("{s:o, s:o, s:o, s:o}", "name", json_text(name), "node",
			      json_text(node), "message", json_text(message), "remedy",
			      json_text(remedy));

	if (!o || json_array_append_new(ctx, o))
		return -ENOMEM;
	return 0;
}

/* root's others, totals, launcher_samples, unresolved_share and
 * unresolved_modules: 0 or -ENOMEM */
static int totals_json(json_t *root, const struct diagnosis *d)
{
	json_t *o;

	o = json_pack("{s:I, s:I, s:o}", "hotspots", (json_int_t)d->others.hotspots, "samples",
		      (json_int_t)d->others.samples, "share", summary_json_number(d->others.share));
	if (!o || json_object_set_new(root, "others", o))
		return -ENOMEM;
	o = json_pack("{s:I, s:o, s:I}", "samples", (json_int_t)d->total_samples, "seconds",
		      summary_json_number(d->total_seconds), "hotspots",
		      (json_int_t)d->total_hotspots);
	if (!o || json_object_set_new(root, "totals", o))
		return -ENOMEM;
	if (json_object_set_new(root, "launcher_samples",
				json_integer((json_int_t)d->launchers.samples)) ||
	    json_object_set_new(root, "unresolved_share", summary_json_number(d->unresolved_share)))
		return -ENOMEM;
	o = summary_unresolved_json(d);
	if (!o || json_object_set_new(root, "unresolved_modules", o))
		return -ENOMEM;
	return 0;
}

/* what root takes from the pivot (none: the empty sections) */
static int pivot_parts_json(json_t *root, const struct run_model *m)
{
	int err = 0;

	if (m->p)
		err = pivot_for_each_node_degradation(m->p, degradation_json,
						      json_object_get(root, "degradations"));
	err = err ?: summary_mpi_json(root, m->b);
	return err ?: summary_processes_json(root, m->ps);
}

json_t *summary_json(const struct run_model *m)
{
	const struct diagnosis *d = m ? m->d : NULL;
	struct pivot *p = m ? m->p : NULL;
	json_t *root = NULL, *hotspots, *o;
	size_t i;
	int err = -ENOMEM;

	if (!d) {
		errno = EINVAL;
		return NULL;
	}
	root = json_pack("{s:[], s:[], s:o, s:I}", "hotspots", "degradations", "counter",
			 json_text(d->counter), "floor", (json_int_t)DIAGNOSIS_SAMPLE_FLOOR);
	if (!root)
		goto cleanup;
	hotspots = json_object_get(root, "hotspots");
	for (i = 0; i < d->n_all; i++) { /* every one: above_floor says which */
		o = hotspot_json(&d->hotspots[i]);
		if (o && summary_source_attach(o, d, &d->hotspots[i], p, m->no_source))
			o = (json_decref(o), NULL);
		if (!o || json_array_append_new(hotspots, o))
			goto cleanup;
	}
	err = totals_json(root, d);
	err = err ?: summary_inside_json(root, d);
	if (!err && json_object_set_new(root, "diagnostic_run", summary_diagnostic_run_json(d)))
		err = -ENOMEM;
	err = err ?: pivot_parts_json(root, m);
	if (err)
		goto cleanup;
	return root;
cleanup:
	json_decref(root);
	errno = -err;
	return NULL;
}
