/* test_component_probes — which functions a Component PATTERN names
 * (demangled names, with or without parameters, globs; .symtab of this
 * test's own executable), and the Component probes on this very process:
 * a known call chain step -> alpha -> beta counted per Step with its self
 * costs, its parents and phases, the Steps' bounds, and the calls lost
 * beyond MAX_COMPONENT_DEPTH.
 *
 * Without root or kernel BTF the probe tests are SKIPPED.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf/components.skel.h"
#include "bpf/target.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"
#include "userspace/agent/agent.h"
#include "userspace/agent/component_probes.h"
#include "userspace/agent/component_probes_internal.h"
#include "userspace/agent/component_report.h"
#include "userspace/agent/batch.h"
#include "userspace/agent/component_symbols.h"
#include "userspace/agent/modules.h"
#include "userspace/elf/elf_file.h"

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void burn(double s)
{
	double t0 = thread_cpu_s();

	while (thread_cpu_s() - t0 < s)
		;
}

__attribute__((noinline, used)) void test_fn_beta(void)
{
	burn(0.001);
}

__attribute__((noinline, used)) void test_fn_alpha(void)
{
	burn(0.002);
	test_fn_beta();
}

__attribute__((noinline, used)) void test_fn_step(void)
{
	test_fn_alpha();
}

int test_fn_recurse(int n);
/* through a pointer: the compiler turns no call of it into a loop */
static int (*volatile recurse_again)(int) = test_fn_recurse;

__attribute__((noinline, used)) int test_fn_recurse(int n)
{
	return n > 0 ? recurse_again(n - 1) + 1 : 0;
}

static void test_demangle(void **state)
{
	char *s;

	(void)state;
	s = component_demangle("_ZN9PairLJCut7computeEii");
	assert_string_equal(s, "PairLJCut::compute(int, int)");
	free(s);
	s = component_demangle("comp_a");
	assert_string_equal(s, "comp_a");
	free(s);
	s = component_demangle("_Znot_valid");
	assert_string_equal(s, "_Znot_valid"); /* not a mangled name: kept */
	free(s);
}

static void test_base_name(void **state)
{
	(void)state;
	assert_int_equal(component_name_base_len("PairLJCut::compute(int, int)"), 18);
	assert_int_equal(component_name_base_len("comp_a"), 6);
	assert_int_equal(component_name_base_len("(anonymous namespace)::f(int)"), 24);
	assert_int_equal(component_name_base_len("ns::Fn<void (int)>::run() const"), 23);
	assert_int_equal(component_name_base_len("Op::operator()(double)"), 14);
}

static void test_pattern_match(void **state)
{
	(void)state;
	assert_true(component_pattern_match("PairLJCut::compute", "PairLJCut::compute(int, int)"));
	assert_true(component_pattern_match("PairLJCut::compute(int, int)",
					    "PairLJCut::compute(int, int)"));
	assert_true(component_pattern_match("*::execute", "FixNVE::execute(int)"));
	assert_true(component_pattern_match("comp_[bc]", "comp_c"));
	assert_true(component_pattern_match("Op::operator()", "Op::operator()(double)"));
	assert_false(component_pattern_match("comp_[bc]", "comp_a"));
	assert_false(component_pattern_match("PairLJCut::comp", "PairLJCut::compute(int, int)"));
	assert_false(component_pattern_match("compute", "PairLJCut::compute(int, int)"));
	assert_false(component_pattern_match("*::execute", "execute_all(int)"));
}

struct picked {
	char names[8][64];
	size_t patterns[8];
	uint64_t offsets[8];
	int n;
};

static int pick(const struct component_symbol *s, void *ctx)
{
	struct picked *p = ctx;

	if (p->n < 8) {
		snprintf(p->names[p->n], sizeof(p->names[0]), "%s", s->name);
		p->patterns[p->n] = s->pattern;
		p->offsets[p->n] = s->offset;
	}
	p->n++;
	return 0;
}

static void test_select_own_symbols(void **state)
{
	const char *const patterns[] = {"nothing_named_so", "test_fn_al*", "test_fn_[bs]*"};
	struct elf_file *elf = elf_file__open("/proc/self/exe");
	struct picked p = {};
	struct elf_symbol sym;
	uint64_t offset;

	(void)state;
	assert_non_null(elf);
	assert_int_equal(component_symbols_select(elf, patterns, 3, pick, &p), 0);
	assert_int_equal(p.n, 3); /* alpha, beta, step: address order */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(elf_file__lookup_name(elf, p.names[i], &sym), 0);
		assert_int_equal(elf_file__vaddr_to_offset(elf, sym.start, &offset), 0);
		assert_true(p.offsets[i] == offset);
		assert_int_equal(p.patterns[i], strcmp(p.names[i], "test_fn_alpha") ? 2 : 1);
	}
	elf_file__free(elf);
}

