/* Unit tests for userspace/agent/pmu_cause: every branch of the one
 * decision of why a Run has no hardware counters, driven by a PMU
 * directory of the test's own (a temp dir with or without "cpu",
 * "cpu_core", "armv8_pmuv3_0") and a processor of its own; then the real
 * facts of this Machine, whose verdict must agree with what sysfs lists.
 * Each verdict says its cause, never another's: no "not in nunatak's event
 * table" for a Machine without PMU (issue 20), no "no PMU" for a refused
 * counter. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/agent/pmu_cause.h"
#include "userspace/agent/pmu_events.h"
#include "userspace/machine/cpu_id.h"

struct fixture {
	char none[PATH_MAX];   /* a PMU directory with software PMUs only (a VM) */
	char x86[PATH_MAX];    /* ... and "cpu" */
	char arm[PATH_MAX];    /* ... and "armv8_pmuv3_0" */
	char hybrid[PATH_MAX]; /* ... and "cpu_core", "cpu_atom" */
	struct cpu_id zen4, zen5;
};

static int pmu_dir(char *dir, size_t len, const char *name, const char *const *pmus)
{
	char path[PATH_MAX + 64];

	if (make_tmpdir(dir, len, name))
		return -1;
	for (; *pmus; pmus++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *pmus);
		if (mkdir(path, 0755))
			return -1;
	}
	return 0;
}

static void amd(struct cpu_id *id, int family, int model)
{
	memset(id, 0, sizeof(*id));
	snprintf(id->vendor, sizeof(id->vendor), "AuthenticAMD");
	snprintf(id->model_name, sizeof(id->model_name), "AMD EPYC");
	id->family = family;
	id->model = model;
	id->microarchitecture = cpu_id_microarchitecture(id->vendor, family, model);
}

static int setup(void **state)
{
	static struct fixture fx;
	static const char *const soft[] = {"software", "tracepoint", "breakpoint", "msr", NULL};
	static const char *const x86[] = {"software", "cpu", "amd_l3", NULL};
	static const char *const arm[] = {"software", "armv8_pmuv3_0", "arm_cmn_0", NULL};
	static const char *const hybrid[] = {"software", "cpu_atom", "cpu_core", NULL};

	if (pmu_dir(fx.none, sizeof(fx.none), "pmu-none", soft) ||
	    pmu_dir(fx.x86, sizeof(fx.x86), "pmu-x86", x86) ||
	    pmu_dir(fx.arm, sizeof(fx.arm), "pmu-arm", arm) ||
	    pmu_dir(fx.hybrid, sizeof(fx.hybrid), "pmu-hybrid", hybrid))
		return -1;
	amd(&fx.zen4, 25, 17);
	amd(&fx.zen5, 26, 2);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	remove_tree(fx->none);
	remove_tree(fx->x86);
	remove_tree(fx->arm);
	remove_tree(fx->hybrid);
	return 0;
}

/* the facts of a processor id on devices, its group from the table */
static struct pmu_facts facts(const char *devices, const struct cpu_id *id, int cycles_err,
			      int group_err, const char *group_why)
{
	const char *reason;

	return (struct pmu_facts){
	    .devices = devices,
	    .id = id,
	    .set = id ? pmu_events_for(id->microarchitecture, &reason) : NULL,
	    .cycles_err = cycles_err,
	    .group_err = group_err,
	    .group_why = group_why,
	    .paranoid = 2,
	};
}

static void assert_said(const struct pmu_verdict *v, const char *in_message, const char *in_remedy)
{
	assert_non_null(strstr(v->message, in_message));
	assert_non_null(strstr(v->remedy, in_remedy));
	assert_non_null(strstr(v->message, "time only"));
}

static void test_core_listed(void **state)
{
	struct fixture *fx = *state;
	char name[64] = "";

	assert_int_equal(pmu_core_listed(fx->none, name, sizeof(name)), 0);
	assert_int_equal(pmu_core_listed(fx->x86, name, sizeof(name)), 1);
	assert_string_equal(name, "cpu");
	assert_int_equal(pmu_core_listed(fx->arm, name, sizeof(name)), 1);
	assert_string_equal(name, "armv8_pmuv3_0");
	assert_int_equal(pmu_core_listed(fx->hybrid, name, sizeof(name)), 1);
	assert_non_null(strstr(name, "cpu_"));
	assert_int_equal(pmu_core_listed("/nonexistent/pmu", name, sizeof(name)), 0);
}

/* 1: no PMU, whether the processor is in the table (zen4, this VM) or not
 * (zen5, issue 20's machine): the same cause, not the table */
static void test_no_pmu(void **state)
{
	struct fixture *fx = *state;
	struct pmu_facts f;
	struct pmu_verdict v;

	f = facts(fx->none, &fx->zen4, -ENOENT, -ENOENT,
		  "zen4's counter fp_ret_sse_avx_ops.all cannot be opened (No such file or "
		  "directory)");
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_NO_PMU);
	assert_int_equal(v.cause, PMU_CAUSE_NO_PMU);
	assert_said(&v, "no PMU on this Machine", "bare metal");
	assert_non_null(strstr(v.message, "lists no processor PMU"));
	assert_null(strstr(v.message, "fp_ret_sse_avx_ops")); /* not a counter of the table */
	assert_null(strstr(v.message, "event table"));

	f = facts(fx->none, &fx->zen5, -ENOENT, 0, NULL);
	assert_null(f.set); /* Zen 5 is not in the table: the test's premise */
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_NO_PMU);
	assert_said(&v, "no PMU on this Machine", "bare metal");
	assert_null(strstr(v.message, "event table"));
	assert_null(strstr(v.remedy, "event table"));

	/* denied by perf_event_paranoid = 3 on a Machine without PMU: still no PMU */
	f = facts(fx->none, &fx->zen5, -EACCES, 0, NULL);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_NO_PMU);
	assert_non_null(strstr(v.message, "Permission denied"));

	/* sysfs lists a PMU the kernel opens no cycles counter on */
	f = facts(fx->x86, &fx->zen4, -EOPNOTSUPP, -ENOENT, "zen4's counter x cannot be opened");
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_NO_PMU);
	assert_non_null(strstr(v.message, "the PMU 'cpu'"));
}

