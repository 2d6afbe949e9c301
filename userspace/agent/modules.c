/* modules — see modules.h. */
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/modules_internal.h"
#include "userspace/agent/proc_maps.h"
#include "userspace/attribution/own_code.h"
#include "userspace/elf/elf_file.h"
#include "userspace/log/log.h"

/* proc's current mappings changed: listed once until taken */
void process_changed(struct module_table *table, struct process *proc)
{
	pid_t *grown;

	if (proc->changed)
		return;
	if (table->n_changed == table->cap_changed) {
		size_t cap = table->cap_changed ? table->cap_changed * 2 : 64;

		grown = realloc(table->changed, cap * sizeof(*grown));
		if (!grown)
			return; /* the next change lists it */
		table->changed = grown;
		table->cap_changed = cap;
	}
	table->changed[table->n_changed++] = proc->tgid;
	proc->changed = 1;
}

static int process_cmp(const void *a, const void *b)
{
	const struct process *pa = a, *pb = b;

	return (pa->tgid > pb->tgid) - (pa->tgid < pb->tgid);
}

struct process *process_find(const struct module_table *table, pid_t tgid)
{
	struct process key = { .tgid = tgid };
	void *node = tfind(&key, &table->processes, process_cmp);

	return node ? *(struct process **)node : NULL;
}

static void process_free(void *p)
{
	struct process *proc = p;

	if (!proc)
		return;
	free(proc->mappings);
	free(proc->previous);
	free(proc->exe);
	free(proc);
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	elf_file__free(m->elf);
	free(m->path);
	free(m->display_name);
	free(m->identity);
	free(m);
}

