/* summary_processes — the kernel's share, processes and busy threads, as
 * text and as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "analysis/processes.h"
#include "report/summary_format.h"
#include "report/summary_processes.h"
#include "userspace/log/json_text.h"

#define NUM_WIDTH 11 /* strlen("unavailable") */

void summary_print_kernel(FILE *out, const struct processes *ps)
{
	char share[32];

	if (!out || !ps || !ps->stack_samples)
		return;
	summary_fmt_share(share, sizeof(share), ps->kernel_share);
	if (ps->kernel_from_flag)
		fprintf(out,
			"\nkernel: %s of the samples were taken in the kernel; this Run has no "
			"kernel frames, so that time is charged to the user function that entered "
			"the kernel\n",
			share);
	else
		fprintf(out, "\nkernel: %s of the samples (in system calls and page faults)\n",
			share);
}

/* the executable's file name, else the command name */
static const char *process_label(const struct process_total *pr)
{
	const char *slash;

	if (!pr->exe)
		return pr->comm ? pr->comm : "?";
	slash = strrchr(pr->exe, '/');
	return slash && slash[1] ? slash + 1 : pr->exe;
}

/* an executable as the table names it: its file name, its path when
 * another executable has the same file name */
static void print_executable_label(FILE *out, const struct executable_total *e)
{
	if (!e->name) {
		fputs("unknown (neither path nor command name recorded)", out);
		return;
	}
	summary_print_text(out, e->name_shared && e->path ? e->path : e->name);
	if (!e->path)
		fputs(" (path unknown)", out);
}

static void print_executable_table(FILE *out, const struct processes *ps)
{
	size_t shown = ps->n_exes < SUMMARY_MAX_EXECUTABLES ? ps->n_exes : SUMMARY_MAX_EXECUTABLES;
	char share[32], seconds[32], cpu[32];
	double rest_seconds = 0, rest_cpu = 0;
	uint64_t rest_samples = 0;
	size_t i, rest_procs = 0;

	fprintf(out, "\nexecutables: %zu (of %zu processes), by share of the samples\n", ps->n_exes,
		ps->n);
	fprintf(out, "  %6s  %8s  %*s  %9s  %*s  %s\n", "share", "samples", NUM_WIDTH, "seconds",
		"processes", NUM_WIDTH, "CPU s", "executable");
	for (i = 0; i < shown; i++) {
		const struct executable_total *e = &ps->exes[i];

		fprintf(out, "  %6s  %8" PRIu64 "  %*s  %9zu  %*s  ",
			summary_fmt_share(share, sizeof(share), e->share), e->samples, NUM_WIDTH,
			summary_fmt_seconds(seconds, sizeof(seconds), e->seconds), e->n_processes,
			NUM_WIDTH, summary_fmt_seconds(cpu, sizeof(cpu), e->cpu_time));
		print_executable_label(out, e);
		fputc('\n', out);
	}
	if (shown == ps->n_exes)
		return;
	for (i = shown; i < ps->n_exes; i++) { /* NAN stays NAN: unavailable */
		rest_samples += ps->exes[i].samples;
		rest_seconds += ps->exes[i].seconds;
		rest_cpu += ps->exes[i].cpu_time;
		rest_procs += ps->exes[i].n_processes;
	}
	fprintf(
	    out, "  %6s  %8" PRIu64 "  %*s  %9zu  %*s  others: %zu executables\n",
	    summary_fmt_share(share, sizeof(share),
			      ps->total_samples ? (double)rest_samples / ps->total_samples : NAN),
	    rest_samples, NUM_WIDTH, summary_fmt_seconds(seconds, sizeof(seconds), rest_seconds),
	    rest_procs, NUM_WIDTH, summary_fmt_seconds(cpu, sizeof(cpu), rest_cpu),
	    ps->n_exes - shown);
}

static void print_process_table(FILE *out, const struct processes *ps)
{
	size_t shown = ps->n < SUMMARY_MAX_PROCESSES ? ps->n : SUMMARY_MAX_PROCESSES, i;
	char share[32], cpu[32];
	uint64_t rest = 0;

	fprintf(out, "\nprocesses: %zu (%zu executables)\n", ps->n, ps->n_executables);
	fprintf(out, "  %8s  %8s  %6s  %*s  %s\n", "pid", "samples", "share", NUM_WIDTH, "CPU s",
		"executable");
	for (i = 0; i < shown; i++) {
		const struct process_total *pr = &ps->procs[i];

		fprintf(out, "  %8" PRId64 "  %8" PRIu64 "  %6s  %*s  ", pr->pid, pr->samples,
			summary_fmt_share(share, sizeof(share), pr->share), NUM_WIDTH,
			summary_fmt_seconds(cpu, sizeof(cpu), pr->cpu_time));
		summary_print_text(out, pr->exe ? pr->exe : process_label(pr));
		fputc('\n', out);
	}
	for (i = shown; i < ps->n; i++)
		rest += ps->procs[i].samples;
	if (shown < ps->n)
		fprintf(
		    out, "  %8s  %8" PRIu64 "  %6s  %*s  others: %zu processes\n", "", rest,
		    summary_fmt_share(share, sizeof(share),
				      ps->total_samples ? (double)rest / ps->total_samples : NAN),
		    NUM_WIDTH, "", ps->n - shown);
}

