/* job.bpf.h — finding the registered Slurm job of a task by its cgroups,
 * for BPF programs only (contract in bpf/job.h).
 *
 * `static __always_inline` helpers, so that bpf/selftest_token.bpf.c
 * drives them through bpf_prog_test_run_opts on the calling task's own
 * cgroups (tests/unit/test_bpf_token.c). The map is declared here: every
 * object that includes it has its own; the Agent fills task.bpf.c's.
 */
#ifndef NUNATAK_BPF_JOB_BPF_H
#define NUNATAK_BPF_JOB_BPF_H

#include "bpf/job.h"
#include "bpf/token.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_JOBS);
	__type(key, struct job_key);
	__type(value, struct token_info);
} jobs SEC(".maps");

/* 1 and *key when the name of css's cgroup may be a job's: "job_", at
 * least one more character, and room for its NUL (a longer name is no
 * 32-bit job id); 0 otherwise */
static __always_inline int job_css_name(struct cgroup_subsys_state *css, struct job_key *key)
{
	const char *name = BPF_CORE_READ(css, cgroup, kn, name);
	long n;

	__builtin_memset(key, 0, sizeof(*key));
	if (!name)
		return 0;
	n = bpf_probe_read_kernel_str(key->name, sizeof(key->name), name);
	if (n <= JOB_NAME_PREFIX_BYTES + 1 || n >= JOB_NAME_BYTES)
		return 0;
	return key->name[0] == 'j' && key->name[1] == 'o' && key->name[2] == 'b' &&
	       key->name[3] == '_';
}

/* The Target entry of the nearest registered job among css and its
 * ancestors (JOB_CGROUP_DEPTH names), NULL when none; *named set when a
 * name looked at may be a job's, registered or not. */
static __always_inline const struct token_info *job_of_css(struct cgroup_subsys_state *css,
							   int *named)
{
	const struct token_info *t;
	struct job_key key;
	int i;

	for (i = 0; i < JOB_CGROUP_DEPTH && css; i++) {
		if (job_css_name(css, &key)) {
			*named = 1;
			t = bpf_map_lookup_elem(&jobs, &key);
			if (t)
				return t;
		}
		css = BPF_CORE_READ(css, parent);
	}
	return NULL;
}

/* the freezer css of the task's css_set (v1), NULL without that
 * controller in this kernel */
static __always_inline struct cgroup_subsys_state *job_freezer_css(struct css_set *cset)
{
	struct cgroup_subsys_state *css = NULL;
	int id;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, freezer_cgrp_id))
		return NULL;
	id = bpf_core_enum_value(enum cgroup_subsys_id, freezer_cgrp_id);
	if (id < 0 || id >= bpf_core_enum_value(enum cgroup_subsys_id, CGROUP_SUBSYS_COUNT))
		return NULL;
	bpf_core_read(&css, sizeof(css), &cset->subsys[id]);
	return css;
}

/* The Target entry of the registered job whose cgroup holds task: by its
 * default hierarchy's cgroup, then by its v1 freezer cgroup; NULL when
 * none. *named: whether any of its cgroups may be a job's at all (when
 * none is, its environment is the fallback: job_of_env). */
static __always_inline const struct token_info *job_of_task(struct task_struct *task,
							    int *named)
{
	struct css_set *cset = BPF_CORE_READ(task, cgroups);
	struct cgroup *dfl;
	const struct token_info *t;

	*named = 0;
	if (!cset)
		return NULL;
	dfl = BPF_CORE_READ(cset, dfl_cgrp);
	t = dfl ? job_of_css(&dfl->self, named) : NULL;
	return t ?: job_of_css(job_freezer_css(cset), named);
}

/* the Target entry of the job an environment scan found (key "" none) */
static __always_inline const struct token_info *job_of_env(const struct job_key *key)
{
	return key->name[0] ? bpf_map_lookup_elem(&jobs, key) : NULL;
}

#endif
