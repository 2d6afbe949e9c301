/* unwind.h — contract between the in-kernel unwinder (bpf/unwind.bpf.h,
 * run by bpf/sample.bpf.c at every sample) and the Agent, which compiles
 * each module's unwind tables (.eh_frame, .debug_frame: userspace/unwind/)
 * and tells the kernel which process maps which table where.
 *
 * Addresses in tables are module FILE offsets, not ELF virtual addresses:
 * at a sample the unwinder only knows a mapping's start and file offset
 * (pgoff), so file_offset = pc - mapping.start + mapping.pgoff. The Agent
 * converts CFI's virtual addresses through the module's executable
 * PT_LOAD segments when it compiles a table. Files over 4 GiB are not
 * tabled (32-bit offsets).
 *
 * Maps (sizes set by the Agent before load, defaults below):
 * - unwind_rules: array, rule index -> struct unwind_rule. Rules are
 *   shared by every table (a few hundred distinct ones per library, about
 *   a thousand for a whole system); index 0 is UNWIND_CFA_INVALID.
 * - unwind_rows: array, one global pool of struct unwind_row; a table is
 *   the slice [first_row, first_row + n_rows) of it, sorted by pc. A row
 *   covers [row.pc, next row's pc); the last row of a table is always an
 *   UNWIND_CFA_INVALID end marker, and so is every gap between two
 *   functions (code with no CFI is never unwound with a neighbour's rule).
 * - unwind_tables: array, table id -> struct unwind_table (0: no table).
 *   One table per module file (build-id), shared by every process and Run.
 * - unwind_procs: hash, tgid -> struct unwind_proc: the process' code
 *   mappings sorted by start, each with its table id (0: none).
 *
 * Unwinding one frame (x86-64): find the mapping of pc (binary search),
 * then the row (binary search, the last row with row.pc <= file offset;
 * every frame but the leaf and the frame a signal interrupted looks up
 * pc - 1, since its pc is a return address), then apply the rule:
 *   CFA = rsp + cfa_offset (UNWIND_CFA_RSP), rbp + cfa_offset
 *   (UNWIND_CFA_RBP), the PLT rule (UNWIND_CFA_PLT: rsp + 8, + 8 more when
 *   (pc & 15) >= cfa_offset), *(rsp + cfa_offset) (UNWIND_CFA_DEREF_RSP),
 *   *(rbp + cfa_offset) (UNWIND_CFA_DEREF_RBP: a realigned stack);
 *   return address at CFA - 8; caller's rsp = CFA; caller's rbp =
 *   *(CFA + rbp_offset) for UNWIND_RBP_AT_CFA, unchanged for
 *   UNWIND_RBP_SAME.
 * UNWIND_CFA_SIGNAL: the frame is a sigreturn trampoline: the interrupted
 *   registers are in the ucontext at rsp (x86-64: uc_mcontext at +40;
 *   rbp, rsp, rip are its words 10, 15, 16); the interrupted pc is not a
 *   return address.
 * UNWIND_CFA_STOP: the outermost frame (_start, a thread's clone child:
 *   return address undefined): the stack is complete.
 * UNWIND_CFA_INVALID: a rule the unwinder cannot apply, or no CFI: the
 *   stack ends there, truncated, counted (UNWIND_END_NO_CFI).
 */
#ifndef NUNATAK_BPF_UNWIND_H
#define NUNATAK_BPF_UNWIND_H

#ifndef MAX_USER_FRAMES
#define MAX_USER_FRAMES 128
#endif
#ifndef MAX_KERNEL_FRAMES
#define MAX_KERNEL_FRAMES 64
#endif
#define MAX_FRAMES (MAX_USER_FRAMES + MAX_KERNEL_FRAMES)

#ifndef MAX_UNWIND_RULES
#define MAX_UNWIND_RULES 16384
#endif
#ifndef MAX_UNWIND_ROWS
#define MAX_UNWIND_ROWS (1u << 21) /* 16 MiB: libc, libstdc++, liblammps and libLLVM-14 fit */
#endif
#ifndef MAX_UNWIND_TABLES
#define MAX_UNWIND_TABLES 4096
#endif
#ifndef MAX_PROC_MAPPINGS
#define MAX_PROC_MAPPINGS 512
#endif
#ifndef MAX_UNWIND_PROCS
#define MAX_UNWIND_PROCS 16384
#endif

