/* modules_internal — what modules.c and modules_query.c share: the
 * table's and its processes' layout (modules.h is the interface).
 */
#ifndef NUNATAK_AGENT_MODULES_INTERNAL_H
#define NUNATAK_AGENT_MODULES_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include "userspace/agent/modules.h"

struct mapping {
	uint64_t start, end, pgoff;
	struct module *module;
};

struct process {
	pid_t tgid;
	int exited;      /* 1: exited, 2: exited and survived one reap */
	char comm[16];
	char *exe;       /* the first file mapped after exec */
	int want_exe;
	struct mapping *mappings; /* sorted by start, disjoint */
	size_t n_mappings, cap_mappings;
	uint32_t exec_seq;        /* of the current image */
	struct mapping *previous; /* the image before the last exec */
	size_t n_previous;
	int changed; /* listed in the table's changed list */
};

struct module_table {
	void *processes; /* tsearch tree of struct process *, by tgid */
	struct module **modules;
	size_t n_modules, cap_modules;
	struct module *vdso, *anon, *uprobes, *unmapped, *kernel; /* uprobes: OWN_CODE_UPROBES_PATH */
	void (*on_new_module)(struct module *m, void *ctx);
	void *on_new_module_ctx;
	void (*on_mapping)(pid_t tgid, struct module *m, void *ctx);
	void *on_mapping_ctx;
	pid_t *changed; /* processes whose current mappings changed */
	size_t n_changed, cap_changed;
};

struct process *process_find(const struct module_table *table, pid_t tgid);
/* proc's current mappings changed: listed once until taken */
void process_changed(struct module_table *table, struct process *proc);

#endif
