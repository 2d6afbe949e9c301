/* modules — which code each observed process has mapped, so that every
 * sampled address leaves the Agent as (module identity, module-relative
 * address) and never as an absolute address.
 *
 * The table is fed as things happen (fork, exec, mmap of code, exit: see
 * sideband.c), not read at drain time, so a process that lived 20 ms is
 * still attributed: its mappings stay until module_table_reap() after the
 * drain that followed its exit. A module is opened once per file (path,
 * device, inode) and shared by every process mapping it.
 *
 * Pseudo modules (no file to symbolize): "[vdso]", "[uprobes]" for the
 * kernel's uprobe page (the uretprobe trampoline of nunatak's probes:
 * userspace/attribution/own_code.h), "[anon]" for anonymous
 * executable memory (JIT), "[unmapped]" for an address no known mapping
 * covers, "[kernel]" for the kernel's code. Their identity starts with
 * "pseudo:"; offsets into "[anon]" and "[unmapped]" are 0, since an
 * absolute address must not leave the Agent; offsets into "[kernel]" are
 * from the kernel's text base (kernel_symbols.h), 0 when the kernel hides
 * its addresses, and its functions travel as the module's symbols
 * (batch_builder_add_module_symbol()), there being no file to symbolize.
 */
#ifndef NUNATAK_AGENT_MODULES_H
#define NUNATAK_AGENT_MODULES_H

#include <stdint.h>
#include <sys/types.h>

struct elf_file;

struct module {
	char *path;
	char *display_name; /* basename of path */
	char *identity;     /* build-id hex, fallback identity, or "pseudo:..." */
	int has_build_id;
	struct elf_file *elf; /* NULL for pseudo modules and unreadable files */
	uint64_t dev, inode;
	uint32_t unwind_table; /* bpf/unwind.h table id, 0: none (yet) */
	int unwind_err;        /* why it has none: 0 not tried yet, or -errno */
	uint32_t index;       /* scratch for batch building */
	uint64_t batch_seq;   /* scratch: the builder that last indexed this module */
};

struct module_table;

/* NULL + errno on ENOMEM */
struct module_table *module_table__new(void);
void module_table__free(struct module_table *table);

/* A new process, child of parent (0: none known); the child starts with a
 * copy of the parent's mappings, as fork gives it. Adding a known process
 * is a no-op. 0 or -ENOMEM. */
int module_table_add_process(struct module_table *table, pid_t tgid, pid_t parent);
int module_table_has_process(const struct module_table *table, pid_t tgid);
/* exec: a new image; the previous one is kept for the samples taken
 * before the exec and drained after it (one image back); comm is the new
 * command name */
int module_table_exec(struct module_table *table, pid_t tgid, const char *comm);
/* a code mapping of [start, start+len) at file offset pgoff of path;
 * replaces any mapping it overlaps. 0, -ESRCH (unknown process), -ENOMEM */
int module_table_map(struct module_table *table, pid_t tgid, uint64_t start, uint64_t len,
		     uint64_t pgoff, uint64_t dev, uint64_t inode, const char *path);
/* The module of a file no process may map yet (e.g. to probe an MPI
 * library before the application starts); path is resolved to the real
 * path the kernel will report. NULL + errno. */
struct module *module_table_open_file(struct module_table *table, const char *path);
/* Read the current code mappings of a running process from /proc. */
int module_table_load_proc(struct module_table *table, pid_t tgid, pid_t parent);
/* The kernel counts exec_seq execs of tgid (its current image): when the
 * table counts fewer (the records of an exec came before the table knew
 * the process), the current code mappings are read from /proc as that
 * image (the table's current one becomes the previous). 1 read again, 0
 * in step, -errno. */
int module_table_catch_up(struct module_table *table, pid_t tgid, uint32_t exec_seq);
void module_table_exit(struct module_table *table, pid_t tgid);
/* Frees the processes that exited before the previous call. */
void module_table_reap(struct module_table *table);
/* Calls cb(tgid, comm or "", ctx) for every process added and not
 * exited, in tgid order; stops at cb's first non-zero return, which it
 * returns. 0 otherwise. */
int module_table_for_each_live(const struct module_table *table,
			       int (*cb)(pid_t tgid, const char *comm, void *ctx), void *ctx);

/* ip of process tgid, in the image its exec_seq-th exec loaded (0: the
 * image it had when followed or forked; the kernel counts the same way),
 * → module and module-relative address (the ELF virtual
 * address llvm-symbolizer expects, through the PT_LOAD segment). Always
 * gives a module: a pseudo one when nothing better is known. */
void module_table_resolve(struct module_table *table, pid_t tgid, uint32_t exec_seq, uint64_t ip,
			  struct module **module, uint64_t *offset);

/* The processes whose current code mappings changed (added, mapped,
 * exec'd, exited) since the previous call, each once: *tgids is the
 * table's, valid until the next change. */
size_t module_table_take_changed(struct module_table *table, pid_t **tgids);

/* tgid's mappings changed, but nobody needs to hear of it (a child of
 * the Agent's own process, its image nunatak's until it execs) */
void module_table_unchanged(struct module_table *table, pid_t tgid);

struct module_mapping {
	uint64_t start, end, pgoff;
	struct module *module;
};
/* Calls cb for each code mapping of the current image of tgid, by start;
 * stops at cb's first non-zero return, which it returns; -ESRCH when the
 * process is unknown or exited. */
int module_table_for_each_mapping(struct module_table *table, pid_t tgid,
				  int (*cb)(const struct module_mapping *m, void *ctx), void *ctx);
/* 1 for the pseudo module of the vDSO */
int module_is_vdso(const struct module *m);

/* Calls fn for every file module opened from now on (e.g. to probe the
 * MPI library the moment a Target maps it). */
void module_table_on_new_module(struct module_table *table,
				void (*fn)(struct module *m, void *ctx), void *ctx);
/* Calls fn for every code mapping of a file module added to a process
 * from now on (its exec'd image, a library it loads), each segment: fn
 * sees what a given process maps, where on_new_module sees a file once. */
void module_table_on_mapping(struct module_table *table,
			     void (*fn)(pid_t tgid, struct module *m, void *ctx), void *ctx);
/* The load bias of module m in the current image of tgid: an absolute
 * address a of that module (code or data) is the ELF virtual address
 * a - bias. 0, or -ENOENT when tgid does not map m. */
int module_table_bias(const struct module_table *table, pid_t tgid, const struct module *m,
		      uint64_t *bias);
/* The data object that starts exactly at absolute address addr in the
 * current image of tgid, in any module it maps (a PIE executable holds
 * copy-relocated library objects in its own .bss). 0 and *name (owned by
 * the module), or -ENOENT. */
int module_table_find_object(const struct module_table *table, pid_t tgid, uint64_t addr,
			     const char **name);
/* the exec_seq of the current image of tgid (0 when unknown) */
uint32_t module_table_exec_seq(const struct module_table *table, pid_t tgid);

const char *module_table_comm(const struct module_table *table, pid_t tgid); /* NULL unknown */
const char *module_table_exe(const struct module_table *table, pid_t tgid);  /* NULL unknown */
/* The "[kernel]" pseudo module (identity "pseudo:kernel"), owned by the
 * table. */
struct module *module_table_kernel(struct module_table *table);
/* Calls cb for every module opened so far, the pseudo ones included. */
void module_table_for_each_module(struct module_table *table, void (*cb)(struct module *m, void *ctx),
				  void *ctx);

#endif
