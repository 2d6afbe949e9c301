/* pivot_schema — the tables of the pivot and the migrations of a pivot
 * written by an older nunatak, each in the caller's transaction. */
#include <errno.h>
#include <stdio.h>

#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

/* schema 3: a pseudo module's function [start, start + size) is name
 * (from the Agent's /proc/kallsyms for "[kernel]"); first stored wins */
#define MODULE_SYMBOLS_TABLE                                                                       \
	"CREATE TABLE IF NOT EXISTS module_symbols(module INTEGER NOT NULL"                        \
	" REFERENCES modules(id), start INTEGER NOT NULL, size INTEGER NOT NULL,"                  \
	" name TEXT NOT NULL, PRIMARY KEY(module, start));\n"

/* schema 4: the source extract of a Hotspot (its status, why, which lines)
 * and its lines; line shares are never stored (derived from samples) */
#define SOURCES_TABLES                                                                             \
	"CREATE TABLE IF NOT EXISTS sources(id INTEGER PRIMARY KEY, hotspot INTEGER NOT NULL UNIQUE"             \
	" REFERENCES hotspots(id), dwarf_path TEXT NOT NULL, resolved_path TEXT,"                  \
	" status TEXT NOT NULL CHECK(status IN ('embedded','not-verified','stale','missing',"      \
	"'ambiguous','disabled')), reason TEXT, first_line INTEGER, last_line INTEGER,"            \
	" truncated INTEGER NOT NULL DEFAULT 0);\n"                                                \
	"CREATE TABLE IF NOT EXISTS extracts(source INTEGER NOT NULL REFERENCES sources(id),"                    \
	" line INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY(source, line));\n"

/* schema 5: Component costs per Step (all but peak_rss_increase_bytes are
 * self costs; running totals, a later report of a key replacing it; a
 * NULL parent is no enclosing Component, unique through IFNULL) */
#define COMPONENT_TABLES                                                                           \
	"CREATE TABLE IF NOT EXISTS components(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"               \
	" pattern TEXT NOT NULL, is_step INTEGER NOT NULL);\n"                                     \
	"CREATE TABLE IF NOT EXISTS steps(locus INTEGER NOT NULL REFERENCES loci(id), step INTEGER NOT NULL,"    \
	" start_ns INTEGER NOT NULL, end_ns INTEGER, PRIMARY KEY(locus, step));\n"                 \
	"CREATE TABLE IF NOT EXISTS component_costs(locus INTEGER NOT NULL REFERENCES loci(id),"                 \
	" phase TEXT NOT NULL CHECK(phase IN ('setup','step','between','teardown')),"              \
	" step INTEGER NOT NULL, component INTEGER NOT NULL REFERENCES components(id),"            \
	" parent INTEGER REFERENCES components(id), calls INTEGER NOT NULL,"                       \
	" wall_ns INTEGER NOT NULL, cpu_ns INTEGER NOT NULL, minor_page_faults INTEGER NOT NULL,"  \
	" major_page_faults INTEGER NOT NULL, voluntary_context_switches INTEGER NOT NULL,"        \
	" involuntary_context_switches INTEGER NOT NULL,"                                          \
	" peak_rss_increase_bytes INTEGER NOT NULL, instructions INTEGER, cycles INTEGER);\n"      \
	"CREATE UNIQUE INDEX IF NOT EXISTS component_costs_key ON component_costs(locus, phase, step,"           \
	" component, IFNULL(parent, 0));\n"

