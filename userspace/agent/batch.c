/* batch — see batch.h. */
#include <errno.h>
#include <math.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/batch.h"
#include "userspace/agent/modules.h"

/* growable array of message pointers */
struct ptr_vec {
	void **items;
	size_t n, cap;
};

struct locus_entry {
	pid_t tgid, tid;
	uint32_t index;
};

struct stack_entry {
	int depth;
	int truncated;
	const uint32_t *module_index;
	const uint64_t *offsets;
	uint32_t index;
};

/* a pseudo module's symbol offset, unique by (module, offset) in the Batch */
struct symbol_entry {
	uint32_t module;
	uint64_t offset;
};

struct batch_builder {
	wire_envelope env;
	Nunatak__Wire__Batch batch;
	struct ptr_vec modules, loci, stacks, samples, degradations, counters, exits;
	struct ptr_vec mpi_sites, mpi_processes, mpi_events;
	struct ptr_vec component_lists[BATCH_COMPONENT_LISTS]; /* batch_components.c */
	struct ptr_vec owned; /* every other allocation, freed at the end */
	void *locus_tree, *stack_tree, *symbol_tree;
	uint64_t seq;
	/* tags the modules indexed by this builder: unique per builder, not
	 * the seq, which a Batch rebuilt after a failed send reuses */
	uint64_t generation;
};

static int vec_push(struct ptr_vec *v, void *item)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 32;
		void **items = realloc(v->items, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		v->items = items;
		v->cap = cap;
	}
	v->items[v->n++] = item;
	return 0;
}

