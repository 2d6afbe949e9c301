/* processes_executables — the processes of a Run grouped by executable
 * (analysis/processes.h says the identity and the totals): sorted by
 * identity, grouped in one pass, then sorted by samples. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/processes.h"

/* 0: the path is known, 1: the command name only, 2: neither */
static int identity_kind(const struct process_total *pr)
{
	return pr->exe ? 0 : pr->comm ? 1 : 2;
}

static const char *identity_text(const struct process_total *pr)
{
	return pr->exe ? pr->exe : pr->comm ? pr->comm : "";
}

static int process_by_identity(const void *a, const void *b)
{
	const struct process_total *x = *(const struct process_total *const *)a;
	const struct process_total *y = *(const struct process_total *const *)b;
	int kx = identity_kind(x), ky = identity_kind(y);

	if (kx != ky)
		return kx - ky;
	return strcmp(identity_text(x), identity_text(y));
}

static const char *file_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static int name_cmp(const struct executable_total *x, const struct executable_total *y)
{
	if (!x->name || !y->name)
		return !x->name - !y->name; /* the unknown one last */
	return strcmp(x->name, y->name);
}

static int exe_by_name(const void *a, const void *b)
{
	return name_cmp(a, b);
}

static int exe_by_samples(const void *a, const void *b)
{
	const struct executable_total *x = a, *y = b;
	int c;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	c = name_cmp(x, y);
	if (c)
		return c;
	if (!x->path || !y->path)
		return !x->path - !y->path;
	return strcmp(x->path, y->path);
}

/* the CPU time of the n processes of e, the worst Quality of theirs */
static int cpu_time_of(struct executable_total *e, struct process_total *const *procs, size_t n)
{
	const char *reason = NULL;
	size_t i, unavailable = 0;
	int estimated = 0;

	e->cpu_time = 0;
	for (i = 0; i < n; i++) {
		if (!strcmp(procs[i]->cpu_time_quality, "unavailable")) {
			if (!unavailable++)
				reason = procs[i]->cpu_time_reason;
			continue;
		}
		e->cpu_time += procs[i]->cpu_time;
		if (!strcmp(procs[i]->cpu_time_quality, "estimated") && !estimated++)
			reason = procs[i]->cpu_time_reason;
	}
	e->cpu_time_quality = unavailable ? "unavailable" : estimated ? "estimated" : "measured";
	if (unavailable) {
		e->cpu_time = NAN;
		if (asprintf(&e->cpu_time_reason, "%zu of its %zu processes: %s", unavailable, n,
			     reason ? reason : "unavailable") < 0) {
			e->cpu_time_reason = NULL;
			return -ENOMEM;
		}
	} else if (estimated) {
		e->cpu_time_reason = strdup(reason ? reason : "estimated");
		if (!e->cpu_time_reason)
			return -ENOMEM;
	}
	return 0;
}

/* one executable of the n processes of one identity */
static int group(struct executable_total *e, struct process_total *const *procs, size_t n,
		 const struct processes *ps)
{
	size_t i;

	memset(e, 0, sizeof(*e));
	e->path = procs[0]->exe;
	e->comm = e->path ? NULL : procs[0]->comm;
	e->name = e->path ? file_name(e->path) : e->comm;
	e->n_processes = n;
	for (i = 0; i < n; i++) {
		e->samples += procs[i]->samples;
		e->seconds += procs[i]->seconds; /* NAN for cycles: stays NAN */
	}
	e->share = ps->total_samples ? (double)e->samples / (double)ps->total_samples : NAN;
	return cpu_time_of(e, procs, n);
}

/* name_shared on the executables whose file name another one has */
static void mark_shared_names(struct executable_total *exes, size_t n)
{
	size_t i;

	qsort(exes, n, sizeof(*exes), exe_by_name);
	for (i = 1; i < n; i++) {
		if (exes[i].name && exes[i - 1].name && !strcmp(exes[i].name, exes[i - 1].name))
			exes[i].name_shared = exes[i - 1].name_shared = 1;
	}
}

int processes_group_executables(struct processes *ps)
{
	struct process_total **order;
	size_t i, start;
	int err = 0;

	ps->exes = NULL;
	ps->n_exes = 0;
	if (!ps->n)
		return 0;
	order = calloc(ps->n, sizeof(*order));
	ps->exes = calloc(ps->n, sizeof(*ps->exes)); /* at most one per process */
	if (!order || !ps->exes) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < ps->n; i++)
		order[i] = &ps->procs[i];
	qsort(order, ps->n, sizeof(*order), process_by_identity);
	for (start = 0, i = 1; i <= ps->n && !err; i++) {
		if (i < ps->n && !process_by_identity(&order[start], &order[i]))
			continue;
		err = group(&ps->exes[ps->n_exes++], &order[start], i - start, ps);
		start = i;
	}
	if (err)
		goto cleanup;
	mark_shared_names(ps->exes, ps->n_exes);
	qsort(ps->exes, ps->n_exes, sizeof(*ps->exes), exe_by_samples);
cleanup:
	free(order);
	if (err) {
		for (i = 0; ps->exes && i < ps->n_exes; i++)
			free(ps->exes[i].cpu_time_reason);
		free(ps->exes);
		ps->exes = NULL;
		ps->n_exes = 0;
	}
	return err;
}
