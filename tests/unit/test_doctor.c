/* Unit tests for userspace/doctor: the pure rules of `nunatak doctor`
 * (kernel version, privileges, perf_event_paranoid, the PMU counter
 * group), reading tools' `--version` texts (captured on this machine from
 * llvm-symbolizer 14, gcc 12, Open MPI 4.1.4's mpirun and mpiexec,
 * MPICH 4.0.2's Hydra), the report (its JSON shape, a Degradation named
 * once), the node service checks from status answers, and real binaries
 * built by the test with cc: -g → line, plain → function, strip → symbol,
 * -fno-omit-frame-pointer vs -fomit-frame-pointer told apart by their
 * prologues; the frame-pointer scan on known instruction bytes. */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/doctor/doctor_binary.h"
#include "userspace/doctor/doctor_kernel.h"
#include "userspace/doctor/doctor_pmu.h"
#include "userspace/doctor/doctor_report.h"
#include "userspace/doctor/doctor_service.h"
#include "userspace/doctor/doctor_tools.h"
#include "userspace/machine/cpu_id.h"
#include "userspace/machine/machine.h"
#include "userspace/machine/machine_cache.h"

static void test_kernel_version(void **state)
{
	(void)state;
	assert_int_equal(doctor_kernel_at_least("6.18.44-fc-v1045", 5, 15), 1);
	assert_int_equal(doctor_kernel_at_least("5.15.0-91-generic", 5, 15), 1);
	assert_int_equal(doctor_kernel_at_least("5.14.21-150400.24.46-default", 5, 15), 0);
	assert_int_equal(doctor_kernel_at_least("4.19.0-26-amd64", 5, 15), 0);
	assert_int_equal(doctor_kernel_at_least("6.1.0-18-amd64", 6, 1), 1);
	assert_int_equal(doctor_kernel_at_least("6.0.12", 6, 1), 0);
	assert_int_equal(doctor_kernel_at_least("linux", 5, 15), -EINVAL);
	assert_int_equal(doctor_kernel_at_least(NULL, 5, 15), -EINVAL);
}

#define CAP(n) ((uint64_t)1 << (n))

static void test_privileges(void **state)
{
	char d[256];

	(void)state;
	assert_int_equal(doctor_privileges(0, ~(uint64_t)0, d, sizeof(d)), DOCTOR_OK);
	assert_non_null(strstr(d, "root"));
	assert_int_equal(doctor_privileges(1000, 0, d, sizeof(d)), DOCTOR_MISSING);
	assert_non_null(strstr(d, "euid 1000"));
	assert_non_null(strstr(d, "CAP_BPF"));
	assert_int_equal(
	    doctor_privileges(1000, CAP(DOCTOR_CAP_BPF) | CAP(DOCTOR_CAP_PERFMON), d, sizeof(d)),
	    DOCTOR_OK);
	assert_non_null(strstr(d, "CAP_BPF and CAP_PERFMON"));
	/* one of the two is not enough */
	assert_int_equal(doctor_privileges(1000, CAP(DOCTOR_CAP_BPF), d, sizeof(d)),
			 DOCTOR_MISSING);
	assert_int_equal(doctor_privileges(1000, CAP(DOCTOR_CAP_SYS_ADMIN), d, sizeof(d)),
			 DOCTOR_OK);
	/* root whose capabilities were dropped (a container, setpriv) */
	assert_int_equal(doctor_privileges(0, 0, d, sizeof(d)), DOCTOR_MISSING);
	assert_non_null(strstr(d, "dropped"));
}

static void test_paranoid(void **state)
{
	char d[320];

	(void)state;
	assert_int_equal(doctor_paranoid(3, 1, d, sizeof(d)), DOCTOR_OK);
	assert_non_null(strstr(d, "does not apply"));
	assert_int_equal(doctor_paranoid(-1, 0, d, sizeof(d)), DOCTOR_OK);
	assert_int_equal(doctor_paranoid(0, 0, d, sizeof(d)), DOCTOR_OK);
	assert_int_equal(doctor_paranoid(1, 0, d, sizeof(d)), DOCTOR_WARNING);
	assert_int_equal(doctor_paranoid(2, 0, d, sizeof(d)), DOCTOR_WARNING);
	assert_non_null(strstr(d, "user mode only"));
	assert_int_equal(doctor_paranoid(3, 0, d, sizeof(d)), DOCTOR_WARNING);
	assert_non_null(strstr(d, "no perf event at all"));
}

