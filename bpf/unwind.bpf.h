/* unwind.bpf.h — the in-kernel user Stack walk of bpf/unwind.h, for BPF
 * programs only: the maps the Agent fills, one frame's step, and the walk
 * of a whole Stack with bpf_loop (kernel 5.17+).
 *
 * The walk writes the frames into a struct stack_value in the per-CPU
 * scratch (unwind_scratch) after the kernel frames already there, folds
 * each frame into the Stack's digest, and says how the Stack ended
 * (enum unwind_end). It never guesses: a frame it cannot step out of
 * ends the Stack, and the cause is kept. Every object that includes this
 * file has its own maps (bpf/selftest.bpf.c drives the walk on the test's
 * own stack through bpf_prog_test_run_opts).
 */
#ifndef NUNATAK_BPF_UNWIND_BPF_H
#define NUNATAK_BPF_UNWIND_BPF_H

#include "bpf/sample.h"
#include "bpf/unwind.h"

/* what the walk of one sample carries from frame to frame */
struct unwind_scratch {
	__u64 pc, sp, bp;
	__u64 digest;
	__u32 tgid;
	__u32 pc_is_return; /* pc is a return address: look its call up (pc - 1) */
	__u32 done;
	__u32 probe; /* unwind_mapping_index()'s, through memory */
	/* the process's uretprobe trampoline, and the next pending return
	 * probe's instance (struct return_instance *) of the task: a frame
	 * whose return address the trampoline replaced gets its own back */
	__u64 uretprobe_trampoline;
	__u64 return_instance;
	struct stack_value stack;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_scratch);
} unwind_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_UNWIND_RULES);
	__uint(map_flags, BPF_F_MMAPABLE); /* the Agent writes rules in place */
	__type(key, __u32);
	__type(value, struct unwind_rule);
} unwind_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_UNWIND_ROWS);
	__uint(map_flags, BPF_F_MMAPABLE); /* the Agent writes tables in place */
	__type(key, __u32);
	__type(value, struct unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_UNWIND_TABLES);
	__type(key, __u32);
	__type(value, struct unwind_table);
} unwind_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_UNWIND_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

/* binary searches: 2^UNWIND_ROW_STEPS rows per table at most */
#define UNWIND_ROW_STEPS 24
#define UNWIND_MAPPING_STEPS 10 /* 2^10 > MAX_PROC_MAPPINGS */

#define UNWIND_DIGEST_PRIME 0x100000001b3ull

static __always_inline __u64 unwind_digest_add(__u64 digest, __u64 ip)
{
	digest ^= ip;
	digest *= UNWIND_DIGEST_PRIME;
	digest ^= digest >> 29;
	return digest;
}

/* a frame into the Stack's digest and into its check, a second 64-bit
 * hash of another mix (struct stack_value.check) */
static __always_inline void unwind_fold(struct unwind_scratch *s, __u64 ip)
{
	__u64 c = (s->stack.check + ip) * 0x9e3779b97f4a7c15ull;

	s->digest = unwind_digest_add(s->digest, ip);
	s->stack.check = c ^ (c >> 31);
}

static __always_inline struct unwind_scratch *unwind_scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&unwind_scratch, &zero);
}

/* The index of p's mapping that covers pc, or -1 (UNWIND_END_NO_MAPPING);
 * s is the walk's scratch, where the search's probe goes.
 * This search and the row's below are global functions: the verifier
 * checks each once, on its own, and unwind_step() goes on from one state
 * whatever the search went through (inlined, every way out of the first
 * search multiplied the second's: 79 000 instructions checked, 0.1 s of
 * every start). The probe index is read back from memory: bounded there,
 * it makes lo and hi no exact values the verifier must keep apart, and
 * the search's ways prune (else its 2^10 ways are each checked: 27 000
 * instructions). */
__noinline int unwind_mapping_index(const struct unwind_proc *p, __u64 pc,
				    struct unwind_scratch *s)
{
	__u32 lo = 0, hi, mid, i;

