/* processes — samples by process and thread, CPU time by process, and the
 * kernel's share of the samples, from the pivot's Loci. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "analysis/processes.h"
#include "userspace/launch/launcher.h"
#include "userspace/pivot/pivot.h"

#define NO_EXIT_REASON                                                                             \
	"no exit was recorded for it (still running at the end, or its exit report was lost)"

struct collect {
	struct processes *ps;
	size_t cap;
	int is_time; /* the counter is time (ns): seconds are known */
	uint64_t kernel_leaf, in_kernel;
	/* the process being read: its CPU time so far */
	double cpu_ns;
	int cpu_seen, cpu_unavailable, cpu_estimated;
	const char *cpu_reason;
};

static char *strdup_or_null(const char *s, int *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = 1;
	return d;
}

static struct process_total *process_start(struct collect *c, const struct pivot_locus_total *t)
{
	struct processes *ps = c->ps;
	struct process_total *pr;
	int oom = 0;

	if (ps->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;

		pr = reallocarray(ps->procs, cap, sizeof(*pr));
		if (!pr)
			return NULL;
		ps->procs = pr;
		c->cap = cap;
	}
	pr = &ps->procs[ps->n++];
	memset(pr, 0, sizeof(*pr));
	pr->pid = t->tgid;
	pr->node = strdup_or_null(t->node ? t->node : "", &oom);
	pr->exe = strdup_or_null(t->exe, &oom);
	pr->comm = strdup_or_null(t->comm, &oom);
	c->cpu_ns = 0;
	c->cpu_seen = c->cpu_unavailable = c->cpu_estimated = 0;
	c->cpu_reason = NULL;
	return oom ? NULL : pr;
}

/* adds this Locus' exit Measurements (if any) to its process' CPU time */
static void add_cpu_time(struct collect *c, const struct pivot_locus_total *t)
{
	const struct pivot_locus_value *u = &t->cpu_time_user, *s = &t->cpu_time_system;
	int unavailable;

	if (!u->quality && !s->quality)
		return;
	c->cpu_seen = 1;
	unavailable = !u->quality || !s->quality || !strcmp(u->quality, "unavailable") ||
		      !strcmp(s->quality, "unavailable") || isnan(u->value) || isnan(s->value);
	if (unavailable) {
		c->cpu_unavailable = 1;
	} else {
		c->cpu_ns += u->value + s->value;
		c->cpu_estimated |=
		    !strcmp(u->quality, "estimated") || !strcmp(s->quality, "estimated");
	}
	if ((unavailable || c->cpu_estimated) && !c->cpu_reason)
		c->cpu_reason = u->reason ? u->reason : s->reason;
}

/* the CPU time of the process read last, from what its Loci gave */
static int process_finish(struct collect *c)
{
	struct process_total *pr;
	const char *reason = NULL;

	if (!c->ps->n)
		return 0;
	pr = &c->ps->procs[c->ps->n - 1];
	pr->cpu_time = NAN;
	pr->cpu_time_quality = "unavailable";
	if (!c->cpu_seen) {
		reason = NO_EXIT_REASON;
	} else if (c->cpu_unavailable) {
		reason = c->cpu_reason ? c->cpu_reason : "part of it is unavailable";
	} else {
		pr->cpu_time = c->cpu_ns / 1e9;
		pr->cpu_time_quality = c->cpu_estimated ? "estimated" : "measured";
		if (c->cpu_estimated)
			reason = c->cpu_reason ? c->cpu_reason : "estimated";
	}
	pr->cpu_time_reason = reason ? strdup(reason) : NULL;
	return reason && !pr->cpu_time_reason ? -ENOMEM : 0;
}

static int add_thread(struct process_total *pr, const struct pivot_locus_total *t)
{
	struct thread_total *th;

	if (!t->sample_count)
		return 0; /* a thread never sampled is not part of the view */
	th = reallocarray(pr->threads, pr->n_threads + 1, sizeof(*th));
	if (!th)
		return -ENOMEM;
	pr->threads = th;
	th = &pr->threads[pr->n_threads++];
	memset(th, 0, sizeof(*th));
	th->tid = t->tid;
	th->samples = t->sample_count;
	return 0;
}