static void cpu(struct cpu_id *id, const char *uarch)
{
	memset(id, 0, sizeof(*id));
	snprintf(id->vendor, sizeof(id->vendor), "AuthenticAMD");
	snprintf(id->model_name, sizeof(id->model_name), "AMD EPYC 7B13");
	id->family = 25;
	id->model = 1;
	id->microarchitecture = uarch;
}

static void test_pmu_group(void **state)
{
	struct cpu_id id;
	char d[512];

	(void)state;
	cpu(&id, "zen3");
	assert_int_equal(doctor_pmu_group(&id, d, sizeof(d)), DOCTOR_OK);
	assert_non_null(strstr(d, "the zen3 group (flop_dp, dram_bytes"));
	assert_non_null(strstr(d, "single-precision FLOP counted as double"));
	/* whether there is a PMU is the pmu check's (pmu_cause.h), not said here */
	assert_null(strstr(d, "PMU"));
	/* a known processor without an event table: never a neighbour's group */
	cpu(&id, "neoverse-n1");
	assert_int_equal(doctor_pmu_group(&id, d, sizeof(d)), DOCTOR_MISSING);
	assert_non_null(strstr(d, "no FLOP/DRAM group"));
	assert_non_null(strstr(d, "family 25 model 1, neoverse-n1"));
	cpu(&id, NULL);
	assert_int_equal(doctor_pmu_group(&id, d, sizeof(d)), DOCTOR_MISSING);
	assert_non_null(strstr(d, "microarchitecture unknown"));
}

/* `--version` texts captured on this machine */
static const char llvm_symbolizer_14[] = "llvm-symbolizer\n"
					 "Debian LLVM version 14.0.6\n"
					 "  Optimized build.\n";
static const char gcc_12[] =
    "cc (Debian 12.2.0-14+deb12u1) 12.2.0\n"
    "Copyright (C) 2022 Free Software Foundation, Inc.\n"
    "This is free software; see the source for copying conditions.  There is NO\n"
    "warranty; not even for MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.\n\n";
static const char openmpi_mpirun[] = "mpirun (Open MPI) 4.1.4\n\n"
				     "Report bugs to http://www.open-mpi.org/community/help/\n";
static const char openmpi_mpiexec[] = "mpiexec (OpenRTE) 4.1.4\n\n"
				      "Report bugs to http://www.open-mpi.org/community/help/\n";
static const char mpich_hydra[] =
    "HYDRA build details:\n"
    "    Version:                                 4.0.2\n"
    "    Release Date:                            Thu Apr  7 12:34:45 CDT 2022\n"
    "    CC:                              gcc -Wdate-time -D_FORTIFY_SOURCE=2 -g -O2\n";

static void test_version_line(void **state)
{
	char line[160];

	(void)state;
	assert_int_equal(doctor_version_line(llvm_symbolizer_14, line, sizeof(line)), 0);
	assert_string_equal(line, "Debian LLVM version 14.0.6");
	assert_int_equal(doctor_version_line(gcc_12, line, sizeof(line)), 0);
	assert_string_equal(line, "cc (Debian 12.2.0-14+deb12u1) 12.2.0");
	assert_int_equal(doctor_version_line(mpich_hydra, line, sizeof(line)), 0);
	assert_string_equal(line, "Version: 4.0.2");
	assert_int_equal(doctor_version_line("\n  \n", line, sizeof(line)), -ENOENT);
	assert_int_equal(doctor_version_line("", line, sizeof(line)), -ENOENT);
}

