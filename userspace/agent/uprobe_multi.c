/* uprobe_multi — see uprobe_multi.h. */
#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "userspace/agent/uprobe_multi.h"

struct uprobe_multi_link_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad;
};

int uprobe_multi_link_create(int prog_fd, const char *path, const uint64_t *offsets,
			     const uint64_t *cookies, uint32_t cnt, uint32_t flags, pid_t pid)
{
	struct uprobe_multi_link_attr attr = {
	    .prog_fd = (__u32)prog_fd,
	    .attach_type = TRACE_UPROBE_MULTI,
	    .path = (__u64)(uintptr_t)path,
	    .offsets = (__u64)(uintptr_t)offsets,
	    .cookies = (__u64)(uintptr_t)cookies,
	    .cnt = cnt,
	    .multi_flags = flags,
	    .pid = (__u32)pid,
	};
	int fd;

	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

int uprobe_multi_supported(char *why, size_t whylen)
{
	const struct bpf_insn insns[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = TRACE_UPROBE_MULTI);
	uint64_t offset = 0;
	int prog_fd, fd, e;

	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &opts);
	if (prog_fd < 0) {
		e = -errno;
		snprintf(why, whylen, "a kprobe program cannot be loaded: %s", strerror(-e));
		/* a kernel that does not know the attach type refuses the load */
		return e == -EINVAL ? 0 : e;
	}
	fd = uprobe_multi_link_create(prog_fd, "/", &offset, NULL, 1, 0, 0);
	close(prog_fd);
	if (fd >= 0) { /* cannot happen: "/" is not a file to probe */
		close(fd);
		snprintf(why, whylen, "the kernel probed '/'");
		return 1;
	}
	snprintf(why, whylen, "BPF_LINK_CREATE of a uprobe_multi link: %s", strerror(-fd));
	if (fd == -EBADF)
		return 1;
	return fd == -EPERM || fd == -EACCES ? fd : 0;
}