static struct module *module_new(const char *path, const char *identity, uint64_t dev,
				 uint64_t inode)
{
	struct module *m = calloc(1, sizeof(*m));
	const char *slash = strrchr(path, '/');

	if (!m)
		return NULL;
	m->path = strdup(path);
	m->display_name = strdup(slash ? slash + 1 : path);
	m->identity = identity ? strdup(identity) : NULL;
	m->dev = dev;
	m->inode = inode;
	if (!m->path || !m->display_name || (identity && !m->identity)) {
		module_free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

static int table_keep_module(struct module_table *table, struct module *m)
{
	if (table->n_modules == table->cap_modules) {
		size_t cap = table->cap_modules ? table->cap_modules * 2 : 64;
		struct module **mods = realloc(table->modules, cap * sizeof(*mods));

		if (!mods)
			return -ENOMEM;
		table->modules = mods;
		table->cap_modules = cap;
	}
	table->modules[table->n_modules++] = m;
	return 0;
}

struct module_table *module_table__new(void)
{
	struct module_table *table = calloc(1, sizeof(*table));

	if (!table)
		return NULL;
	table->vdso = module_new("[vdso]", "pseudo:vdso", 0, 0);
	table->anon = module_new("[anon]", "pseudo:anon", 0, 0);
	table->uprobes = module_new(OWN_CODE_UPROBES_PATH, OWN_CODE_UPROBES_IDENTITY, 0, 0);
	table->unmapped = module_new("[unmapped]", "pseudo:unmapped", 0, 0);
	table->kernel = module_new("[kernel]", "pseudo:kernel", 0, 0);
	if (!table->vdso || !table->anon || !table->uprobes || !table->unmapped || !table->kernel) {
		module_table__free(table);
		errno = ENOMEM;
		return NULL;
	}
	return table;
}

void module_table__free(struct module_table *table)
{
	size_t i;

	if (!table)
		return;
	tdestroy(table->processes, process_free);
	for (i = 0; i < table->n_modules; i++)
		module_free(table->modules[i]);
	free(table->modules);
	free(table->changed);
	module_free(table->vdso);
	module_free(table->anon);
	module_free(table->uprobes);
	module_free(table->unmapped);
	module_free(table->kernel);
	free(table);
}

static struct process *process_insert(struct module_table *table, pid_t tgid)
{
	struct process *proc = calloc(1, sizeof(*proc));
	void *node;

	if (!proc)
		return NULL;
	proc->tgid = tgid;
	node = tsearch(proc, &table->processes, process_cmp);
	if (!node) {
		free(proc);
		errno = ENOMEM;
		return NULL;
	}
	if (*(struct process **)node != proc) { /* already there */
		free(proc);
		return *(struct process **)node;
	}
	return proc;
}

int module_table_add_process(struct module_table *table, pid_t tgid, pid_t parent)
{
	struct process *proc, *pproc;

	proc = process_find(table, tgid);
	if (proc && !proc->exited)
		return 0;
	if (proc) { /* the pid of an exited process, reused: a new process */
		tdelete(proc, &table->processes, process_cmp);
		process_free(proc);
	}
	proc = process_insert(table, tgid);
	if (!proc)
		return -ENOMEM;
	pproc = parent ? process_find(table, parent) : NULL;
	if (pproc && pproc->n_mappings) {
		proc->mappings = malloc(pproc->n_mappings * sizeof(*proc->mappings));
		if (!proc->mappings)
			return -ENOMEM;
		memcpy(proc->mappings, pproc->mappings, pproc->n_mappings * sizeof(*proc->mappings));
		proc->n_mappings = proc->cap_mappings = pproc->n_mappings;
		memcpy(proc->comm, pproc->comm, sizeof(proc->comm));
		if (pproc->exe)
			proc->exe = strdup(pproc->exe);
	}
	process_changed(table, proc);
	return 0;
}

int module_table_has_process(const struct module_table *table, pid_t tgid)
{
	return process_find(table, tgid) != NULL;
}

int module_table_exec(struct module_table *table, pid_t tgid, const char *comm)
{
	struct process *proc = process_find(table, tgid);

	if (!proc)
		return -ESRCH;
	free(proc->previous);
	proc->previous = proc->mappings;
	proc->n_previous = proc->n_mappings;
	proc->mappings = NULL;
	proc->n_mappings = proc->cap_mappings = 0;
	proc->exec_seq++;
	free(proc->exe);
	proc->exe = NULL;
	proc->want_exe = 1;
	snprintf(proc->comm, sizeof(proc->comm), "%s", comm);
	process_changed(table, proc);
	return 0;
}

static struct module *module_get(struct module_table *table, const char *path, uint64_t dev,
				 uint64_t inode)
{
	struct elf_file *elf;
	struct module *m;
	size_t i;

	if (!strcmp(path, "[vdso]"))
		return table->vdso;
	if (!strcmp(path, OWN_CODE_UPROBES_PATH)) /* nunatak's uretprobe trampoline */
		return table->uprobes;
	if (path[0] == '\0' || path[0] == '[')
		return table->anon;
	for (i = 0; i < table->n_modules; i++) {
		m = table->modules[i];
		if (m->dev == dev && m->inode == inode && !strcmp(m->path, path))
			return m;
	}
	/* the very file that was mapped: a FIFO or device at its path is not
	 * opened, one replaced since the mapping (another inode) not read */
	elf = elf_file__open_mapped(path, inode);
	if (!elf)
		pr_debug("cannot read module '%s': %s", path, strerror(errno));
	m = module_new(path, elf ? elf_file__identity(elf) : NULL, dev, inode);
	if (!m) {
		elf_file__free(elf);
		return NULL;
	}
	if (!elf) {
		/* unreadable file: keep its name, say it cannot be identified */
		char id[64];

		snprintf(id, sizeof(id), "unreadable:%llx:%llu", (unsigned long long)dev,
			 (unsigned long long)inode);
		m->identity = strdup(id);
		if (!m->identity) {
			module_free(m);
			return NULL;
		}
	}
	m->elf = elf;
	m->has_build_id = elf && elf_file__build_id(elf) != NULL;
	if (table_keep_module(table, m)) {
		module_free(m);
		return NULL;
	}
	if (table->on_new_module)
		table->on_new_module(m, table->on_new_module_ctx);
	return m;
}

static int process_reserve(struct process *proc, size_t more)
{
	size_t cap = proc->cap_mappings ? proc->cap_mappings : 16;
	struct mapping *maps;

	while (proc->n_mappings + more > cap)
		cap *= 2;
	if (cap == proc->cap_mappings)
		return 0;
	maps = realloc(proc->mappings, cap * sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	proc->mappings = maps;
	proc->cap_mappings = cap;
	return 0;
}

/* The new mapping replaces only what it covers of the ones it overlaps
 * (a MAP_FIXED remap; an mprotect that splits a library's text, as
 * runtimes that patch libc do): their parts outside it stay, as the
 * kernel keeps them. */
static int process_add_mapping(struct process *proc, const struct mapping *nm)
{
	size_t i, j, n = proc->n_mappings;
	int err;

	err = process_reserve(proc, n + 2); /* each overlap leaves at most two parts */
	if (err)
		return err;
	for (i = 0, j = n; i < n; i++) {
		struct mapping m = proc->mappings[i];

		if (m.end <= nm->start || m.start >= nm->end) {
			proc->mappings[j++] = m;
			continue;
		}
		if (m.start < nm->start)
			proc->mappings[j++] = (struct mapping){ m.start, nm->start, m.pgoff, m.module };
		if (m.end > nm->end)
			proc->mappings[j++] = (struct mapping){ nm->end, m.end,
							       m.pgoff + (nm->end - m.start), m.module };
	}
	/* the survivors were appended after the old ones: move them down */
	memmove(proc->mappings, proc->mappings + n, (j - n) * sizeof(*proc->mappings));
	proc->n_mappings = j - n;
	for (i = proc->n_mappings; i > 0 && proc->mappings[i - 1].start > nm->start; i--)
		proc->mappings[i] = proc->mappings[i - 1];
	proc->mappings[i] = *nm;
	proc->n_mappings++;
	/* the parts kept are in order among themselves, and so were the rest */
	return 0;
}

struct module *module_table_open_file(struct module_table *table, const char *path)
{
	char *real = realpath(path, NULL);
	struct module *m = NULL;
	struct stat st;

	if (!real)
		return NULL;
	if (!stat(real, &st))
		m = module_get(table, real,
			       ((uint64_t)major(st.st_dev) << 20) | minor(st.st_dev), st.st_ino);
	free(real);
	return m;
}

int module_table_map(struct module_table *table, pid_t tgid, uint64_t start, uint64_t len,
		     uint64_t pgoff, uint64_t dev, uint64_t inode, const char *path)
{
	struct process *proc = process_find(table, tgid);
	struct mapping m = { .start = start, .end = start + len, .pgoff = pgoff };
	int err;

	if (!proc)
		return -ESRCH;
	m.module = module_get(table, path, dev, inode);
	if (!m.module)
		return -ENOMEM;
	if (proc->want_exe && m.module->elf) {
		proc->exe = strdup(path);
		proc->want_exe = 0;
	}
	process_changed(table, proc);
	err = process_add_mapping(proc, &m);
	if (!err && m.module->elf && table->on_mapping)
		table->on_mapping(tgid, m.module, table->on_mapping_ctx);
	return err;
}

struct load_ctx {
	struct module_table *table;
	pid_t tgid;
};

static int load_one(const struct proc_map *pm, void *ctx)
{
	struct load_ctx *lc = ctx;

	return module_table_map(lc->table, lc->tgid, pm->start, pm->end - pm->start, pm->pgoff,
				((uint64_t)pm->dev_major << 20) | pm->dev_minor, pm->inode, pm->path);
}

int module_table_load_proc(struct module_table *table, pid_t tgid, pid_t parent)
{
	struct load_ctx lc = { table, tgid };
	char path[64], comm[32] = "";
	struct process *proc;
	FILE *f;
	int err;

	err = module_table_add_process(table, tgid, parent);
	if (err)
		return err;
	proc = process_find(table, tgid);
	proc->n_mappings = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", tgid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	snprintf(proc->comm, sizeof(proc->comm), "%.15s", comm);
	proc->want_exe = 1;
	return proc_maps_for_each_exec(tgid, load_one, &lc);
}

int module_table_catch_up(struct module_table *table, pid_t tgid, uint32_t exec_seq)
{
	struct process *proc = process_find(table, tgid);
	int err;

	if (!proc || proc->exited || proc->exec_seq >= exec_seq)
		return 0;
	err = module_table_exec(table, tgid, proc->comm);
	if (!err)
		err = module_table_load_proc(table, tgid, 0);
	proc->exec_seq = exec_seq;
	return err ? err : 1;
}

void module_table_exit(struct module_table *table, pid_t tgid)
{
	struct process *proc = process_find(table, tgid);

	if (proc && !proc->exited) {
		proc->exited = 1;
		process_changed(table, proc);
	}
}

struct reap_ctx {
	struct process **list;
	size_t count, cap;
};

static void reap_visit(const void *node, VISIT which, void *closure)
{
	struct process *proc = *(struct process *const *)node;
	struct reap_ctx *rc = closure;

	if (which != postorder && which != leaf)
		return;
	if (proc->exited == 1) {
		proc->exited = 2; /* its last samples are in the coming drain */
		return;
	}
	if (proc->exited != 2)
		return;
	if (rc->count == rc->cap) {
		size_t cap = rc->cap ? rc->cap * 2 : 64;
		struct process **list = realloc(rc->list, cap * sizeof(*list));

		if (!list)
			return; /* reaped at a later drain */
		rc->list = list;
		rc->cap = cap;
	}
	rc->list[rc->count++] = proc;
}

void module_table_reap(struct module_table *table)
{
	struct reap_ctx rc = {};
	size_t i;

	twalk_r(table->processes, reap_visit, &rc);
	for (i = 0; i < rc.count; i++) {
		tdelete(rc.list[i], &table->processes, process_cmp);
		process_free(rc.list[i]);
	}
	free(rc.list);
}

void module_table_on_new_module(struct module_table *table,
				void (*fn)(struct module *m, void *ctx), void *ctx)
{
	table->on_new_module = fn;
	table->on_new_module_ctx = ctx;
}

void module_table_on_mapping(struct module_table *table,
			     void (*fn)(pid_t tgid, struct module *m, void *ctx), void *ctx)
{
	table->on_mapping = fn;
	table->on_mapping_ctx = ctx;
}

void module_table_for_each_module(struct module_table *table, void (*cb)(struct module *m, void *ctx),
				  void *ctx)
{
	size_t i;

	for (i = 0; i < table->n_modules; i++)
		cb(table->modules[i], ctx);
	cb(table->vdso, ctx);
	cb(table->anon, ctx);
	cb(table->uprobes, ctx);
	cb(table->unmapped, ctx);
	cb(table->kernel, ctx);
}

struct module *module_table_kernel(struct module_table *table)
{
	return table->kernel;
}
