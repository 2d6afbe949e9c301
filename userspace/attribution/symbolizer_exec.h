/* symbolizer_exec — the process side of symbolizer.h: runs one
 * llvm-symbolizer on a prepared input and collects what it answers, within
 * the bounds of a symbolizer_budget (symbolizer.h).
 *
 * Internal to userspace/attribution: symbolizer.c builds the input and
 * parses the output; this file only spawns, feeds, reads, bounds, kills
 * and reaps. The tool is started and reaped as every tool is (tool.h:
 * tool_spawn(), tool_reap()): an absolute path, never a PATH search; a
 * process group of its own, default signal dispositions and an empty
 * signal mask; stdin on a socket (writing to a dead tool is EPIPE, never
 * SIGPIPE), stdout and stderr on pipes. On a bound the whole group is
 * killed with SIGKILL and reaped (at most TOOL_REAP_MS more).
 */
#ifndef NUNATAK_SYMBOLIZER_EXEC_H
#define NUNATAK_SYMBOLIZER_EXEC_H

#include <stddef.h>

struct growbuf {
	char *data;
	size_t len, cap;
};

/* room for @more bytes after len. 0 or -ENOMEM. */
int growbuf_reserve(struct growbuf *b, size_t more);

/* The --debug-file-directory=DIR arguments of an invocation
 * (symbolizer_set_debug_dirs()), copied: *args (n strings, NULL-ended)
 * for the caller to free, each and the array. 0 or -ENOMEM. */
int symbolizer_debug_dir_args(char ***args, size_t *n);

/* Runs `tool --output-style=JSON --inlining --demangle
 * [--debug-file-directory=DIR...] [--obj=module_path]`
 * on @input (@n_lines addresses, one per line), charged to @budget (its
 * spent_ms, asked and stopped are updated); @output receives its
 * stdout (the caller frees output->data, whatever the return). @label
 * names the work in messages. Returns 0 once the tool exited 0;
 *   -EINVAL when @tool is not an absolute path (nothing ran: a bare name
 *    would be looked up in PATH, which nothing checked),
 *   -ENOENT when the tool cannot be found (nothing ran),
 *   -EIO when it ran and failed (non-zero exit, killed by a signal),
 *   -ETIMEDOUT when a bound of the budget was hit, -ECANCELED when its
 *    cancel_fd became readable: the tool was killed, @output holds what it
 *    answered until then (complete lines are usable),
 *   another -errno (spawning, reading).
 * A budget already stopped runs nothing and returns its stop. */
struct symbolizer_budget;
int symbolizer_exec(const char *tool, const char *module_path, const char *label,
		    const struct growbuf *input, size_t n_lines, struct symbolizer_budget *budget,
		    struct growbuf *output);

#endif
