/* unwinder — see unwinder.h. */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/unwinder.h"
#include "userspace/elf/elf_open.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/unwind/unwind_table.h"

/* a table already loaded, by module identity (one file at two paths,
 * or in two mount namespaces, is tabled once) */
struct loaded_table {
	char *identity;
	uint32_t id;
	int err;
};

/* written in place through the maps' mmap: an array's stride is its value
 * size rounded up to 8 */
_Static_assert(sizeof(struct unwind_rule) % 8 == 0, "unwind_rule: a multiple of 8 bytes");
_Static_assert(sizeof(struct unwind_row) % 8 == 0, "unwind_row: a multiple of 8 bytes");

struct unwinder {
	struct sampler_unwind_maps maps;
	struct unwind_rules *rules;
	struct unwind_rule *rules_mem; /* the kernel's unwind_rules, mapped */
	struct unwind_row *rows_mem;   /* the kernel's unwind_rows, mapped */
	size_t rules_bytes, rows_bytes;
	uint32_t rules_loaded, rows_used, next_table;
	void *by_identity; /* tsearch tree of struct loaded_table * */
	struct unwind_proc *proc; /* scratch: one process' entry */
	struct unwinder_stats stats;
};

static int loaded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct loaded_table *)a)->identity,
		      ((const struct loaded_table *)b)->identity);
}

static void *map_shared(int fd, size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (bytes + page - 1) / page * page;
}

struct unwinder *unwinder__new(const struct sampler_unwind_maps *maps)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int err = -ENOMEM;

	if (!u)
		return NULL;
	u->maps = *maps;
	u->rules = unwind_rules__new();
	u->proc = calloc(1, sizeof(*u->proc));
	if (!u->rules || !u->proc)
		goto fail;
	u->rules_bytes = page_round((size_t)maps->max_rules * sizeof(struct unwind_rule));
	u->rows_bytes = page_round((size_t)maps->max_rows * sizeof(struct unwind_row));
	u->rules_mem = map_shared(maps->rules_fd, u->rules_bytes);
	u->rows_mem = u->rules_mem ? map_shared(maps->rows_fd, u->rows_bytes) : NULL;
	if (!u->rows_mem) {
		err = -errno;
		goto fail;
	}
	u->next_table = 1;
	u->stats.rows_max = maps->max_rows;
	u->stats.rules_max = maps->max_rules;
	return u;
fail:
	unwinder__free(u);
	errno = -err;
	return NULL;
}

static void loaded_free(void *p)
{
	struct loaded_table *l = p;

	free(l->identity);
	free(l);
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->rules_mem)
		munmap(u->rules_mem, u->rules_bytes);
	if (u->rows_mem)
		munmap(u->rows_mem, u->rows_bytes);
	tdestroy(u->by_identity, loaded_free);
	unwind_rules__free(u->rules);
	free(u->proc);
	free(u);
}

/* the rules interned since the last call, into the kernel's array */
static void publish_rules(struct unwinder *u)
{
	size_t n = unwind_rules_count(u->rules);

	for (; u->rules_loaded < n && u->rules_loaded < u->maps.max_rules; u->rules_loaded++)
		u->rules_mem[u->rules_loaded] = *unwind_rules_get(u->rules, u->rules_loaded);
	u->stats.rules_used = u->rules_loaded;
}

/* rows[0..n) into the pool as table id: 0 or -ENOSPC */
static int publish_table(struct unwinder *u, const struct unwind_row *rows, size_t n, uint32_t *id)
{
	struct unwind_table t = { .first_row = u->rows_used, .n_rows = (uint32_t)n };
	uint32_t key = u->next_table;

	if (n > (size_t)(u->maps.max_rows - u->rows_used) || n > (1u << 24) ||
	    key >= u->maps.max_tables)
		return -ENOSPC;
	publish_rules(u);
	memcpy(&u->rows_mem[u->rows_used], rows, n * sizeof(*rows));
	/* rows before the table that names them: a syscall orders both */
	if (bpf_map_update_elem(u->maps.tables_fd, &key, &t, BPF_ANY))
		return -errno;
	u->rows_used += (uint32_t)n;
	u->next_table++;
	*id = key;
	return 0;
}

