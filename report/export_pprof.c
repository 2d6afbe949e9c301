/* export_pprof — see export_pprof.h */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zlib.h>

#include "report/export_pprof.h"
#include "report/export_stacks.h"
#include "report/pprof/profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

#define N_LABELS 5 /* rank, pid, tid, thread, node */

/* The profile being built: every message in arrays owned here, the
 * strings borrowed from the export_stacks (or static). */
struct pprof {
	Profile prof;
	ValueType types[2], period_type;
	ValueType *type_ptrs[2];
	/* string table, interned by an open-addressing table */
	char **strs;
	size_t n_strs, cap_strs;
	size_t *str_slots, n_str_slots;
	/* per module: its Mapping id (0: none), per frame its Location id */
	uint64_t *mapping_of;
	Mapping *mappings;
	Mapping **mapping_ptrs;
	Location *locations;
	Location **location_ptrs;
	Line *lines;
	Line **line_ptrs;
	Function *functions;
	Function **function_ptrs;
	size_t *fn_slots, n_fn_slots;
	/* per Stack its location ids leaf first, per Locus its labels */
	uint64_t **stack_locations;
	Label *labels;
	Label **label_ptrs;
	char (*rank_text)[16]; /* per Locus, its rank label's string */
	size_t *n_labels;
	Sample *samples;
	Sample **sample_ptrs;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int str_rehash(struct pprof *b)
{
	size_t n = b->n_str_slots ? 2 * b->n_str_slots : 1024, i, k;
	size_t *slots = malloc(n * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, n * sizeof(*slots));
	for (i = 0; i < b->n_strs; i++) {
		for (k = str_hash(b->strs[i]) & (n - 1); slots[k] != SIZE_MAX;
		     k = (k + 1) & (n - 1))
			;
		slots[k] = i;
	}
	free(b->str_slots);
	b->str_slots = slots;
	b->n_str_slots = n;
	return 0;
}

/* the string table index of s (borrowed: it must outlive the profile);
 * -ENOMEM */
static int64_t str_index(struct pprof *b, const char *s)
{
	size_t k;

	if (!s)
		s = "";
	if (2 * (b->n_strs + 1) > b->n_str_slots && str_rehash(b))
		return -ENOMEM;
	for (k = str_hash(s) & (b->n_str_slots - 1); b->str_slots[k] != SIZE_MAX;
	     k = (k + 1) & (b->n_str_slots - 1))
		if (!strcmp(b->strs[b->str_slots[k]], s))
			return (int64_t)b->str_slots[k];
	if (b->n_strs == b->cap_strs) {
		size_t cap = b->cap_strs ? 2 * b->cap_strs : 256;
		char **a = reallocarray(b->strs, cap, sizeof(*a));

		if (!a)
			return -ENOMEM;
		b->strs = a;
		b->cap_strs = cap;
	}
	b->strs[b->n_strs] = (char *)s;
	b->str_slots[k] = b->n_strs;
	return (int64_t)b->n_strs++;
}

/* the Function id of (name, filename), added when new; 0 on ENOMEM */
static uint64_t function_id(struct pprof *b, const char *name, const char *file)
{
	int64_t n = str_index(b, name), f = str_index(b, file);
	size_t k, mask = b->n_fn_slots - 1;
	Function *fn;

	if (n < 0 || f < 0)
		return 0;
	for (k = (uint64_t)(n * 31 + f) * 0x9e3779b97f4a7c15ull >> 20 & mask;
	     b->fn_slots[k] != SIZE_MAX; k = (k + 1) & mask) {
		fn = &b->functions[b->fn_slots[k]];
		if (fn->name == n && fn->filename == f)
			return fn->id;
	}
	fn = &b->functions[b->prof.n_function];
	perftools__profiles__function__init(fn);
	fn->id = b->prof.n_function + 1;
	fn->name = fn->system_name = n;
	fn->filename = f;
	b->function_ptrs[b->prof.n_function++] = fn;
	b->fn_slots[k] = fn - b->functions;
	return fn->id;
}

/* the main binary, which pprof wants as mapping[0]: the module whose path
 * is the executable of the Locus with the most samples; EXPORT_NO_MODULE
 * when none */
static size_t main_module(const struct export_stacks *s)
{
	uint64_t *per_locus = calloc(s->n_loci + 1, sizeof(*per_locus)), best = 0;
	size_t i, top = EXPORT_NO_MODULE, m = EXPORT_NO_MODULE;

	for (i = 0; per_locus && i < s->n_samples; i++)
		per_locus[s->samples[i].locus] += s->samples[i].sample_count;
	for (i = 0; per_locus && i < s->n_loci; i++)
		if (s->loci[i].exe && per_locus[i] > best) {
			best = per_locus[i];
			top = i;
		}
	for (i = 0; top != EXPORT_NO_MODULE && i < s->n_modules; i++)
		if (!strcmp(s->modules[i].path, s->loci[top].exe)) {
			m = i;
			break;
		}
	free(per_locus);
	return m;
}

/* module i's Mapping, at start in the synthetic address space */
static int add_mapping(struct pprof *b, const struct export_module *m, uint64_t start)
{
	Mapping *mp = &b->mappings[b->prof.n_mapping];
	int64_t file = str_index(b, m->path),
		build_id = str_index(b, m->has_build_id ? m->identity : "");

	if (file < 0 || build_id < 0)
		return -ENOMEM;
	perftools__profiles__mapping__init(mp);
	mp->id = b->prof.n_mapping + 1;
	mp->memory_start = start;
	mp->memory_limit = start + m->max_offset + 1;
	mp->filename = file;
	mp->build_id = build_id;
	mp->has_functions = 1;
	b->mapping_ptrs[b->prof.n_mapping++] = mp;
	return 0;
}

/* one Mapping per module with frames, the main binary first, each in a
 * range of its own of a synthetic address space, 4 KiB apart */
static int build_mappings(struct pprof *b, const struct export_stacks *s)
{
	size_t i, k, first = main_module(s);
	uint64_t start = 0x400000;

	b->mapping_of = calloc(s->n_modules + 1, sizeof(*b->mapping_of));
	b->mappings = calloc(s->n_modules + 1, sizeof(*b->mappings));
	b->mapping_ptrs = calloc(s->n_modules + 1, sizeof(*b->mapping_ptrs));
	if (!b->mapping_of || !b->mappings || !b->mapping_ptrs)
		return -ENOMEM;
	for (i = 0; i < s->n_frames; i++)
		if (s->frames[i].module != EXPORT_NO_MODULE)
			b->mapping_of[s->frames[i].module] = 1;
	for (k = 0; k <= s->n_modules; k++) {
		/* k == 0: the main binary; then the others, by id */
		i = !k ? first : k - 1;
		if (i == EXPORT_NO_MODULE || !b->mapping_of[i] || (k && i == first))
			continue;
		if (add_mapping(b, &s->modules[i], start))
			return -ENOMEM;
		b->mapping_of[i] = b->prof.n_mapping;
		start = ((b->mappings[b->prof.n_mapping - 1].memory_limit + 0xfff) & ~0xfffull) +
			0x1000;
	}
	return 0;
}

/* one Location (one Line) per frame, ids = frame index + 1 */
static int build_locations(struct pprof *b, const struct export_stacks *s)
{
	size_t i, n = s->n_frames;

	b->locations = calloc(n + 1, sizeof(*b->locations));
	b->location_ptrs = calloc(n + 1, sizeof(*b->location_ptrs));
	b->lines = calloc(n + 1, sizeof(*b->lines));
	b->line_ptrs = calloc(n + 1, sizeof(*b->line_ptrs));
	b->functions = calloc(n + 1, sizeof(*b->functions));
	b->function_ptrs = calloc(n + 1, sizeof(*b->function_ptrs));
	for (b->n_fn_slots = 64; b->n_fn_slots < 2 * (n + 1);)
		b->n_fn_slots *= 2;
	b->fn_slots = malloc(b->n_fn_slots * sizeof(*b->fn_slots));
	if (!b->locations || !b->location_ptrs || !b->lines || !b->line_ptrs || !b->functions ||
	    !b->function_ptrs || !b->fn_slots)
		return -ENOMEM;
	memset(b->fn_slots, 0xff, b->n_fn_slots * sizeof(*b->fn_slots));
	for (i = 0; i < n; i++) {
		const struct export_frame *f = &s->frames[i];
		Location *l = &b->locations[i];
		Line *ln = &b->lines[i];

		perftools__profiles__location__init(l);
		perftools__profiles__line__init(ln);
		l->id = i + 1;
		if (f->module != EXPORT_NO_MODULE) {
			Mapping *mp = &b->mappings[b->mapping_of[f->module] - 1];

			l->mapping_id = mp->id;
			l->address = mp->memory_start + f->offset;
			mp->has_filenames |= f->source_file != NULL;
			mp->has_line_numbers |= f->line > 0;
		}
		ln->function_id = function_id(b, f->name, f->source_file);
		if (!ln->function_id)
			return -ENOMEM;
		ln->line = f->line;
		b->line_ptrs[i] = ln;
		l->n_line = 1;
		l->line = &b->line_ptrs[i];
		b->location_ptrs[i] = l;
	}
	b->prof.n_location = n;
	return 0;
}

/* a Locus' labels: rank (MPI ranks only), pid, tid, thread (known comm),
 * node. The rank is a string: pprof drops a number label of 0 without a
 * unit (rank 0), and Pyroscope keeps only string labels. */
static int build_labels(struct pprof *b, const struct export_stacks *s)
{
	size_t i;

	b->labels = calloc(N_LABELS * s->n_loci + 1, sizeof(*b->labels));
	b->label_ptrs = calloc(N_LABELS * s->n_loci + 1, sizeof(*b->label_ptrs));
	b->n_labels = calloc(s->n_loci + 1, sizeof(*b->n_labels));
	b->rank_text = calloc(s->n_loci + 1, sizeof(*b->rank_text));
	if (!b->labels || !b->label_ptrs || !b->n_labels || !b->rank_text)
		return -ENOMEM;
	for (i = 0; i < s->n_loci; i++) {
		const struct export_locus *l = &s->loci[i];
		const char *keys[N_LABELS] = {"rank", "pid", "tid", "thread", "node"};
		const char *strs[N_LABELS] = {b->rank_text[i], NULL, NULL, l->comm, l->node};
		int64_t nums[N_LABELS] = {0, l->tgid, l->tid, 0, 0};
		int has[N_LABELS] = {l->has_rank, 1, 1, l->comm != NULL, 1};
		size_t k, n = 0;

		snprintf(b->rank_text[i], sizeof(b->rank_text[i]), "%d", l->rank);
		for (k = 0; k < N_LABELS; k++) {
			Label *lb = &b->labels[N_LABELS * i + n];

			if (!has[k])
				continue;
			perftools__profiles__label__init(lb);
			lb->key = str_index(b, keys[k]);
			lb->str = strs[k] ? str_index(b, strs[k]) : 0;
			lb->num = strs[k] ? 0 : nums[k];
			if (lb->key < 0 || lb->str < 0)
				return -ENOMEM;
			b->label_ptrs[N_LABELS * i + n++] = lb;
		}
		b->n_labels[i] = n;
	}
	return 0;
}

/* a Stack's location ids leaf first (its frames are root first) */
static int build_samples(struct pprof *b, const struct export_stacks *s)
{
	size_t i, k;

	b->stack_locations = calloc(s->n_stacks + 1, sizeof(*b->stack_locations));
	b->samples = calloc(s->n_samples + 1, sizeof(*b->samples));
	b->sample_ptrs = calloc(s->n_samples + 1, sizeof(*b->sample_ptrs));
	if (!b->stack_locations || !b->samples || !b->sample_ptrs)
		return -ENOMEM;
	for (i = 0; i < s->n_stacks; i++) {
		const struct export_stack *st = &s->stacks[i];

		b->stack_locations[i] = calloc(st->n_frames + 1, sizeof(uint64_t));
		if (!b->stack_locations[i])
			return -ENOMEM;
		for (k = 0; k < st->n_frames; k++)
			b->stack_locations[i][k] = st->frames[st->n_frames - 1 - k] + 1;
	}
	for (i = 0; i < s->n_samples; i++) {
		const struct export_sample *e = &s->samples[i];
		Sample *sm = &b->samples[i];

		perftools__profiles__sample__init(sm);
		sm->n_location_id = s->stacks[e->stack].n_frames;
		sm->location_id = b->stack_locations[e->stack];
		sm->n_value = 2;
		sm->value = calloc(2, sizeof(*sm->value));
		if (!sm->value)
			return -ENOMEM;
		sm->value[0] = (int64_t)e->sample_count;
		sm->value[1] = (int64_t)(e->value + 0.5);
		sm->n_label = b->n_labels[e->locus];
		sm->label = &b->label_ptrs[N_LABELS * e->locus];
		b->sample_ptrs[i] = sm;
	}
	b->prof.n_sample = s->n_samples;
	b->prof.sample = b->sample_ptrs;
	return 0;
}

/* seconds since the epoch of a manifest time "YYYY-MM-DDTHH:MM:SSZ"; 0
 * when absent or not one */
static int64_t manifest_time_s(const json_t *t)
{
	struct tm tm = {0};
	const char *s = json_string_value(t), *end;

	if (!s)
		return 0;
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return end && !*end ? (int64_t)timegm(&tm) : 0;
}

/* period from run.frequency (else the effective configuration's
 * sampling.frequency); times from the first pass' start (else the Run's
 * creation) to the last pass' end */
static void build_header(struct pprof *b, const json_t *manifest)
{
	const json_t *run = json_object_get(manifest, "run");
	const json_t *passes = json_object_get(manifest, "passes");
	const json_t *conf =
	    json_object_get(json_object_get(manifest, "provenance"), "effective_configuration");
	json_int_t hz = json_integer_value(json_object_get(run, "frequency"));
	size_t n = json_array_size(passes);
	int64_t start, end = 0;

	if (hz <= 0)
		hz = json_integer_value(
		    json_object_get(json_object_get(conf, "sampling.frequency"), "value"));
	if (hz > 0)
		b->prof.period = (int64_t)((1000000000.0 / (double)hz) + 0.5);
	start = manifest_time_s(json_object_get(json_array_get(passes, 0), "start"));
	if (n)
		end = manifest_time_s(json_object_get(json_array_get(passes, n - 1), "end"));
	if (start <= 0)
		start = manifest_time_s(json_object_get(run, "created"));
	if (start > 0) {
		b->prof.time_nanos = start * 1000000000;
		if (end >= start)
			b->prof.duration_nanos = (end - start) * 1000000000;
	}
}

static int build_types(struct pprof *b, const char *counter)
{
	int cpu = !counter || !strcmp(counter, "cpu-clock");
	const char *names[] = {
	    "samples", "count",	     cpu ? "cpu" : "cycles", cpu ? "nanoseconds" : "count",
	    "cpu",     "nanoseconds"};
	int64_t idx[6];
	size_t i;

	for (i = 0; i < 6; i++) {
		idx[i] = str_index(b, names[i]);
		if (idx[i] < 0)
			return -ENOMEM;
	}
	for (i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&b->types[i]);
		b->types[i].type = idx[2 * i];
		b->types[i].unit = idx[2 * i + 1];
		b->type_ptrs[i] = &b->types[i];
	}
	perftools__profiles__value_type__init(&b->period_type);
	b->period_type.type = idx[4];
	b->period_type.unit = idx[5];
	b->prof.n_sample_type = 2;
	b->prof.sample_type = b->type_ptrs;
	b->prof.period_type = &b->period_type;
	b->prof.default_sample_type = idx[2];
	return 0;
}

