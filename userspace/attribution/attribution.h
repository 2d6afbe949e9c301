/* attribution — turns the sampled addresses of one module into Hotspots.
 *
 * Input: a module file, the identity it had at sampling time and its
 * distinct module-relative addresses (ELF vaddrs). Output, per address: its
 * Hotspot (the physical function holding it) with a Resolution level.
 *
 * Rules, in order:
 *  - Extent rule: an address has a function only when an ELF function
 *    symbol's [start, start+size) covers it (elf_file__find_symbol()); an
 *    address in a gap is never named after its neighbour, even when
 *    llvm-symbolizer does. One exception: no covering symbol, but DWARF
 *    names the function with a file and a line; DWARF is then trusted.
 *  - Name: the demangled FunctionName of the outermost (physical) frame of
 *    llvm-symbolizer when it is neither "" nor "??", else the raw symbol
 *    name; "MODULE+0xSTART" (MODULE = display name) when unresolved.
 *  - function_start is the physical identity within the module: the
 *    covering symbol's start, so every address of one function shares it
 *    (DWARF's StartAddress in the exception). Unresolved: the start of the
 *    function extent an FDE of the file's .eh_frame or .debug_frame states
 *    (unwind_fde_extents()) when one covers the address, so a stripped
 *    function is one Hotspot, never one per instruction, and still never
 *    named after a neighbour; else the address itself (padding, code
 *    without CFI). START in the name is function_start, a module-relative
 *    vaddr as every offset here (what `nm`/`objdump -d` of the file show).
 *  - Level: line when the innermost frame has a file and a line > 0; else
 *    function when the symbol comes from .symtab; symbol when only from
 *    .dynsym; unresolved otherwise.
 *  - A stale file (identity differs from the one sampled) is never
 *    symbolized: its current symbols describe other code.
 * Lines and inline frames are details inside the Hotspot, never Hotspots.
 *
 * Pseudo module "[kernel]" (identity "pseudo:kernel"): no file, its
 * functions come with it (the Agent's /proc/kallsyms, see
 * userspace/agent/kernel_symbols.h): attribution_attribute_kernel().
 */
#ifndef NUNATAK_ATTRIBUTION_H
#define NUNATAK_ATTRIBUTION_H

#include <stddef.h>
#include <stdint.h>

enum resolution_level {
	RESOLUTION_LINE,
	RESOLUTION_FUNCTION,
	RESOLUTION_SYMBOL,
	RESOLUTION_UNRESOLVED,
};

/* "line", "function", "symbol", "unresolved"; "invalid" out of range. */
const char *resolution_level_name(enum resolution_level l);

/* one element of an inline chain */
struct attribution_frame {
	char *function; /* demangled; NULL when unknown */
	char *file;	/* NULL when unknown */
	uint32_t line, column;
};

struct attributed_address {
	uint64_t address; /* input: module-relative vaddr */
	enum resolution_level level;
	char *function;		 /* Hotspot name (see above); never NULL unless -ENOMEM */
	uint64_t function_start; /* physical identity within the module */
	char *source_file;	 /* source file of the physical function, NULL when unknown */
	uint32_t start_line;	 /* its first line (DWARF StartLine), 0 when unknown */
	uint32_t line;		 /* source line of the address (innermost frame), 0 when unknown */
	size_t n_frames; /* inline chain, innermost first, last = physical; 0 without DWARF */
	struct attribution_frame *frames;
};

/* Attributes addrs[0..n) of the module at path, one llvm-symbolizer
 * invocation (symbolizer_tool, from config tools.llvm-symbolizer) for all.
 * display_name names unresolved addresses (NULL: basename of path).
 * expected_identity is the identity recorded at sampling (build-id or the
 * "nobuildid:" fallback of elf_file.h); NULL skips the check.
 *
 * Returns 0 when attributed (possibly partly unresolved);
 *   -ENOENT when the file is gone, -ESTALE when its identity no longer
 *   matches, another -errno when it cannot be read as ELF (-ENOEXEC,
 *   -EACCES...): then nothing is symbolized and every address is unresolved;
 *   -EINVAL for bad arguments (out untouched), -ENOMEM.
 * Except for -EINVAL, out[0..n) is always filled (unresolved entries on
 * error) so that callers can store them; release each with
 * attributed_address_release().
 * *reason (when reason/reasonlen are given) receives one lowercase sentence
 * naming the path when something was lost (error, stale identity, failed
 * symbolizer), else "".
 * When the symbolizer is missing it falls back to ELF symbols (raw names,
 * level function/symbol) and sets *symbolizer_missing = 1 (else 0; may be
 * NULL). A symbolizer that ran and failed is handled the same way, without
 * setting *symbolizer_missing. */
int attribution_attribute_module(const char *symbolizer_tool, const char *path,
				 const char *display_name, const char *expected_identity,
				 const uint64_t *addrs, size_t n, struct attributed_address *out,
				 int *symbolizer_missing, char *reason, size_t reasonlen);

/* Frees what a is owning and empties it. NULL-safe, idempotent. */
void attributed_address_release(struct attributed_address *a);

/* The same, from symbolizer results the caller obtained (one batched
 * symbolizer_run_modules() for many modules): results[0..n) for addrs, or
 * symbolizer_err < 0 when the symbolizer failed (then results are empty
 * and names come from ELF symbols). The results stay the caller's. */
struct symbolizer_result;
int attribution_attribute_symbolized(const char *symbolizer_tool, const char *path,
				     const char *display_name, const char *expected_identity,
				     const uint64_t *addrs, size_t n,
				     struct symbolizer_result *results, int symbolizer_err,
				     struct attributed_address *out, int *symbolizer_missing,
				     char *reason, size_t reasonlen);

/* A function of a pseudo module as the Agent named it: [start, start +
 * size) in module offsets. */
struct pseudo_symbol {
	uint64_t start, size;
	const char *name;
};

#define ATTRIBUTION_KERNEL_MODULE "pseudo:kernel"
/* 1 for the identity of a "[kernel]" module: "pseudo:kernel", or
 * "pseudo:kernel:" followed by what tells one kernel build from another */
int attribution_is_kernel(const char *identity);
#define ATTRIBUTION_KERNEL_NAME "[kernel]"
/* the function_start of the one '[kernel]' Hotspot: no symbol starts
 * there (a kernel offset is far below 2^64 - 1) */
#define ATTRIBUTION_KERNEL_UNNAMED_START UINT64_MAX

/* Attributes the offsets addrs[0..n) of the "[kernel]" pseudo module from
 * syms[0..n_syms) (sorted by start; the one with the latest start at or
 * before an offset covers it when its extent reaches it: kallsyms extents
 * never nest): an offset a symbol covers is the
 * Hotspot of that symbol (function_start its start, its name, level
 * "function": kallsyms is the kernel's whole symbol table, static
 * functions included, as .symtab is a file's; no source file); any other
 * offset (no symbol covers it, or the kernel hid its addresses and every
 * offset is 0) is the one Hotspot '[kernel]' (function_start
 * ATTRIBUTION_KERNEL_UNNAMED_START, unresolved). Never named after a
 * neighbour. 0; -EINVAL (bad arguments, syms not sorted: out untouched);
 * -ENOMEM (an entry may then have no name). Release each out[i] with
 * attributed_address_release(). */
int attribution_attribute_kernel(const struct pseudo_symbol *syms, size_t n_syms,
				 const uint64_t *addrs, size_t n, struct attributed_address *out);

#endif
