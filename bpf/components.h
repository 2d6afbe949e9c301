/* components.h — contract between bpf/components.bpf.c and the Agent's
 * Component probes (userspace/agent/component_probes.c).
 *
 * One entry and one return program serve every Component: the attach
 * cookie is the Component id (COMPONENT_COOKIE), with COMPONENT_STEP_FLAG
 * on the --step function. Per thread (task storage) a stack of at most
 * MAX_COMPONENT_DEPTH frames; at each return the call's SELF costs (all
 * but the peak-RSS increase, which is inclusive) are added to
 * component_costs under (tgid, tid, phase, step, component, parent):
 * running totals the Agent reads without clearing. Which Targets gave a
 * --step function: component_step_targets (the others have one Step,
 * step 0, from the first call seen to the last return). Per process, the Step
 * state (component_steps_state) and each Step's start and end
 * (component_steps). What could not be measured is counted in
 * component_counters (enum component_counter), never guessed.
 */
#ifndef NUNATAK_BPF_COMPONENTS_H
#define NUNATAK_BPF_COMPONENTS_H

#ifndef MAX_COMPONENT_DEPTH
#define MAX_COMPONENT_DEPTH 16 /* nesting per thread; deeper calls are lost */
#endif
#ifndef MAX_COMPONENT_COSTS
#define MAX_COMPONENT_COSTS 131072 /* running-total keys */
#endif
#ifndef MAX_COMPONENT_TARGETS
#define MAX_COMPONENT_TARGETS 4096 /* Targets with a --step function at once */
#endif
#ifndef MAX_COMPONENT_STEPS
#define MAX_COMPONENT_STEPS 65536 /* (process, Step) rows not yet published */
#endif

/* attach cookie: the Component id (1..), and the Step flag */
#define COMPONENT_STEP_FLAG (1ULL << 32)
#define COMPONENT_COOKIE(id, is_step) ((__u64)(id) | ((is_step) ? COMPONENT_STEP_FLAG : 0))
#define COMPONENT_COOKIE_ID(c) ((__u32)(c))

/* the phase of a call, by where it began (pivot component_costs.phase) */
enum component_phase {
	COMPONENT_PHASE_SETUP = 0,    /* before the first Step (step -1) */
	COMPONENT_PHASE_STEP = 1,     /* inside Step k's call of the step function */
	COMPONENT_PHASE_BETWEEN = 2,  /* after Step k returned, before Step k+1 */
	COMPONENT_PHASE_TEARDOWN = 3, /* never written by the kernel */
};

/* the costs of calls: wall and CPU ns, faults, context switches, peak RSS
 * increase (bytes) */
struct component_cost {
	__u64 wall_ns;
	__u64 cpu_ns;
	__u64 minor_faults;
	__u64 major_faults;
	__u64 voluntary_switches;
	__u64 involuntary_switches;
	__u64 peak_rss_increase; /* bytes, inclusive of nested calls */
};

struct component_cost_key {
	__u32 tgid;
	__u32 tid;
	__s32 step;	 /* -1: setup */
	__u32 component; /* id */
	__u32 parent;	 /* innermost enclosing Component on the thread, 0: none */
	__u32 phase;	 /* enum component_phase */
};

struct component_cost_value {
	__u64 calls;
	struct component_cost self; /* peak_rss_increase: inclusive */
};

/* a call in flight on a thread (kernel-side, in its task storage; here so
 * that tests can read it) */
struct component_frame {
	__u32 component;
	__u32 phase;
	__s32 step;
	__u32 pad;
	__u64 entry_ns;
	__u64 entry_off_cpu_ns;
	__u64 entry_minor_faults, entry_major_faults;
	__u64 entry_nvcsw, entry_nivcsw;
	__u64 entry_peak_rss;		/* bytes */
	struct component_cost children; /* inclusive costs of the nested calls */
};

struct component_thread {
	__u32 depth;	       /* frames in use */
	__u32 overflow;	       /* calls deeper than MAX_COMPONENT_DEPTH in flight */
	__u64 off_cpu_ns;      /* while depth > 0 */
	__u64 switched_out_ns; /* 0: on a CPU */
	struct component_frame frames[MAX_COMPONENT_DEPTH];
};

/* per process: where it is in its Steps */
struct component_step_state {
	__u32 next_step;  /* Steps begun so far */
	__u32 step_depth; /* calls of the step function in flight */
	__s32 current;	  /* the Step in (or last ended); -1 none yet */
	__u32 pad;
};

struct component_step_key {
	__u32 tgid;
	__u32 step;
};

struct component_step_value {
	__u64 start_ns; /* entry of the step function's call */
	__u64 end_ns;	/* its return; 0: not seen yet */
};

enum component_counter {
	COMPONENT_CALLS_SEEN = 0,  /* calls measured */
	COMPONENT_LOST_DEPTH,	   /* nesting deeper than MAX_COMPONENT_DEPTH */
	COMPONENT_LOST_MAP,	   /* component_costs full */
	COMPONENT_LOST_UNBALANCED, /* frames popped without their return */
	COMPONENT_LOST_NO_STORAGE, /* the thread's storage could not be made */
	COMPONENT_LOST_STEPS,	   /* component_steps full: a Step's row lost */
	COMPONENT_COUNTERS,
};

#endif
