/* export_chrome_trace — see export_chrome_trace.h */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/export_chrome_trace.h"
#include "report/export_stacks.h"
#include "userspace/log/json_text.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_read_loci.h"

static const char no_events_option[] =
    "the Run was made without --mpi-events: its MPI calls were counted per call site, "
    "not recorded one by one (nunatak run --mpi-events records them)";
static const char no_mpi[] = "no process of the Run made an MPI call: MPI Events are the MPI calls "
			     "`nunatak run --mpi-events` records";

struct trace {
	struct export_stacks s;
	json_t *events;
	int64_t t0_ns;
	uint64_t n;
	int mpi_loci;
};

static json_int_t locus_pid(const struct export_locus *l)
{
	return l->has_rank ? l->rank : l->tgid;
}

static int add(struct trace *t, json_t *e)
{
	return e && !json_array_append_new(t->events, e) ? 0 : -ENOMEM;
}

static int meta(struct trace *t, const char *what, const struct export_locus *l, json_t *args)
{
	json_t *e = json_pack("{s:s, s:s, s:I, s:I, s:o}", "name", what, "ph", "M", "pid",
			      locus_pid(l), "tid", (json_int_t)l->tid, "args", args);

	return add(t, e);
}

static const struct export_locus *sort_loci;

static int by_pid(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	json_int_t p = locus_pid(&sort_loci[i]), q = locus_pid(&sort_loci[j]);

	return p != q ? (p < q ? -1 : 1) : (i > j) - (i < j);
}

/* process_name and process_sort_index once per pid, thread_name per Locus */
static int metadata(struct trace *t)
{
	const struct export_stacks *s = &t->s;
	size_t *order = calloc(s->n_loci + 1, sizeof(*order)), i;
	int several = export_several_nodes(s), err = order ? 0 : -ENOMEM;

	for (i = 0; order && i < s->n_loci; i++)
		order[i] = i;
	sort_loci = s->loci;
	if (order && s->n_loci)
		qsort(order, s->n_loci, sizeof(*order), by_pid);
	for (i = 0; !err && i < s->n_loci; i++) {
		const struct export_locus *l = &s->loci[order[i]];
		char *process = export_locus_name(l, 0, several),
		     *thread = export_locus_name(l, 1, several);

		if (!process || !thread)
			err = -ENOMEM;
		else if (!i || locus_pid(&s->loci[order[i - 1]]) != locus_pid(l))
			err = meta(t, "process_name", l,
				   json_pack("{s:o}", "name", json_text(process)))
				  ?: meta(t, "process_sort_index", l,
					  json_pack("{s:I}", "sort_index", locus_pid(l)));
		if (!err)
			err = meta(t, "thread_name", l,
				   json_pack("{s:o}", "name", json_text(thread)));
		free(process);
		free(thread);
	}
	free(order);
	return err;
}

static int earliest(const struct pivot_event *e, void *ctx)
{
	struct trace *t = ctx;

	if (!t->n++ || e->start_ns < t->t0_ns)
		t->t0_ns = e->start_ns;
	return 0;
}

static int add_event(const struct pivot_event *e, void *ctx)
{
	struct trace *t = ctx;
	size_t i = export_locus_index(&t->s, e->locus);
	const struct export_locus *l;
	json_t *args = json_object(), *ev;

	if (i == EXPORT_NO_MODULE) {
		json_decref(args);
		pr_warn("export: event %" PRId64 " of an unknown locus %" PRId64, e->id, e->locus);
		return -EBADMSG;
	}
	l = &t->s.loci[i];
	if (args && e->has_bytes)
		json_object_set_new(args, "bytes", json_integer((json_int_t)e->bytes));
	if (args && e->has_peer)
		json_object_set_new(args, "peer", json_integer(e->peer));
	ev = json_pack("{s:o, s:s, s:s, s:f, s:f, s:I, s:I, s:o}", "name", json_text(e->name),
		       "cat", "mpi", "ph", "X", "ts", (double)(e->start_ns - t->t0_ns) / 1000.0,
		       "dur", (double)e->duration_ns / 1000.0, "pid", locus_pid(l), "tid",
		       (json_int_t)l->tid, "args", args);
	return add(t, ev);
}

static int count_mpi_locus(const struct pivot_mpi_locus *l, void *ctx)
{
	(void)l;
	((struct trace *)ctx)->mpi_loci++;
	return 0;
}

/* the instant event saying why there is no Event */
static int no_events(struct trace *t, struct pivot *p, const char **reason)
{
	int err = pivot_for_each_mpi_locus(p, count_mpi_locus, t);

	if (err)
		return err;
	*reason = t->mpi_loci ? no_events_option : no_mpi;
	return add(t, json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:{s:s}}", "name",
				"no MPI Event", "cat", "nunatak", "ph", "i", "s", "g", "ts", 0,
				"pid", t->s.n_loci ? locus_pid(&t->s.loci[0]) : 0, "tid",
				t->s.n_loci ? (json_int_t)t->s.loci[0].tid : 0, "args", "reason",
				*reason));
}

static int write_doc(struct trace *t, const json_t *manifest, FILE *out)
{
	const char *run =
	    json_string_value(json_object_get(json_object_get(manifest, "run"), "name"));
	json_t *t0 = t->n ? json_integer(t->t0_ns) : json_null(); /* null: no Event */
	json_t *doc =
	    json_pack("{s:O, s:s, s:{s:o, s:s, s:o}}", "traceEvents", t->events, "displayTimeUnit",
		      "ms", "otherData", "run", json_text(run), "clock",
		      "CLOCK_MONOTONIC of each node, from the earliest Event (t0_ns)", "t0_ns", t0);
	int err = 0;

	if (!doc)
		return -ENOMEM;
	errno = 0;
	if (json_dumpf(doc, out, JSON_COMPACT) || fputc('\n', out) == EOF || fflush(out) ||
	    ferror(out))
		err = errno ? -errno : -EIO;
	json_decref(doc);
	return err;
}

int export_chrome_trace(struct pivot *p, const json_t *manifest, FILE *out,
			struct export_chrome_trace_stats *stats)
{
	struct export_chrome_trace_stats st = {0};
	struct trace t = {0};
	int err;

	if (!p || !out)
		return -EINVAL;
	err = export_stacks_load_loci(&t.s, p);
	if (err)
		return err;
	t.events = json_array();
	err = t.events ? metadata(&t) : -ENOMEM;
	err = err ?: pivot_for_each_event(p, earliest, &t);
	if (!err && t.n)
		err = pivot_for_each_event(p, add_event, &t);
	else if (!err)
		err = no_events(&t, p, &st.reason);
	err = err ?: write_doc(&t, manifest, out);
	st.events = t.n;
	st.loci = t.s.n_loci;
	if (stats)
		*stats = st;
	json_decref(t.events);
	export_stacks_release(&t.s);
	return err;
}
