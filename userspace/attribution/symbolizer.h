/* symbolizer — one batched llvm-symbolizer invocation per module.
 *
 * At the end of a Run every distinct module-relative address (an ELF vaddr,
 * what llvm-symbolizer expects) of one module is written to ONE
 * `llvm-symbolizer --output-style=JSON --inlining --demangle
 * --debug-file-directory=DIR... --obj=PATH` process, one "0x%llx" per line; it answers one JSON line per address, in
 * order. This module runs that process and parses its lines; it does not
 * decide what a Hotspot is (see attribution.h), so a result is a faithful
 * copy of what the tool said, including its "??" and empty names.
 *
 * Invariants of a filled symbolizer_result:
 *  - frames[] is innermost (inlined) first; the last frame is the physical
 *    function as DWARF sees it;
 *  - every string is non-NULL and owned by the result (possibly "");
 *  - n_frames == 0 only when the tool reported an "Error" for the address
 *    (e.g. unreadable object).
 * The parser never trusts its input: any malformed line, missing key or
 * wrong type is -EINVAL and leaves *out empty (it is a fuzzing target).
 *
 * Every wait on the tool is bounded (struct symbolizer_budget): a tool
 * that stays silent too long, or would overrun the total budget of the
 * Run, or is cancelled, is killed with its process group; the addresses
 * it named before are kept, the others stay empty (named from ELF symbols
 * by attribution.h).
 */
#ifndef NUNATAK_SYMBOLIZER_H
#define NUNATAK_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer_frame {
	char *function;	  /* demangled FunctionName: "" or "??" when unknown */
	char *file;	  /* FileName of the line of this frame, "" when unknown */
	uint32_t line;	  /* 0 when unknown */
	uint32_t column;  /* 0 when unknown or absent */
	char *start_file; /* StartFileName (declaration file), "" when unknown */
	uint32_t start_line;
	uint64_t start_address; /* StartAddress: low pc of this (inlined) function */
	int has_start_address;	/* 0 when StartAddress was "" or absent */
};

struct symbolizer_result {
	uint64_t address; /* "Address" echoed by the tool */
	size_t n_frames;
	struct symbolizer_frame *frames;
};

/* Parses one JSON line (a trailing newline is allowed). Returns 0 and fills
 * *out (the caller releases it with symbolizer_result_release()), or -EINVAL
 * for malformed input (then *out is empty and needs no release, though
 * releasing it is harmless), or -ENOMEM. */
int symbolizer_parse_json_line(const char *line, struct symbolizer_result *out);

/* Frees what a result owns and empties it. NULL-safe, idempotent. */
void symbolizer_result_release(struct symbolizer_result *r);

/* Symbolizes addrs[0..n) of module_path with the llvm-symbolizer at tool
 * (an absolute path, normally from tool_resolve_trusted(): a bare name is
 * -EINVAL, never looked up in PATH), in a single process. Fills
 * results[0..n), in the order of addrs; the caller releases each entry.
 * Returns 0;
 *   -ENOENT when the tool cannot be found (nothing ran),
 *   -EIO when it ran but failed: non-zero exit, killed, too few/many lines,
 *        a line that does not parse or answers another address,
 *   -ETIMEDOUT when a bound of the budget was hit, -ECANCELED when its
 *        cancel_fd was readable: the tool was killed; results[i] holds
 *        what it answered before (the budget's answered counts them), the
 *        others are empty; release each,
 *   -EINVAL for bad arguments (tool "" or not absolute), -ENOMEM, or
 *        another -errno from spawning.
 * On another error every results[i] is empty (nothing to release). n == 0
 * runs nothing and returns 0. */
int symbolizer_run(const char *tool, const char *module_path, const uint64_t *addrs, size_t n,
		   struct symbolizer_result *results);

/* One module's share of a batched call: path, addrs[0..n) in, results
 * (n entries, caller-allocated) out. */
struct symbolizer_batch {
	const char *path;
	const uint64_t *addrs;
	size_t n;
	struct symbolizer_result *results;
};

/* Symbolizes several modules with ONE process (llvm-symbolizer takes
 * ~0.1 s to start: per module, that is most of finalizing a Run of an MPI
 * job with dozens of libraries). Each input line names its module. Same
 * errors as symbolizer_run(); on -ETIMEDOUT/-ECANCELED the batches hold
 * what was answered, on another error no batch has results. -EINVAL for a
 * path holding a quote or a newline (use symbolizer_run() for it). */
int symbolizer_run_modules(const char *tool, struct symbolizer_batch *batches, size_t n_batches);

/* ---- debug directories ---- */

#define SYMBOLIZER_SYSTEM_DEBUG_DIR "/usr/lib/debug"

/* Where every later invocation (of any thread) also looks for the split
 * debug information of a module, by its build-id (DIR/.build-id/xx/
 * rest.debug): SYMBOLIZER_SYSTEM_DEBUG_DIR always, first, then dirs[0..n)
 * (config [tools] debug_dirs), each passed as --debug-file-directory. A
 * directory is kept only if it is absolute and passes
 * trust_open_dir_chain() (config/trust.h): one another user could write
 * would let that user choose what this (root) process' symbolizer parses
 * and how the Run's functions are named. Replaces the previous list.
 * 0; -EPERM, -ENOENT, -EINVAL... when a directory was left out (the first
 * one said in err, "" otherwise; the others are kept); -ENOMEM (the list
 * unchanged). */
int symbolizer_set_debug_dirs(const char *const *dirs, size_t n, char *err, size_t errlen);

/* ---- bounds ---- */

#define SYMBOLIZER_REQUEST_MS 15000 /* longest silence before an answer */
#define SYMBOLIZER_TOTAL_MS 60000   /* default budget of a Run */

/* The bounds of the tool for a whole Run (several calls), and what the
 * calls charged to it did. */
struct symbolizer_budget {
	int request_ms; /* each address answered within this of the previous answer (or start) */
	int total_ms;	/* all calls together; <= 0: unbounded */
	int cancel_fd;	/* readable: stop at once (the user interrupted); -1: none */
	/* filled by the calls */
	long long spent_ms;
	size_t asked, answered; /* addresses sent to the tool, addresses it named */
	int stopped;		/* 0, or -ETIMEDOUT / -ECANCELED: no further call runs */
};

/* request_ms <= 0: SYMBOLIZER_REQUEST_MS. */
void symbolizer_budget_init(struct symbolizer_budget *b, int request_ms, int total_ms,
			    int cancel_fd);

/* Every symbolizer_run*() of the calling thread is charged to b until
 * another bind (NULL: none; each call then has a default budget of its
 * own, SYMBOLIZER_TOTAL_MS). Lets the Aggregator bound a whole finalize
 * without threading a parameter through each layer. Returns the previous
 * one; b stays the caller's. */
struct symbolizer_budget *symbolizer_budget_bind(struct symbolizer_budget *b);
struct symbolizer_budget *symbolizer_budget_bound(void);

#endif
