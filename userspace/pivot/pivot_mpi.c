/* pivot_mpi — the MPI side of the pivot at finalize and after: the
 * Locus-level MPI Measurements derived from mpi_processes and mpi_calls,
 * and the readers analysis/balance walks. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

/* The lifetime calls frame the application time; they are not time spent
 * communicating. */
#define MPI_LIFETIME_FUNCTIONS "('MPI_Init', 'MPI_Init_thread', 'MPI_Finalize')"

int pivot_mpi_is_lifetime(const char *function)
{
	/* the same three as MPI_LIFETIME_FUNCTIONS */
	return function && (!strcmp(function, "MPI_Init") || !strcmp(function, "MPI_Init_thread") ||
			    !strcmp(function, "MPI_Finalize"));
}

static const char derive_delete_sql[] =
    "DELETE FROM measurements WHERE hotspot IS NULL AND counter IN"
    " ('app_time', 'mpi_time', 'mpi_sent_bytes', 'cpu_time')"
    " AND locus IN (SELECT locus FROM mpi_processes)";

/* app_time: init end to finalize start; without finalize, to the last time
 * the process was seen (estimated); without init, unavailable. */
static const char derive_app_time_sql[] =
    "INSERT INTO measurements(hotspot, locus, counter, value, unit, quality, reason)"
    " SELECT NULL, locus, 'app_time', CASE kind WHEN 'measured' THEN"
    " finalize_start_ns - init_end_ns WHEN 'estimated' THEN last_seen_ns - init_end_ns"
    " ELSE NULL END, 'ns', CASE WHEN kind IN ('measured', 'estimated') THEN kind"
    " ELSE 'unavailable' END, CASE kind WHEN 'measured' THEN NULL"
    " WHEN 'estimated' THEN 'MPI_Finalize not reached'"
    " WHEN 'no-init' THEN 'MPI_Init never returned'"
    " WHEN 'inverted' THEN 'MPI_Finalize started before MPI_Init returned'"
    " ELSE 'MPI_Finalize not reached and the process end was not seen' END"
    " FROM (SELECT locus, init_end_ns, finalize_start_ns, last_seen_ns,"
    " CASE WHEN init_end_ns IS NULL THEN 'no-init'"
    " WHEN finalize_start_ns IS NOT NULL THEN CASE WHEN finalize_start_ns >= init_end_ns"
    " THEN 'measured' ELSE 'inverted' END"
    " WHEN last_seen_ns IS NOT NULL AND last_seen_ns >= init_end_ns THEN 'estimated'"
    " ELSE 'unseen' END AS kind FROM mpi_processes) ORDER BY locus";

/* estimated when a call site of it is (a rank probed in sampled windows:
 * the estimate's text is the reason) */
static const char derive_mpi_time_sql[] =
    "INSERT INTO measurements(hotspot, locus, counter, value, unit, quality, reason)"
    " SELECT NULL, mp.locus, 'mpi_time', coalesce((SELECT sum(c.total_ns) FROM mpi_calls c"
    " WHERE c.locus = mp.locus AND c.function NOT IN " MPI_LIFETIME_FUNCTIONS "), 0),"
    " 'ns', CASE WHEN est IS NULL THEN 'measured' ELSE 'estimated' END, est"
    " FROM (SELECT locus, (SELECT c.estimate FROM mpi_calls c WHERE c.locus = mp.locus"
    " AND c.estimate IS NOT NULL AND c.function NOT IN " MPI_LIFETIME_FUNCTIONS
    " ORDER BY c.call_site LIMIT 1) AS est FROM mpi_processes mp) mp ORDER BY mp.locus";

/* one send whose bytes are unknown makes the sum unavailable: a partial
 * sum is never called measured */
static const char derive_sent_bytes_sql[] =
    "INSERT INTO measurements(hotspot, locus, counter, value, unit, quality, reason)"
    " SELECT NULL, locus, 'mpi_sent_bytes', CASE WHEN missing IS NULL THEN sent END,"
    " 'bytes', CASE WHEN missing IS NULL THEN 'measured' ELSE 'unavailable' END, missing"
    " FROM (SELECT mp.locus AS locus, coalesce((SELECT sum(c.bytes) FROM mpi_calls c"
    " WHERE c.locus = mp.locus AND c.sends), 0) AS sent,"
    " (SELECT group_concat(r, '; ') FROM (SELECT DISTINCT c.function || ': ' ||"
    " coalesce(c.bytes_reason, 'bytes not read') AS r FROM mpi_calls c"
    " WHERE c.locus = mp.locus AND c.sends AND c.bytes IS NULL ORDER BY r)) AS missing"
    " FROM mpi_processes mp) ORDER BY locus";