static int pprof_build(struct pprof *b, const struct export_stacks *s, const json_t *manifest)
{
	int err;

	perftools__profiles__profile__init(&b->prof);
	if (str_index(b, "") != 0) /* string_table[0] must be "" */
		return -ENOMEM;
	err = build_types(b, s->counter);
	err = err ?: build_mappings(b, s);
	err = err ?: build_locations(b, s);
	err = err ?: build_labels(b, s);
	err = err ?: build_samples(b, s);
	if (err)
		return err;
	build_header(b, manifest);
	b->prof.mapping = b->mapping_ptrs;
	b->prof.location = b->location_ptrs;
	b->prof.function = b->function_ptrs;
	b->prof.string_table = b->strs;
	b->prof.n_string_table = b->n_strs;
	return 0;
}

static void pprof_release(struct pprof *b, const struct export_stacks *s)
{
	size_t i;

	if (b->samples)
		for (i = 0; i < s->n_samples; i++)
			free(b->samples[i].value);
	if (b->stack_locations)
		for (i = 0; i < s->n_stacks; i++)
			free(b->stack_locations[i]);
	free(b->stack_locations);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->labels);
	free(b->label_ptrs);
	free(b->n_labels);
	free(b->rank_text);
	free(b->functions);
	free(b->function_ptrs);
	free(b->fn_slots);
	free(b->lines);
	free(b->line_ptrs);
	free(b->locations);
	free(b->location_ptrs);
	free(b->mappings);
	free(b->mapping_ptrs);
	free(b->mapping_of);
	free(b->strs);
	free(b->str_slots);
}

