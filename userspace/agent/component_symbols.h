/* component_symbols — which functions of a module a Component PATTERN
 * names (`nunatak run --component PATTERN`, `--step FUNC`).
 *
 * Names are compared demangled (__cxa_demangle of libstdc++, in process:
 * one call per symbol of a module, where an llvm-cxxfilt per module would
 * cost a process and a pipe for the same answer). A PATTERN names a
 * function when it is, or when fnmatch(3) (no flags) matches, either its
 * demangled name or that name without its parameter list and qualifiers
 * (`PairLJCut::compute` names `PairLJCut::compute(int, int)`). A C name
 * demangles to itself. Functions are those elf_file__for_each_function
 * gives: .symtab, else .dynsym; one probe per address (aliases share it,
 * the first name in address order names it).
 */
#ifndef NUNATAK_AGENT_COMPONENT_SYMBOLS_H
#define NUNATAK_AGENT_COMPONENT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

/* the demangled name of raw (a copy of raw when it is not a mangled C++
 * name); NULL + ENOMEM. The caller frees. */
char *component_demangle(const char *raw);

/* the length of the part of demangled name before its parameter list
 * (strlen when it has none) */
size_t component_name_base_len(const char *name);

/* 1 when pattern names the function of demangled name, else 0 */
int component_pattern_match(const char *pattern, const char *name);

/* A function of a module that a pattern named: its demangled name (owned
 * by the caller's callback for its duration), its file offset (where the
 * probe goes), and which pattern (index). */
struct component_symbol {
	const char *name;
	uint64_t offset;
	size_t pattern;
};

/* Calls cb for each function of elf that one of patterns[0..n) names
 * (the first pattern that names it), once per address. Stops at cb's
 * first non-zero return and returns it; 0, or -ENOMEM. */
int component_symbols_select(const struct elf_file *elf, const char *const *patterns, size_t n,
			     int (*cb)(const struct component_symbol *s, void *ctx), void *ctx);

#endif
