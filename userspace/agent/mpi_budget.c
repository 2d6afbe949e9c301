/* mpi_budget — see mpi_budget.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "userspace/agent/mpi_budget.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/mpi_probes_internal.h"
#include "userspace/log/log.h"

enum budget_state {
	B_NEW = 0,   /* its Target's budget not asked yet */
	B_EXACT,     /* every call, whatever it costs (--mpi-exact) */
	B_MEASURING, /* every call probed, its cost measured */
	B_OPEN,	     /* in a window */
	B_DRAINING,  /* the gate closed, the calls entered before it return */
	B_CLOSED,    /* between windows, windowed probes detached */
	B_ATTACHING, /* its windowed probes being attached, off the Agent's loop */
};

struct mpi_budget_proc {
	pid_t tgid;
	enum budget_state state;
	double budget;
	uint64_t t0, traps0; /* B_MEASURING: the interval's start */
	double max_share;    /* NAN: no interval measured */
	double switch_share;
	uint64_t switch_ns, switch_traps; /* 0: every call still probed */
	uint64_t open_ns, close_at, drain_until, next_open;
	uint64_t traps_open, traps_close, others_open, others_close, calls_open, ns_open;
	int after_window; /* B_DRAINING a window (1) or the switch (0) */
	uint64_t period_ns, attach_start, attach_ns;
	double duty;
	double leak; /* the last period's traps over its windows' own: the traps a
		      * window costs beyond itself (draining, a detach that waits
		      * for the kernel's grace period, an attach not yet gated) */
	struct mpi_windows w;
	int ended;		    /* exited: its windows are over */
	uint64_t finalized;	    /* MPI_Finalize entered then: no more windows */
	uint64_t end_ns, end_traps; /* when, and its traps then */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void mpi_probes_set_budget_fn(struct mpi_probes *mp, mpi_budget_fn fn, void *ctx)
{
	mp->budget_fn = fn;
	mp->budget_ctx = ctx;
}

uint64_t mpi_probes_cost_ns(const struct mpi_probes *mp)
{
	return mp->cost_ns ? mp->cost_ns : MPI_PROBE_COST_DEFAULT_NS;
}

static struct mpi_budget_proc *budget_find(const struct mpi_probes *mp, pid_t tgid)
{
	size_t i;

