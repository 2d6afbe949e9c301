/* The sampling group end to end, with REAL software events standing in
 * for the PMU's (this machine has none): a node service whose Agent is
 * given the group {cpu-clock -> flop_dp ×1, cpu-clock -> flop_sp ×2,
 * page-faults -> dram_bytes ×64}, a Run of a program that first faults
 * fresh pages in (fault_pages) then computes in registers (compute_only).
 * In the Run's pivot: the Hotspots of the faulting part carry dram_bytes
 * (unit B, estimated), compute_only about none per sample; flop_dp sums
 * to the sampled time (each sample's slice), flop_sp to twice it (the
 * weights). Without the injection, on this machine, the Run gets the
 * hardware-counters-unavailable Degradation and no group Measurement. */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"

#include "tests/unit/node_service_fixture.h" /* after test_helpers.h: it uses it */
#include "userspace/agent/node_service.h"
#include "userspace/agent/pmu_events.h"
#include "userspace/control/control.h"
#include "userspace/control/control_client.h"
#include "userspace/launch/launch.h"

static const struct pmu_event software_events[] = {
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, PMU_FLOP_DP, 1},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, PMU_FLOP_SP, 2},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, PMU_DRAM_BYTES, 64},
};
/* precision_mixed as on AMD Zen: the Run says flop_sp is not what it seems */
static const struct pmu_event_set software_set = {
    "software-stand-in", software_events, 3, 1, "software events standing in for the PMU",
};

/* the names of a reply's degradations, space-separated, into buf */
static const char *degradation_names(json_t *deg, char *buf, size_t len)
{
	json_t *d;
	size_t i, at = 0;

	buf[0] = '\0';
	json_array_foreach(deg, i, d)
	{
		if (at < len)
			at += snprintf(buf + at, len - at, "%s ",
				       json_string_value(json_object_get(d, "name")));
	}
	return buf;
}

static const char workload_c[] =
    "#include <string.h>\n"
    "#include <sys/mman.h>\n"
    "#include <time.h>\n"
    "static volatile double sink;\n"
    "static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "  return t.tv_sec + t.tv_nsec / 1e9; }\n"
    "__attribute__((noinline)) static void fault_pages(double seconds) {\n"
    "  double end = now() + seconds;\n"
    "  while (now() < end) {\n"
    "    unsigned char *p = mmap(0, 16 << 20, PROT_READ | PROT_WRITE,\n"
    "                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
    "    madvise(p, 16 << 20, MADV_NOHUGEPAGE);\n"
    "    memset(p, 1, 16 << 20); sink = p[12345]; munmap(p, 16 << 20); } }\n"
    "__attribute__((noinline)) static void compute_only(double seconds) {\n"
    "  double end = now() + seconds, x = 1.0; int i;\n"
    "  while (now() < end) for (i = 0; i < 100000; i++) x = x * 1.0000001 + 0.5 / (x + 1.0);\n"
    "  sink = x; }\n"
    "int main(void) { fault_pages(0.8); compute_only(0.8); return 0; }\n";

static int setup_with(void **state, const struct pmu_event_set *pmu)
{
	struct node_service_opts o = {.node = "test-node", .signal_fd = -1, .quiet = 1, .pmu = pmu};
	struct ns_fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || ns_fixture_start(fx, "/tmp/nunatak-test-pmu-XXXXXX", &o))
		return -1;
	*state = fx;
	return 0;
}

static int setup_software(void **state)
{
	return setup_with(state, &software_set);
}

static int setup_machine(void **state)
{
	return setup_with(state, NULL);
}

static int teardown(void **state)
{
	struct ns_fixture *fx = *state;

	ns_fixture_stop(fx);
	free(fx);
	return 0;
}

static json_t *ask(int fd, json_t *req, int timeout_ms)
{
	json_t *reply = NULL;
	char err[512];

	assert_non_null(req);
	if (control_request(fd, req, &reply, timeout_ms, NULL, err, sizeof(err)))
		fail_msg("no reply: %s", err);
	json_decref(req);
	if (control_reply_status(reply, err, sizeof(err)))
		fail_msg("refused: %s", err);
	return reply;
}

/* a Run of exe (gated, released once the Run started) ended: the start
 * reply's degradations (the caller's) and the Run's directory */
