/* balance_samples — see balance_samples.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/balance_samples.h"
#include "analysis/stack_class.h"
#include "userspace/pivot/pivot.h"

/* what a sample on a Stack counts for: the application's and inside MPI,
 * the application's only, or neither (a probe's, MPI_Init's) */
enum sample_kind {
	SAMPLE_APP,
	SAMPLE_MPI,
	SAMPLE_NONE,
};

struct stack_kind {
	int64_t id;
	enum sample_kind kind;
};

struct walk {
	struct stack_kind *k;
	size_t n, cap;
	struct balance *b;
	size_t last; /* the rank of the previous row: rows come by rank Locus */
};

static enum sample_kind kind_of_class(const struct stack_classification *sc)
{
	if (sc->class == STACK_PROBE)
		return SAMPLE_NONE;
	if (sc->class != STACK_INSIDE_MPI)
		return SAMPLE_APP;
	return pivot_mpi_is_lifetime(sc->mpi_function) ? SAMPLE_NONE : SAMPLE_MPI;
}

static int classify(const struct pivot_stack_total *s, void *ctx)
{
	struct walk *w = ctx;
	struct stack_classification sc;
	int err;

	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		struct stack_kind *k = reallocarray(w->k, cap, sizeof(*k));

		if (!k)
			return -ENOMEM;
		w->k = k;
		w->cap = cap;
	}
	err = stack_classify(s->frames, s->n_frames, &sc);
	if (err)
		return err;
	w->k[w->n].id = s->id;
	w->k[w->n++].kind = kind_of_class(&sc);
	return 0;
}

/* walked by id: sorted; a Stack not classified counts as the application's */
static enum sample_kind find_kind(const struct walk *w, int64_t id)
{
	size_t lo = 0, hi = w->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (w->k[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n && w->k[lo].id == id ? w->k[lo].kind : SAMPLE_APP;
}

static int count(int64_t rank_locus, int64_t stack, uint64_t n, void *ctx)
{
	struct walk *w = ctx;
	enum sample_kind k = find_kind(w, stack);
	size_t i;

	for (i = 0; i < w->b->n_ranks; i++) {
		size_t at = (w->last + i) % w->b->n_ranks;
		struct balance_rank *r = &w->b->ranks[at];

		if (r->locus != rank_locus)
			continue;
		w->last = at;
		r->has_samples = 1;
		if (k == SAMPLE_NONE)
			return 0;
		r->app_samples += n;
		if (k == SAMPLE_MPI)
			r->mpi_samples += n;
		return 0;
	}
	return 0; /* a Locus with no rank */
}

static int keep_windows(struct balance_rank *r, const char *why)
{
	r->mpi_time_method = BALANCE_METHOD_WINDOWS;
	free(r->mpi_time_method_reason);
	r->mpi_time_method_reason = strdup(why);
	return r->mpi_time_method_reason ? 0 : -ENOMEM;
}

/* The least share of its app window (MPI_Init's end to MPI_Finalize's
 * start, wall) the process can have slept in: its CPU time and run-queue
 * delay are its whole life's, so every second of its life outside the
 * window (its start, MPI_Init's wait on its launcher, its end) is counted
 * as asleep first. A short Run is not refused for the launcher's wait;
 * what it may hide is at most the life outside the window. */
static double asleep_fraction(const struct balance_rank *r)
{
	if (isnan(r->process_wall_time) || isnan(r->cpu_time) || isnan(r->run_delay) ||
	    isnan(r->wall_app_time) || !(r->wall_app_time > 0))
		return NAN;
	return fmax(r->wall_app_time - r->cpu_time - r->run_delay, 0) / r->wall_app_time;
}

/* NULL when its samples can tell its MPI time, else why not (in why) */
static const char *samples_refused(const struct balance_rank *r, char *why, size_t len)
{
	if (!r->app_samples)
		return "no sample of the application in the rank's process";
	if (isnan(r->app_time) || isnan(r->wall_app_time) || !(r->app_time > 0))
		return "its app time is unavailable";
	if (isnan(r->cpu_time))
		return "its CPU time is unavailable: the samples (on-CPU) would not see the time "
		       "it blocks in MPI";
	if (!isnan(r->asleep_fraction)) {
		if (r->asleep_fraction <= BALANCE_SAMPLES_MAX_ASLEEP)
			return NULL;
		snprintf(why, len,
			 "its process was asleep (neither on a CPU nor waiting for one) at least "
			 "%.0f%% of its app time (%.3f s of app time, %.3f s on a CPU and %.3f s "
			 "waiting for one in its whole life of %.3f s): in MPI, which on-CPU "
			 "samples do not see, or elsewhere",
			 100 * r->asleep_fraction, r->wall_app_time, r->cpu_time, r->run_delay,
			 r->process_wall_time);
		return why;
	}
	if (r->cpu_time >= BALANCE_SAMPLES_MIN_CPU * r->wall_app_time)
		return NULL;
	snprintf(why, len,
		 "its CPU time is %.0f%% of its app time and its run-queue delay is unavailable: "
		 "off a CPU the rest, asleep in MPI (which on-CPU samples do not see) or waiting "
		 "for a CPU (nothing recorded tells which)",
		 100 * r->cpu_time / r->wall_app_time);
	return why;
}

int balance_samples_rank(struct balance_rank *r)
{
	double f, n, err;
	const char *refused;
	char why[320];

	r->windows_mpi_time = r->windows_mpi_time_error = NAN;
	r->asleep_fraction = asleep_fraction(r);
	if (!r->mpi_time_estimated) {
		r->mpi_time_method = BALANCE_METHOD_PROBES;
		return 0;
	}
	refused = samples_refused(r, why, sizeof(why));
	if (refused)
		return keep_windows(r, refused);
	n = (double)r->app_samples;
	f = (double)r->mpi_samples / n;
	err = sqrt(f * (1 - f) / n);
	if (err < 1 / n)
		err = 1 / n;
	r->windows_mpi_time = r->mpi_time;
	r->windows_mpi_time_error = r->mpi_time_error;
	r->mpi_time_method = BALANCE_METHOD_SAMPLES;
	r->mpi_time = f * r->app_time;
	r->mpi_time_error = err * r->app_time;
	r->mpi_fraction = f;
	r->mpi_fraction_error = err;
	r->outside_mpi_time = r->app_time - r->mpi_time;
	return 0;
}

int balance_samples(struct pivot *p, struct balance *b)
{
	struct walk w = {.b = b};
	size_t i;
	int err;

	if (!b->n_ranks)
		return 0;
	err = pivot_for_each_stack_total(p, BALANCE_SAMPLES_COUNTER, classify, &w);
	err = err ?: pivot_for_each_rank_stack(p, BALANCE_SAMPLES_COUNTER, count, &w);
	free(w.k);
	for (i = 0; !err && i < b->n_ranks; i++)
		err = balance_samples_rank(&b->ranks[i]);
	return err;
}

void balance_samples_rank_free(struct balance_rank *r)
{
	free(r->mpi_time_method_reason);
}