/* the worst quality of user and system time */
static const char derive_cpu_time_sql[] =
    "INSERT INTO measurements(hotspot, locus, counter, value, unit, quality, reason)"
    " SELECT NULL, mp.locus, 'cpu_time', u.value + s.value, 'ns',"
    " CASE WHEN 'unavailable' IN (u.quality, s.quality) THEN 'unavailable'"
    " WHEN 'estimated' IN (u.quality, s.quality) THEN 'estimated' ELSE 'measured' END,"
    " coalesce(u.reason, s.reason) FROM mpi_processes mp"
    " JOIN measurements u ON u.locus = mp.locus AND u.hotspot IS NULL"
    " AND u.counter = 'cpu_time_user'"
    " JOIN measurements s ON s.locus = mp.locus AND s.hotspot IS NULL"
    " AND s.counter = 'cpu_time_system' ORDER BY mp.locus";

/* 1 when the MPI tables are there, 0 in a pivot written before they
 * existed (same schema version: it simply has no MPI data), -EIO. */
static int mpi_tables_exist(struct pivot *p)
{
	int64_t n;
	int err;

	err =
	    pivot_query_int64(p,
			      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
			      " ('mpi_calls', 'mpi_processes')",
			      "read the schema", &n);
	if (err)
		return err;
	return n == 2;
}

int pivot_derive_mpi_in_transaction(struct pivot *p)
{
	int err;

	err = mpi_tables_exist(p);
	if (err <= 0)
		return err;
	err = pivot_exec(p, derive_delete_sql);
	if (!err)
		err = pivot_exec(p, derive_app_time_sql);
	if (!err)
		err = pivot_exec(p, derive_mpi_time_sql);
	if (!err)
		err = pivot_exec(p, derive_sent_bytes_sql);
	if (!err)
		err = pivot_exec(p, derive_cpu_time_sql);
	return err;
}

int pivot_derive_mpi_measurements(struct pivot *p)
{
	if (!p)
		return -EINVAL;
	return pivot_in_transaction(p, pivot_derive_mpi_in_transaction);
}

static void locus_value(sqlite3_stmt *stmt, int col, struct pivot_locus_value *v)
{
	v->value =
	    sqlite3_column_type(stmt, col) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt, col);
	v->quality = pivot_column_text(stmt, col + 1);
	v->reason = pivot_column_text(stmt, col + 2);
}

#define LOCUS_MEASUREMENT(alias, counter)                                                          \
	" LEFT JOIN measurements " alias " ON " alias ".locus = l.id AND " alias                   \
	".hotspot IS NULL AND " alias ".counter = '" counter "'"

struct mpi_locus_walk {
	int (*cb)(const struct pivot_mpi_locus *l, void *ctx);
	void *ctx;
};

static int mpi_locus_row(sqlite3_stmt *stmt, void *arg)
{
	struct mpi_locus_walk *w = arg;
	struct pivot_mpi_locus l = {
	    .locus = sqlite3_column_int64(stmt, 0),
	    .node = pivot_column_text(stmt, 1),
	    .has_rank = sqlite3_column_type(stmt, 2) != SQLITE_NULL,
	    .rank = sqlite3_column_int(stmt, 2),
	    .world_size = sqlite3_column_int(stmt, 3),
	};

	locus_value(stmt, 4, &l.app_time);
	locus_value(stmt, 7, &l.mpi_time);
	locus_value(stmt, 10, &l.cpu_time);
	locus_value(stmt, 13, &l.sent_bytes);
	l.has_probe_cost = sqlite3_column_type(stmt, 16) != SQLITE_NULL;
	l.probe_cost_ns = (uint64_t)sqlite3_column_int64(stmt, 16);
	l.probe_cost_in_window_ns = (uint64_t)sqlite3_column_int64(stmt, 17);
	l.has_probed_calls = sqlite3_column_type(stmt, 18) != SQLITE_NULL;
	l.probed_calls = (uint64_t)sqlite3_column_int64(stmt, 18);
	l.probe_cost_reason = pivot_column_text(stmt, 19);
	l.has_probe_budget = sqlite3_column_type(stmt, 20) != SQLITE_NULL;
	l.probe_budget = sqlite3_column_double(stmt, 20);
	l.probing = pivot_column_text(stmt, 21);
	l.calls = (uint64_t)sqlite3_column_int64(stmt, 22);
	l.lifetime_calls = (uint64_t)sqlite3_column_int64(stmt, 23);
	locus_value(stmt, 24, &l.wall_time);
	locus_value(stmt, 27, &l.run_delay);
	return w->cb(&l, w->ctx);
}

