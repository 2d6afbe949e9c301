/* bpf_extents — where the kernel's JIT put each loaded BPF program, and
 * how long each image is, from the kernel's own program info (every
 * program, nunatak's and others'): what /proc/kallsyms cannot say, since
 * it lists a "bpf_prog_<tag>_<name> [bpf]" symbol's start only.
 *
 * The programs are walked by id (bpf_prog_get_next_id), each opened
 * (bpf_prog_get_fd_by_id) and asked for its functions' addresses and
 * lengths (bpf_obj_get_info_by_fd: jited_ksyms, jited_func_lens; a program
 * with sub-programs has one of each per function, as kallsyms lists
 * them). Needs CAP_SYS_ADMIN (else -EPERM); the kernel gives addresses only
 * when it shows them in kallsyms too (a program whose addresses read 0 is
 * skipped). A program unloaded during the walk is skipped.
 *
 * Cost: three system calls per program loaded on the machine (tens to a
 * few hundred): well under a millisecond, once per kallsyms read.
 */
#ifndef NUNATAK_AGENT_BPF_EXTENTS_H
#define NUNATAK_AGENT_BPF_EXTENTS_H

#include <stddef.h>
#include <stdint.h>

struct bpf_extent {
	uint64_t addr; /* the kernel address of a JITed function's first byte */
	uint32_t len;  /* its length in bytes, > 0 */
};

/* Every JITed function of every loaded program into *out (sorted by addr,
 * to free()) and *n. 0, or -errno of the walk's first call (-EPERM without
 * CAP_SYS_ADMIN), -ENOMEM. */
int bpf_extents_read(struct bpf_extent **out, size_t *n);
/* The extent starting exactly at addr in e[0..n) (sorted), or NULL. */
const struct bpf_extent *bpf_extents_find(const struct bpf_extent *e, size_t n, uint64_t addr);

#endif