	if (!p || !s)
		return -1;
	hi = p->n;
	if (hi > MAX_PROC_MAPPINGS)
		hi = MAX_PROC_MAPPINGS;
	for (i = 0; i < UNWIND_MAPPING_STEPS; i++) {
		if (lo >= hi)
			break;
		*(volatile __u32 *)&s->probe = (lo + hi) / 2;
		mid = *(volatile __u32 *)&s->probe;
		if (mid >= MAX_PROC_MAPPINGS)
			return -1;
		if (pc < p->mappings[mid].start)
			hi = mid;
		else if (pc >= p->mappings[mid].end)
			lo = mid + 1;
		else
			return (int)mid;
	}
	return -1;
}

static __always_inline const struct unwind_mapping *
unwind_find_mapping(const struct unwind_proc *p, __u64 pc, struct unwind_scratch *s)
{
	int i = unwind_mapping_index(p, pc, s);

	/* the compiler knows the range; the verifier must be shown it */
	asm volatile("" : "+r"(i));
	if (i < 0 || i >= MAX_PROC_MAPPINGS)
		return 0;
	return &p->mappings[i];
}

/* The rule index (unwind_rules) of the row of the table of rows
 * [first_row, first_row + n_rows) that covers file offset off, or -1
 * (UNWIND_END_NO_CFI). A global function: see unwind_mapping_index(). */
__noinline int unwind_rule_index(__u32 first_row, __u32 n_rows, __u32 off)
{
	const struct unwind_row *row;
	__u32 lo = first_row, hi = first_row + n_rows, mid, i;

	row = bpf_map_lookup_elem(&unwind_rows, &lo);
	if (!row || row->pc > off)
		return -1;
	/* rows[lo].pc <= off < rows[hi].pc (hi: past the end) */
	for (i = 0; i < UNWIND_ROW_STEPS; i++) {
		if (lo + 1 >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		row = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!row)
			return -1;
		if (row->pc <= off)
			lo = mid;
		else
			hi = mid;
	}
	if (lo + 1 < hi)
		return -1; /* a table longer than the steps allow: never loaded so */
	row = bpf_map_lookup_elem(&unwind_rows, &lo);
	if (!row || row->rule >= MAX_UNWIND_RULES)
		return -1;
	return (int)row->rule;
}

/* the rule covering file offset off of table t, or NULL (UNWIND_END_NO_CFI) */
static __always_inline const struct unwind_rule *unwind_find_rule(const struct unwind_table *t,
								  __u32 off)
{
	__u32 rule;
	int i = unwind_rule_index(t->first_row, t->n_rows, off);

	asm volatile("" : "+r"(i));
	if (i < 0)
		return 0;
	rule = (__u32)i;
	return bpf_map_lookup_elem(&unwind_rules, &rule);
}