/* compiles module m's CFI and loads it: 0 and *id, or -errno */
static int load_module(struct unwinder *u, const struct module *m, uint32_t *id)
{
	struct unwind_table_stats ts = { 0 };
	struct unwind_row *rows = NULL;
	uint64_t t0 = clock_monotonic_ns();
	size_t n = 0, before = unwind_rules_count(u->rules);
	struct stat st;
	int fd, err;

	fd = elf_open_regular(m->path, m->inode, &st);
	if (fd < 0)
		return fd;
	err = unwind_table_compile(fd, u->rules, &rows, &n, &ts);
	close(fd);
	if (!err && unwind_rules_count(u->rules) > u->maps.max_rules)
		err = -ENOSPC;
	if (!err)
		err = publish_table(u, rows, n, id);
	free(rows);
	u->stats.compile_ns += clock_monotonic_ns() - t0;
	if (err == -ENOSPC && unwind_rules_count(u->rules) > before && !u->rules_loaded)
		pr_debug("rule dictionary grew past the kernel's %u", u->maps.max_rules);
	pr_debug("unwind table of '%s': %zu rows from %llu FDEs in %.1f ms: %s", m->path, n,
		 (unsigned long long)ts.fdes, (clock_monotonic_ns() - t0) / 1e6,
		 err ? strerror(-err) : "loaded");
	return err;
}

/* the table id of module m, loading it the first time: 0 when it has none */
static uint32_t module_table_id(struct unwinder *u, struct module *m)
{
	struct loaded_table key = { .identity = m->identity }, *l;
	void **node;

	if (m->unwind_table || m->unwind_err)
		return m->unwind_table;
	if (!m->elf || !m->identity) {
		m->unwind_err = -ENOENT;
		return 0;
	}
	node = tfind(&key, &u->by_identity, loaded_cmp);
	if (!node) {
		l = calloc(1, sizeof(*l));
		if (!l || !(l->identity = strdup(m->identity))) {
			free(l);
			return 0; /* tried again at the next mapping */
		}
		l->err = load_module(u, m, &l->id);
		if (!l->err)
			u->stats.tables_loaded++;
		else if (l->err == -ENODATA)
			u->stats.tables_empty++;
		else if (l->err == -ENOSPC)
			u->stats.tables_refused++;
		else
			u->stats.tables_failed++;
		if (!tsearch(l, &u->by_identity, loaded_cmp)) {
			loaded_free(l);
			return 0;
		}
		node = (void **)&l;
	}
	l = *(struct loaded_table **)node;
	m->unwind_table = l->id;
	m->unwind_err = l->id ? 0 : (l->err ? l->err : -ENODATA);
	return l->id;
}

static int add_mapping(const struct module_mapping *mm, void *ctx)
{
	struct unwinder *u = ctx;
	struct unwind_mapping *out;

	if (u->proc->n >= MAX_PROC_MAPPINGS) {
		u->stats.mappings_dropped++;
		return 0;
	}
	out = &u->proc->mappings[u->proc->n++];
	*out = (struct unwind_mapping){ .start = mm->start, .end = mm->end, .pgoff = mm->pgoff };
	if (module_is_vdso(mm->module))
		out->flags = UNWIND_MAPPING_FRAME_POINTER; /* built with them */
	else
		out->table = module_table_id(u, mm->module);
	return 0;
}

static int sync_process(struct unwinder *u, struct module_table *table, pid_t tgid)
{
	__u32 key = (__u32)tgid;
	int err;

	u->proc->n = 0;
	err = module_table_for_each_mapping(table, tgid, add_mapping, u);
	if (err == -ESRCH) { /* exited, or never known: no entry */
		if (bpf_map_delete_elem(u->maps.procs_fd, &key) && errno != ENOENT)
			return -errno;
		return 0;
	}
	if (err)
		return err;
	if (bpf_map_update_elem(u->maps.procs_fd, &key, u->proc, BPF_ANY)) {
		err = -errno;
		u->stats.procs_refused++;
		return err;
	}
	return 0;
}

int unwinder_sync(struct unwinder *u, struct module_table *table)
{
	pid_t *tgids;
	size_t n, i;
	int err, first = 0;

	n = module_table_take_changed(table, &tgids);
	for (i = 0; i < n; i++) {
		err = sync_process(u, table, tgids[i]);
		if (err && !first)
			first = err;
	}
	return first;
}

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *out)
{
	*out = u->stats;
	out->rows_used = u->rows_used;
}
