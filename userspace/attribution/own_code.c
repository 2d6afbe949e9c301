/* own_code — see own_code.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bpf/own_programs.h"
#include "userspace/attribution/own_code.h"

#define BPF_NAME_KEPT 15 /* BPF_OBJ_NAME_LEN - 1 */
#define BPF_TAG_DIGITS 16

/* the programs and sub-programs of the sources under bpf/: every function
 * symbol of their objects, listed by the Makefile */
static const char *const own_programs[] = {OWN_PROGRAM_NAMES};

static const char *const probe_functions[] = {
    "asm_exc_int3",	     "exc_int3",		"do_int3_user",
    "uprobe_notify_resume",  "handle_swbp",		"handler_chain",
    "uprobe_dispatcher",     "uretprobe_dispatcher",	"uprobe_prog_run",
    "uprobe_multi_link_handler", "uprobe_multi_link_ret_handler", "uprobe_handle_trampoline",
    "handle_trampoline",     "__x64_sys_uretprobe",	"__ia32_sys_uretprobe",
    "__do_sys_uretprobe",    "uprobe_perf_func",	"uretprobe_perf_func",
    "__uprobe_perf_func",    "uprobe_trace_func",	"pre_ssout",
};

/* the length of name without a " [module]" suffix */
static size_t bare_len(const char *name)
{
	const char *sp = strchr(name, ' ');

	return sp ? (size_t)(sp - name) : strlen(name);
}

int own_code_is_probe_kernel_function(const char *name)
{
	size_t i, n;

	if (!name)
		return 0;
	n = bare_len(name);
	for (i = 0; i < sizeof(probe_functions) / sizeof(*probe_functions); i++)
		if (strlen(probe_functions[i]) == n && !strncmp(name, probe_functions[i], n))
			return 1;
	/* the single-step of the displaced instruction, the return hijack */
	return (!strncmp(name, "arch_uprobe_", 12) || !strncmp(name, "arch_uretprobe_", 15) ||
		(!strncmp(name, "uprobe_", 7) && strstr(name, "xol") && strstr(name, "xol") < name + n));
}

/* the program's name inside a kallsyms "bpf_prog_<tag>_<name>[ [bpf]]", and
 * its length; NULL when name is not spelled so */
static const char *kallsyms_program(const char *name, size_t *len)
{
	size_t i;

	if (strncmp(name, "bpf_prog_", 9))
		return NULL;
	for (i = 0; i < BPF_TAG_DIGITS; i++)
		if (!isxdigit((unsigned char)name[9 + i]))
			return NULL;
	if (name[9 + BPF_TAG_DIGITS] != '_')
		return NULL;
	name += 9 + BPF_TAG_DIGITS + 1;
	*len = bare_len(name);
	return *len ? name : NULL;
}

/* nunatak's program whose kept name is prog[0..len), or NULL */
static const char *own_program(const char *prog, size_t len)
{
	size_t i, full;

	for (i = 0; i < sizeof(own_programs) / sizeof(*own_programs); i++) {
		full = strlen(own_programs[i]);
		if ((len == full || (len == BPF_NAME_KEPT && full > len)) &&
		    !strncmp(prog, own_programs[i], len))
			return own_programs[i];
	}
	return NULL;
}

int own_code_is_own_bpf_program(const char *name)
{
	const char *prog;
	size_t len;

	if (!name)
		return 0;
	if (!strncmp(name, OWN_CODE_BPF_PREFIX, strlen(OWN_CODE_BPF_PREFIX)))
		return 1;
	prog = kallsyms_program(name, &len);
	return prog && own_program(prog, len);
}

int own_code_bpf_program(const char *kallsyms_name, char *buf, size_t len)
{
	const char *prog, *own;
	size_t n;

	if (!kallsyms_name)
		return 0;
	prog = kallsyms_program(kallsyms_name, &n);
	own = prog ? own_program(prog, n) : NULL;
	if (!own)
		return 0;
	if ((size_t)snprintf(buf, len, "%s%s]", OWN_CODE_BPF_PREFIX, own) >= len)
		return -ENOSPC;
	return 1;
}
