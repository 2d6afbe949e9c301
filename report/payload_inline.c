/* payload_inline — each Hotspot's inline chains for the payload
 * (payload.h): the frames the debug information gives for its sampled
 * leaf addresses when code of other functions was inlined there (two
 * frames or more), outermost first ({function, file, line}), the
 * addresses with the same chain summed, by decreasing samples, at most
 * PAYLOAD_MAX_INLINE. Samples are those of the diagnosis' counter. The
 * pivot has no reader for these rows (`frames`), so the query is here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "analysis/diagnose.h"
#include "report/payload.h"
#include "report/run_model.h"
#include "userspace/log/json_text.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

/* the leaf addresses sampled, with their inline frames outermost first */
static const char leaf_frames_sql[] =
	"WITH leaf AS (SELECT sf.address AS address, sum(s.sample_count) AS n FROM samples s"
	" JOIN stack_frames sf ON sf.stack = s.stack AND sf.position = 0 WHERE s.counter = ?1"
	" GROUP BY sf.address)"
	" SELECT a.hotspot, leaf.address, leaf.n, f.function, f.file, f.line FROM leaf"
	" JOIN addresses a ON a.id = leaf.address JOIN frames f ON f.address = leaf.address"
	" WHERE a.hotspot IS NOT NULL"
	" AND (SELECT count(*) FROM frames g WHERE g.address = leaf.address) > 1"
	" ORDER BY a.hotspot, leaf.address, f.depth DESC";

struct inline_chains {
	const struct diagnosis *d;
	json_t **by_hotspot; /* per index of d->hotspots: {chain text: {frames, samples}} */
};

static int hotspot_index(const struct diagnosis *d, int64_t id)
{
	size_t i;

	for (i = 0; i < d->n_all; i++)
		if (d->hotspots[i].id == id)
			return (int)i;
	return -1;
}

/* the chain of one address into the Hotspot's set: 0 or -ENOMEM */
static int chain_add(struct inline_chains *c, int hotspot, json_t *frames, uint64_t samples)
{
	json_t *set = c->by_hotspot[hotspot], *at;
	char *key;
	int err = 0;

	if (!set && !(set = c->by_hotspot[hotspot] = json_object()))
		return -ENOMEM;
	key = json_dumps(frames, JSON_COMPACT);
	if (!key)
		return -ENOMEM;
	at = json_object_get(set, key);
	if (at)
		err = json_object_set_new(at, "samples",
					  json_integer(json_integer_value(json_object_get(
							   at, "samples")) +
						       (json_int_t)samples));
	else
		err = json_object_set_new(set, key,
					  json_pack("{s:O, s:I}", "frames", frames, "samples",
						    (json_int_t)samples));
	free(key);
	return err ? -ENOMEM : 0;
}

static json_t *frame_json(sqlite3_stmt *st)
{
	return json_pack("{s:o, s:o, s:o}", "function",
			 json_text((const char *)sqlite3_column_text(st, 3)), "file",
			 json_text((const char *)sqlite3_column_text(st, 4)), "line",
			 sqlite3_column_type(st, 5) == SQLITE_NULL
				 ? json_null()
				 : json_integer(sqlite3_column_int(st, 5)));
}

/* walks the rows: one chain per address */
static int chains_read(struct inline_chains *c, sqlite3_stmt *st)
{
	int64_t address = -1;
	json_t *frames = NULL;
	uint64_t samples = 0;
	int hotspot = -1, rc, err = 0;

	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_int64(st, 1) != address) {
			if (frames && hotspot >= 0)
				err = chain_add(c, hotspot, frames, samples);
			json_decref(frames);
			frames = json_array();
			address = sqlite3_column_int64(st, 1);
			hotspot = hotspot_index(c->d, sqlite3_column_int64(st, 0));
			samples = (uint64_t)sqlite3_column_int64(st, 2);
		}
		if (!err && (!frames || json_array_append_new(frames, frame_json(st))))
			err = -ENOMEM;
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	if (!err && frames && hotspot >= 0)
		err = chain_add(c, hotspot, frames, samples);
	json_decref(frames);
	return err;
}

static int by_samples(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "samples"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "samples"));

	return x > y ? -1 : x < y;
}

/* the set as the array the payload holds */
static json_t *chains_json(json_t *set)
{
	size_t n = set ? json_object_size(set) : 0, i = 0;
	json_t **v = n ? calloc(n, sizeof(*v)) : NULL, *a = json_array(), *value;
	const char *key;

	if ((n && !v) || !a) {
		free(v);
		json_decref(a);
		return NULL;
	}
	if (set)
		json_object_foreach(set, key, value) v[i++] = value;
	if (n)
		qsort(v, n, sizeof(*v), by_samples);
	for (i = 0; i < n && i < PAYLOAD_MAX_INLINE; i++)
		if (json_array_append(a, v[i]))
			a = (json_decref(a), NULL);
	free(v);
	return a;
}

int payload_inline_attach(json_t *hotspots, const struct run_model *m)
{
	struct inline_chains c = {m->d, NULL};
	sqlite3_stmt *st = NULL;
	size_t i;
	int err = 0;

	c.by_hotspot = calloc(m->d->n_all + 1, sizeof(*c.by_hotspot));
	if (!c.by_hotspot)
		return -ENOMEM;
	if (m->p && m->d->counter) {
		if (sqlite3_prepare_v2(pivot_sqlite(m->p), leaf_frames_sql, -1, &st, NULL) !=
		    SQLITE_OK) {
			pr_warn("cannot read the inline frames: %s\n",
				sqlite3_errmsg(pivot_sqlite(m->p)));
			err = -EIO;
		} else {
			sqlite3_bind_text(st, 1, m->d->counter, -1, SQLITE_STATIC);
			err = chains_read(&c, st);
		}
		sqlite3_finalize(st);
	}
	for (i = 0; !err && i < json_array_size(hotspots) && i < m->d->n_all; i++) {
		json_t *a = chains_json(c.by_hotspot[i]);

		if (!a || json_object_set_new(json_array_get(hotspots, i), "inline", a))
			err = -ENOMEM;
	}
	for (i = 0; i < m->d->n_all; i++)
		json_decref(c.by_hotspot[i]);
	free(c.by_hotspot);
	return err;
}