static json_t *run_program(struct ns_fixture *fx, const char *exe, char *run_dir, size_t len)
{
	char *argv[] = {(char *)exe, NULL};
	json_t *reply, *degradations;
	char run_id[33];
	struct launch l;
	int fd = ns_fixture_connect(fx), status;

	assert_int_equal(launch_prepare(&l, exe, argv), 0);
	reply = ask(fd,
		    json_pack("{s:s, s:{s:s, s:s, s:[s]}, s:s, s:s, s:s, s:s, s:i, s:b}", "request",
			      "run-start", "run", "name", "pmu", "created", "2026-01-01T00:00:00Z",
			      "command", exe, "runs_dir", fx->runs, "symbolizer", symbolizer_tool(),
			      "target_exe", exe, "token", "0123456789abcdef0123456789abcdef", "pid",
			      (int)l.pid, "mpi_events", 0),
		    10000);
	snprintf(run_id, sizeof(run_id), "%s", json_string_value(json_object_get(reply, "run_id")));
	degradations = json_incref(json_object_get(reply, "degradations"));
	json_decref(reply);
	assert_int_equal(launch_release(&l), 0);
	assert_int_equal(waitpid(l.pid, &status, 0), l.pid);
	assert_int_equal(status, 0);
	reply = ask(fd,
		    json_pack("{s:s, s:s, s:i, s:s, s:i, s:i}", "request", "run-end", "run_id",
			      run_id, "exit_code", 0, "end", "2026-01-01T00:00:02Z", "linger_ms", 0,
			      "symbolizer_budget_ms", 20000),
		    60000);
	snprintf(run_dir, len, "%s", json_string_value(json_object_get(reply, "run_dir")));
	json_decref(reply);
	close(fd);
	return degradations;
}