/* the costs read back: one row per key */
struct rows {
	struct component_cost_key keys[64];
	struct component_cost_value values[64];
	int n;
};

static int collect(const struct component_cost_key *k, const struct component_cost_value *v,
		   void *ctx)
{
	struct rows *r = ctx;

	if (k->tgid == (__u32)getpid() && r->n < 64) {
		r->keys[r->n] = *k;
		r->values[r->n++] = *v;
	}
	return 0;
}

static int count_steps(const struct component_step_key *k, const struct component_step_value *v,
		       void *ctx)
{
	int *n = ctx;

	if (k->tgid == (__u32)getpid() && v->end_ns > v->start_ns && k->step < 3)
		(*n)++;
	return 0;
}

static uint32_t id_of(struct component_probes *cp, const char *name)
{
	for (uint32_t id = 1; component_probes_def(cp, id); id++)
		if (!strcmp(component_probes_def(cp, id)->name, name))
			return id;
	return 0;
}

static const struct component_cost_value *row(const struct rows *r, uint32_t comp, uint32_t phase,
					      int step, uint32_t parent)
{
	for (int i = 0; i < r->n; i++)
		if (r->keys[i].component == comp && r->keys[i].phase == phase &&
		    r->keys[i].step == step && r->keys[i].parent == parent)
			return &r->values[i];
	return NULL;
}

static int unmatched(const char *pattern, int is_step, void *ctx)
{
	(void)is_step;
	snprintf(ctx, 64, "%s", pattern);
	return 0;
}

/* multi: uprobe_multi links where the kernel has them (-1), or perf-event
 * uprobes (0) */
static void check_own_calls(int multi)
{
	const char *const patterns[] = {"test_fn_alpha", "test_fn_beta", "test_fn_recurse",
					"no_such_function"};
	struct module m = {};
	struct target_info info = {.target_id = 5, .uid = TARGET_UID_ANY};
	__u32 tgid = (__u32)getpid();
	uint64_t c[COMPONENT_COUNTERS];
	struct component_probes *cp;
	const struct component_cost_value *v;
	struct rows r = {};
	char path[PATH_MAX] = "", err[256], missing[64] = "";
	uint32_t alpha, beta, step, rec;
	int steps = 0;

	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	cp = component_probes__new(-1, multi, err, sizeof(err));
	assert_non_null(cp);
	if (!multi)
		assert_false(component_probes_multi(cp));
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(cp->skel->maps.targets), &tgid, &info, 0),
			 0);
	assert_int_equal(
	    component_probes_add_target(cp, 5, TARGET_UID_ANY, patterns, 4, "test_fn_step"), 0);
	assert_true(readlink("/proc/self/exe", path, sizeof(path) - 1) > 0);
	m.path = path;
	m.elf = elf_file__open(path);
	assert_non_null(m.elf);
	/* a user's Run: this root-owned file is not theirs to probe */
	assert_int_equal(component_probes_add_target(cp, 6, 12345, patterns, 1, NULL), 0);
	component_probes_remove_target(cp, 5);
	assert_int_equal(component_probes_consider(cp, 6, &m, err, sizeof(err)), 0);
	component_probes_for_each_unmatched(cp, 6, unmatched, missing);
	assert_string_equal(missing, "test_fn_alpha");
	component_probes_remove_target(cp, 6);
	assert_int_equal(
	    component_probes_add_target(cp, 5, TARGET_UID_ANY, patterns, 4, "test_fn_step"), 0);
	missing[0] = '\0';
	assert_int_equal(component_probes_consider(cp, 7, &m, err, sizeof(err)), 0); /* no such Target */
	assert_int_equal(component_probes_consider(cp, 5, &m, err, sizeof(err)), 4);
	assert_int_equal(component_probes_consider(cp, 5, &m, err, sizeof(err)), 0); /* once */
	test_fn_beta();								  /* setup */
	for (int k = 0; k < 3; k++)
		test_fn_step();
	test_fn_alpha(); /* between Step 2 and a Step 3 that never comes */
	test_fn_recurse(MAX_COMPONENT_DEPTH + 3);
	component_probes_for_each_cost(cp, collect, &r);
	component_probes_for_each_unmatched(cp, 5, unmatched, missing);
	assert_string_equal(missing, "no_such_function");
	alpha = id_of(cp, "test_fn_alpha");
	beta = id_of(cp, "test_fn_beta");
	step = id_of(cp, "test_fn_step");
	rec = id_of(cp, "test_fn_recurse");
	assert_true(alpha && beta && step && rec);
	assert_true(component_probes_def(cp, step)->is_step);
	assert_non_null(row(&r, beta, COMPONENT_PHASE_SETUP, -1, 0));
	for (int k = 0; k < 3; k++) {
		v = row(&r, alpha, COMPONENT_PHASE_STEP, k, step);
		assert_non_null(v);
		assert_int_equal(v->calls, 1);
		/* self: its own 2 ms of CPU, not beta's 1 ms */
		assert_in_range(v->self.cpu_ns, 1900000, 2900000);
		assert_true(v->self.wall_ns >= v->self.cpu_ns);
		v = row(&r, beta, COMPONENT_PHASE_STEP, k, alpha);
		assert_non_null(v);
		assert_in_range(v->self.cpu_ns, 950000, 1900000);
		assert_non_null(row(&r, step, COMPONENT_PHASE_STEP, k, 0));
	}
	v = row(&r, alpha, COMPONENT_PHASE_BETWEEN, 2, 0);
	assert_non_null(v);
	/* nesting: each call of the recursion under the one before */
	v = row(&r, rec, COMPONENT_PHASE_BETWEEN, 2, rec);
	assert_non_null(v);
	assert_int_equal(v->calls, MAX_COMPONENT_DEPTH - 1);
	component_probes_read_counters(cp, c);
	assert_int_equal(c[COMPONENT_LOST_DEPTH], 4); /* depths 17..20 */
	assert_int_equal(c[COMPONENT_LOST_UNBALANCED], 0);
	component_probes_for_each_step(cp, count_steps, &steps);
	assert_int_equal(steps, 3);
	component_probes_forget(cp, (pid_t)tgid);
	r.n = 0;
	component_probes_for_each_cost(cp, collect, &r);
	assert_int_equal(r.n, 0);
	component_probes__free(cp);
	elf_file__free(m.elf);
}

