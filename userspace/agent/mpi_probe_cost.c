/* mpi_probe_cost — what one probed MPI call costs a rank on this node,
 * measured once when the MPI probes load (mpi_probes__new), before any
 * application runs: calls of a function of this process that starts as
 * the MPI libraries' functions do (uprobe_cost_framed, uprobe_cost.h),
 * bare, then with the Agent's own programs of bpf/mpi.bpf.c attached to
 * it (the same skeleton, the same attach mode) as the entry and return
 * probe of an MPI function, this process counted as a Target process
 * (mpi_calibration_tgid), so the whole path of a rank's call runs: the
 * trap, the Target lookup, the process' trap count, the call state, the
 * return address, the site's running totals, the Events check (per
 * Target, none asked: the default), the uretprobe trampoline. The cost is
 * the time per call above the bare call, the fastest of a few rounds;
 * in_window_ns is the part of it the probes' own clock puts inside the
 * call (the mean call time they measured minus the bare call). The
 * calibration's sites and counts are forgotten, its probes removed in a
 * thread of their own (a removal waits for a grace period). Method and
 * error: docs/mpi-probe-cost.md. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/mpi.skel.h"
#include "userspace/agent/mpi_probes_internal.h"
#include "userspace/agent/uprobe_cost.h"

/* ~10-20 us a probed call on a VM: 3 rounds of 150 take 5-10 ms */
#define MPI_COST_CALLS 150
#define MPI_COST_ROUNDS 3

struct own_site {
	__u32 tgid;
	uint64_t calls, total_ns;
};

static int own_site(const struct mpi_site_key *key, const struct mpi_site_value *value, void *ctx)
{
	struct own_site *o = ctx;

	if (key->tgid == o->tgid) {
		o->calls += value->calls;
		o->total_ns += value->total_ns;
	}
	return 0;
}

/* the fastest of the rounds of probed calls: *probed ns per call, and
 * *timed the mean call time the probes measured in that round */
static void time_rounds(struct mpi_probes *mp, struct own_site *own, uint64_t *probed,
			uint64_t *timed)
{
	struct own_site before;
	uint64_t ns;
	int r;

	*probed = UINT64_MAX;
	*timed = 0;
	for (r = 0; r < MPI_COST_ROUNDS; r++) {
		before = *own;
		ns = uprobe_cost_time(uprobe_cost_framed, MPI_COST_CALLS, 1);
		own->calls = own->total_ns = 0;
		if (mpi_probes_for_each_site(mp, own_site, own))
			continue;
		if (ns < *probed && own->calls > before.calls) {
			*probed = ns;
			*timed = (own->total_ns - before.total_ns) / (own->calls - before.calls);
		}
	}
}

int mpi_probes_calibrate(struct mpi_probes *mp)
{
	uint64_t cookie = MPI_COOKIE(MPI_FN_SEND, 2, 3, 4), bare, probed, timed;
	struct own_site own = {.tgid = (__u32)getpid()};
	struct uprobe_cost_site site;
	struct uprobe_set *set;
	__u32 per_target;
	int e;

	mp->cost_ns = mp->cost_in_window_ns = 0;
	mp->cost_why[0] = '\0';
	bare = uprobe_cost_time(uprobe_cost_framed, MPI_COST_CALLS, MPI_COST_ROUNDS);
	if (uprobe_cost_locate(uprobe_cost_framed, &site)) {
		snprintf(mp->cost_why, sizeof(mp->cost_why),
			 "the mapping of nunatak's own code was not found");
		return -ENOENT;
	}
	set = malloc(sizeof(*set));
	if (!set)
		return -ENOMEM;
	per_target = mp->skel->bss->mpi_events_per_target;
	mp->skel->bss->mpi_events_per_target = 1;
	mp->skel->bss->mpi_calibration_tgid = own.tgid;
	e = uprobe_set_attach(set, mp->skel->progs.mpi_entry, mp->skel->progs.mpi_return,
			      mp->multi, site.path, &site.offset, &cookie, 1, (pid_t)own.tgid);
	if (!e)
		time_rounds(mp, &own, &probed, &timed);
	mp->skel->bss->mpi_calibration_tgid = 0;
	mp->skel->bss->mpi_events_per_target = per_target;
	mpi_probes_release_async(mp->releaser, set, 1);
	mpi_probes_forget(mp, (pid_t)own.tgid);
	if (e) {
		snprintf(mp->cost_why, sizeof(mp->cost_why),
			 "probing nunatak's own function failed: %s", strerror(-e));
		return e;
	}
	if (probed == UINT64_MAX) {
		snprintf(mp->cost_why, sizeof(mp->cost_why),
			 "the calibration's calls were not counted by the probes");
		return -ENODATA;
	}
	mp->cost_ns = probed > bare ? probed - bare : 1;
	/* the window holds the bare call too; never more than the whole cost */
	timed = timed > bare ? timed - bare : 0;
	mp->cost_in_window_ns = timed < mp->cost_ns ? timed : mp->cost_ns;
	return 0;
}

int mpi_probes_cost(const struct mpi_probes *mp, uint64_t *ns, uint64_t *in_window_ns,
		    const char **why)
{
	*ns = mp->cost_ns;
	*in_window_ns = mp->cost_in_window_ns;
	*why = mp->cost_why;
	return mp->cost_ns ? 0 : -ENODATA;
}