static int collect_locus(const struct pivot_locus_total *t, void *ctx)
{
	struct collect *c = ctx;
	struct process_total *pr = c->ps->n ? &c->ps->procs[c->ps->n - 1] : NULL;

	if (t->comm && launcher_is_launcher_process(t->comm))
		return 0;
	if (!pr || pr->pid != t->tgid || strcmp(pr->node, t->node ? t->node : "")) {
		if (process_finish(c))
			return -ENOMEM;
		pr = process_start(c, t);
		if (!pr)
			return -ENOMEM;
	}
	if (t->tid == t->tgid && t->exe && !pr->exe) { /* the main thread knows best */
		pr->exe = strdup(t->exe);
		if (!pr->exe)
			return -ENOMEM;
	}
	pr->samples += t->sample_count;
	pr->seconds += t->value; /* ns until compute() */
	c->ps->total_samples += t->sample_count;
	c->ps->stack_samples += t->stack_samples;
	c->kernel_leaf += t->kernel_leaf_samples;
	c->in_kernel += t->in_kernel_samples;
	add_cpu_time(c, t);
	return add_thread(pr, t);
}

static int thread_by_samples(const void *a, const void *b)
{
	const struct thread_total *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int process_by_samples(const void *a, const void *b)
{
	const struct process_total *x = a, *y = b;
	int c;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	c = strcmp(x->node, y->node);
	if (c)
		return c;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int compute(struct processes *ps, const struct collect *c)
{
	double total = (double)ps->total_samples;
	size_t i, j;
	int err;

	for (i = 0; i < ps->n; i++) {
		struct process_total *pr = &ps->procs[i];

		pr->share = total > 0 ? pr->samples / total : NAN;
		pr->seconds = c->is_time ? pr->seconds / 1e9 : NAN;
		if (pr->n_threads) /* qsort of NULL: undefined */
			qsort(pr->threads, pr->n_threads, sizeof(*pr->threads), thread_by_samples);
		for (j = 0; j < pr->n_threads; j++) {
			struct thread_total *th = &pr->threads[j];

			th->share = total > 0 ? th->samples / total : NAN;
			th->process_share = pr->samples ? (double)th->samples / pr->samples : NAN;
			th->busy = th->samples >= DIAGNOSIS_SAMPLE_FLOOR &&
				   th->process_share >= PROCESSES_BUSY_SHARE;
			pr->n_busy += th->busy;
		}
	}
	if (ps->n)
		qsort(ps->procs, ps->n, sizeof(*ps->procs), process_by_samples);
	err = processes_group_executables(ps);
	if (err)
		return err;
	for (i = 0; i < ps->n_exes; i++)
		ps->n_executables += ps->exes[i].samples > 0;
	ps->kernel_from_flag = !c->kernel_leaf && c->in_kernel;
	ps->kernel_samples = ps->kernel_from_flag ? c->in_kernel : c->kernel_leaf;
	ps->kernel_share =
	    ps->stack_samples ? (double)ps->kernel_samples / (double)ps->stack_samples : NAN;
	return 0;
}

struct processes *processes__new(struct pivot *p, const char *counter)
{
	struct collect c = {0};
	int err;

	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	c.ps = calloc(1, sizeof(*c.ps));
	if (!c.ps)
		return NULL;
	counter = counter ? counter : "cpu-clock";
	c.is_time = !strcmp(counter, "cpu-clock");
	err = pivot_for_each_locus_total(p, counter, collect_locus, &c);
	if (!err)
		err = process_finish(&c);
	if (!err)
		err = compute(c.ps, &c);
	if (err) {
		processes__free(c.ps);
		errno = -err;
		return NULL;
	}
	return c.ps;
}

void processes__free(struct processes *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->n_exes; i++)
		free(ps->exes[i].cpu_time_reason);
	free(ps->exes);
	for (i = 0; i < ps->n; i++) {
		free(ps->procs[i].node);
		free(ps->procs[i].exe);
		free(ps->procs[i].comm);
		free(ps->procs[i].cpu_time_reason);
		free(ps->procs[i].threads);
	}
	free(ps->procs);
	free(ps);
}