static double query_double(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	double v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

static sqlite3 *open_pivot(const char *run_dir)
{
	char path[PATH_MAX];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/pivot.sqlite", run_dir);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return db;
}

/* per (compute_only or not): samples, dram_bytes */
#define PART_SQL(cond, what)                                                                       \
	"SELECT coalesce(sum(m.value), 0) FROM measurements m JOIN hotspots h ON h.id = m.hotspot" \
	" WHERE m.counter = '" what "' AND " cond

static void test_software_group(void **state)
{
	struct ns_fixture *fx = *state;
	char dir[PATH_MAX], src[PATH_MAX], exe[PATH_MAX], run_dir[PATH_MAX], names[1024];
	double c_samples, c_bytes, f_samples, f_bytes, ns, dp, sp;
	json_t *deg;
	sqlite3 *db;

	SKIP_UNLESS(geteuid() == 0, "needs root for BPF and system-wide perf events");
	SKIP_UNLESS(have_command("cc"), "no C compiler to build the workload");
	assert_int_equal(make_tmpdir(dir, sizeof(dir), "pmu-workload"), 0);
	snprintf(src, sizeof(src), "%s/work.c", dir);
	snprintf(exe, sizeof(exe), "%s/work", dir);
	assert_int_equal(write_file(src, workload_c), 0);
	assert_int_equal(run_cmd("cc -g -O1 -o '%s' '%s'", exe, src), 0);
	deg = run_program(fx, exe, run_dir, sizeof(run_dir));
	degradation_names(deg, names, sizeof(names));
	json_decref(deg);
	/* the group opened: no hardware-counters-unavailable; its caveat said */
	assert_null(strstr(names, "hardware-counters-unavailable"));
	assert_non_null(strstr(names, "flop-precision-unknown"));
	db = open_pivot(run_dir);
	c_samples = query_double(
	    db, "SELECT coalesce(sum(m.sample_count), 0) FROM measurements m JOIN hotspots h ON"
		" h.id = m.hotspot WHERE m.counter = 'cpu-clock' AND h.name = 'compute_only'");
	f_samples = query_double(
	    db, "SELECT coalesce(sum(m.sample_count), 0) FROM measurements m JOIN hotspots h ON"
		" h.id = m.hotspot WHERE m.counter = 'cpu-clock' AND h.name != 'compute_only'");
	c_bytes = query_double(db, PART_SQL("h.name = 'compute_only'", "dram_bytes"));
	f_bytes = query_double(db, PART_SQL("h.name != 'compute_only'", "dram_bytes"));
	ns = query_double(db, "SELECT sum(value) FROM measurements WHERE counter = 'cpu-clock'"
			      " AND hotspot IS NOT NULL");
	dp = query_double(db, "SELECT sum(value) FROM measurements WHERE counter = 'flop_dp'");
	sp = query_double(db, "SELECT sum(value) FROM measurements WHERE counter = 'flop_sp'");
	print_message("compute_only: %.0f samples, %.0f B; faulting part: %.0f samples, %.0f B;"
		      " %.0f ns sampled, flop_dp %.0f, flop_sp %.0f\n",
		      c_samples, c_bytes, f_samples, f_bytes, ns, dp, sp);
	assert_true(c_samples >= 100);
	assert_true(f_samples >= 100);
	/* the faulting Hotspots carry the page faults, 64 B each */
	assert_true(f_bytes >= 64.0 * 1000);
	/* compute_only's slices hold only what other tasks sharing its CPU
	 * faulted (a busy machine: a few per sample) */
	assert_true(f_bytes / f_samples > 8 * (c_bytes / c_samples + 64));
	/* units and Quality of the derived Measurements */
	assert_int_equal(query_double(db, "SELECT count(*) FROM measurements WHERE counter ="
					  " 'dram_bytes' AND (unit != 'B' OR quality != 'estimated'"
					  " OR reason IS NULL)"),
			 0);
	assert_int_equal(query_double(db, "SELECT count(*) FROM measurements WHERE counter LIKE"
					  " 'flop_%' AND unit != 'flop'"),
			 0);
	/* each sample's slice is its period: flop_dp ~ the sampled ns, flop_sp twice */
	assert_true(dp > 0.7 * ns && dp < 1.3 * ns);
	assert_true(sp > 1.98 * dp && sp < 2.02 * dp);
	/* the group's rows add no sample to the totals */
	assert_int_equal(query_double(db, "SELECT coalesce(sum(sample_count), 0) FROM samples"
					  " WHERE counter != 'cpu-clock'"),
			 0);
	sqlite3_close(db);
	remove_tree(dir);
}

static void test_no_pmu_degradation(void **state)
{
	struct ns_fixture *fx = *state;
	char run_dir[PATH_MAX];
	json_t *deg, *d;
	size_t i;
	int found = 0;
	sqlite3 *db;

	SKIP_UNLESS(geteuid() == 0, "needs root for BPF and system-wide perf events");
	SKIP_UNLESS(access("/sys/bus/event_source/devices/cpu", F_OK) != 0 &&
			access("/sys/bus/event_source/devices/cpu_core", F_OK) != 0,
		    "this machine has a PMU: the Degradation is not expected");
	deg = run_program(fx, "/bin/true", run_dir, sizeof(run_dir));
	json_array_foreach(deg, i, d) if (!strcmp(json_string_value(json_object_get(d, "name")),
						  "hardware-counters-unavailable"))
	{
		found = 1;
		print_message("%s\n", json_string_value(json_object_get(d, "message")));
		/* the one cause (pmu_cause.h), not a counter of the table nor the table */
		assert_non_null(strstr(json_string_value(json_object_get(d, "message")),
				       "no PMU on this Machine: "));
		assert_null(strstr(json_string_value(json_object_get(d, "message")), "event table"));
		assert_null(strstr(json_string_value(json_object_get(d, "message")),
				   "fp_ret_sse_avx_ops"));
		assert_non_null(strstr(json_string_value(json_object_get(d, "remedy")), "bare metal"));
	}
	json_decref(deg);
	assert_true(found);
	db = open_pivot(run_dir);
	assert_int_equal(query_double(db, "SELECT count(*) FROM degradations WHERE name ="
					  " 'hardware-counters-unavailable'"),
			 1);
	/* unavailable is not zero: no group Measurement at all */
	assert_int_equal(query_double(db, "SELECT count(*) FROM samples WHERE counter IN"
					  " ('flop_dp', 'flop_sp', 'dram_bytes')"),
			 0);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_software_group, setup_software, teardown),
	    cmocka_unit_test_setup_teardown(test_no_pmu_degradation, setup_machine, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
