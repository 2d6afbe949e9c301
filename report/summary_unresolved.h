/* summary_unresolved — the modules behind the unresolved share, in "what
 * this summary does not say", and what would name them (report/summary.h
 * says what the summary is); used by summary.c only.
 *
 * The remedy depends on where the module is:
 *  - a pseudo module: "pseudo:kernel" is code no kallsyms symbol covered
 *    (loaded after the Agent read it), or all of it when the kernel hid its
 *    addresses (then the kernel-addresses-hidden Degradation says what to
 *    do: never guessed here); "pseudo:uprobes" is nunatak's trampoline; the others
 *    ([unmapped], [anon], [vdso]...) are code without a file (JIT,
 *    anonymous memory) that no symbol file names;
 *  - a file of the system (under /usr but /usr/local, /lib*, /bin, /sbin:
 *    where Debian packages put them): the -dbgsym package of the package
 *    holding it (`dpkg -S PATH` names it);
 *  - anything else: build it with -g and do not strip it (or keep its
 *    debug file under /usr/lib/debug/.build-id).
 * The text lists at most SUMMARY_MAX_UNRESOLVED_MODULES modules and sums
 * the rest in one line.
 */
#ifndef NUNATAK_REPORT_SUMMARY_UNRESOLVED_H
#define NUNATAK_REPORT_SUMMARY_UNRESOLVED_H

#include <stdio.h>

#include <jansson.h>

struct diagnosis;
struct unresolved_module;

#define SUMMARY_MAX_UNRESOLVED_MODULES 5

/* what would name m's code, one sentence into buf; returns buf */
const char *summary_unresolved_remedy(const struct unresolved_module *m, char *buf, size_t len);

/* the "- unresolved: ..." item and its module lines (nothing when nothing
 * was sampled); what: "time" or "cycles" */
void summary_print_unresolved(FILE *out, const struct diagnosis *d, const char *what);

/* a new array [{module, path, identity, samples, share, remedy}] by
 * decreasing share; NULL when out of memory */
json_t *summary_unresolved_json(const struct diagnosis *d);

#endif
