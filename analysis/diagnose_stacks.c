/* diagnose_stacks — see diagnose_stacks.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "analysis/diagnose_stacks.h"
#include "analysis/stack_class.h"
#include "userspace/launch/launcher.h"
#include "userspace/pivot/pivot.h"

/* what a Stack was, kept from the first walk for the second */
struct stack_kind {
	int64_t id, leaf_hotspot;
	enum stack_class class;
	struct hotspot_mpi_call call; /* inside MPI: samples 0, the key */
};

struct kinds {
	struct stack_kind *k;
	size_t n, cap;
	struct diagnose_stacks *st;
};

void diagnose_mpi_call_release(struct hotspot_mpi_call *c)
{
	free(c->function);
	free(c->caller);
	free(c->caller_module);
	free(c->caller_file);
}

static int dup_or_null(const char *s, char **out)
{
	*out = s ? strdup(s) : NULL;
	return s && !*out ? -ENOMEM : 0;
}

static int kind_of(const struct pivot_stack_total *s, void *ctx)
{
	struct kinds *ks = ctx;
	struct stack_classification sc;
	struct stack_kind *k;
	int err;

	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 256;

		k = reallocarray(ks->k, cap, sizeof(*k));
		if (!k)
			return -ENOMEM;
		ks->k = k;
		ks->cap = cap;
	}
	err = stack_classify(s->frames, s->n_frames, &sc);
	if (err)
		return err;
	k = &ks->k[ks->n++];
	memset(k, 0, sizeof(*k));
	k->id = s->id;
	k->class = sc.class;
	k->leaf_hotspot = s->n_frames ? s->frames[0].hotspot_id : 0;
	if (sc.class != STACK_INSIDE_MPI)
		return 0;
	k->call.function = strdup(sc.mpi_function);
	if (!k->call.function)
		return -ENOMEM;
	if (sc.call_site != STACK_CLASS_NONE) {
		const struct pivot_stack_frame *f = &s->frames[sc.call_site];

		k->call.caller_line = f->line;
		err = dup_or_null(f->hotspot, &k->call.caller);
		err = err ?: dup_or_null(f->module, &k->call.caller_module);
		err = err ?: dup_or_null(f->source_file, &k->call.caller_file);
	}
	return err;
}

static const struct stack_kind *find_kind(const struct kinds *ks, int64_t id)
{
	size_t lo = 0, hi = ks->n, mid;

	while (lo < hi) { /* walked by id: sorted */
		mid = lo + (hi - lo) / 2;
		if (ks->k[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ks->n && ks->k[lo].id == id ? &ks->k[lo] : NULL;
}

static struct hotspot_share *find_hotspot(struct diagnose_stacks *st, int64_t id)
{
	size_t i;

	for (i = 0; id && i < st->n; i++)
		if (st->all[i].id == id)
			return &st->all[i];
	return NULL;
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int same_call(const struct hotspot_mpi_call *a, const struct hotspot_mpi_call *b)
{
	return str_eq(a->function, b->function) && str_eq(a->caller, b->caller) &&
	       str_eq(a->caller_module, b->caller_module) &&
	       str_eq(a->caller_file, b->caller_file) && a->caller_line == b->caller_line;
}

static int add_call(struct hotspot_share *h, const struct hotspot_mpi_call *key, uint64_t n,
		    double value)
{
	struct hotspot_mpi_call *c;
	size_t i;
	int err;

	h->mpi_samples += n;
	h->mpi_value += value;
	for (i = 0; i < h->n_mpi_calls; i++)
		if (same_call(&h->mpi_calls[i], key)) {
			h->mpi_calls[i].samples += n;
			h->mpi_calls[i].value += value;
			return 0;
		}
	c = reallocarray(h->mpi_calls, h->n_mpi_calls + 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	h->mpi_calls = c;
	c = &c[h->n_mpi_calls++];
	memset(c, 0, sizeof(*c));
	c->samples = n;
	c->value = value;
	c->caller_line = key->caller_line;
	err = dup_or_null(key->function, &c->function);
	err = err ?: dup_or_null(key->caller, &c->caller);
	err = err ?: dup_or_null(key->caller_module, &c->caller_module);
	return err ?: dup_or_null(key->caller_file, &c->caller_file);
}

static void take_probe(struct diagnose_stacks *st, struct hotspot_share *h, uint64_t n,
		       double value)
{
	n = n < h->samples ? n : h->samples;
	value = value < h->value ? value : h->value;
	h->samples -= n;
	h->value -= value;
	if (h->unresolved_module && h->unresolved_module <= st->n_mods) {
		struct unresolved_module *m = &st->mods[h->unresolved_module - 1];

		m->samples -= n < m->samples ? n : m->samples;
		m->share -= value < m->share ? value : m->share; /* the value still */
	}
	st->probe_samples += n;
	st->probe_value += value;
}

static int account(int64_t stack, const char *comm, uint64_t n, double value, void *ctx)
{
	struct kinds *ks = ctx;
	const struct stack_kind *k = find_kind(ks, stack);
	struct hotspot_share *h;

	if (!k || k->class == STACK_APPLICATION || (comm && launcher_is_launcher_process(comm)))
		return 0;
	h = find_hotspot(ks->st, k->leaf_hotspot);
	if (!h) /* a leaf without a Hotspot: in no Measurement */
		return 0;
	if (k->class == STACK_PROBE) {
		take_probe(ks->st, h, n, value);
		return 0;
	}
	return add_call(h, &k->call, n, value);
}

static int by_samples(const void *a, const void *b)
{
	const struct hotspot_mpi_call *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->function, y->function);
}

/* drops the Hotspots left empty, sorts each split */
static void settle(struct diagnose_stacks *st)
{
	size_t i, k = 0;

	for (i = 0; i < st->n; i++) {
		struct hotspot_share *h = &st->all[i];

		if (!h->samples && h->value <= 0) {
			free(h->name);
			free(h->module);
			free(h->source_file);
			free(h->resolution_level);
			for (size_t j = 0; j < h->n_mpi_calls; j++)
				diagnose_mpi_call_release(&h->mpi_calls[j]);
			free(h->mpi_calls);
			continue;
		}
		if (h->n_mpi_calls > 1)
			qsort(h->mpi_calls, h->n_mpi_calls, sizeof(*h->mpi_calls), by_samples);
		st->all[k++] = *h;
	}
	st->n = k;
}

int diagnose_stacks(struct pivot *p, const char *counter, struct diagnose_stacks *st)
{
	struct kinds ks = {.st = st};
	size_t i;
	int err;

	err = pivot_for_each_stack_total(p, counter, kind_of, &ks);
	err = err ?: pivot_for_each_stack_comm(p, counter, account, &ks);
	if (!err)
		settle(st);
	for (i = 0; i < ks.n; i++)
		diagnose_mpi_call_release(&ks.k[i].call);
	free(ks.k);
	return err;
}