	for (i = 0; i < mp->n_budget; i++)
		if (mp->budget[i].tgid == tgid)
			return &mp->budget[i];
	return NULL;
}

void mpi_budget_process_new(struct mpi_probes *mp, pid_t tgid)
{
	struct mpi_budget_proc *b;

	if (budget_find(mp, tgid))
		return;
	b = realloc(mp->budget, (mp->n_budget + 1) * sizeof(*b));
	if (!b)
		return; /* unbudgeted: every call probed */
	mp->budget = b;
	b = &mp->budget[mp->n_budget++];
	memset(b, 0, sizeof(*b));
	b->tgid = tgid;
	b->max_share = NAN;
	b->switch_share = NAN;
}

void mpi_budget_forget(struct mpi_probes *mp, pid_t tgid)
{
	struct mpi_budget_proc *b = budget_find(mp, tgid);
	__u32 key = (__u32)tgid;

	if (b) {
		*b = mp->budget[--mp->n_budget];
	}
	bpf_map_delete_elem(bpf_map__fd(mp->skel->maps.mpi_gates), &key);
}

static void gate_set(struct mpi_probes *mp, pid_t tgid, uint64_t open_ns, uint64_t close_ns)
{
	struct mpi_gate g = {.open_ns = open_ns, .close_ns = close_ns};
	__u32 key = (__u32)tgid;

	if (bpf_map_update_elem(bpf_map__fd(mp->skel->maps.mpi_gates), &key, &g, BPF_ANY))
		pr_warn("MPI budget: the gate of process %d: %s", (int)tgid, strerror(errno));
}

/* the calls of tgid that trapped, those counted in windows and their ns */
static void counters_ns(struct mpi_probes *mp, pid_t tgid, uint64_t *traps, uint64_t *windowed,
			uint64_t *windowed_ns)
{
	struct mpi_process p;

	if (mpi_probes_process(mp, tgid, &p))
		memset(&p, 0, sizeof(p));
	*traps = p.probed_calls;
	if (windowed)
		*windowed = p.windowed_calls;
	if (windowed_ns)
		*windowed_ns = p.windowed_ns;
}

static void counters(struct mpi_probes *mp, pid_t tgid, uint64_t *traps, uint64_t *windowed)
{
	counters_ns(mp, tgid, traps, windowed, NULL);
}

/* when MPI_Finalize of tgid was entered, 0 not yet: no windowed call
 * comes after it, a window ends there */
static uint64_t mpi_finalized(struct mpi_probes *mp, pid_t tgid)
{
	struct mpi_process p;

	return mpi_probes_process(mp, tgid, &p) ? 0 : p.finalize_start_ns;
}

/* 1 once MPI_Init (or MPI_Init_thread) of tgid returned */
static int mpi_initialized(struct mpi_probes *mp, pid_t tgid)
{
	struct mpi_process p;

	return !mpi_probes_process(mp, tgid, &p) && p.init_end_ns;
}

/* the traps of every other budgeted process */
static uint64_t others_traps(struct mpi_probes *mp, pid_t tgid)
{
	uint64_t sum = 0, t;
	size_t i;

	for (i = 0; i < mp->n_budget; i++) {
		if (mp->budget[i].tgid == tgid)
			continue;
		counters(mp, mp->budget[i].tgid, &t, NULL);
		sum += t;
	}
	return sum;
}

/* one window [open_ns, close_ns) of b with n calls of t ns into w */
static void window_add(struct mpi_windows *w, double cost, const struct mpi_budget_proc *b,
		       uint64_t close_ns, uint64_t traps_close, uint64_t others_close, double n,
		       double t)
{
	double len = (double)(close_ns - b->open_ns);
	double own = cost * (double)(traps_close - b->traps_open);
	double others = others_close > b->others_open ? cost * (double)(others_close - b->others_open)
						      : 0;
	double wo = len - own > 0 ? len - own : 0, wa = len - own - others > 0 ? len - own - others : 0;

	w->k++;
	w->n += n;
	w->w_own += wo;
	w->w_all += wa;
	w->nn += n * n;
	w->nw += n * wo;
	w->ww += wo * wo;
	w->t += t;
	w->tt += t * t;
	w->tw += t * wo;
	w->others_ns += others;
	w->own_traps_ns += own;
}

/* the duty and period for the next windows, from the trap rate of the last */
static void duty_update(struct mpi_budget_proc *b, double cost, uint64_t len)
{
	double rho = len ? (double)(b->traps_close - b->traps_open) / (double)len : 0;
	double duty, period = (double)b->period_ns;

	if (rho <= 0) { /* no call in the window: longer windows cost nothing */
		duty = 0.5;
	} else {
		/* the traps of the window and of its drain; attaching costs the
		 * Agent (a grace period of the kernel's), not the rank */
		duty = (MPI_BUDGET_SAFETY * b->budget -
			(double)MPI_BUDGET_DRAIN_NS * cost * rho / period) / (cost * rho);
	}
	if (b->leak > 1)
		duty /= b->leak;
	if (duty > 0.5)
		duty = 0.5;
	if (duty < 1e-4)
		duty = 1e-4;
	b->duty = duty;
	b->period_ns = MPI_BUDGET_PERIOD_NS;
	if (duty * (double)MPI_BUDGET_PERIOD_NS < (double)MPI_BUDGET_MIN_WINDOW_NS) {
		period = (double)MPI_BUDGET_MIN_WINDOW_NS / duty;
		b->period_ns = period > (double)MPI_BUDGET_MAX_PERIOD_NS ? MPI_BUDGET_MAX_PERIOD_NS
									  : (uint64_t)period;
	}
}

/* 1 when another process of this node has a window open or opening.
 * Windows are never simultaneous: inside a window a rank's calls wait on
 * its peers' traps too when the peers are probed at the same time (a
 * ping-pong in two windows runs at the traps' pace, so its in-window rate
 * says nothing of its rate outside); with one window at a time, a rank's
 * peers on this node run unprobed while it is sampled. */
static int window_elsewhere(const struct mpi_probes *mp, const struct mpi_budget_proc *b)
{
	size_t i;

	for (i = 0; i < mp->n_budget; i++) {
		const struct mpi_budget_proc *o = &mp->budget[i];

		if (o == b || o->ended)
			continue;
		if (o->state == B_ATTACHING || o->state == B_OPEN ||
		    (o->state == B_DRAINING && o->after_window))
			return 1;
	}
	return 0;
}

static void budget_step(struct mpi_probes *mp, struct mpi_budget_proc *b, uint64_t now)
{
	double cost = (double)mpi_probes_cost_ns(mp), share;
	uint64_t traps, calls, ns, t1, fin;
	int err;

	if (b->ended)
		return;
	switch (b->state) {
	case B_NEW:
		b->budget = mp->budget_fn ? mp->budget_fn(mp->budget_ctx, b->tgid) : 0;
		if (b->budget == 0)
			b->budget = MPI_BUDGET_DEFAULT;
		if (isnan(b->budget)) {
			b->state = B_EXACT;
			break;
		}
		b->state = B_MEASURING;
		b->t0 = now;
		counters(mp, b->tgid, &b->traps0, NULL);
		break;
	case B_MEASURING:
		if (now < b->t0 + (isnan(b->max_share) ? MPI_BUDGET_FIRST_MEASURE_NS
						       : MPI_BUDGET_MEASURE_NS))
			break;
		counters(mp, b->tgid, &traps, NULL);
		if (!mpi_initialized(mp, b->tgid)) {
			/* MPI_Init's own traps (the calls it makes inside) say
			 * nothing of the application's rate: measured from its end */
			b->t0 = now;
			b->traps0 = traps;
			break;
		}
		share = cost * (double)(traps - b->traps0) / (double)(now - b->t0);
		if (isnan(b->max_share) || share > b->max_share)
			b->max_share = share;
		b->t0 = now;
		b->traps0 = traps;
		if (share <= b->budget)
			break;
		/* every call would cost more than the budget: windows from now on */
		gate_set(mp, b->tgid, 0, now);
		b->switch_share = share;
		b->switch_ns = now;
		b->switch_traps = traps;
		b->duty = MPI_BUDGET_SAFETY * b->budget / share;
		b->period_ns = MPI_BUDGET_PERIOD_NS;
		b->after_window = 0;
		b->drain_until = now + MPI_BUDGET_DRAIN_NS;
		b->state = B_DRAINING;
		pr_info("MPI budget: process %d: every call costs %.1f%% of its time (budget "
			"%.1f%%): probed in sampled windows from now on",
			(int)b->tgid, 100 * share, 100 * b->budget);
		break;
	case B_OPEN:
		fin = mpi_finalized(mp, b->tgid);
		if (now < b->close_at && !fin)
			break;
		gate_set(mp, b->tgid, b->open_ns, now);
		b->finalized = fin;
		counters(mp, b->tgid, &b->traps_close, NULL);
		b->others_close = others_traps(mp, b->tgid);
		b->after_window = 1;
		b->drain_until = now + MPI_BUDGET_DRAIN_NS;
		/* the window's end, for window_add */
		b->close_at = fin && fin > b->open_ns && fin < now ? fin : now;
		b->state = B_DRAINING;
		break;
	case B_DRAINING:
		if (now < b->drain_until && mpi_probes_in_flight(mp, b->tgid) > 0)
			break;
		mpi_probes_windowed(mp, b->tgid, 0);
		if (b->after_window) {
			counters_ns(mp, b->tgid, &traps, &calls, &ns);
			window_add(&b->w, cost, b, b->close_at, b->traps_close, b->others_close,
				   (double)(calls - b->calls_open), (double)(ns - b->ns_open));
			pr_debug("MPI budget: process %d: window of %.1f ms, %llu calls, %llu traps "
				 "(+%llu draining), attach %.2f ms",
				 (int)b->tgid, (double)(b->close_at - b->open_ns) / 1e6,
				 (unsigned long long)(calls - b->calls_open),
				 (unsigned long long)(b->traps_close - b->traps_open),
				 (unsigned long long)(traps - b->traps_close), (double)b->attach_ns / 1e6);
			duty_update(b, cost, b->close_at - b->open_ns);
			b->next_open = b->open_ns + b->period_ns;
		} else {
			b->next_open = now + (uint64_t)((1 - b->duty) * (double)b->period_ns);
		}
		if (b->next_open < now + 1000000)
			b->next_open = now + 1000000;
		b->state = B_CLOSED;
		break;
	case B_CLOSED:
		if (now < b->next_open || b->finalized)
			break;
		b->finalized = mpi_finalized(mp, b->tgid);
		if (b->finalized)
			break;
		if (window_elsewhere(mp, b)) { /* one window at a time on this node */
			b->next_open = now + 1000000;
			break;
		}
		err = mpi_probes_windowed_attach(mp, b->tgid);
		if (err < 0) {
			b->next_open = now + b->period_ns;
			break;
		}
		b->attach_start = now;
		b->state = B_ATTACHING;
		if (!err)
			break;
		/* attached already */
		/* fall through */
	case B_ATTACHING:
		err = mpi_probes_windowed_attached(mp, b->tgid);
		if (!err)
			break;
		t1 = now_ns();
		b->attach_ns = t1 - b->attach_start;
		if (err < 0) {
			b->next_open = t1 + b->period_ns;
			b->state = B_CLOSED;
			break;
		}
		b->finalized = mpi_finalized(mp, b->tgid);
		if (b->finalized) { /* no window after MPI_Finalize */
			mpi_probes_windowed(mp, b->tgid, 0);
			b->state = B_CLOSED;
			break;
		}
		{
			/* every trap since the last window opened, over those of
			 * the window itself: > 1 when its closing or this opening
			 * trapped too (all counted in the rank's probe cost) */
			uint64_t prev_open_traps = b->traps_open, prev_window_traps =
				b->traps_close > b->traps_open ? b->traps_close - b->traps_open : 0;

			counters_ns(mp, b->tgid, &b->traps_open, &b->calls_open, &b->ns_open);
			if (prev_window_traps && b->traps_open > prev_open_traps)
				b->leak = (double)(b->traps_open - prev_open_traps) /
					  (double)prev_window_traps;
		}
		b->open_ns = t1;
		b->others_open = others_traps(mp, b->tgid);
		gate_set(mp, b->tgid, t1, ~0ull);
		b->close_at = t1 + (uint64_t)(b->duty * (double)b->period_ns);
		if (b->close_at < t1 + MPI_BUDGET_MIN_WINDOW_NS)
			b->close_at = t1 + MPI_BUDGET_MIN_WINDOW_NS;
		b->state = B_OPEN;
		break;
	case B_EXACT:
		break;
	}
}

void mpi_probes_tick(struct mpi_probes *mp)
{
	uint64_t now = now_ns();
	size_t i;

	for (i = 0; i < mp->n_budget; i++)
		budget_step(mp, &mp->budget[i], now);
}

long long mpi_probes_next_ms(const struct mpi_probes *mp)
{
	uint64_t next = 0, t;
	size_t i;

	for (i = 0; i < mp->n_budget; i++) {
		const struct mpi_budget_proc *b = &mp->budget[i];

		if (b->ended)
			continue;
		switch (b->state) {
		case B_NEW: t = 1; break;
		case B_MEASURING:
			t = b->t0 + (isnan(b->max_share) ? MPI_BUDGET_FIRST_MEASURE_NS
							 : MPI_BUDGET_MEASURE_NS);
			break;
		case B_OPEN: t = b->close_at; break;
		case B_DRAINING:
		case B_ATTACHING: t = now_ns() + 1000000; break; /* asked again each ms */
		case B_CLOSED: t = b->next_open; break;
		default: t = 0;
		}
		if (t && (!next || t < next))
			next = t;
	}
	return next ? (long long)((next + 999999) / 1000000) : -1;
}

void mpi_budget_process_end(struct mpi_probes *mp, pid_t tgid)
{
	struct mpi_budget_proc *b = budget_find(mp, tgid);
	uint64_t now = now_ns(), calls, ns;

	if (!b || b->ended)
		return;
	counters_ns(mp, tgid, &b->end_traps, &calls, &ns);
	if (b->state == B_OPEN || (b->state == B_DRAINING && b->after_window)) {
		if (b->state == B_OPEN) {
			uint64_t fin = mpi_finalized(mp, tgid);

			b->close_at = fin && fin > b->open_ns && fin < now ? fin : now;
			b->traps_close = b->end_traps;
			b->others_close = others_traps(mp, tgid);
		}
		window_add(&b->w, (double)mpi_probes_cost_ns(mp), b, b->close_at, b->traps_close,
			   b->others_close, (double)(calls - b->calls_open), (double)(ns - b->ns_open));
	}
	b->end_ns = now;
	b->ended = 1;
}

/* the windows of b so far; one still open counts up to now */
static void windows_now(struct mpi_probes *mp, const struct mpi_budget_proc *b, uint64_t end_ns,
			struct mpi_windows *w)
{
	double cost = (double)mpi_probes_cost_ns(mp);
	uint64_t now = now_ns(), traps, calls, ns, end;

