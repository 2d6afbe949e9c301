/* bpf_fixture — what the unit tests that load real BPF need: whether they
 * can (root, kernel BTF), and the reason when they cannot, for
 * SKIP_UNLESS. Header-only like test_helpers.h (each test is one
 * translation unit); include it after test_helpers.h.
 */
#ifndef NUNATAK_TESTS_BPF_FIXTURE_H
#define NUNATAK_TESTS_BPF_FIXTURE_H

#include <unistd.h>

/* NULL when BPF programs can be loaded here, else why not */
static inline const char *bpf_unavailable(void)
{
	if (geteuid() != 0)
		return "loading BPF programs needs root";
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return "the kernel has no BTF (/sys/kernel/btf/vmlinux)";
	return NULL;
}

#endif