static void test_mpi_stack(void **state)
{
	char v[64];

	(void)state;
	assert_string_equal(doctor_mpi_stack(openmpi_mpirun, v, sizeof(v)), "Open MPI");
	assert_string_equal(v, "4.1.4");
	assert_string_equal(doctor_mpi_stack(openmpi_mpiexec, v, sizeof(v)), "Open MPI");
	assert_string_equal(v, "4.1.4");
	assert_string_equal(doctor_mpi_stack(mpich_hydra, v, sizeof(v)), "MPICH");
	assert_string_equal(v, "4.0.2");
	assert_null(doctor_mpi_stack(gcc_12, v, sizeof(v)));
	assert_string_equal(v, "");
}

/* the real tool, when it is here: the same reading as the captured text */
static void test_tool_version_real(void **state)
{
	char line[160];

	(void)state;
	SKIP_UNLESS(access("/usr/bin/llvm-symbolizer", X_OK) == 0,
		    "/usr/bin/llvm-symbolizer is not installed");
	assert_int_equal(doctor_tool_version("/usr/bin/llvm-symbolizer", line, sizeof(line)), 0);
	assert_non_null(strstr(line, "LLVM version"));
	assert_int_equal(doctor_tool_version("/bin/false", line, sizeof(line)), -EPROTO);
}

static const char *check_field(const json_t *o, size_t i, const char *key)
{
	return json_string_value(
	    json_object_get(json_array_get(json_object_get(o, "checks"), i), key));
}

static void test_report(void **state)
{
	struct doctor_report *r = doctor_report__new();
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	json_t *o;

	(void)state;
	assert_non_null(r);
	doctor_check(r, "bpf", DOCTOR_MISSING, "run as root", "not permitted: %s", "EPERM");
	doctor_check(r, "btf", DOCTOR_OK, NULL, "readable");
	doctor_degradation(r, "bpf-denied", "no BPF", "run as root");
	doctor_degradation(r, "bpf-denied", "again", "again");
	assert_int_equal(doctor_check_status(r, "bpf"), DOCTOR_MISSING);
	assert_int_equal(doctor_check_status(r, "btf"), DOCTOR_OK);
	assert_int_equal(doctor_check_status(r, "pmu"), -ENOENT);
	o = doctor_report_json(r);
	assert_non_null(o);
	assert_int_equal(json_array_size(json_object_get(o, "checks")), 2);
	assert_string_equal(check_field(o, 0, "status"), "missing");
	assert_string_equal(check_field(o, 0, "detail"), "not permitted: EPERM");
	assert_string_equal(check_field(o, 0, "remedy"), "run as root");
	assert_true(json_is_null(
	    json_object_get(json_array_get(json_object_get(o, "checks"), 1), "remedy")));
	assert_int_equal(json_array_size(json_object_get(o, "degradations")), 1);
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(o, "degradations"), 0), "message")),
			    "no BPF");
	json_decref(o);
	out = open_memstream(&text, &len);
	assert_int_equal(doctor_report_print(r, out), 0);
	fclose(out);
	assert_non_null(strstr(text, "missing  bpf"));
	assert_non_null(strstr(text, "remedy: run as root"));
	assert_non_null(strstr(text, "bpf-denied: no BPF"));
	free(text);
	doctor_report__free(r);
}

static void test_service_from_status(void **state)
{
	struct doctor_report *r = doctor_report__new();
	json_t *reply;

	(void)state;
	doctor_service_from_status(r, "/run/nunatak/agent.sock", -ENOENT, "", NULL);
	assert_int_equal(doctor_check_status(r, "nunatakd"), DOCTOR_MISSING);
	assert_int_equal(doctor_check_status(r, "aggregator"), DOCTOR_MISSING);
	doctor_report__free(r);

	r = doctor_report__new();
	reply = json_pack("{s:b, s:{s:s, s:b, s:[]}, s:[{s:s, s:s}]}", "ok", 1, "agent", "node",
			  "n1", "sampling", 1, "targets", "aggregators", "endpoint",
			  "tcp://agg:5555", "error", "the aggregator did not answer STATUS");
	doctor_service_from_status(r, "/run/nunatak/agent.sock", 0, "", reply);
	assert_int_equal(doctor_check_status(r, "nunatakd"), DOCTOR_OK);
	assert_int_equal(doctor_check_status(r, "aggregator"), DOCTOR_MISSING);
	json_decref(reply);
	doctor_report__free(r);

	r = doctor_report__new();
	doctor_service_from_status(r, "/tmp/x.sock", -EPERM, "not root's", NULL);
	assert_int_equal(doctor_check_status(r, "nunatakd"), DOCTOR_MISSING);
	doctor_report__free(r);
}

