/* bpf_extents — see bpf_extents.h. */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/agent/bpf_extents.h"

#define FUNCS_MAX 256 /* sub-programs of one program: far above any of ours */

static int extent_cmp(const void *a, const void *b)
{
	const struct bpf_extent *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* appends the JITed functions of the program open as fd */
static int add_program(int fd, struct bpf_extent **e, size_t *n, size_t *cap)
{
	uint64_t ksyms[FUNCS_MAX];
	uint32_t lens[FUNCS_MAX], info_len, k, funcs;
	struct bpf_prog_info info;
	struct bpf_extent *grown;

	memset(&info, 0, sizeof(info));
	info_len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &info_len))
		return 0; /* not ours to explain: skipped */
	funcs = info.nr_jited_ksyms < info.nr_jited_func_lens ? info.nr_jited_ksyms
							      : info.nr_jited_func_lens;
	if (!funcs)
		return 0; /* not JITed */
	if (funcs > FUNCS_MAX)
		funcs = FUNCS_MAX;
	memset(&info, 0, sizeof(info));
	info.nr_jited_ksyms = funcs;
	info.jited_ksyms = (uint64_t)(uintptr_t)ksyms;
	info.nr_jited_func_lens = funcs;
	info.jited_func_lens = (uint64_t)(uintptr_t)lens;
	info_len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &info_len))
		return 0;
	for (k = 0; k < funcs; k++) {
		if (!ksyms[k] || !lens[k])
			continue; /* addresses hidden from this reader */
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 64;
			grown = reallocarray(*e, *cap, sizeof(**e));
			if (!grown)
				return -ENOMEM;
			*e = grown;
		}
		(*e)[(*n)++] = (struct bpf_extent){.addr = ksyms[k], .len = lens[k]};
	}
	return 0;
}

int bpf_extents_read(struct bpf_extent **out, size_t *n)
{
	struct bpf_extent *e = NULL;
	size_t len = 0, cap = 0;
	uint32_t id = 0;
	int fd, err = 0, first = 1;

	for (;;) {
		if (bpf_prog_get_next_id(id, &id)) {
			if (errno != ENOENT)
				err = -errno;
			break;
		}
		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0) {
			if (first && errno != ENOENT) {
				err = -errno;
				break;
			}
			continue; /* unloaded since */
		}
		first = 0;
		err = add_program(fd, &e, &len, &cap);
		close(fd);
		if (err)
			break;
	}
	if (err) {
		free(e);
		return err;
	}
	if (len)
		qsort(e, len, sizeof(*e), extent_cmp);
	*out = e;
	*n = len;
	return 0;
}

const struct bpf_extent *bpf_extents_find(const struct bpf_extent *e, size_t n, uint64_t addr)
{
	struct bpf_extent key = {.addr = addr};

	return n ? bsearch(&key, e, n, sizeof(*e), extent_cmp) : NULL;
}