/* run-start's "components" and "step" as the node service reads them */
static void test_components_of_json(void **state)
{
	const char *patterns[AGENT_MAX_COMPONENTS];
	struct agent_target_opts o = {};
	json_t *req, *many = json_array();

	(void)state;
	req = json_pack("{s:[s,s], s:s}", "components", "A::run", "*::execute", "step",
			"Verlet::run");
	assert_int_equal(agent_components_of_json(req, &o, patterns), 0);
	assert_int_equal(o.n_components, 2);
	assert_string_equal(o.components[1], "*::execute");
	assert_string_equal(o.step, "Verlet::run");
	json_decref(req);
	req = json_object(); /* neither: no Components */
	o = (struct agent_target_opts){};
	assert_int_equal(agent_components_of_json(req, &o, patterns), 0);
	assert_int_equal(o.n_components, 0);
	assert_null(o.step);
	json_decref(req);
	req = json_pack("{s:[s,i]}", "components", "A", 3);
	assert_int_equal(agent_components_of_json(req, NULL, NULL), -EINVAL);
	json_decref(req);
	req = json_pack("{s:[s,s]}", "components", "A", "");
	assert_int_equal(agent_components_of_json(req, NULL, NULL), -EINVAL);
	json_decref(req);
	req = json_pack("{s:s}", "step", "");
	assert_int_equal(agent_components_of_json(req, NULL, NULL), -EINVAL);
	json_decref(req);
	for (int i = 0; i <= AGENT_MAX_COMPONENTS; i++)
		json_array_append_new(many, json_string("f"));
	req = json_pack("{s:o}", "components", many);
	assert_int_equal(agent_components_of_json(req, NULL, NULL), -EINVAL);
	json_decref(req);
}

static void test_probes_own_calls(void **state)
{
	(void)state;
	check_own_calls(-1);
}

static void test_probes_own_calls_perf_events(void **state)
{
	(void)state;
	check_own_calls(0);
}

static int want_all(void *ctx, pid_t tgid)
{
	(void)ctx;
	return tgid == 4242;
}

static void locus_of(void *ctx, pid_t tgid, pid_t tid, struct batch_locus *l)
{
	(void)ctx;
	*l = (struct batch_locus){.tgid = tgid, .tid = tid, .world_size = -1};
}

/* one report into a fresh Batch: how many costs, Steps, Components */
static void report_once(struct component_probes *cp, size_t counts[3])
{
	struct batch_builder *b = batch_builder__new("run", "n1", 0);
	wire_envelope *env;

	assert_non_null(b);
	assert_int_equal(component_report_of(cp, b, 5, want_all, locus_of, NULL), 0);
	env = batch_builder_envelope(b);
	counts[0] = env->batch->n_component_costs;
	counts[1] = env->batch->n_steps;
	counts[2] = env->batch->n_components;
	batch_builder__free(b);
}

/* what changed is sent, what did not is not; an ended Step once, then
 * forgotten by the kernel's map */
