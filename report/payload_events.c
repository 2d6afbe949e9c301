/* payload_events — the MPI Events of the payload (payload.h).
 *
 * events: {available, reason (why none), t0_ns (the earliest start),
 * names[], events[[locus index, name index, start_ns - t0_ns, duration_ns,
 * bytes|null, peer|null]] by start, limit null | {events, of, reason}}.
 * Starts are each node's CLOCK_MONOTONIC: the ranks of one node compare,
 * those of different nodes are only aligned on their own earliest Event.
 * At most PAYLOAD_MAX_EVENTS are kept, the earliest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/payload.h"
#include "userspace/log/json_text.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_read_loci.h"

#define NO_EVENTS_MPI                                                                              \
	"no MPI Event was recorded: the Run was made without --mpi-events ('nunatak run "        \
	"--mpi-events -- mpirun ...' records each MPI call)"
#define NO_EVENTS_RANKS "the Run has no MPI rank, so no MPI Event"

struct event {
	int64_t start_ns, duration_ns, peer;
	uint64_t bytes;
	uint32_t locus, name;
	int has_bytes, has_peer;
};

struct events {
	struct event *e;
	size_t n, cap;
	int64_t *loci_id; /* by id: a Locus' index in the payload's loci */
	size_t n_loci;
	int ranks; /* a Locus has a rank */
	json_t *names, *name_index;
};

static int locus_id(const struct pivot_locus *l, void *ctx)
{
	struct events *ev = ctx;
	int64_t *a = reallocarray(ev->loci_id, ev->n_loci + 1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	ev->loci_id = a;
	a[ev->n_loci++] = l->id;
	ev->ranks |= l->has_rank;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* the index of name in ev->names, added when new: 0 or -ENOMEM */
static int name_index(struct events *ev, const char *name, uint32_t *out)
{
	json_t *s = json_text(name), *at;

	if (!s)
		return -ENOMEM;
	at = json_object_get(ev->name_index, json_string_value(s));
	if (at) {
		*out = (uint32_t)json_integer_value(at);
		json_decref(s);
		return 0;
	}
	*out = (uint32_t)json_array_size(ev->names);
	if (json_object_set_new(ev->name_index, json_string_value(s), json_integer(*out)) ||
	    json_array_append_new(ev->names, s))
		return -ENOMEM;
	return 0;
}

static int event_add(const struct pivot_event *e, void *ctx)
{
	struct events *ev = ctx;
	int64_t *li = ev->n_loci ? bsearch(&e->locus, ev->loci_id, ev->n_loci, sizeof(int64_t),
					   cmp_id)
				 : NULL;
	struct event *x;

	if (!li)
		return 0; /* a foreign key holds: never */
	if (ev->n == ev->cap) {
		size_t cap = ev->cap ? 2 * ev->cap : 4096;
		struct event *a = reallocarray(ev->e, cap, sizeof(*a));

		if (!a)
			return -ENOMEM;
		ev->e = a;
		ev->cap = cap;
	}
	x = &ev->e[ev->n];
	*x = (struct event){e->start_ns, e->duration_ns, e->peer, e->bytes, (uint32_t)(li - ev->loci_id),
			    0, e->has_bytes, e->has_peer};
	ev->n++;
	return name_index(ev, e->name, &x->name);
}

static int by_start(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->locus < y->locus ? -1 : x->locus > y->locus;
}

static json_t *rows_json(const struct events *ev, size_t kept, int64_t t0)
{
	json_t *rows = json_array(), *r;
	size_t i;

	for (i = 0; rows && i < kept; i++) {
		const struct event *e = &ev->e[i];

		r = json_pack("[i, i, I, I, o, o]", (int)e->locus, (int)e->name,
			      (json_int_t)(e->start_ns - t0), (json_int_t)e->duration_ns,
			      e->has_bytes ? json_integer((json_int_t)e->bytes) : json_null(),
			      e->has_peer ? json_integer(e->peer) : json_null());
		if (!r || json_array_append_new(rows, r))
			rows = (json_decref(rows), NULL);
	}
	return rows;
}

static json_t *limit_json(size_t kept, size_t of)
{
	char reason[160];

	if (kept == of)
		return json_null();
	snprintf(reason, sizeof(reason),
		 "the earliest %d Events are kept: the page stays small enough to open",
		 PAYLOAD_MAX_EVENTS);
	return json_pack("{s:I, s:I, s:s}", "events", (json_int_t)kept, "of", (json_int_t)of,
			 "reason", reason);
}

json_t *payload_events_json(struct pivot *p)
{
	struct events ev = {0};
	json_t *o = NULL;
	size_t kept;
	int64_t t0;
	int err = -ENOMEM;

	ev.names = json_array();
	ev.name_index = json_object();
	if (!ev.names || !ev.name_index)
		goto out;
	err = p ? pivot_for_each_locus(p, locus_id, &ev) : 0;
	err = err ?: p ? pivot_for_each_event(p, event_add, &ev) : 0;
	if (err)
		goto out;
	if (ev.n)
		qsort(ev.e, ev.n, sizeof(*ev.e), by_start);
	kept = ev.n < PAYLOAD_MAX_EVENTS ? ev.n : PAYLOAD_MAX_EVENTS;
	t0 = ev.n ? ev.e[0].start_ns : 0;
	o = json_pack("{s:b, s:o, s:o, s:O, s:o, s:o}", "available", ev.n > 0, "reason",
		      ev.n ? json_null() : json_string(ev.ranks ? NO_EVENTS_MPI : NO_EVENTS_RANKS),
		      "t0_ns", ev.n ? json_integer(t0) : json_null(), "names", ev.names, "events",
		      rows_json(&ev, kept, t0), "limit", limit_json(kept, ev.n));
	err = o ? 0 : -ENOMEM;
out:
	free(ev.e);
	free(ev.loci_id);
	json_decref(ev.names);
	json_decref(ev.name_index);
	if (err)
		errno = -err;
	return o;
}
