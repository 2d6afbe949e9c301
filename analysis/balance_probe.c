/* balance_probe — see balance_probe.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/balance_probe.h"
#include "userspace/pivot/pivot.h"

#define NS_PER_S 1e9

static uint64_t minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

int balance_probe_rank(struct balance_rank *r, const struct pivot_mpi_locus *l)
{
	double c, in_app, in_mpi;

	r->wall_app_time = r->app_time;
	r->wall_mpi_time = r->mpi_time;
	r->has_probe_calls = l->has_probed_calls;
	r->probe_calls = l->probed_calls;
	r->probe_cost_per_call_ns = r->probe_cost_s = r->probe_cost_share = NAN;
	r->probe_budget = l->has_probe_budget ? l->probe_budget : NAN;
	if (l->probing && !(r->probing = strdup(l->probing)))
		return -ENOMEM;
	if (!l->has_probe_cost || !l->has_probed_calls) {
		const char *why = !l->has_probed_calls ? "the calls that trapped were not counted"
			: l->probe_cost_reason ? l->probe_cost_reason
					       : "the probe cost was not recorded";

		return (r->probe_cost_reason = strdup(why)) ? 0 : -ENOMEM;
	}
	c = (double)l->probe_cost_ns;
	r->probe_cost_per_call_ns = c;
	r->probe_cost_s = (double)l->probed_calls * c / NS_PER_S;
	if (r->wall_app_time > 0)
		r->probe_cost_share = r->probe_cost_s / r->wall_app_time;
	in_app = (double)minus(l->probed_calls, l->lifetime_calls) * c / NS_PER_S;
	in_mpi = ((double)minus(l->calls, l->lifetime_calls) * (double)l->probe_cost_in_window_ns +
		  (double)minus(l->probed_calls, l->calls) * c) /
		 NS_PER_S;
	/* NAN stays NAN */
	r->mpi_time = fmax(r->wall_mpi_time - in_mpi, 0);
	if (isnan(r->wall_mpi_time))
		r->mpi_time = NAN;
	r->app_time = fmax(r->wall_app_time - in_app, r->mpi_time);
	if (isnan(r->wall_app_time))
		r->app_time = NAN;
	return 0;
}

int balance_probe_run(struct balance *b)
{
	struct balance_probe_cost *pc = &b->probe_cost;
	double wall = 0;
	size_t i, k;

	memset(pc, 0, sizeof(*pc));
	pc->seconds = pc->share = pc->per_call_ns_min = pc->per_call_ns_max = NAN;
	for (i = 0; i < b->n_ranks; i++) {
		const struct balance_rank *r = &b->ranks[i];

		if (isnan(r->probe_cost_per_call_ns))
			continue;
		if (!pc->ranks++) {
			pc->seconds = 0;
			pc->per_call_ns_min = pc->per_call_ns_max = r->probe_cost_per_call_ns;
		}
		pc->calls += r->probe_calls;
		pc->seconds += r->probe_cost_s;
		pc->per_call_ns_min = fmin(pc->per_call_ns_min, r->probe_cost_per_call_ns);
		pc->per_call_ns_max = fmax(pc->per_call_ns_max, r->probe_cost_per_call_ns);
		if (!isnan(r->wall_app_time))
			wall += r->wall_app_time;
		for (k = 0; k < i; k++)
			if (!isnan(b->ranks[k].probe_cost_per_call_ns) &&
			    !strcmp(b->ranks[k].node, r->node))
				break;
		if (k == i)
			pc->nodes++;
	}
	if (wall > 0)
		pc->share = pc->seconds / wall;
	for (i = 0; pc->nodes == 1 && i < b->n_ranks; i++)
		if (!isnan(b->ranks[i].probe_cost_per_call_ns))
			return (pc->node = strdup(b->ranks[i].node)) ? 0 : -ENOMEM;
	return 0;
}

void balance_probe_rank_free(struct balance_rank *r)
{
	free(r->probe_cost_reason);
	free(r->probing);
}

void balance_probe_run_free(struct balance *b)
{
	free(b->probe_cost.node);
}