static void test_report_changed_only(void **state)
{
	const char *const patterns[] = {"test_fn_alpha", "test_fn_beta"};
	struct component_cost_key key = {.tgid = 4242, .tid = 4243, .phase = COMPONENT_PHASE_STEP};
	struct component_cost_value v = {.calls = 1};
	struct component_step_key sk = {.tgid = 4242, .step = 0};
	struct component_step_value sv = {.start_ns = 10};
	struct component_probes *cp;
	int costs, steps;
	size_t n[3];
	char err[256];

	(void)state;
	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	cp = component_probes__new(-1, -1, err, sizeof(err));
	assert_non_null(cp);
	costs = bpf_map__fd(cp->skel->maps.component_costs);
	steps = bpf_map__fd(cp->skel->maps.component_steps);
	assert_int_equal(component_probes_add_target(cp, 5, TARGET_UID_ANY, patterns, 2, "s"), 0);
	/* two Components known, as consider would have named them */
	cp->defs = calloc(2, sizeof(*cp->defs));
	cp->defs[0] = (struct component_def){strdup("test_fn_alpha"), strdup("test_fn_alpha"), 0};
	cp->defs[1] = (struct component_def){strdup("test_fn_beta"), strdup("test_fn_beta"), 0};
	cp->n_defs = 2;
	key.component = 2;
	key.parent = 1;
	assert_int_equal(bpf_map_update_elem(costs, &key, &v, 0), 0);
	assert_int_equal(bpf_map_update_elem(steps, &sk, &sv, 0), 0);
	report_once(cp, n);
	assert_int_equal(n[0], 1);
	assert_int_equal(n[1], 1);
	assert_int_equal(n[2], 2); /* beta and its parent alpha */
	report_once(cp, n);
	assert_int_equal(n[0] + n[1] + n[2], 0); /* nothing changed */
	v.calls = 2;
	sv.end_ns = 20;
	assert_int_equal(bpf_map_update_elem(costs, &key, &v, 0), 0);
	assert_int_equal(bpf_map_update_elem(steps, &sk, &sv, 0), 0);
	report_once(cp, n);
	assert_int_equal(n[0], 1);
	assert_int_equal(n[1], 1);
	/* the ended Step is final: gone from the kernel's map */
	assert_int_not_equal(bpf_map_lookup_elem(steps, &sk, &sv), 0);
	component_probes_forget(cp, 4242);
	assert_int_not_equal(bpf_map_lookup_elem(costs, &key, &v), 0);
	component_probes__free(cp);
}

/* past the cap on functions probed, what the patterns name is counted,
 * not probed: four functions named, two probed */
static void test_function_cap(void **state)
{
	const char *const patterns[] = {"test_fn_alpha", "test_fn_beta", "test_fn_recurse",
					"test_fn_step"};
	struct module m = {0};
	struct component_probes *cp;
	char path[PATH_MAX] = "", err[256];

	(void)state;
	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	cp = component_probes__new(-1, -1, err, sizeof(err));
	assert_non_null(cp);
	component_probes_set_max_functions(cp, 2);
	assert_int_equal(component_probes_add_target(cp, 5, TARGET_UID_ANY, patterns, 4, NULL), 0);
	assert_true(readlink("/proc/self/exe", path, sizeof(path) - 1) > 0);
	m.path = path;
	m.elf = elf_file__open(path);
	assert_non_null(m.elf);
	assert_int_equal(component_probes_consider(cp, 5, &m, err, sizeof(err)), 2);
	assert_int_equal(component_probes_unprobed(cp, 5), 2);
	component_probes__free(cp);
	elf_file__free(m.elf);
}

static void test_probe_cost(void **state)
{
	struct component_probes *cp;
	uint64_t probe_ns, empty_ns;
	const char *why;
	char err[256];

	(void)state;
	SKIP_UNLESS(!bpf_unavailable(), bpf_unavailable());
	cp = component_probes__new(-1, -1, err, sizeof(err));
	assert_non_null(cp);
	assert_int_equal(component_probes_cost(cp, &probe_ns, &empty_ns, &why), 0);
	/* a uprobe pair traps twice into the kernel: never free */
	assert_true(empty_ns > 100);
	assert_true(probe_ns > 100);
	component_probes__free(cp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_demangle),
	    cmocka_unit_test(test_base_name),
	    cmocka_unit_test(test_pattern_match),
	    cmocka_unit_test(test_select_own_symbols),
	    cmocka_unit_test(test_components_of_json),
	    cmocka_unit_test(test_probes_own_calls),
	    cmocka_unit_test(test_probes_own_calls_perf_events),
	    cmocka_unit_test(test_report_changed_only),
	    cmocka_unit_test(test_function_cap),
	    cmocka_unit_test(test_probe_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
