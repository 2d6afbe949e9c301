/* summary_probe_cost — see summary_probe_cost.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/balance.h"
#include "report/summary_format.h"
#include "report/summary_probe_cost.h"
#include "userspace/log/json_text.h"

/* "33.4 µs", "850 ns" */
static const char *per_call(char *buf, size_t len, double ns)
{
	if (ns >= 1000)
		snprintf(buf, len, "%.1f µs", ns / 1000);
	else
		snprintf(buf, len, "%.0f ns", ns);
	return buf;
}

/* how its calls were probed, said once: the Agent's text names the budget
 * when there was one ("probed in 2 sampled windows covering 0.45 % of the
 * rank's time: every call would have cost 54 % (budget 2 %)"; "probing:
 * every call (--mpi-exact)"); the budget alone when no text was recorded */
static void print_probing(FILE *out, const struct balance_rank *r)
{
	char budget[32];

	if (r->probing) {
		fputs(strncmp(r->probing, "probed ", 7) ? "; probing: " : "; ", out);
		summary_print_text(out, r->probing);
	} else if (!isnan(r->probe_budget)) {
		fprintf(out, "; probe budget %s",
			summary_fmt_share(budget, sizeof(budget), r->probe_budget));
	}
}

static void print_rank(FILE *out, const struct balance_rank *r)
{
	char calls[32], cost[32], secs[32], share[32];

	snprintf(calls, sizeof(calls), r->has_probe_calls ? "%" PRIu64 : "unavailable",
		 r->probe_calls);
	fprintf(out, "  rank %d: %s probed calls", r->rank, calls);
	if (isnan(r->probe_cost_per_call_ns)) {
		fprintf(out, ", probe cost " SUMMARY_UNAVAILABLE " (");
		summary_print_text(out, r->probe_cost_reason ? r->probe_cost_reason : "");
		fputc(')', out);
	} else {
		fprintf(out, " × %s = %s s, %s of its time",
			per_call(cost, sizeof(cost), r->probe_cost_per_call_ns),
			summary_fmt_seconds(secs, sizeof(secs), r->probe_cost_s),
			summary_fmt_share(share, sizeof(share), r->probe_cost_share));
	}
	print_probing(out, r);
	fputc('\n', out);
}

void summary_print_probe_cost(FILE *out, const struct balance *b)
{
	const struct balance_probe_cost *pc = &b->probe_cost;
	char secs[32], share[32], lo[32], hi[32];
	size_t i;

	if (!b->n_ranks)
		return;
	if (!pc->ranks) {
		fprintf(out, "\nnunatak's MPI probes: cost " SUMMARY_UNAVAILABLE
			     " (not calibrated, see each rank)\n");
	} else {
		fprintf(out, "\nnunatak's MPI probes cost %s s, %s of the ranks' time (%" PRIu64
			     " calls × %s",
			summary_fmt_seconds(secs, sizeof(secs), pc->seconds),
			summary_fmt_share(share, sizeof(share), pc->share), pc->calls,
			per_call(lo, sizeof(lo), pc->per_call_ns_min));
		if (pc->per_call_ns_max > pc->per_call_ns_min)
			fprintf(out, " to %s", per_call(hi, sizeof(hi), pc->per_call_ns_max));
		if (pc->node) {
			fprintf(out, ", calibrated on node ");
			summary_print_text(out, pc->node);
		} else {
			fprintf(out, ", calibrated on each of %zu nodes", pc->nodes);
		}
		fprintf(out, "); not counted as the application's time\n");
	}
	for (i = 0; i < b->n_ranks; i++)
		print_rank(out, &b->ranks[i]);
}

static json_t *text_or_null(const char *s)
{
	return s ? json_text(s) : json_null();
}

int summary_probe_cost_rank_json(json_t *o, const struct balance_rank *r)
{
	if (json_object_set_new(o, "probe_calls",
				r->has_probe_calls ? json_integer((json_int_t)r->probe_calls)
						   : json_null()) ||
	    json_object_set_new(o, "probe_cost_per_call_ns",
				summary_json_number(r->probe_cost_per_call_ns)) ||
	    json_object_set_new(o, "probe_cost_s", summary_json_number(r->probe_cost_s)) ||
	    json_object_set_new(o, "probe_cost_share", summary_json_number(r->probe_cost_share)) ||
	    json_object_set_new(o, "probe_cost_reason", text_or_null(r->probe_cost_reason)) ||
	    json_object_set_new(o, "probe_budget", summary_json_number(r->probe_budget)) ||
	    json_object_set_new(o, "probing", text_or_null(r->probing)) ||
	    json_object_set_new(o, "wall_app_time", summary_json_number(r->wall_app_time)) ||
	    json_object_set_new(o, "wall_mpi_time", summary_json_number(r->wall_mpi_time)))
		return -ENOMEM;
	return 0;
}

json_t *summary_probe_cost_json(const struct balance *b)
{
	const struct balance_probe_cost *pc = b ? &b->probe_cost : NULL;
	int any = pc && pc->ranks;

	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:I, s:o}", "calls",
			 any ? json_integer((json_int_t)pc->calls) : json_null(), "seconds",
			 summary_json_number(any ? pc->seconds : NAN), "share",
			 summary_json_number(any ? pc->share : NAN), "per_call_ns_min",
			 summary_json_number(any ? pc->per_call_ns_min : NAN), "per_call_ns_max",
			 summary_json_number(any ? pc->per_call_ns_max : NAN), "ranks",
			 (json_int_t)(pc ? pc->ranks : 0), "node",
			 pc && pc->node ? json_text(pc->node) : json_null());
}
