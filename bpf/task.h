/* task.h — contract between bpf/task.bpf.c and the Agent.
 *
 * The task program keeps the Target set in the kernel (fork adds the child
 * process, exit of the whole thread group removes it, an exec whose new
 * credentials are not the Target owner's removes it too: TASK_EVENT_LEFT)
 * and reports exec and exit of Target processes through the `task_events`
 * ring buffer. An exec of a process outside every Target whose
 * environment holds a registered Run token adopts it (bpf/token.h), and
 * so do an exec or fork in the cgroup of a registered Slurm job
 * (bpf/job.h): its TASK_EVENT_EXEC (exec_seq 0) is the first the Agent
 * hears of it.
 */
#ifndef NUNATAK_BPF_TASK_H
#define NUNATAK_BPF_TASK_H

#include "bpf/target.h"

#ifndef TASK_EVENTS_BYTES
#define TASK_EVENTS_BYTES (256 * 1024)
#endif
#define TASK_COMM_BYTES 16

enum task_event_kind {
	TASK_EVENT_EXEC = 1,
	TASK_EVENT_EXIT = 2,
	TASK_EVENT_LEFT = 3, /* exec'd with credentials not the Target owner's (a
			      * setuid program): out of the Target from now on */
};

struct task_event {
	__u32 kind;
	__u32 tgid;
	__u32 ppid;
	__u32 target_id;
	__u64 time_ns;       /* bpf_ktime_get_ns */
	__s32 exit_code;     /* wait status as the parent sees it */
	__u32 exec_seq;      /* EXEC: target_info.exec_seq of the new image (0:
			      * adopted by a token or a job at this exec or fork) */
	__u64 start_time_ns; /* start of the process (its thread group leader),
			      * CLOCK_MONOTONIC like time_ns */
	__u64 utime_ns;      /* whole thread group */
	__u64 stime_ns;
	__u64 nvcsw;
	__u64 nivcsw;
	__u64 min_flt;
	__u64 maj_flt;
	__u64 maxrss_pages;
	char comm[TASK_COMM_BYTES];
	__u64 runtime_ns;    /* whole thread group, Σ se.sum_exec_runtime: the
			      * exact CPU time. utime/stime come from ticks
			      * (biased low when the CPU is shared); the sampler
			      * scales them to it before handing the report on,
			      * as the kernel does for getrusage (cputime_adjust) */
	__u64 run_delay_ns;  /* whole thread group, Σ sched_info.run_delay: the
			      * time runnable but waiting for a CPU (the second
			      * field of /proc/PID/task/TID/schedstat) */
	__u32 has_run_delay; /* 0: unavailable (a kernel without CONFIG_SCHED_INFO,
			      * or the process' totals lost) */
	__u32 pad;
};

/* what the threads of one process used, added up as each thread exits:
 * at the last exit, signal_struct does not hold the threads that are not
 * released yet (a zombie group leader, threads between exit and release).
 *
 * Keyed by the process' identity, not by its pid: a thread whose exit is
 * reported after the last one (it left the group first but reached the
 * tracepoint late) adds its share to an entry the last exit already took
 * and removed, and so creates it again. Under a pid key a later process
 * given the same pid inherited that share; under (tgid, start time) no
 * later process can have the key. The Agent deletes such a leftover when
 * it reads the exit report of the process (same tgid and start_time_ns). */
struct task_totals_key {
	__u32 tgid;
	__u32 pad;
	__u64 start_time_ns; /* of the thread group leader: kept across exec */
};

struct task_totals {
	__u64 utime_ns;
	__u64 stime_ns;
	__u64 nvcsw;
	__u64 nivcsw;
	__u64 min_flt;
	__u64 maj_flt;
	__u64 runtime_ns;
	__u64 run_delay_ns;
};

/* how many threads of a process have not passed their exit yet, as the
 * task program counted them: set to 1 when the process enters a Target
 * single-threaded (a fork inside it, an exec, an adoption), +1 at each
 * thread creation (the first one seen in a process not counted yet starts
 * from signal->live, which counts the new thread already), -1 after each
 * exiting thread added its share. The thread that takes it to 0 added the
 * last share: it reports the exit. signal->live cannot tell that: it drops
 * before the exit tracepoint, so the thread that sees it at 0 may run
 * while another one, past its decrement but not yet at the tracepoint,
 * has not added its share (an OpenMP worker killed by exit_group: half
 * the process' CPU time lost, now and then). A process with no count (in
 * the Target before its threads were seen: `nunatak attach`; or taken
 * again after a thread of it exited out of every Target, which dropped
 * its count: its thread creations were not seen meanwhile)
 * falls back to signal->live. Same key as task_totals. */
struct task_threads {
	__s64 left;
};

enum task_counter {
	TASK_DROP_TARGETS = 0, /* target map full: a child is not observed */
	TASK_DROP_EVENTS,      /* ring buffer full: an exec/exit is not reported */
	TASK_DROP_TOTALS,      /* totals or threads map full: a process' counters
				* are partial, or may be */
	TASK_ADOPTED,          /* processes a Run token or a job's cgroup adopted */
	TASK_LEFT,             /* processes that left their Target at an exec */
	TASK_COUNTERS,
};

#endif
