/* component_probes — uprobes on the Components of Target processes
 * (bpf/components.bpf.c): `nunatak run --component PATTERN... --step FUNC`.
 *
 * A Target that names Components registers its PATTERNs and its step
 * function (component_probes_add_target). Every module a Target process
 * maps (the executable and its libraries, when the Agent learns them) is
 * searched for the functions they name (component_symbols.h); each is
 * probed once per (module file, function), for every process (pid filter
 * none: the kernel filters by the Target set, a process outside every
 * Target costs one lookup per call), with one uprobe_multi link per
 * module and direction where the kernel has them (6.6+), else a
 * perf-event uprobe per function and direction. A Component is known by
 * its demangled name; its id is its attach cookie (1..). The probes stay
 * until the last Target with Components ends.
 */
#ifndef NUNATAK_AGENT_COMPONENT_PROBES_H
#define NUNATAK_AGENT_COMPONENT_PROBES_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/components.h"

struct module;
struct component_probes;

struct component_def {
	char *name;    /* demangled */
	char *pattern; /* the PATTERN (or step FUNC) that named it first */
	int is_step;
};

/* Loads bpf/components.bpf.c sharing targets_fd. NULL + errno; err says
 * why. multi < 0: uprobe_multi when the kernel has it; 0: never */
struct component_probes *component_probes__new(int targets_fd, int multi, char *err, size_t errlen);
void component_probes__free(struct component_probes *cp);
/* 1 when the probes are uprobe_multi links */
int component_probes_multi(const struct component_probes *cp);

/* Target target_id of owner (TARGET_UID_ANY: root's) asks for
 * patterns[0..n) and step (NULL: none): copied. A probe traps in every
 * process that runs the file, so a user's patterns search only the files
 * the user owns (their programs and libraries): never a system library
 * every other process runs. 0, -EEXIST, -ENOSPC (too many Targets with a
 * step function), -ENOMEM. The modules its processes map are then given
 * to component_probes_consider by the caller. */
int component_probes_add_target(struct component_probes *cp, uint32_t target_id, uint32_t owner,
				const char *const *patterns, size_t n, const char *step);
/* Forgets target_id; the probes are released when it was the last. */
void component_probes_remove_target(struct component_probes *cp, uint32_t target_id);
/* 1 when target_id asked for Components; *has_step: it gave --step */
int component_probes_has_target(const struct component_probes *cp, uint32_t target_id,
				int *has_step);

/* Probes the functions of module m, which a process of Target target_id
 * maps, that its patterns name (each module searched once per Target,
 * each function probed once): the number probed now, or -errno (err says
 * why; the functions probed before the failure stay probed). Only what a
 * Target's own processes map is searched: never the image of nunatak a
 * launched child runs until its exec, nor the files of other Runs. */
int component_probes_consider(struct component_probes *cp, uint32_t target_id,
			      const struct module *m, char *err, size_t errlen);

/* Functions probed at most, over every module and Target: each one traps
 * in every process that runs its file, so a glob naming a library's every
 * function (`*`) must not slow the whole machine down. */
#define MAX_COMPONENT_FUNCTIONS 256

/* a lower bound than MAX_COMPONENT_FUNCTIONS (tests) */
void component_probes_set_max_functions(struct component_probes *cp, size_t max);
/* the functions target_id's patterns named that were not probed because
 * MAX_COMPONENT_FUNCTIONS were already */
size_t component_probes_unprobed(const struct component_probes *cp, uint32_t target_id);

/* Calls cb for each pattern (and step function) of target_id that named
 * no function so far; stops at cb's first non-zero return. */
int component_probes_for_each_unmatched(const struct component_probes *cp, uint32_t target_id,
					int (*cb)(const char *pattern, int is_step, void *ctx),
					void *ctx);

/* the Component of id, NULL when unknown */
const struct component_def *component_probes_def(const struct component_probes *cp, uint32_t id);

typedef int (*component_cost_fn)(const struct component_cost_key *key,
				 const struct component_cost_value *value, void *ctx);
typedef int (*component_step_fn)(const struct component_step_key *key,
				 const struct component_step_value *value, void *ctx);
/* The running totals of every key, the Steps not yet forgotten; stop at
 * cb's first non-zero return. */
int component_probes_for_each_cost(struct component_probes *cp, component_cost_fn fn, void *ctx);
int component_probes_for_each_step(struct component_probes *cp, component_step_fn fn, void *ctx);
/* a Step published with its end: it will not change */
void component_probes_forget_step(struct component_probes *cp, const struct component_step_key *k);
/* an exited process once its last totals were published */
void component_probes_forget(struct component_probes *cp, pid_t tgid);
void component_probes_read_counters(const struct component_probes *cp,
				    uint64_t out[COMPONENT_COUNTERS]);

/* The probe cost on this machine, measured in this process at the first
 * call after each component_probes_add_target (component_probe_cost.c:
 * about 0.1 s): ns per call of a Component's probe pair and of an empty
 * uprobe pair. 0, or -errno (the reason in why, owned by cp). */
int component_probes_cost(struct component_probes *cp, uint64_t *probe_ns, uint64_t *empty_ns,
			  const char **why);

#endif
