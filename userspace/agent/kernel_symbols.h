/* kernel_symbols — the kernel's text symbols from /proc/kallsyms, so that
 * a kernel instruction pointer leaves the Agent as (module "[kernel]",
 * offset) with the name of the function holding it, and never as an
 * absolute (KASLR-revealing) address.
 *
 * Offsets. Every kernel address is expressed as offset = ip - text base,
 * where the text base is the address of `_text` (else `_stext`): the same
 * for every boot of one kernel build, whatever KASLR chose. A symbol's
 * start is an offset too. Module (and BPF program) symbols are offsets
 * from the same base: they move from boot to boot, which only matters
 * within one Run if a module is reloaded (kernel_symbols_reload()).
 *
 * Symbols. Only text symbols (types t, T, w, W) are answered. Where several
 * share one address (`_stext`, `_text`, `srso_alias_untrain_ret`), one name
 * is kept: the fewest leading underscores, then T, W, t, w, then the first
 * listed. kallsyms has no sizes: a symbol's extent ends where the next
 * symbol of the same owner (the kernel image, or the same module) starts,
 * whatever its type; the last symbol of an owner has no known end (size 0)
 * and covers nothing, so its addresses stay unnamed ('[kernel]') rather
 * than be named after a neighbour. A BPF program's function ("bpf_prog_
 * <tag>_<name> [bpf]") has its exact extent instead, the length of its JIT
 * image as the kernel's program info gives it (bpf_extents.h; needs
 * CAP_SYS_ADMIN, else the rule above), so the last program listed is
 * named too, and the gap after an image is nobody's. A module's symbol is named
 * "name [module]", as perf and the kernel's own backtraces print it: two
 * modules may define the same static name, and the Hotspot says where it
 * lives.
 *
 * Hidden addresses. The kernel prints every address as 0 unless the reader
 * has CAP_SYSLOG and kptr_restrict is at most 1, or kptr_restrict is 0 and
 * perf_event_paranoid at most 1 (so a user's nunatak on a default Debian
 * sees zeros): the table is then "hidden", holds no
 * symbol, and every ip resolves to offset 0 with no symbol — one '[kernel]'
 * Hotspot. The Agent then records the kernel-addresses-hidden Degradation
 * (kernel_symbols_degradation_message()/_remedy()).
 *
 * Use, for each kernel frame of a drained stack (ip stepped back by one
 * for a return address, as for user frames):
 *
 *	if (!kernel_symbols_resolve(ks, ip, &offset, &sym))
 *		err = batch_builder_add_module_symbol(b, module_table_kernel(mt),
 *						      sym.start, sym.size, sym.name);
 *	mods[f] = module_table_kernel(mt);
 *	offsets[f] = offset;
 *
 * and once per Run, when kernel_symbols__new() failed or the table is
 * hidden, the KERNEL_SYMBOLS_DEGRADATION Degradation with
 * kernel_symbols_degradation_message() and _remedy().
 *
 * Cost (measured here: 122 000 lines, 121 800 text symbols): ~100 ms to
 * read (mostly the kernel formatting the file), ~8 MB kept (the file's
 * text, where the names stay, and 24 bytes per symbol); a lookup is a
 * binary search, O(log n), ~0.1 us.
 *
 * Thread-safety: the queries take a const table and may run concurrently;
 * kernel_symbols_reload() must not run alongside them.
 */
#ifndef NUNATAK_AGENT_KERNEL_SYMBOLS_H
#define NUNATAK_AGENT_KERNEL_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#define KERNEL_SYMBOLS_PATH "/proc/kallsyms"
/* the name of the Degradation recorded when kernel frames cannot be named */
#define KERNEL_SYMBOLS_DEGRADATION "kernel-addresses-hidden"

struct kernel_symbols;

struct kernel_symbol {
	const char *name; /* owned by the table: valid until its free or reload */
	uint64_t start;	  /* offset from the text base */
	uint64_t size;	  /* > 0 */
};

/* Reads path (NULL: /proc/kallsyms). NULL + errno: the open or read error
 * (ENOENT: a kernel without CONFIG_KALLSYMS), ENODATA when addresses are
 * visible but neither `_text` nor `_stext` is listed, ENOMEM. A hidden
 * table is not an error: see kernel_symbols_hidden(). */
struct kernel_symbols *kernel_symbols__new(const char *path);
void kernel_symbols__free(struct kernel_symbols *ks); /* NULL-safe */

/* Reads the same file again (after a module was loaded, say). 0, or the
 * errors of kernel_symbols__new(): the table is then left as it was. The
 * names handed out before are invalid after a successful reload. */
int kernel_symbols_reload(struct kernel_symbols *ks);

/* 1 when the kernel hides its addresses (every address read as 0), else 0 */
int kernel_symbols_hidden(const struct kernel_symbols *ks);
/* the number of text symbols kept (0 when hidden) */
size_t kernel_symbols_count(const struct kernel_symbols *ks);

/* Resolves the kernel address ip. *offset is always set, to what leaves
 * the Agent: ip - text base, or 0 when the table is hidden or ip lies
 * below the text base (no meaningful offset). Returns 0 with *sym filled
 * (sym may be NULL), or -ENOENT when no symbol covers ip (hidden, below
 * the base, in a gap, or past the last symbol of its owner). O(log n). */
int kernel_symbols_resolve(const struct kernel_symbols *ks, uint64_t ip, uint64_t *offset,
			   struct kernel_symbol *sym);

/* The Degradation's message when kernel frames cannot be named: err 0 for
 * a hidden table (names kptr_restrict's value and the effective uid), or
 * the -errno kernel_symbols__new() failed with (names the file and why).
 * The hidden one names kptr_restrict, perf_event_paranoid and the euid.
 * Written into buf (len bytes); returns buf. */
const char *kernel_symbols_degradation_message(int err, char *buf, size_t len);
/* Its remedy (a static string), for the same err. */
const char *kernel_symbols_degradation_remedy(int err);

#endif