static __always_inline int unwind_read(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

/* Return address ra as the caller put it: a function with a pending
 * uretprobe (Component, MPI call) returns to the trampoline of the
 * process's uprobe area instead, and the kernel keeps the original in the
 * task's return instances, newest first, one per replaced slot (a
 * "chained" instance, of a tail call, shares the slot of the one after it)
 * — as the kernel's own perf callchain fixup reads them. */
static __always_inline __u64 unwind_uretprobe_return(struct unwind_scratch *s, __u64 ra)
{
	struct return_instance *ri = (struct return_instance *)s->return_instance;
	int i;

	if (!ri || !s->uretprobe_trampoline || ra != s->uretprobe_trampoline)
		return ra;
	ra = BPF_CORE_READ(ri, orig_ret_vaddr);
	for (i = 0; i < 8 && ri && BPF_CORE_READ(ri, chained); i++)
		ri = BPF_CORE_READ(ri, next);
	s->return_instance = ri ? (__u64)BPF_CORE_READ(ri, next) : 0;
	return ra;
}

/* the registers a signal frame saved (x86-64: struct ucontext at sp,
 * uc_mcontext.gregs at +40; rbp, rsp, rip are gregs 10, 15, 16) */
static __always_inline int unwind_signal_frame(struct unwind_scratch *s)
{
	__u32 at = (__u32)s->stack.n_kernel + s->stack.n_user - 1;
	__u64 base = s->sp + 40;

	/* the trampoline was entered by the handler's return, not by a call */
	if (at < MAX_FRAMES)
		s->stack.ips[at] |= UNWIND_IP_NOT_RETURN;

	if (unwind_read(&s->bp, base + 10 * 8) || unwind_read(&s->sp, base + 15 * 8) ||
	    unwind_read(&s->pc, base + 16 * 8))
		return UNWIND_END_READ_FAILED;
	s->pc_is_return = 0;
	return -1;
}

/* x86-64 frame pointers: saved rbp at [rbp], return address at [rbp + 8] */
static __always_inline int unwind_fp_step(struct unwind_scratch *s)
{
	__u64 ra, bp;

	if (!s->bp)
		return UNWIND_END_COMPLETE;
	/* rbp may be the caller's before the push and after the pop: a
	 * frame that does not look like one ends the Stack */
	if (s->bp < s->sp)
		return UNWIND_END_BAD_FRAME;
	if (unwind_read(&bp, s->bp) || unwind_read(&ra, s->bp + 8))
		return UNWIND_END_READ_FAILED;
	ra = unwind_uretprobe_return(s, ra);
	if (ra < 4096)
		return ra ? UNWIND_END_BAD_FRAME : UNWIND_END_COMPLETE;
	s->sp = s->bp + 16;
	s->bp = bp;
	s->pc = ra;
	s->pc_is_return = 1;
	return -1;
}

/* The CFA of rule r in s, 0 when the rule gives none. */
static __always_inline int unwind_cfa(const struct unwind_rule *r, struct unwind_scratch *s,
				      __u64 *cfa)
{
	__u64 v;

	switch (r->cfa_type) {
	case UNWIND_CFA_RSP:
		*cfa = s->sp + (__s64)r->cfa_offset;
		return 0;
	case UNWIND_CFA_RBP:
		*cfa = s->bp + (__s64)r->cfa_offset;
		return 0;
	case UNWIND_CFA_PLT:
		*cfa = s->sp + 8 + (((s->pc & 15) >= (__u64)r->cfa_offset) ? 8 : 0);
		return 0;
	case UNWIND_CFA_DEREF_RSP:
	case UNWIND_CFA_DEREF_RBP:
		if (unwind_read(&v, (r->cfa_type == UNWIND_CFA_DEREF_RSP ? s->sp : s->bp) +
					    (__s64)r->cfa_offset))
			return UNWIND_END_READ_FAILED;
		*cfa = v;
		return 0;
	}
	return UNWIND_END_NO_CFI;
}

/* One step out of the frame at s->pc with rule r: -1 when the caller's
 * registers are in s, else the enum unwind_end that ends the Stack. */
static __always_inline int unwind_apply(const struct unwind_rule *r, struct unwind_scratch *s)
{
	__u64 cfa = 0, ra, bp = s->bp;
	int err;

	if (r->cfa_type == UNWIND_CFA_STOP)
		return UNWIND_END_COMPLETE;
	if (r->cfa_type == UNWIND_CFA_SIGNAL)
		return unwind_signal_frame(s);
	err = unwind_cfa(r, s, &cfa);
	if (err)
		return err;
	if (r->rbp_type == UNWIND_RBP_AT_CFA) {
		if (unwind_read(&bp, cfa + (__s64)r->rbp_offset))
			return UNWIND_END_READ_FAILED;
	} else if (r->rbp_type == UNWIND_RBP_AT_RBP) {
		if (unwind_read(&bp, s->bp + (__s64)r->rbp_offset))
			return UNWIND_END_READ_FAILED;
	} else if (r->rbp_type != UNWIND_RBP_SAME) {
		return UNWIND_END_NO_CFI;
	}
	if (unwind_read(&ra, cfa - 8))
		return UNWIND_END_READ_FAILED;
	ra = unwind_uretprobe_return(s, ra);
	if (ra == 0)
		return UNWIND_END_COMPLETE; /* the ABI's outermost frame */
	if (ra < 4096 || cfa <= s->sp)
		return UNWIND_END_BAD_FRAME;
	s->pc = ra;
	s->sp = cfa;
	s->bp = bp;
	s->pc_is_return = 1;
	return -1;
}

/* From the frame at s->pc to its caller: -1, or the enum unwind_end.
 * A global function: the verifier checks it once, on its own, instead of
 * in every state the walk's loop reaches it in (145 000 instructions
 * checked at each load before, 0.3 s of every start). */
__noinline int unwind_step(struct unwind_scratch *s)
{
	const struct unwind_mapping *m;
	const struct unwind_table *t;
	const struct unwind_rule *r;
	const struct unwind_proc *p;
	__u64 off;

	if (!s)
		return UNWIND_END_NO_CFI;
	p = bpf_map_lookup_elem(&unwind_procs, &s->tgid);
	if (!p)
		return UNWIND_END_NO_PROCESS;
	/* a return address may be the end of its call's mapping */
	m = unwind_find_mapping(p, s->pc - (s->pc_is_return ? 1 : 0), s);
	if (!m)
		return UNWIND_END_NO_MAPPING;
	if (m->flags & UNWIND_MAPPING_FRAME_POINTER)
		return unwind_fp_step(s);
	t = bpf_map_lookup_elem(&unwind_tables, &m->table);
	if (!m->table || !t || !t->n_rows)
		return UNWIND_END_NO_TABLE;
	off = s->pc - m->start + m->pgoff - (s->pc_is_return ? 1 : 0);
	if (off >> 32)
		return UNWIND_END_NO_CFI;
	r = unwind_find_rule(t, (__u32)off);
	if (!r)
		return UNWIND_END_NO_CFI;
	return unwind_apply(r, s);
}

/* bpf_loop callback: record the frame at s->pc, then step to its caller */
static long unwind_frame_cb(__u32 i, void *ctx)
{
	struct unwind_scratch *s = unwind_scratch_get();
	__u32 at;
	int end;

	(void)ctx;
	if (!s)
		return 1;
	at = (__u32)s->stack.n_kernel + s->stack.n_user;
	if (at >= MAX_FRAMES || s->stack.n_user >= MAX_USER_FRAMES) {
		s->stack.user_end = UNWIND_END_DEPTH;
		s->done = 1;
		return 1;
	}
	s->stack.ips[at] = s->pc | (s->pc_is_return ? 0 : UNWIND_IP_NOT_RETURN);
	s->stack.n_user++;
	unwind_fold(s, s->pc);
	end = unwind_step(s);
	if (end >= 0) {
		s->stack.user_end = end;
		s->done = 1;
		return 1;
	}
	return 0;
}

/* the current task's uretprobe trampoline and newest return instance, 0
 * when it has none (no uprobe area, no pending return probe) */
static __always_inline void unwind_uretprobe_state(struct unwind_scratch *s)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	s->uretprobe_trampoline = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	s->return_instance = (__u64)BPF_CORE_READ(task, utask, return_instances);
}

/* Walks the user Stack of process tgid from registers (pc, sp, bp) into
 * s->stack after its kernel frames; s->stack.user_end says how it ended. */
static __always_inline void unwind_user(struct unwind_scratch *s, __u32 tgid, __u64 pc, __u64 sp,
					__u64 bp)
{
	s->tgid = tgid;
	s->pc = pc;
	s->sp = sp;
	s->bp = bp;
	s->pc_is_return = 0;
	s->done = 0;
	s->stack.user_end = UNWIND_END_DEPTH;
	unwind_uretprobe_state(s);
	bpf_loop(MAX_USER_FRAMES + 1, unwind_frame_cb, 0, 0);
	if (!s->done)
		s->stack.user_end = UNWIND_END_DEPTH;
}

#endif