static const char pivot_schema[] =
    "CREATE TABLE batches(node TEXT NOT NULL, incarnation INTEGER NOT NULL DEFAULT 0,"
    " seq INTEGER NOT NULL, received TEXT NOT NULL, last INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(node, incarnation, seq));\n"
    "CREATE TABLE modules(id INTEGER PRIMARY KEY, identity TEXT NOT NULL UNIQUE,"
    " path TEXT NOT NULL, display_name TEXT NOT NULL, has_build_id INTEGER NOT NULL,"
    " attribution TEXT, attribution_reason TEXT);\n"
    "CREATE TABLE loci(id INTEGER PRIMARY KEY, node TEXT NOT NULL, rank INTEGER,"
    " world_size INTEGER, tgid INTEGER NOT NULL, tid INTEGER NOT NULL, comm TEXT, exe TEXT,"
    " UNIQUE(node, tgid, tid));\n"
    "CREATE TABLE hotspots(id INTEGER PRIMARY KEY, module INTEGER NOT NULL REFERENCES"
    " modules(id), function_start INTEGER NOT NULL, name TEXT NOT NULL, source_file TEXT,"
    " start_line INTEGER, resolution_level TEXT NOT NULL CHECK(resolution_level IN"
    " ('line','function','symbol','unresolved')), UNIQUE(module, function_start));\n"
    "CREATE TABLE addresses(id INTEGER PRIMARY KEY, module INTEGER NOT NULL REFERENCES"
    " modules(id), offset INTEGER NOT NULL, hotspot INTEGER REFERENCES hotspots(id),"
    " resolution_level TEXT, source_file TEXT, line INTEGER, UNIQUE(module, offset));\n"
    "CREATE TABLE frames(address INTEGER NOT NULL REFERENCES addresses(id),"
    " depth INTEGER NOT NULL, function TEXT, file TEXT, line INTEGER, column INTEGER,"
    " PRIMARY KEY(address, depth));\n"
    SOURCES_TABLES
    "CREATE TABLE stacks(id INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE,"
    " depth INTEGER NOT NULL, truncated INTEGER NOT NULL);\n"
    "CREATE TABLE stack_frames(stack INTEGER NOT NULL REFERENCES stacks(id),"
    " position INTEGER NOT NULL, address INTEGER NOT NULL REFERENCES addresses(id),"
    " PRIMARY KEY(stack, position));\n"
    "CREATE TABLE samples(locus INTEGER NOT NULL REFERENCES loci(id), stack INTEGER NOT NULL"
    " REFERENCES stacks(id), counter TEXT NOT NULL, in_kernel INTEGER NOT NULL,"
    " sample_count INTEGER NOT NULL, value INTEGER NOT NULL,"
    " PRIMARY KEY(locus, stack, counter, in_kernel));\n"
    "CREATE TABLE measurements(id INTEGER PRIMARY KEY, hotspot INTEGER REFERENCES"
    " hotspots(id), locus INTEGER NOT NULL REFERENCES loci(id), counter TEXT NOT NULL,"
    " value REAL, unit TEXT NOT NULL, quality TEXT NOT NULL CHECK(quality IN"
    " ('measured','estimated','unavailable')), reason TEXT, sample_count INTEGER,"
    " coverage REAL, pass INTEGER NOT NULL DEFAULT 0);\n"
    "CREATE TABLE events(id INTEGER PRIMARY KEY, locus INTEGER NOT NULL REFERENCES loci(id),"
    " name TEXT NOT NULL, start_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,"
    " bytes INTEGER, peer INTEGER);\n"
    COMPONENT_TABLES
    "CREATE TABLE calibration_rows(id INTEGER PRIMARY KEY);\n"
    "CREATE TABLE degradations(node TEXT NOT NULL DEFAULT '', name TEXT NOT NULL,"
    " message TEXT NOT NULL, remedy TEXT NOT NULL, PRIMARY KEY(node, name));\n"
    "CREATE TABLE counters(node TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL,"
    " PRIMARY KEY(node, name));\n"
    /* MPI per (rank process, function, call site): running totals, the
     * report with the most calls kept */
    "CREATE TABLE mpi_calls(locus INTEGER NOT NULL REFERENCES loci(id),"
    " function TEXT NOT NULL, call_site INTEGER NOT NULL REFERENCES addresses(id),"
    " calls INTEGER NOT NULL, total_ns INTEGER NOT NULL, min_ns INTEGER NOT NULL,"
    " max_ns INTEGER NOT NULL, bytes INTEGER, bytes_reason TEXT, sends INTEGER NOT NULL,"
    " estimate TEXT, calls_error REAL, total_ns_error REAL,"
    " PRIMARY KEY(locus, function, call_site));\n"
    /* probe_cost_ns NULL: not calibrated (probe_cost_reason); probe_budget
     * NULL: every call probed */
    "CREATE TABLE mpi_processes(locus INTEGER PRIMARY KEY REFERENCES loci(id),"
    " init_end_ns INTEGER, finalize_start_ns INTEGER, last_seen_ns INTEGER,"
    " probe_cost_ns INTEGER, probed_calls INTEGER, probe_cost_reason TEXT,"
    " probe_budget REAL, probing TEXT, probe_cost_in_window_ns INTEGER);\n" MODULE_SYMBOLS_TABLE
    /* what finalize and the readers look up */
    "CREATE INDEX addresses_hotspot ON addresses(hotspot);\n"
    "CREATE INDEX stack_frames_address ON stack_frames(address);\n"
    "CREATE INDEX samples_stack ON samples(stack);\n"
    "CREATE INDEX measurements_hotspot ON measurements(hotspot, counter);\n"
    "CREATE INDEX measurements_locus ON measurements(locus, counter);\n"
    "CREATE INDEX events_locus ON events(locus, start_ns);\n"
    "CREATE INDEX mpi_calls_call_site ON mpi_calls(call_site);\n";

/* schema 1 -> 2: Batches unique by (node, incarnation, seq), Degradations
 * by (node, name); what schema 1 held keeps incarnation 0 and node '' */