	*w = b->w;
	counters_ns(mp, b->tgid, &traps, &calls, &ns);
	if (!b->ended && (b->state == B_OPEN || (b->state == B_DRAINING && b->after_window))) {
		int open = b->state == B_OPEN;

		window_add(w, cost, b, open ? now : b->close_at, open ? traps : b->traps_close,
			   open ? others_traps(mp, b->tgid) : b->others_close,
			   (double)(calls - b->calls_open), (double)(ns - b->ns_open));
	}
	end = b->ended ? b->end_ns : now;
	if (b->ended)
		traps = b->end_traps;
	if (end_ns && end_ns < end && end_ns > b->switch_ns)
		end = end_ns;
	w->phase_ns = end > b->switch_ns ? (double)(end - b->switch_ns) : 0;
	w->phase_traps_ns = cost * (double)(traps - b->switch_traps);
}

int mpi_probes_probing(struct mpi_probes *mp, pid_t tgid, uint64_t end_ns,
		       struct mpi_probing *out)
{
	const struct mpi_budget_proc *b = budget_find(mp, tgid);
	struct mpi_windows w;

	memset(out, 0, sizeof(*out));
	if (!b)
		return -ENOENT;
	out->budget = b->state == B_NEW ? NAN : b->budget;
	if (b->state == B_EXACT || b->state == B_NEW) {
		out->share = NAN;
		snprintf(out->probing, sizeof(out->probing), "every call%s",
			 b->state == B_EXACT ? " (--mpi-exact)" : "");
		return 0;
	}
	if (!b->switch_ns) {
		out->share = b->max_share;
		if (isnan(b->max_share))
			snprintf(out->probing, sizeof(out->probing), "every call (budget %g %%)",
				 100 * b->budget);
		else
			snprintf(out->probing, sizeof(out->probing),
				 "every call: at most %.2g %% of the rank's time (budget %g %%)",
				 100 * b->max_share, 100 * b->budget);
		return 0;
	}
	out->sampled = 1;
	out->share = b->switch_share;
	windows_now(mp, b, end_ns, &w);
	out->scale_valid = !mpi_estimate_scale(&w, &out->scale);
	if (out->scale_valid)
		snprintf(out->estimate, sizeof(out->estimate),
			 "probed in %llu sampled windows covering %.2g %% of the rank's time: "
			 "every call would have cost %.2g %% (budget %g %%)",
			 (unsigned long long)w.k, 100 * out->scale.coverage, 100 * b->switch_share,
			 100 * b->budget);
	else
		snprintf(out->estimate, sizeof(out->estimate),
			 "every call would have cost %.2g %% (budget %g %%): no sampled window has "
			 "closed yet, the calls since are not counted",
			 100 * b->switch_share, 100 * b->budget);
	snprintf(out->probing, sizeof(out->probing), "%s", out->estimate);
	return 0;
}
