/* uprobe_cost — see uprobe_cost.h. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "userspace/agent/uprobe_cost.h"

__attribute__((noinline, used)) int uprobe_cost_leaf(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

/* a callee-saved register clobbered: the compiler saves it first (x86-64:
 * push %rbx; arm64: stp, single-stepped as any arm64 prologue) */
__attribute__((noinline, used)) int uprobe_cost_framed(int x)
{
#if defined(__x86_64__)
	__asm__ volatile("" : "+r"(x) : : "rbx");
#elif defined(__aarch64__)
	__asm__ volatile("" : "+r"(x) : : "x19");
#else
	__asm__ volatile("" : "+r"(x));
#endif
	return x + 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t uprobe_cost_time(uprobe_cost_fn fn, int calls, int rounds)
{
	uint64_t best = UINT64_MAX, t0, dt;
	int r, i, x = 0;

	for (r = 0; r < rounds; r++) {
		t0 = now_ns();
		for (i = 0; i < calls; i++)
			x = fn(x);
		dt = now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	return calls > 0 ? best / (uint64_t)calls : 0;
}

struct where {
	uint64_t addr;
	struct uprobe_cost_site *site;
};

static int find_mapping(const struct proc_map *m, void *ctx)
{
	struct where *w = ctx;

	if (w->addr < m->start || w->addr >= m->end)
		return 0;
	w->site->offset = w->addr - m->start + m->pgoff;
	snprintf(w->site->path, sizeof(w->site->path), "%s", m->path);
	return 1;
}

int uprobe_cost_locate(uprobe_cost_fn fn, struct uprobe_cost_site *site)
{
	struct where w = {.addr = (uint64_t)(uintptr_t)fn, .site = site};

	return proc_maps_for_each_exec(getpid(), find_mapping, &w) == 1 ? 0 : -ENOENT;
}

int uprobe_cost_attach(struct bpf_program *entry, struct bpf_program *ret,
		       const struct uprobe_cost_site *site, uint64_t cookie, struct bpf_link **links)
{
	LIBBPF_OPTS(bpf_uprobe_opts, e, .bpf_cookie = cookie);
	LIBBPF_OPTS(bpf_uprobe_opts, r, .bpf_cookie = cookie, .retprobe = true);

	links[0] = bpf_program__attach_uprobe_opts(entry, getpid(), site->path, site->offset, &e);
	if (!links[0])
		return -errno;
	links[1] = bpf_program__attach_uprobe_opts(ret, getpid(), site->path, site->offset, &r);
	return links[1] ? 0 : -errno;
}