static void test_prologue(void **state)
{
	static const uint8_t fp_x86[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xc3};
	static const uint8_t nofp_x86[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0xc3};
	/* gcc 12 -O2: push %rbp; mov %edi,%eax; and $7,%eax; mov %rsp,%rbp */
	static const uint8_t sched_x86[] = {0x55, 0x89, 0xf8, 0x83, 0xe0, 0x07, 0x48, 0x89, 0xe5};
	/* mov %rsp,%rbp without a push before it */
	static const uint8_t nopush_x86[] = {0x48, 0x89, 0xe5, 0x55, 0xc3};
	/* stp x29, x30, [sp, #-16]!; mov x29, sp */
	static const uint8_t fp_arm64[] = {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91};
	/* the same bytes, not on an instruction boundary */
	static const uint8_t odd_arm64[] = {0x00, 0xfd, 0x03, 0x00, 0x91, 0x00, 0x00, 0x00};

	(void)state;
	assert_int_equal(doctor_prologue_frame_pointer(fp_x86, sizeof(fp_x86), EM_X86_64), 1);
	assert_int_equal(doctor_prologue_frame_pointer(nofp_x86, sizeof(nofp_x86), EM_X86_64), 0);
	assert_int_equal(doctor_prologue_frame_pointer(fp_x86, 6, EM_X86_64), 0);
	assert_int_equal(doctor_prologue_frame_pointer(sched_x86, sizeof(sched_x86), EM_X86_64), 1);
	assert_int_equal(doctor_prologue_frame_pointer(nopush_x86, sizeof(nopush_x86), EM_X86_64),
			 0);
	assert_int_equal(doctor_prologue_frame_pointer(fp_arm64, sizeof(fp_arm64), EM_AARCH64), 1);
	assert_int_equal(doctor_prologue_frame_pointer(odd_arm64, sizeof(odd_arm64), EM_AARCH64),
			 0);
	assert_int_equal(doctor_prologue_frame_pointer(fp_x86, sizeof(fp_x86), EM_386),
			 -EOPNOTSUPP);
}

static const char program[] =
    "#define F(n) __attribute__((noinline)) int f##n(int x) { "
    "volatile int a[8]; a[x & 7] = x; return a[(x + n) & 7] * n + x; }\n"
    "F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12)\n"
    "int main(int c, char **v) { (void)v; return f1(c) + f2(c) + f3(c) + f4(c) + f5(c) + "
    "f6(c) + f7(c) + f8(c) + f9(c) + f10(c) + f11(c) + f12(c) == 12345; }\n";

