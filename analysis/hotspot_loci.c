/* hotspot_loci — per-process sums of a Hotspot's sampling Measurements. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "analysis/hotspot_loci.h"
#include "userspace/launch/launcher.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

#define MAX_COUNTERS 8

/* a process is (node, tgid); its rank the one its threads carry. The
 * quality rank picks the worst; the bare reason is taken from that row
 * (SQLite: a bare column beside one max() comes from the max's row). */
static const char query_head[] =
    "WITH proc AS (SELECT node, tgid, min(id) AS key, max(rank) AS rank FROM loci"
    " GROUP BY node, tgid)"
    " SELECT x.hotspot, x.counter, proc.key, proc.rank, l.comm, x.locus,"
    " coalesce(sum(x.sample_count), 0), sum(x.value), count(x.value) = count(*),"
    " max(CASE x.quality WHEN 'measured' THEN 0 WHEN 'estimated' THEN 1 ELSE 2 END),"
    " x.reason"
    " FROM measurements x JOIN loci l ON l.id = x.locus"
    " JOIN proc ON proc.node = l.node AND proc.tgid = l.tgid"
    " WHERE x.hotspot IS NOT NULL AND x.counter IN (";
static const char query_tail[] = ") GROUP BY x.hotspot, x.counter, proc.key, x.locus"
				 " ORDER BY x.hotspot, x.counter, proc.key, x.locus";

static size_t counter_index(const char *counter, const char *const counters[], size_t n)
{
	size_t i;

	for (i = 0; i < n && strcmp(counter, counters[i]); i++)
		;
	return i;
}

static int row_read(sqlite3_stmt *st, const char *const counters[], size_t n_counters,
		    struct hotspot_locus_row *r)
{
	const char *counter = (const char *)sqlite3_column_text(st, 1);
	const char *comm = (const char *)sqlite3_column_text(st, 4);
	const char *reason = (const char *)sqlite3_column_text(st, 10);

	memset(r, 0, sizeof(*r));
	r->hotspot = sqlite3_column_int64(st, 0);
	r->counter = counter_index(counter ? counter : "", counters, n_counters);
	r->process = sqlite3_column_int64(st, 2);
	r->rank = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 3);
	r->launcher = comm && launcher_is_launcher_process(comm);
	r->thread = sqlite3_column_int64(st, 5);
	r->samples = (uint64_t)sqlite3_column_int64(st, 6);
	r->value = sqlite3_column_int(st, 8) ? sqlite3_column_double(st, 7) : NAN;
	r->quality = (enum quality)sqlite3_column_int(st, 9);
	if (r->quality > QUALITY_UNAVAILABLE)
		r->quality = QUALITY_UNAVAILABLE;
	if (reason && reason[0]) {
		r->reason = strdup(reason);
		if (!r->reason)
			return -ENOMEM;
	}
	return 0;
}

static int append(struct hotspot_loci *hl, size_t *cap)
{
	struct hotspot_locus_row *rows;
	size_t n = *cap ? 2 * *cap : 64;

	if (hl->n < *cap)
		return 0;
	rows = reallocarray(hl->rows, n, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	hl->rows = rows;
	*cap = n;
	return 0;
}

static int prepare(sqlite3 *db, size_t n_counters, sqlite3_stmt **st)
{
	char sql[sizeof(query_head) + sizeof(query_tail) + 4 * MAX_COUNTERS];
	size_t i, len;

	len = (size_t)snprintf(sql, sizeof(sql), "%s", query_head);
	for (i = 0; i < n_counters; i++)
		len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s?", i ? "," : "");
	snprintf(sql + len, sizeof(sql) - len, "%s", query_tail);
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK) {
		pr_warn("cannot read the Measurements of the Hotspots per process: %s",
			sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

struct hotspot_loci *hotspot_loci__new(struct pivot *p, const char *const counters[],
				       size_t n_counters)
{
	sqlite3_stmt *st = NULL;
	struct hotspot_loci *hl = NULL;
	size_t i, cap = 0;
	int err, rc;

	if (!p || !counters || !n_counters || n_counters > MAX_COUNTERS) {
		errno = EINVAL;
		return NULL;
	}
	hl = calloc(1, sizeof(*hl));
	if (!hl)
		return NULL;
	err = prepare(pivot_sqlite(p), n_counters, &st);
	if (err)
		goto cleanup;
	for (i = 0; i < n_counters; i++)
		sqlite3_bind_text(st, (int)i + 1, counters[i], -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		err = append(hl, &cap);
		if (err)
			goto cleanup;
		err = row_read(st, counters, n_counters, &hl->rows[hl->n]);
		hl->n++; /* its reason is freed with it, read or not */
		if (err)
			goto cleanup;
	}
	if (rc != SQLITE_DONE) {
		pr_warn("cannot read the Measurements of the Hotspots per process: %s",
			sqlite3_errmsg(pivot_sqlite(p)));
		err = -EIO;
		goto cleanup;
	}
	sqlite3_finalize(st);
	return hl;
cleanup:
	sqlite3_finalize(st);
	hotspot_loci__free(hl);
	errno = -err;
	return NULL;
}

void hotspot_loci__free(struct hotspot_loci *hl)
{
	size_t i;

	if (!hl)
		return;
	for (i = 0; i < hl->n; i++)
		free(hl->rows[i].reason);
	free(hl->rows);
	free(hl);
}

/* the executables of the Loci that carry a rank (launchers carry none) */
static const char rank_programs_query[] =
    "SELECT count(DISTINCT coalesce(exe, comm, '')) FROM loci WHERE rank IS NOT NULL";

int hotspot_loci_rank_programs(struct pivot *p, size_t *n)
{
	sqlite3_stmt *st = NULL;
	int err = 0;

	*n = 0;
	if (sqlite3_prepare_v2(pivot_sqlite(p), rank_programs_query, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		pr_warn("cannot count the programs of the ranks: %s",
			sqlite3_errmsg(pivot_sqlite(p)));
		err = -EIO;
	} else {
		*n = (size_t)sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return err;
}