/* 2: a PMU, the processor not in the table: its family and model named */
static void test_unknown_model(void **state)
{
	struct fixture *fx = *state;
	struct pmu_facts f;
	struct pmu_verdict v;

	f = facts(fx->x86, &fx->zen5, 0, 0, NULL);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_UNKNOWN_MODEL);
	assert_said(&v, "not in nunatak's event table", "pmu_events.c");
	assert_non_null(strstr(v.message, "AuthenticAMD family 26 model 2"));
	assert_non_null(strstr(v.remedy, "family 26 model 2"));
	assert_null(strstr(v.message, "no PMU"));
	/* a PMU of a name sysfs lists under another name: the kernel counts cycles */
	f = facts(fx->none, &fx->zen5, 0, 0, NULL);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_UNKNOWN_MODEL);
	/* a PMU the user may not use, of a processor not in the table: the table first */
	f = facts(fx->arm, &fx->zen5, -EACCES, 0, NULL);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_UNKNOWN_MODEL);
	/* a processor that cannot be identified */
	f = facts(fx->x86, NULL, 0, 0, NULL);
	f.id_err = -EACCES;
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_UNKNOWN_MODEL);
	assert_said(&v, "cannot be identified", "/proc/cpuinfo");
}

/* 3: a PMU and a group, its counters refused: each errno its remedy */
static void test_refused(void **state)
{
	static const char why[] = "zen4's counter fp_ret_sse_avx_ops.all cannot be opened (x)";
	struct fixture *fx = *state;
	struct pmu_facts f;
	struct pmu_verdict v;

	f = facts(fx->x86, &fx->zen4, -EACCES, -EACCES, why);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_REFUSED);
	assert_said(&v, "the PMU's counters are denied", "perf_event_paranoid");
	assert_non_null(strstr(v.message, why));
	assert_non_null(strstr(v.message, "kernel.perf_event_paranoid = 2"));
	assert_null(strstr(v.message, "no PMU"));
	f = facts(fx->hybrid, &fx->zen4, 0, -EPERM, why);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_REFUSED);
	assert_said(&v, "denied", "seccomp");
	f = facts(fx->x86, &fx->zen4, 0, -EBUSY, why);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_REFUSED);
	assert_said(&v, "the PMU's counters are in use", "nmi_watchdog");
	assert_null(strstr(v.message, "paranoid"));
	/* ENOENT on a raw event with a PMU: the event, not the PMU, is missing */
	f = facts(fx->x86, &fx->zen4, 0, -ENOENT, why);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_REFUSED);
	assert_said(&v, "not accepted by this PMU", "perf stat -e cycles true");
	assert_null(strstr(v.message, "no PMU"));
	/* without the sampler's words: the group named */
	f = facts(fx->x86, &fx->zen4, 0, -EBUSY, NULL);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_REFUSED);
	assert_non_null(
	    strstr(v.message, "zen4's counters cannot be opened (Device or resource busy)"));
}

/* the group opened: nothing missing, whatever else the facts say */
static void test_none(void **state)
{
	struct fixture *fx = *state;
	struct pmu_facts f;
	struct pmu_verdict v;

	f = facts(fx->x86, &fx->zen4, 0, 0, NULL);
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_NONE);
	assert_string_equal(v.message, "");
	f = facts(fx->none, &fx->zen4, -EACCES, 0, NULL); /* root's group, a user's cycles */
	assert_int_equal(pmu_cause_decide(&f, &v), PMU_CAUSE_NONE);
}

/* this Machine: the verdict agrees with what its sysfs lists */
static void test_this_machine(void **state)
{
	struct pmu_facts f;
	struct pmu_verdict v;
	struct cpu_id id;
	char core[64], why[256];
	int listed = pmu_core_listed(PMU_DEVICES, core, sizeof(core));

	(void)state;
	pmu_facts_here(&f, &id);
	assert_string_equal(f.devices, PMU_DEVICES);
	assert_true(f.cycles_err <= 0);
	if (f.set) { /* as the sampler and doctor do: the group decides "none" */
		f.group_err = pmu_event_set_probe(f.set, (int)sysconf(_SC_NPROCESSORS_CONF), why,
						  sizeof(why));
		f.group_why = f.group_err ? why : NULL;
	}
	pmu_cause_decide(&f, &v);
	print_message("this Machine (%s): %s\n", listed ? core : "no core PMU listed",
		      v.message[0] ? v.message : "counters available");
	if (!listed)
		assert_true(f.cycles_err != 0); /* no PMU: the kernel agrees */
	if (!listed && f.cycles_err)
		assert_int_equal(v.cause, PMU_CAUSE_NO_PMU);
	if (listed && !f.cycles_err)
		assert_int_not_equal(v.cause, PMU_CAUSE_NO_PMU);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_core_listed),	  cmocka_unit_test(test_no_pmu),
	    cmocka_unit_test(test_unknown_model), cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_none),	  cmocka_unit_test(test_this_machine),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
