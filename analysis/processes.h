/* processes — where the samples went by process and by thread, and how
 * much of them the kernel took, computed from the pivot on demand and never
 * stored (like a Diagnostic).
 *
 * Inputs: the sampling Measurements of each Locus for one counter (the
 * diagnosis' one), the `samples` rows with their leaf frame, and the
 * ProcessExit Measurements (cpu_time_user, cpu_time_system).
 *
 *  - a process is a (node, tgid); its samples add up its threads' (Loci);
 *    launcher processes (mpirun, orted, srun, ...) are left out, as in the
 *    diagnosis, so the processes' samples add up to its total_samples;
 *  - share = samples / the samples of every process (fraction of 1); a
 *    thread's share is of the same total, its process_share of its
 *    process' samples;
 *  - busy thread: at least DIAGNOSIS_SAMPLE_FLOOR samples AND at least
 *    PROCESSES_BUSY_SHARE of its process' samples: enough samples to be
 *    seen, and a real part of the process' work;
 *  - cpu_time (s) = Σ cpu_time_user + cpu_time_system of the process' Loci
 *    (the exit snapshot holds the whole process: every thread); NAN,
 *    quality "unavailable" with a reason, when no exit was recorded or a
 *    part is unavailable; never 0 for "unknown";
 *  - kernel share: the samples whose leaf frame is in the module
 *    "pseudo:kernel" over every sample in `samples`; a Run that holds no
 *    kernel frame but samples flagged in_kernel (taken before nunatak
 *    recorded kernel frames) takes the flag instead (kernel_from_flag);
 *    NAN when nothing was sampled;
 *  - seconds: the sampled time (Σ of the counter's values / 1e9) when the
 *    counter is the time one ("cpu-clock"); NAN for cycles;
 *  - executables (analysis/processes_executables.c): the processes grouped
 *    by what they ran. Identity: the executable's path, as the Agent read it
 *    (same path = same executable); a process whose path is unknown counts
 *    under its command name (path NULL), one whose command name is unknown
 *    too under "unknown" (both NULL), so every process is in exactly one
 *    group and the groups' samples add up to total_samples. Totals: number
 *    of processes (sampled or not), samples, share, seconds, CPU time (the
 *    processes' sum; its Quality the worst of theirs; unavailable, with a
 *    reason that counts them, as soon as one process' is).
 * procs[] by decreasing samples, then node, pid; threads[] likewise;
 * exes[] by decreasing samples, then name, path.
 */
#ifndef NUNATAK_ANALYSIS_PROCESSES_H
#define NUNATAK_ANALYSIS_PROCESSES_H

#include <stddef.h>
#include <stdint.h>

struct pivot;

#define PROCESSES_BUSY_SHARE 0.05

struct thread_total {
	int64_t tid;
	uint64_t samples;
	double share;	      /* of every process' samples; NAN when none */
	double process_share; /* of its process' samples; NAN when none */
	int busy;
};

struct process_total {
	char *node;
	int64_t pid;
	char *exe;  /* NULL when unknown */
	char *comm; /* NULL when unknown */
	uint64_t samples;
	double share;		      /* NAN when nothing was sampled */
	double seconds;		      /* sampled time, s; NAN unless the counter is time */
	double cpu_time;	      /* s; NAN when unavailable */
	const char *cpu_time_quality; /* static: "measured", "estimated", "unavailable" */
	char *cpu_time_reason;	      /* NULL when measured */
	size_t n_threads, n_busy;
	struct thread_total *threads;
};

/* strings borrowed from the processes (struct processes owns them) */
struct executable_total {
	const char *path; /* NULL when unknown */
	const char *comm; /* when path is NULL: the command name; NULL when unknown */
	const char *name; /* path's file name, else comm; NULL: neither known */
	int name_shared;  /* another executable has the same name: show path */
	size_t n_processes;
	uint64_t samples;
	double share;		      /* NAN when nothing was sampled */
	double seconds;		      /* NAN unless the counter is time */
	double cpu_time;	      /* s; NAN when unavailable */
	const char *cpu_time_quality; /* static */
	char *cpu_time_reason;	      /* owned; NULL when measured */
};

struct processes {
	size_t n;
	struct process_total *procs;
	size_t n_exes; /* every executable of procs[] */
	struct executable_total *exes;
	size_t n_executables; /* of exes[], those with samples */
	uint64_t total_samples;
	uint64_t stack_samples, kernel_samples; /* of the kernel share */
	double kernel_share;			/* NAN when nothing was sampled */
	int kernel_from_flag;
};

/* counter: the diagnosis' (NULL: nothing sampled; the processes are still
 * listed, with their CPU time). NULL + errno (EINVAL, ENOMEM, EIO). Free
 * with processes__free(). */
struct processes *processes__new(struct pivot *p, const char *counter);

/* NULL-safe */
void processes__free(struct processes *ps);

/* Fills ps->exes from ps->procs (already sorted and with their shares):
 * 0 or -ENOMEM (ps->exes then NULL). For processes__new only. */
int processes_group_executables(struct processes *ps);

#endif