int pivot_for_each_mpi_locus(struct pivot *p, int (*cb)(const struct pivot_mpi_locus *l, void *ctx),
			     void *ctx)
{
	struct mpi_locus_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = mpi_tables_exist(p);
	if (err <= 0)
		return err;
	err = pivot_prepare(
	    p,
	    "SELECT l.id, l.node, l.rank, l.world_size, a.value, a.quality,"
	    " a.reason, m.value, m.quality, m.reason, c.value, c.quality, c.reason,"
	    " b.value, b.quality, b.reason, mp.probe_cost_ns,"
	    " coalesce(mp.probe_cost_in_window_ns, 0), mp.probed_calls, mp.probe_cost_reason,"
	    " mp.probe_budget, mp.probing,"
	    " coalesce((SELECT sum(c.calls) FROM mpi_calls c WHERE c.locus = l.id), 0),"
	    " coalesce((SELECT sum(c.calls) FROM mpi_calls c WHERE c.locus = l.id"
	    " AND c.function IN " MPI_LIFETIME_FUNCTIONS "), 0), w.value, w.quality, w.reason,"
	    " r.value, r.quality, r.reason FROM loci l"
	    " JOIN mpi_processes mp ON mp.locus = l.id" LOCUS_MEASUREMENT("a", "app_time")
		LOCUS_MEASUREMENT("m", "mpi_time") LOCUS_MEASUREMENT(
		    "c", "cpu_time") LOCUS_MEASUREMENT("b", "mpi_sent_bytes")
		    LOCUS_MEASUREMENT("w", "wall_time") LOCUS_MEASUREMENT(
			"r", "run_delay") " ORDER BY l.rank IS NULL, l.rank, l.node, l.tgid, l.tid",
	    &stmt);
	if (err)
		return err;
	return pivot_walk(p, stmt, mpi_locus_row, &w, "read mpi loci");
}

static double column_double_or_nan(sqlite3_stmt *stmt, int col)
{
	return sqlite3_column_type(stmt, col) == SQLITE_NULL ? NAN
							     : sqlite3_column_double(stmt, col);
}

struct mpi_call_walk {
	int (*cb)(const struct pivot_mpi_call *c, void *ctx);
	void *ctx;
};

static int mpi_call_row(sqlite3_stmt *stmt, void *arg)
{
	struct mpi_call_walk *w = arg;
	struct pivot_mpi_call c = {
	    .locus = sqlite3_column_int64(stmt, 0),
	    .has_rank = sqlite3_column_type(stmt, 1) != SQLITE_NULL,
	    .rank = sqlite3_column_int(stmt, 1),
	    .function = pivot_column_text(stmt, 2),
	    .call_site = sqlite3_column_int64(stmt, 3),
	    .module = pivot_column_text(stmt, 4),
	    .offset = (uint64_t)sqlite3_column_int64(stmt, 5),
	    .source_file = pivot_column_text(stmt, 6),
	    .line = sqlite3_column_int(stmt, 7),
	    .containing_function = pivot_column_text(stmt, 8),
	    .calls = (uint64_t)sqlite3_column_int64(stmt, 9),
	    .total_ns = (uint64_t)sqlite3_column_int64(stmt, 10),
	    .min_ns = (uint64_t)sqlite3_column_int64(stmt, 11),
	    .max_ns = (uint64_t)sqlite3_column_int64(stmt, 12),
	    .has_bytes = sqlite3_column_type(stmt, 13) != SQLITE_NULL,
	    .bytes = (uint64_t)sqlite3_column_int64(stmt, 13),
	    .bytes_reason = pivot_column_text(stmt, 14),
	    .sends = sqlite3_column_int(stmt, 15),
	    .estimate = pivot_column_text(stmt, 16),
	    .calls_error = column_double_or_nan(stmt, 17),
	    .total_ns_error = column_double_or_nan(stmt, 18),
	};

	return w->cb(&c, w->ctx);
}

int pivot_for_each_mpi_call(struct pivot *p, int (*cb)(const struct pivot_mpi_call *c, void *ctx),
			    void *ctx)
{
	struct mpi_call_walk w = {cb, ctx};
	sqlite3_stmt *stmt;
	int err;

	if (!p || !cb)
		return -EINVAL;
	err = mpi_tables_exist(p);
	if (err <= 0)
		return err;
	err = pivot_prepare(p,
			    "SELECT c.locus, l.rank, c.function, c.call_site, m.display_name,"
			    " a.offset, a.source_file, a.line, h.name, c.calls, c.total_ns,"
			    " c.min_ns, c.max_ns, c.bytes, c.bytes_reason, c.sends, c.estimate,"
			    " c.calls_error, c.total_ns_error FROM mpi_calls c"
			    " JOIN loci l ON l.id = c.locus JOIN addresses a ON a.id = c.call_site"
			    " JOIN modules m ON m.id = a.module"
			    " LEFT JOIN hotspots h ON h.id = a.hotspot"
			    " ORDER BY c.function, c.call_site, l.rank IS NULL, l.rank, c.locus",
			    &stmt);
	if (err)
		return err;
	return pivot_walk(p, stmt, mpi_call_row, &w, "read mpi calls");
}