static void print_busy_threads(FILE *out, const struct process_total *pr)
{
	char share[32];
	size_t i, shown = 0;

	fprintf(out, "  pid %" PRId64 " (", pr->pid);
	summary_print_text(out, process_label(pr));
	fprintf(out, "): %zu busy of %zu sampled threads:", pr->n_busy, pr->n_threads);
	for (i = 0; i < pr->n_threads && shown < SUMMARY_MAX_THREADS; i++) {
		if (!pr->threads[i].busy)
			continue;
		fprintf(out, "%s tid %" PRId64 " %s", shown ? "," : "", pr->threads[i].tid,
			summary_fmt_share(share, sizeof(share), pr->threads[i].process_share));
		shown++;
	}
	fprintf(out, "%s\n", shown < pr->n_busy ? ", ..." : "");
}

void summary_print_processes(FILE *out, const struct processes *ps)
{
	size_t i, heading = 0;

	if (!out || !ps)
		return;
	if (ps->n_executables > 1) {
		print_executable_table(out, ps);
		print_process_table(out, ps);
	}
	for (i = 0; i < ps->n; i++) {
		if (ps->procs[i].n_busy < 2)
			continue;
		if (!heading++)
			fprintf(out,
				"\nthreads (busy: at least %d samples and %.0f%% of their "
				"process'), share of their process' samples\n",
				DIAGNOSIS_SAMPLE_FLOOR, 100 * PROCESSES_BUSY_SHARE);
		print_busy_threads(out, &ps->procs[i]);
	}
}

static json_t *process_json(const struct process_total *pr)
{
	return json_pack(
	    "{s:o, s:I, s:o, s:o, s:I, s:o, s:o, s:o, s:s, s:o, s:I, s:I}", "node",
	    json_text(pr->node), "pid", (json_int_t)pr->pid, "executable", json_text(pr->exe),
	    "comm", json_text(pr->comm), "samples", (json_int_t)pr->samples, "share",
	    summary_json_number(pr->share), "seconds", summary_json_number(pr->seconds), "cpu_time",
	    summary_json_number(pr->cpu_time), "cpu_time_quality", pr->cpu_time_quality,
	    "cpu_time_reason", json_text(pr->cpu_time_reason), "threads", (json_int_t)pr->n_threads,
	    "busy_threads", (json_int_t)pr->n_busy);
}

static json_t *executable_json(const struct executable_total *e)
{
	return json_pack("{s:o, s:o, s:o, s:b, s:I, s:I, s:o, s:o, s:o, s:s, s:o}", "executable",
			 json_text(e->path), "name", json_text(e->name), "comm", json_text(e->comm),
			 "name_shared", e->name_shared, "processes", (json_int_t)e->n_processes,
			 "samples", (json_int_t)e->samples, "share", summary_json_number(e->share),
			 "seconds", summary_json_number(e->seconds), "cpu_time",
			 summary_json_number(e->cpu_time), "cpu_time_quality", e->cpu_time_quality,
			 "cpu_time_reason", json_text(e->cpu_time_reason));
}

static int threads_json(json_t *threads, const struct process_total *pr)
{
	json_t *o;
	size_t i;

	for (i = 0; i < pr->n_threads; i++) {
		const struct thread_total *th = &pr->threads[i];

		o = json_pack("{s:o, s:I, s:I, s:I, s:o, s:o, s:b}", "node", json_text(pr->node),
			      "pid", (json_int_t)pr->pid, "tid", (json_int_t)th->tid, "samples",
			      (json_int_t)th->samples, "share", summary_json_number(th->share),
			      "process_share", summary_json_number(th->process_share), "busy",
			      th->busy);
		if (!o || json_array_append_new(threads, o))
			return -ENOMEM;
	}
	return 0;
}

int summary_processes_json(json_t *root, const struct processes *ps)
{
	json_t *procs, *threads, *exes, *o;
	size_t i;

	/* json_object_set_new takes the reference even when it fails */
	if (json_object_set_new(root, "executables", json_array()) ||
	    json_object_set_new(root, "processes", json_array()) ||
	    json_object_set_new(root, "threads", json_array()) ||
	    json_object_set_new(root, "kernel_share",
				summary_json_number(ps ? ps->kernel_share : NAN)) ||
	    json_object_set_new(root, "kernel_share_source",
				!ps || !ps->stack_samples ? json_null()
				: ps->kernel_from_flag	  ? json_string("in-kernel flag")
							  : json_string("kernel frames")))
		return -ENOMEM;
	exes = json_object_get(root, "executables");
	for (i = 0; ps && i < ps->n_exes; i++) {
		o = executable_json(&ps->exes[i]);
		if (!o || json_array_append_new(exes, o))
			return -ENOMEM;
	}
	procs = json_object_get(root, "processes");
	threads = json_object_get(root, "threads");
	for (i = 0; ps && i < ps->n; i++) {
		o = process_json(&ps->procs[i]);
		if (!o || json_array_append_new(procs, o) || threads_json(threads, &ps->procs[i]))
			return -ENOMEM;
	}
	return 0;
}