static void test_binaries(void **state)
{
	struct doctor_binary g, plain, stripped, fp, nofp, notab;
	char dir[PATH_MAX];

	(void)state;
	SKIP_UNLESS(have_command("cc") && have_command("strip"), "cc or strip missing");
	assert_int_equal(make_tmpdir(dir, sizeof(dir), "doctor"), 0);
	assert_int_equal(write_file(path_in(dir, "p.c"), program), 0);
	assert_int_equal(
	    run_cmd("cd %s && cc -O2 -g -o g p.c && cc -O2 -o plain p.c && "
		    "cp plain stripped && strip stripped && "
		    "cc -O2 -fno-omit-frame-pointer -o fp p.c && "
		    "cc -O2 -fomit-frame-pointer -o nofp p.c && "
		    "cc -O2 -fno-asynchronous-unwind-tables -fno-unwind-tables -o notab p.c",
		    dir),
	    0);
	assert_int_equal(doctor_binary_read(path_in(dir, "g"), &g), 0);
	assert_int_equal(doctor_binary_read(path_in(dir, "plain"), &plain), 0);
	assert_int_equal(doctor_binary_read(path_in(dir, "stripped"), &stripped), 0);
	assert_int_equal(doctor_binary_read(path_in(dir, "fp"), &fp), 0);
	assert_int_equal(doctor_binary_read(path_in(dir, "nofp"), &nofp), 0);
	assert_true(g.has_debug_info && g.has_symtab);
	assert_true(!plain.has_debug_info && plain.has_symtab);
	assert_true(!stripped.has_debug_info && !stripped.has_symtab && stripped.has_dynsym);
	assert_true(g.has_eh_frame && stripped.has_eh_frame);
	/* the 12 functions and main, with crt's few */
	assert_true(fp.functions >= 13 && nofp.functions >= 13);
	assert_true(2 * fp.frame_pointer >= fp.functions);
	assert_true(2 * nofp.frame_pointer < nofp.functions);
	/* unwind tables: every function of the program has an FDE, or none */
	assert_true(2 * plain.with_cfi >= plain.functions);
	assert_int_equal(doctor_binary_read(path_in(dir, "notab"), &notab), 0);
	assert_true(notab.functions >= 13);
	assert_true(2 * notab.with_cfi < notab.functions);
	assert_int_equal(doctor_binary_read(path_in(dir, "p.c"), &plain), -ENOEXEC);
	assert_int_equal(doctor_binary_read(path_in(dir, "none"), &plain), -ENOENT);
	assert_int_equal(remove_tree(dir), 0);
}

/* the cached Machine profile, in a cache of the test's own */
static void test_machine_profile(void **state)
{
	struct doctor_report *r;
	char dir[PATH_MAX], path[PATH_MAX + 64];
	json_t *machine, *ceilings, *file;
	char *identity;

	(void)state;
	assert_int_equal(make_tmpdir(dir, sizeof(dir), "doctor-cache"), 0);
	setenv("XDG_CACHE_HOME", dir, 1);
	r = doctor_report__new();
	doctor_machine_profile_check(r);
	assert_int_equal(doctor_check_status(r, "machine_profile"), DOCTOR_MISSING);
	doctor_report__free(r);

	machine = machine_describe();
	assert_non_null(machine);
	identity = machine_identity(machine);
	assert_non_null(identity);
	ceilings = json_pack("[{s:s, s:f, s:s, s:s, s:n}]", "name", "dram_bandwidth", "value",
			     1.5e10, "unit", "B/s", "quality", "measured", "reason");
	assert_int_equal(machine_cache_store_profile(identity, machine, ceilings), 0);
	r = doctor_report__new();
	doctor_machine_profile_check(r);
	assert_int_equal(doctor_check_status(r, "machine_profile"), DOCTOR_OK);
	doctor_report__free(r);

	/* a profile of another calibration version is stale: not used */
	snprintf(path, sizeof(path), "%s/nunatak/machines/%s.json", dir, identity);
	file = json_load_file(path, 0, NULL);
	assert_non_null(file);
	json_object_set_new(file, "calibration_version", json_integer(CALIBRATION_VERSION + 1));
	assert_int_equal(json_dump_file(file, path, 0), 0);
	r = doctor_report__new();
	doctor_machine_profile_check(r);
	assert_int_equal(doctor_check_status(r, "machine_profile"), DOCTOR_MISSING);
	doctor_report__free(r);

	json_decref(file);
	json_decref(ceilings);
	free(identity);
	json_decref(machine);
	unsetenv("XDG_CACHE_HOME");
	assert_int_equal(remove_tree(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernel_version),
	    cmocka_unit_test(test_privileges),
	    cmocka_unit_test(test_paranoid),
	    cmocka_unit_test(test_pmu_group),
	    cmocka_unit_test(test_version_line),
	    cmocka_unit_test(test_mpi_stack),
	    cmocka_unit_test(test_tool_version_real),
	    cmocka_unit_test(test_report),
	    cmocka_unit_test(test_service_from_status),
	    cmocka_unit_test(test_prologue),
	    cmocka_unit_test(test_binaries),
	    cmocka_unit_test(test_machine_profile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