enum unwind_cfa_type {
	UNWIND_CFA_INVALID = 0,
	UNWIND_CFA_RSP = 1,
	UNWIND_CFA_RBP = 2,
	UNWIND_CFA_PLT = 3,
	UNWIND_CFA_DEREF_RSP = 4,
	UNWIND_CFA_SIGNAL = 5,
	UNWIND_CFA_STOP = 6,
	UNWIND_CFA_DEREF_RBP = 7, /* CFA = *(rbp + cfa_offset): gcc's realigned main
				   * (DW_OP_breg6 N; DW_OP_deref) */
};

enum unwind_rbp_type {
	UNWIND_RBP_SAME = 0,     /* the caller's rbp is this frame's */
	UNWIND_RBP_AT_CFA = 1,   /* saved at CFA + rbp_offset */
	UNWIND_RBP_INVALID = 2,  /* a rule the unwinder cannot apply: the caller's rbp is unknown */
	UNWIND_RBP_AT_RBP = 3,   /* saved at this frame's rbp + rbp_offset (DW_CFA_expression
				  * r6: DW_OP_breg6 N, with a realigned stack) */
};

struct unwind_rule {
	__u8 cfa_type; /* enum unwind_cfa_type */
	__u8 rbp_type; /* enum unwind_rbp_type */
	__u16 pad;
	__s32 cfa_offset;
	__s32 rbp_offset;
	__u32 reserved; /* 0; 16 bytes: an array map's stride, which the Agent writes in place */
};

struct unwind_row {
	__u32 pc;   /* module file offset of the first byte the rule covers */
	__u32 rule; /* index into unwind_rules */
};

struct unwind_table {
	__u32 first_row; /* index into unwind_rows */
	__u32 n_rows;    /* 0: the table is not loaded (yet) */
};

#define UNWIND_MAPPING_FRAME_POINTER 1u /* no table: unwind this code by rbp (the vDSO) */

struct unwind_mapping {
	__u64 start, end; /* [start, end) in the process */
	__u64 pgoff;      /* file offset of start, in bytes */
	__u32 table;      /* unwind_tables index, 0: no CFI known for this code */
	__u32 flags;      /* UNWIND_MAPPING_* */
};

struct unwind_proc {
	__u32 n;   /* mappings used, sorted by start, not overlapping */
	__u32 pad;
	struct unwind_mapping mappings[MAX_PROC_MAPPINGS];
};

/* In a recorded user frame: its ip is not a return address (the
 * interrupted leaf, a signal trampoline the handler "returned" to, the
 * frame a signal interrupted), so it is looked up as it is, not at ip - 1.
 * User addresses never have bit 63 set on x86-64 and arm64. */
#define UNWIND_IP_NOT_RETURN (1ull << 63)

/* how the user part of a stack ended (struct stack_value.user_end) */
enum unwind_end {
	UNWIND_END_COMPLETE = 0,   /* reached the outermost frame (UNWIND_CFA_STOP, or rbp 0 under it) */
	UNWIND_END_NO_PROCESS,     /* the Agent had not told the kernel this process' mappings yet */
	UNWIND_END_NO_MAPPING,     /* a pc in no known code mapping (JIT, or the mappings were stale) */
	UNWIND_END_NO_TABLE,       /* a module whose table is not loaded (yet, or it has none) */
	UNWIND_END_NO_CFI,         /* a pc the table does not cover, or a rule the unwinder cannot apply */
	UNWIND_END_READ_FAILED,    /* the stack memory could not be read (not present) */
	UNWIND_END_DEPTH,          /* deeper than MAX_USER_FRAMES: kept truncated */
	UNWIND_END_BAD_FRAME,      /* a return address below 4096 or a stack that did not grow up */
	UNWIND_END_KERNEL_THREAD,  /* no user context at all */
	UNWIND_END_COUNT,
};

#endif
