/* uprobe_set — see uprobe_set.h. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "userspace/agent/uprobe_multi.h"
#include "userspace/agent/uprobe_set.h"

/* an entry and a return perf-event uprobe per function */
static int attach_perf_events(struct uprobe_set *set, struct bpf_program *entry,
			      struct bpf_program *ret, const char *path, const uint64_t *offsets,
			      const uint64_t *cookies, size_t n, pid_t pid)
{
	struct bpf_link *link;
	size_t i;
	int dir;

	set->links = calloc(2 * n, sizeof(*set->links));
	if (!set->links)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		for (dir = 0; dir < 2; dir++) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookies[i],
				    .retprobe = dir == 1);

			link = bpf_program__attach_uprobe_opts(dir ? ret : entry, pid, path,
							       offsets[i], &opts);
			if (!link)
				return -errno;
			set->links[set->n_links++] = link;
		}
	}
	return 0;
}

int uprobe_set_attach(struct uprobe_set *set, struct bpf_program *entry, struct bpf_program *ret,
		      int multi, const char *path, const uint64_t *offsets, const uint64_t *cookies,
		      size_t n, pid_t pid)
{
	int dir, fd;

	*set = UPROBE_SET_EMPTY;
	if (!n)
		return 0;
	if (!multi)
		return attach_perf_events(set, entry, ret, path, offsets, cookies, n, pid);
	for (dir = 0; dir < 2; dir++) {
		/* uprobe_multi: pid 0 is every process */
		fd = uprobe_multi_link_create(bpf_program__fd(dir ? ret : entry), path, offsets,
					      cookies, (uint32_t)n, dir ? UPROBE_MULTI_RETURN : 0,
					      pid < 0 ? 0 : pid);
		if (fd < 0)
			return fd;
		set->multi_fds[dir] = fd;
	}
	return 0;
}

void uprobe_set_release(struct uprobe_set *set)
{
	size_t i;

	for (i = 0; i < 2; i++)
		if (set->multi_fds[i] >= 0)
			close(set->multi_fds[i]);
	for (i = 0; i < set->n_links; i++)
		bpf_link__destroy(set->links[i]);
	free(set->links);
	*set = UPROBE_SET_EMPTY;
}