static void *owned_alloc(struct batch_builder *b, size_t size)
{
	void *p = calloc(1, size ? size : 1);

	if (p && vec_push(&b->owned, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static char *owned_strdup(struct batch_builder *b, const char *s)
{
	char *p = owned_alloc(b, strlen(s) + 1);

	if (p)
		strcpy(p, s);
	return p;
}

/* builders made so far: each tags the modules it indexes with its number */
static uint64_t generations;

struct batch_builder *batch_builder__new(const char *run_id, const char *node, uint64_t seq)
{
	struct batch_builder *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	nunatak__wire__envelope__init(&b->env);
	nunatak__wire__batch__init(&b->batch);
	b->env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_BATCH;
	b->env.batch = &b->batch;
	b->seq = seq;
	b->generation = ++generations; /* never 0, which a new module holds */
	b->batch.seq = seq;
	b->batch.run_id = owned_strdup(b, run_id);
	b->batch.node = owned_strdup(b, node);
	if (!b->batch.run_id || !b->batch.node) {
		batch_builder__free(b);
		errno = ENOMEM;
		return NULL;
	}
	return b;
}

static void vec_free(struct ptr_vec *v)
{
	free(v->items);
}

static void tree_noop(void *p)
{
	(void)p;
}

void batch_builder__free(struct batch_builder *b)
{
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->modules.n; i++) /* grown by module_add_symbol() */
		free(((Nunatak__Wire__Module *)b->modules.items[i])->symbols);
	for (i = 0; i < b->owned.n; i++)
		free(b->owned.items[i]);
	tdestroy(b->locus_tree, tree_noop);
	tdestroy(b->stack_tree, tree_noop);
	tdestroy(b->symbol_tree, tree_noop);
	vec_free(&b->owned);
	vec_free(&b->modules);
	vec_free(&b->loci);
	vec_free(&b->stacks);
	vec_free(&b->samples);
	vec_free(&b->degradations);
	vec_free(&b->counters);
	vec_free(&b->exits);
	vec_free(&b->mpi_sites);
	vec_free(&b->mpi_processes);
	vec_free(&b->mpi_events);
	for (i = 0; i < BATCH_COMPONENT_LISTS; i++)
		vec_free(&b->component_lists[i]);
	free(b);
}

static int module_index(struct batch_builder *b, struct module *m, uint32_t *index)
{
	Nunatak__Wire__Module *wm;

	if (m->batch_seq == b->generation) {
		*index = m->index;
		return 0;
	}
	wm = owned_alloc(b, sizeof(*wm));
	if (!wm)
		return -ENOMEM;
	nunatak__wire__module__init(wm);
	wm->identity = m->identity;
	wm->path = m->path;
	wm->display_name = m->display_name;
	wm->has_build_id = m->has_build_id;
	if (vec_push(&b->modules, wm))
		return -ENOMEM;
	m->index = b->modules.n - 1;
	m->batch_seq = b->generation;
	*index = m->index;
	return 0;
}

static int locus_cmp(const void *a, const void *b)
{
	const struct locus_entry *la = a, *lb = b;

	if (la->tgid != lb->tgid)
		return (la->tgid > lb->tgid) - (la->tgid < lb->tgid);
	return (la->tid > lb->tid) - (la->tid < lb->tid);
}

static int locus_index(struct batch_builder *b, const struct batch_locus *l, uint32_t *index)
{
	struct locus_entry key = { .tgid = l->tgid, .tid = l->tid }, *e;
	Nunatak__Wire__Locus *wl;
	void *node;

	node = tfind(&key, &b->locus_tree, locus_cmp);
	if (node) {
		*index = (*(struct locus_entry **)node)->index;
		return 0;
	}
	e = owned_alloc(b, sizeof(*e));
	wl = owned_alloc(b, sizeof(*wl));
	if (!e || !wl)
		return -ENOMEM;
	nunatak__wire__locus__init(wl);
	wl->node = b->batch.node;
	wl->tgid = (uint32_t)l->tgid;
	wl->tid = (uint32_t)l->tid;
	if (l->comm && !(wl->comm = owned_strdup(b, l->comm)))
		return -ENOMEM;
	if (l->exe && !(wl->exe = owned_strdup(b, l->exe)))
		return -ENOMEM;
	if (l->has_rank) {
		wl->has_rank = 1;
		wl->rank = l->rank;
		if (l->world_size >= 0) {
			wl->has_world_size = 1;
			wl->world_size = l->world_size;
		}
	}
	if (vec_push(&b->loci, wl))
		return -ENOMEM;
	*e = key;
	e->index = b->loci.n - 1;
	if (!tsearch(e, &b->locus_tree, locus_cmp))
		return -ENOMEM;
	*index = e->index;
	return 0;
}

static int stack_cmp(const void *a, const void *b)
{
	const struct stack_entry *sa = a, *sb = b;
	int i;

	if (sa->depth != sb->depth)
		return sa->depth - sb->depth;
	if (sa->truncated != sb->truncated)
		return sa->truncated - sb->truncated;
	for (i = 0; i < sa->depth; i++) {
		if (sa->module_index[i] != sb->module_index[i])
			return sa->module_index[i] < sb->module_index[i] ? -1 : 1;
		if (sa->offsets[i] != sb->offsets[i])
			return sa->offsets[i] < sb->offsets[i] ? -1 : 1;
	}
	return 0;
}

static int stack_index(struct batch_builder *b, struct module *const *modules,
		       const uint64_t *offsets, int depth, int truncated, uint32_t *index)
{
	uint32_t *mods = owned_alloc(b, depth * sizeof(*mods));
	uint64_t *offs = owned_alloc(b, depth * sizeof(*offs));
	struct stack_entry key, *e;
	Nunatak__Wire__Stack *ws;
	Nunatak__Wire__Address **addrs;
	void *node;
	int i, err;

	if (!mods || !offs)
		return -ENOMEM;
	for (i = 0; i < depth; i++) {
		err = module_index(b, modules[i], &mods[i]);
		if (err)
			return err;
		offs[i] = offsets[i];
	}
	key = (struct stack_entry){ depth, truncated, mods, offs, 0 };
	node = tfind(&key, &b->stack_tree, stack_cmp);
	if (node) {
		*index = (*(struct stack_entry **)node)->index;
		return 0;
	}
	e = owned_alloc(b, sizeof(*e));
	ws = owned_alloc(b, sizeof(*ws));
	addrs = owned_alloc(b, depth * sizeof(*addrs));
	if (!e || !ws || !addrs)
		return -ENOMEM;
	nunatak__wire__stack__init(ws);
	for (i = 0; i < depth; i++) {
		addrs[i] = owned_alloc(b, sizeof(**addrs));
		if (!addrs[i])
			return -ENOMEM;
		nunatak__wire__address__init(addrs[i]);
		addrs[i]->module = mods[i];
		addrs[i]->offset = offs[i];
	}
	ws->n_frames = depth;
	ws->frames = addrs;
	ws->truncated = truncated;
	if (vec_push(&b->stacks, ws))
		return -ENOMEM;
	*e = key;
	e->index = b->stacks.n - 1;
	if (!tsearch(e, &b->stack_tree, stack_cmp))
		return -ENOMEM;
	*index = e->index;
	return 0;
}

int batch_builder_add_sample(struct batch_builder *b, const struct batch_locus *locus,
			     struct module *const *modules, const uint64_t *offsets, int depth,
			     int truncated, int in_kernel, const char *counter, uint64_t samples,
			     uint64_t value)
{
	Nunatak__Wire__SampleCount *sc;
	uint32_t li, si;
	int err;

	if (depth < 1)
		return -EINVAL;
	err = locus_index(b, locus, &li);
	if (!err)
		err = stack_index(b, modules, offsets, depth, truncated, &si);
	if (err)
		return err;
	sc = owned_alloc(b, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	nunatak__wire__sample_count__init(sc);
	sc->locus = li;
	sc->stack = si;
	sc->counter = (char *)counter; /* static string */
	sc->sample_count = samples;
	sc->value = value;
	sc->in_kernel = in_kernel;
	return vec_push(&b->samples, sc);
}

static int symbol_cmp(const void *a, const void *b)
{
	const struct symbol_entry *x = a, *y = b;

	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Appends ws to wm's symbols: the array grows to the next power of two,
 * its capacity is implied by n_symbols. 0 or -ENOMEM. */
static int module_add_symbol(Nunatak__Wire__Module *wm, Nunatak__Wire__Symbol *ws)
{
	size_t n = wm->n_symbols;
	Nunatak__Wire__Symbol **grown;

	if ((n & (n - 1)) == 0) { /* 0 or a power of two: full */
		grown = reallocarray(wm->symbols, n ? 2 * n : 1, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		wm->symbols = grown;
	}
	wm->symbols[wm->n_symbols++] = ws;
	return 0;
}

int batch_builder_add_module_symbol(struct batch_builder *b, struct module *m, uint64_t offset,
				    uint64_t size, const char *name)
{
	struct symbol_entry key = {.offset = offset}, *e;
	Nunatak__Wire__Symbol *ws;
	int err;

	if (!m || !name || !size)
		return -EINVAL;
	err = module_index(b, m, &key.module);
	if (err)
		return err;
	if (tfind(&key, &b->symbol_tree, symbol_cmp))
		return 0;
	e = owned_alloc(b, sizeof(*e));
	ws = owned_alloc(b, sizeof(*ws));
	if (!e || !ws)
		return -ENOMEM;
	nunatak__wire__symbol__init(ws);
	ws->offset = offset;
	ws->size = size;
	ws->name = owned_strdup(b, name);
	if (!ws->name)
		return -ENOMEM;
	*e = key;
	if (!tsearch(e, &b->symbol_tree, symbol_cmp))
		return -ENOMEM;
	err = module_add_symbol(b->modules.items[key.module], ws);
	if (err)
		tdelete(e, &b->symbol_tree, symbol_cmp);
	return err;
}

int batch_builder_add_exit(struct batch_builder *b, const struct batch_locus *locus,
			   const Nunatak__Wire__ProcessExit *exit_template)
{
	Nunatak__Wire__ProcessExit *pe;
	uint32_t li;
	int err;

	err = locus_index(b, locus, &li);
	if (err)
		return err;
	pe = owned_alloc(b, sizeof(*pe));
	if (!pe)
		return -ENOMEM;
	*pe = *exit_template;
	pe->locus = li;
	return vec_push(&b->exits, pe);
}

int batch_builder_add_degradation(struct batch_builder *b, const char *name, const char *message,
				  const char *remedy)
{
	Nunatak__Wire__Degradation *d = owned_alloc(b, sizeof(*d));

	if (!d)
		return -ENOMEM;
	nunatak__wire__degradation__init(d);
	d->name = owned_strdup(b, name);
	d->message = owned_strdup(b, message);
	d->remedy = owned_strdup(b, remedy);
	if (!d->name || !d->message || !d->remedy)
		return -ENOMEM;
	return vec_push(&b->degradations, d);
}

int batch_builder_add_counter(struct batch_builder *b, const char *name, uint64_t value)
{
	Nunatak__Wire__Counter *c = owned_alloc(b, sizeof(*c));

	if (!c)
		return -ENOMEM;
	nunatak__wire__counter__init(c);
	c->name = owned_strdup(b, name);
	if (!c->name)
		return -ENOMEM;
	c->value = value;
	return vec_push(&b->counters, c);
}

int batch_builder_add_mpi_site(struct batch_builder *b, const struct batch_locus *locus,
			       const struct batch_mpi_site *site)
{
	Nunatak__Wire__MpiCallSite *ms;
	Nunatak__Wire__Address *addr;
	uint32_t li, mi;
	int err;

	err = locus_index(b, locus, &li);
	err = err ?: module_index(b, site->module, &mi);
	if (err)
		return err;
	ms = owned_alloc(b, sizeof(*ms));
	addr = owned_alloc(b, sizeof(*addr));
	if (!ms || !addr)
		return -ENOMEM;
	nunatak__wire__mpi_call_site__init(ms);
	nunatak__wire__address__init(addr);
	addr->module = mi;
	addr->offset = site->offset;
	ms->locus = li;
	ms->function = (char *)site->function; /* static string */
	ms->call_site = addr;
	ms->calls = site->calls;
	ms->total_ns = site->total_ns;
	ms->min_ns = site->min_ns;
	ms->max_ns = site->max_ns;
	ms->sends = site->sends;
	if (site->bytes_reason) {
		ms->bytes_reason = owned_strdup(b, site->bytes_reason);
		if (!ms->bytes_reason)
			return -ENOMEM;
	} else {
		ms->has_bytes = 1;
		ms->bytes = site->bytes;
	}
	if (site->estimate) {
		ms->estimate = owned_strdup(b, site->estimate);
		if (!ms->estimate)
			return -ENOMEM;
		ms->has_calls_error = 1;
		ms->calls_error = site->calls_error;
		ms->has_total_ns_error = 1;
		ms->total_ns_error = site->total_ns_error;
	}
	return vec_push(&b->mpi_sites, ms);
}

int batch_builder_add_mpi_process(struct batch_builder *b, const struct batch_locus *locus,
				  const struct batch_mpi_process *proc)
{
	Nunatak__Wire__MpiProcess *mp;
	uint32_t li;
	int err;

	err = locus_index(b, locus, &li);
	if (err)
		return err;
	mp = owned_alloc(b, sizeof(*mp));
	if (!mp)
		return -ENOMEM;
	nunatak__wire__mpi_process__init(mp);
	mp->locus = li;
	mp->has_init_end_ns = proc->init_end_ns != 0;
	mp->init_end_ns = proc->init_end_ns;
	mp->has_finalize_start_ns = proc->finalize_start_ns != 0;
	mp->finalize_start_ns = proc->finalize_start_ns;
	mp->has_last_seen_ns = proc->last_seen_ns != 0;
	mp->last_seen_ns = proc->last_seen_ns;
	mp->has_probe_cost_ns = proc->probe_cost_ns != 0;
	mp->probe_cost_ns = proc->probe_cost_ns;
	mp->has_probe_cost_in_window_ns = proc->probe_cost_ns != 0;
	mp->probe_cost_in_window_ns = proc->probe_cost_in_window_ns;
	mp->has_probed_calls = 1;
	mp->probed_calls = proc->probed_calls;
	if (!proc->probe_cost_ns && proc->probe_cost_reason) {
		mp->probe_cost_reason = owned_strdup(b, proc->probe_cost_reason);
		if (!mp->probe_cost_reason)
			return -ENOMEM;
	}
	mp->has_probe_budget = !isnan(proc->probe_budget);
	mp->probe_budget = mp->has_probe_budget ? proc->probe_budget : 0;
	if (proc->probing) {
		mp->probing = owned_strdup(b, proc->probing);
		if (!mp->probing)
			return -ENOMEM;
	}
	return vec_push(&b->mpi_processes, mp);
}

int batch_builder_add_mpi_event(struct batch_builder *b, const struct batch_locus *locus,
				const char *function, uint64_t start_ns, uint64_t duration_ns,
				int has_bytes, uint64_t bytes, int peer)
{
	Nunatak__Wire__MpiEvent *me;
	uint32_t li;
	int err;

	err = locus_index(b, locus, &li);
	if (err)
		return err;
	me = owned_alloc(b, sizeof(*me));
	if (!me)
		return -ENOMEM;
	nunatak__wire__mpi_event__init(me);
	me->locus = li;
	me->function = (char *)function; /* static string */
	me->start_ns = start_ns;
	me->duration_ns = duration_ns;
	me->has_bytes = has_bytes;
	me->bytes = bytes;
	me->has_peer = peer >= 0;
	me->peer = peer;
	return vec_push(&b->mpi_events, me);
}

int batch_builder_locus(struct batch_builder *b, const struct batch_locus *l, uint32_t *index)
{
	return locus_index(b, l, index);
}

void *batch_builder_alloc(struct batch_builder *b, size_t size)
{
	return owned_alloc(b, size);
}

char *batch_builder_strdup(struct batch_builder *b, const char *s)
{
	return owned_strdup(b, s);
}

int batch_builder_push_component(struct batch_builder *b, enum batch_component_list list,
				 void *msg, uint32_t *index)
{
	struct ptr_vec *v = &b->component_lists[list];

	if (index)
		*index = (uint32_t)v->n;
	return vec_push(v, msg);
}

size_t batch_builder_samples(const struct batch_builder *b)
{
	return b->samples.n;
}

wire_envelope *batch_builder_envelope(struct batch_builder *b)
{
	b->batch.n_modules = b->modules.n;
	b->batch.modules = (Nunatak__Wire__Module **)b->modules.items;
	b->batch.n_loci = b->loci.n;
	b->batch.loci = (Nunatak__Wire__Locus **)b->loci.items;
	b->batch.n_stacks = b->stacks.n;
	b->batch.stacks = (Nunatak__Wire__Stack **)b->stacks.items;
	b->batch.n_samples = b->samples.n;
	b->batch.samples = (Nunatak__Wire__SampleCount **)b->samples.items;
	b->batch.n_degradations = b->degradations.n;
	b->batch.degradations = (Nunatak__Wire__Degradation **)b->degradations.items;
	b->batch.n_counters = b->counters.n;
	b->batch.counters = (Nunatak__Wire__Counter **)b->counters.items;
	b->batch.n_exits = b->exits.n;
	b->batch.exits = (Nunatak__Wire__ProcessExit **)b->exits.items;
	b->batch.n_mpi_call_sites = b->mpi_sites.n;
	b->batch.mpi_call_sites = (Nunatak__Wire__MpiCallSite **)b->mpi_sites.items;
	b->batch.n_mpi_processes = b->mpi_processes.n;
	b->batch.mpi_processes = (Nunatak__Wire__MpiProcess **)b->mpi_processes.items;
	b->batch.n_mpi_events = b->mpi_events.n;
	b->batch.mpi_events = (Nunatak__Wire__MpiEvent **)b->mpi_events.items;
	b->batch.n_components = b->component_lists[BATCH_COMPONENTS].n;
	b->batch.components = (Nunatak__Wire__Component **)b->component_lists[BATCH_COMPONENTS].items;
	b->batch.n_component_costs = b->component_lists[BATCH_COMPONENT_COSTS].n;
	b->batch.component_costs =
	    (Nunatak__Wire__ComponentCost **)b->component_lists[BATCH_COMPONENT_COSTS].items;
	b->batch.n_steps = b->component_lists[BATCH_STEPS].n;
	b->batch.steps = (Nunatak__Wire__Step **)b->component_lists[BATCH_STEPS].items;
	return &b->env;
}
