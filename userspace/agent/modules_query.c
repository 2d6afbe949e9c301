/* modules_query — the module table's answers: an address's module and
 * offset, a module's load bias, a data object by address, a process'
 * image, command and executable, its mappings, the processes alive and
 * those whose mappings changed (modules.h). modules.c keeps the table.
 */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/modules_internal.h"
#include "userspace/elf/elf_file.h"

struct live_ctx {
	int (*cb)(pid_t tgid, const char *comm, void *ctx);
	void *ctx;
	int err;
};

static void live_visit(const void *node, VISIT which, void *closure)
{
	const struct process *proc = *(const struct process *const *)node;
	struct live_ctx *lc = closure;

	if ((which == postorder || which == leaf) && !proc->exited && !lc->err)
		lc->err = lc->cb(proc->tgid, proc->comm, lc->ctx);
}

int module_table_for_each_live(const struct module_table *table,
			       int (*cb)(pid_t tgid, const char *comm, void *ctx), void *ctx)
{
	struct live_ctx lc = { cb, ctx, 0 };

	twalk_r(table->processes, live_visit, &lc);
	return lc.err;
}

void module_table_resolve(struct module_table *table, pid_t tgid, uint32_t exec_seq, uint64_t ip,
			  struct module **module, uint64_t *offset)
{
	struct process *proc = process_find(table, tgid);
	const struct mapping *maps;
	size_t lo = 0, hi;

	*module = table->unmapped;
	*offset = 0;
	if (!proc)
		return;
	if (exec_seq == proc->exec_seq) {
		maps = proc->mappings;
		hi = proc->n_mappings;
	} else if (exec_seq + 1 == proc->exec_seq) {
		maps = proc->previous;
		hi = proc->n_previous;
	} else {
		return; /* an image older than we keep */
	}
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct mapping *m = &maps[mid];

		if (ip < m->start) {
			hi = mid;
		} else if (ip >= m->end) {
			lo = mid + 1;
		} else {
			uint64_t file_offset = ip - m->start + m->pgoff;

			*module = m->module;
			if (m->module == table->anon)
				return;
			if (m->module == table->vdso) {
				*offset = ip - m->start;
				return;
			}
			if (!m->module->elf ||
			    elf_file__offset_to_vaddr(m->module->elf, file_offset, offset))
				*offset = file_offset; /* no PT_LOAD: keep the file offset */
			return;
		}
	}
}

int module_table_bias(const struct module_table *table, pid_t tgid, const struct module *m,
		      uint64_t *bias)
{
	const struct process *proc = process_find(table, tgid);
	uint64_t vaddr;
	size_t i;

	for (i = 0; proc && i < proc->n_mappings; i++) {
		const struct mapping *map = &proc->mappings[i];

		if (map->module != m || !m->elf)
			continue;
		if (elf_file__mapping_vaddr(m->elf, map->pgoff, &vaddr))
			continue;
		*bias = map->start - vaddr;
		return 0;
	}
	return -ENOENT;
}

int module_table_find_object(const struct module_table *table, pid_t tgid, uint64_t addr,
			     const char **name)
{
	const struct process *proc = process_find(table, tgid);
	struct elf_symbol sym;
	uint64_t bias;
	size_t i;

	for (i = 0; proc && i < proc->n_mappings; i++) {
		const struct module *m = proc->mappings[i].module;

		if (!m->elf || (i > 0 && proc->mappings[i - 1].module == m))
			continue;
		if (module_table_bias(table, tgid, m, &bias))
			continue;
		if (!elf_file__find_object(m->elf, addr - bias, &sym) && sym.start == addr - bias) {
			*name = sym.name;
			return 0;
		}
	}
	return -ENOENT;
}

uint32_t module_table_exec_seq(const struct module_table *table, pid_t tgid)
{
	const struct process *proc = process_find(table, tgid);

	return proc ? proc->exec_seq : 0;
}

const char *module_table_comm(const struct module_table *table, pid_t tgid)
{
	const struct process *proc = process_find(table, tgid);

	return proc && proc->comm[0] ? proc->comm : NULL;
}

const char *module_table_exe(const struct module_table *table, pid_t tgid)
{
	const struct process *proc = process_find(table, tgid);

	return proc ? proc->exe : NULL;
}

size_t module_table_take_changed(struct module_table *table, pid_t **tgids)
{
	size_t i, n = table->n_changed;
	struct process *proc;

	for (i = 0; i < n; i++) {
		proc = process_find(table, table->changed[i]);
		if (proc)
			proc->changed = 0;
	}
	*tgids = table->changed;
	table->n_changed = 0;
	return n;
}

int module_table_for_each_mapping(struct module_table *table, pid_t tgid,
				  int (*cb)(const struct module_mapping *m, void *ctx), void *ctx)
{
	const struct process *proc = process_find(table, tgid);
	struct module_mapping mm;
	size_t i;
	int err;

	if (!proc || proc->exited)
		return -ESRCH;
	for (i = 0; i < proc->n_mappings; i++) {
		mm = (struct module_mapping){ proc->mappings[i].start, proc->mappings[i].end,
					      proc->mappings[i].pgoff, proc->mappings[i].module };
		err = cb(&mm, ctx);
		if (err)
			return err;
	}
	return 0;
}

int module_is_vdso(const struct module *m)
{
	return m && m->identity && !strcmp(m->identity, "pseudo:vdso");
}