static const char pivot_migrate_v1[] =
    "CREATE TABLE batches_v2(node TEXT NOT NULL, incarnation INTEGER NOT NULL DEFAULT 0,"
    " seq INTEGER NOT NULL, received TEXT NOT NULL, last INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(node, incarnation, seq));\n"
    "INSERT INTO batches_v2(node, incarnation, seq, received)"
    " SELECT node, 0, seq, received FROM batches;\n"
    "DROP TABLE batches;\n"
    "ALTER TABLE batches_v2 RENAME TO batches;\n"
    "CREATE TABLE degradations_v2(node TEXT NOT NULL DEFAULT '', name TEXT NOT NULL,"
    " message TEXT NOT NULL, remedy TEXT NOT NULL, PRIMARY KEY(node, name));\n"
    "INSERT INTO degradations_v2(node, name, message, remedy)"
    " SELECT '', name, message, remedy FROM degradations;\n"
    "DROP TABLE degradations;\n"
    "ALTER TABLE degradations_v2 RENAME TO degradations;\n"
    "PRAGMA user_version = 2;\n";

/* schema 2 -> 3: the symbols of pseudo modules ("[kernel]") */
static const char pivot_migrate_v2[] = MODULE_SYMBOLS_TABLE "PRAGMA user_version = 3;\n";

/* schema 3 -> 4: the function's first line of each Hotspot, and the source
 * extracts (schema 3's `extracts`, by file, was never written: replaced) */
static const char pivot_migrate_v3[] = SOURCES_TABLES "PRAGMA user_version = 4;\n";

/* schema 4 -> 5: the Component tables, where schema 4 had empty
 * placeholders of steps and component_costs (an id column alone) */
static const char pivot_migrate_v4[] = COMPONENT_TABLES "PRAGMA user_version = 5;\n";

/* schema 5 -> 6: MPI estimates and what the probes cost each rank (columns
 * added where missing: migrate_v5) */
static const char *const pivot_v6_columns[][3] = {
    {"mpi_calls", "estimate", "TEXT"},
    {"mpi_calls", "calls_error", "REAL"},
    {"mpi_calls", "total_ns_error", "REAL"},
    {"mpi_processes", "probe_cost_ns", "INTEGER"},
    {"mpi_processes", "probed_calls", "INTEGER"},
    {"mpi_processes", "probe_cost_reason", "TEXT"},
    {"mpi_processes", "probe_budget", "REAL"},
    {"mpi_processes", "probing", "TEXT"},
    {"mpi_processes", "probe_cost_in_window_ns", "INTEGER"},
};

/* 1 when table has column, 0 when not, -errno */
static int has_column(struct pivot *p, const char *table, const char *column)
{
	char sql[256];
	int64_t n = 0;
	int err;

	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'", table, column);
	err = pivot_query_int64(p, sql, "read a table's columns", &n);
	return err ? err : n > 0;
}

static int migrate_v3(struct pivot *p)
{
	int err = has_column(p, "hotspots", "start_line");

	if (!err)
		err = pivot_exec(p, "ALTER TABLE hotspots ADD COLUMN start_line INTEGER");
	if (err < 0)
		return err;
	err = has_column(p, "extracts", "file");
	if (err > 0)
		err = pivot_exec(p, "DROP TABLE extracts");
	return err < 0 ? err : pivot_exec(p, pivot_migrate_v3);
}

static int migrate_v4(struct pivot *p)
{
	static const char *const placeholders[] = {"steps", "component_costs"};
	char sql[64];
	int err = 0, i;

	for (i = 0; i < 2 && err >= 0; i++) {
		err = has_column(p, placeholders[i], "locus");
		snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS %s", placeholders[i]);
		if (!err)
			err = pivot_exec(p, sql);
	}
	return err < 0 ? err : pivot_exec(p, pivot_migrate_v4);
}

static int migrate_v5(struct pivot *p)
{
	char sql[160];
	size_t i;
	int err = 0;

	for (i = 0; i < sizeof(pivot_v6_columns) / sizeof(pivot_v6_columns[0]) && err >= 0; i++) {
		err = has_column(p, pivot_v6_columns[i][0], pivot_v6_columns[i][1]);
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", pivot_v6_columns[i][0],
			 pivot_v6_columns[i][1], pivot_v6_columns[i][2]);
		if (!err)
			err = pivot_exec(p, sql);
	}
	return err < 0 ? err : pivot_exec(p, "PRAGMA user_version = 6");
}

int pivot_schema_create(struct pivot *p)
{
	char version[64];
	int err;

	err = pivot_exec(p, pivot_schema);
	if (err)
		return err;
	snprintf(version, sizeof(version), "PRAGMA user_version = %d", PIVOT_SCHEMA_VERSION);
	return pivot_exec(p, version);
}

int pivot_schema_migrate(struct pivot *p)
{
	int err = 0;

	if (p->schema < 2)
		err = pivot_exec(p, pivot_migrate_v1);
	if (!err && p->schema < 3)
		err = pivot_exec(p, pivot_migrate_v2);
	if (!err && p->schema < 4)
		err = migrate_v3(p);
	if (!err && p->schema < 5)
		err = migrate_v4(p);
	if (!err && p->schema < 6)
		err = migrate_v5(p);
	return err;
}