/* buf gzip-compressed to out; *written: the compressed bytes */
static int gzip_write(FILE *out, const uint8_t *buf, size_t len, uint64_t *written)
{
	unsigned char chunk[64 * 1024];
	z_stream z = {0};
	int zr, err = 0;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)buf;
	do {
		/* avail_in is 32-bit: fed in pieces */
		size_t left = len - (size_t)((const uint8_t *)z.next_in - buf);

		if (!z.avail_in && left)
			z.avail_in = left > (1u << 30) ? (1u << 30) : (uInt)left;
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, left > z.avail_in ? Z_NO_FLUSH : Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		errno = 0;
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
		    sizeof(chunk) - z.avail_out) {
			err = errno ? -errno : -EIO;
			break;
		}
		*written += sizeof(chunk) - z.avail_out;
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	if (!err && (fflush(out) || ferror(out)))
		err = errno ? -errno : -EIO;
	return err;
}

int export_pprof(struct pivot *p, const json_t *manifest, FILE *out,
		 struct export_pprof_stats *stats)
{
	struct export_stacks s;
	struct pprof b = {0};
	struct export_pprof_stats st = {0};
	uint8_t *buf = NULL;
	size_t len;
	int err;

	if (!p || !out)
		return -EINVAL;
	err = export_stacks_load(&s, p);
	if (err)
		return err;
	err = pprof_build(&b, &s, manifest);
	if (err)
		goto cleanup;
	len = perftools__profiles__profile__get_packed_size(&b.prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&b.prof, buf);
	err = gzip_write(out, buf, len, &st.bytes);
	st.counter = s.counter;
	st.samples = s.sample_count;
	st.records = b.prof.n_sample;
	st.locations = b.prof.n_location;
	st.functions = b.prof.n_function;
	st.mappings = b.prof.n_mapping;
cleanup:
	if (stats)
		*stats = st;
	free(buf);
	pprof_release(&b, &s);
	export_stacks_release(&s);
	return err;
}
