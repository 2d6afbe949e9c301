/* uprobe_multi — BPF_LINK_CREATE of a uprobe_multi link (kernel 6.6+),
 * which this libbpf (1.1) and these uapi headers predate: one link probes
 * many functions of one file, and removing it waits for one grace period
 * instead of one per probe.
 *
 * Used by the MPI probes (mpi_probes_attach.c) to attach, and by `nunatak
 * doctor` to ask the kernel whether it has them.
 */
#ifndef NUNATAK_AGENT_UPROBE_MULTI_H
#define NUNATAK_AGENT_UPROBE_MULTI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* enum bpf_attach_type BPF_TRACE_UPROBE_MULTI */
#define TRACE_UPROBE_MULTI 48
/* flags: return probes */
#define UPROBE_MULTI_RETURN 1u

/* A uprobe_multi link of the loaded program prog_fd (expected attach type
 * TRACE_UPROBE_MULTI) at cnt file offsets of path, with cookies (may be
 * NULL), for process pid (0: every process). The link's fd, or -errno. */
int uprobe_multi_link_create(int prog_fd, const char *path, const uint64_t *offsets,
			     const uint64_t *cookies, uint32_t cnt, uint32_t flags, pid_t pid);

/* Whether the running kernel has uprobe_multi links: 1, 0 (why says what
 * the kernel answered), or -errno when it cannot be told (no right to
 * load a BPF program: -EPERM). Loads a trivial kprobe program and asks for
 * a link on "/", which a kernel with uprobe_multi refuses with EBADF (not
 * a regular file) and one without with EINVAL. */
int uprobe_multi_supported(char *why, size_t whylen);

#endif
