/* own_code — nunatak's own frames in the call paths it samples: the
 * kernel's uprobe machinery that its MPI (and component) probes trap into,
 * its BPF programs, and the uprobe trampoline page, so that their time is
 * named and counted as nunatak's, never as the application's.
 *
 *  - own_code_is_probe_kernel_function(): a kernel function that runs only
 *    because a uprobe or uretprobe fired: the int3 trap taken from user
 *    space (asm_exc_int3, exc_int3, do_int3_user: under nunatak that is a
 *    probe's breakpoint; a debugger's breakpoint would be counted too), the
 *    uprobe dispatch (uprobe_notify_resume, handle_swbp, handler_chain,
 *    uprobe_dispatcher, uretprobe_dispatcher, uprobe_prog_run,
 *    uprobe_multi_link_handler, uprobe_multi_link_ret_handler), the return
 *    trampoline (uprobe_handle_trampoline, handle_trampoline, the uretprobe
 *    system call __x64_sys_uretprobe / __ia32_sys_uretprobe /
 *    __do_sys_uretprobe, arch_uretprobe_*), and the single-step of the
 *    displaced instruction (arch_uprobe_*, uprobe_*_xol*).
 *  - own_code_bpf_program(): a kallsyms name "bpf_prog_<tag>_<name> [bpf]"
 *    (/proc/sys/net/core/bpf_jit_kallsyms 1, the default for root) whose
 *    <name> is one of nunatak's programs (every function, program or
 *    sub-program, of the objects of the bpf/ sources, as the Makefile
 *    lists them in $(BUILD)/bpf/own_programs.h; compared on the 15
 *    characters the kernel keeps of a program's name) becomes "[nunatak BPF program <name>]".
 *    Another tool's program keeps its kallsyms name.
 *  - OWN_CODE_UPROBES_PATH: the name the kernel gives the page holding the
 *    uretprobe trampoline and the out-of-line single-step slots; the
 *    Agent's modules.c maps it to the pseudo module OWN_CODE_UPROBES_IDENTITY
 *    and attribution names its code OWN_CODE_TRAMPOLINE_NAME.
 * Pure functions; thread-safe.
 */
#ifndef NUNATAK_ATTRIBUTION_OWN_CODE_H
#define NUNATAK_ATTRIBUTION_OWN_CODE_H

#include <stddef.h>

#define OWN_CODE_UPROBES_PATH "[uprobes]"
#define OWN_CODE_UPROBES_IDENTITY "pseudo:uprobes"
#define OWN_CODE_TRAMPOLINE_NAME "[nunatak uretprobe trampoline]"
#define OWN_CODE_BPF_PREFIX "[nunatak BPF program "

/* 1 when name (a kernel function's, "name [module]" allowed) belongs to
 * the uprobe machinery listed above */
int own_code_is_probe_kernel_function(const char *name);
/* 1 when name is one of nunatak's BPF programs, in kallsyms' spelling or
 * already renamed ("[nunatak BPF program x]") */
int own_code_is_own_bpf_program(const char *name);
/* When kallsyms_name is one of nunatak's BPF programs, writes its name
 * "[nunatak BPF program <name>]" into buf and returns 1; 0 when it is not
 * (buf untouched); -ENOSPC when buf is too short. */
int own_code_bpf_program(const char *kallsyms_name, char *buf, size_t len);

#endif
