/* errno.bpf.h — the errno values BPF programs compare map updates with
 * (vmlinux.h has no <errno.h>); one place for the BPF units that need them. */
#ifndef NUNATAK_BPF_ERRNO_BPF_H
#define NUNATAK_BPF_ERRNO_BPF_H

#ifndef ENOENT
#define ENOENT 2
#endif
#ifndef EEXIST
#define EEXIST 17
#endif

#endif
