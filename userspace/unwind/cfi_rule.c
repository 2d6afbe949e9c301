/* cfi_rule — see cfi_rule.h. The shapes recognised are those libdw
 * returns (dwarf_frame_cfa: one DW_OP_bregx for register + offset, the
 * raw expression otherwise; dwarf_frame_register: no ops and NULL for
 * same value, no ops and the caller's buffer for undefined,
 * DW_OP_call_frame_cfa [DW_OP_plus_uconst N] for saved at CFA + N). */
#include <errno.h>
#include <string.h>

#include <dwarf.h>

#include "userspace/unwind/cfi_rule.h"

static int fits_s32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* 1 and *off when ops say "at CFA + off", else 0 */
static int at_cfa(const Dwarf_Op *ops, size_t n, int32_t *off)
{
	if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return 1;
	}
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst &&
	    fits_s32((int64_t)ops[1].number)) {
		*off = (int32_t)(int64_t)ops[1].number;
		return 1;
	}
	return 0;
}

/* GCC's and binutils' PLT CFA: rsp + 8, + 8 more once the pc's low four
 * bits reach the threshold (past the push of the lazy-binding stub):
 * breg7 8; breg16 0; lit15; and; lit10|lit11; ge; lit3; shl; plus */
static int plt_threshold(const Dwarf_Op *o, size_t n)
{
	static const uint8_t shape[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
					 DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,   DW_OP_plus };

	if (n != sizeof(shape))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && o[i].atom != shape[i])
			return -1;
	if (o[0].number != 8 || o[1].number != 0)
		return -1;
	if (o[4].atom == DW_OP_lit10 || o[4].atom == DW_OP_lit11)
		return o[4].atom - DW_OP_lit0;
	return -1;
}

/* the CFA rule into out (cfa_type, cfa_offset) */
static void cfa_rule(Dwarf_Frame *frame, struct unwind_rule *out)
{
	Dwarf_Op *o;
	size_t n;
	int t;

	if (dwarf_frame_cfa(frame, &o, &n) || n == 0)
		return;
	if (n == 1 && o[0].atom == DW_OP_bregx && fits_s32((int64_t)o[0].number2) &&
	    (o[0].number == DWARF_X86_64_RSP || o[0].number == DWARF_X86_64_RBP)) {
		out->cfa_type = o[0].number == DWARF_X86_64_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		out->cfa_offset = (int32_t)(int64_t)o[0].number2;
		return;
	}
	t = plt_threshold(o, n);
	if (t >= 0) {
		out->cfa_type = UNWIND_CFA_PLT;
		out->cfa_offset = t;
		return;
	}
	/* a realigned stack's CFA, *(rsp + a) or *(rbp + a) (gcc's DRAP:
	 * breg6 -8; deref) */
	if (n == 2 && (o[0].atom == DW_OP_breg7 || o[0].atom == DW_OP_breg6) &&
	    fits_s32((int64_t)o[0].number) && o[1].atom == DW_OP_deref) {
		out->cfa_type = o[0].atom == DW_OP_breg7 ? UNWIND_CFA_DEREF_RSP : UNWIND_CFA_DEREF_RBP;
		out->cfa_offset = (int32_t)(int64_t)o[0].number;
	}
}

/* the rbp rule into out (rbp_type, rbp_offset) */
static void rbp_rule(Dwarf_Frame *frame, struct unwind_rule *out)
{
	Dwarf_Op mem[3], *o = NULL;
	size_t n = 0;
	int32_t off;

	if (dwarf_frame_register(frame, DWARF_X86_64_RBP, mem, &o, &n)) {
		out->rbp_type = UNWIND_RBP_INVALID;
		return;
	}
	if (n == 0 && o == NULL)
		out->rbp_type = UNWIND_RBP_SAME;
	else if (at_cfa(o, n, &off)) {
		out->rbp_type = UNWIND_RBP_AT_CFA;
		out->rbp_offset = off;
	} else if (n == 2 && o[0].atom == DW_OP_call_frame_cfa && o[1].atom == DW_OP_breg6 &&
		   fits_s32((int64_t)o[1].number)) {
		/* DW_CFA_expression r6 (DW_OP_breg6 N): libdw puts the CFA first */
		out->rbp_type = UNWIND_RBP_AT_RBP;
		out->rbp_offset = (int32_t)(int64_t)o[1].number;
	} else {
		out->rbp_type = UNWIND_RBP_INVALID; /* undefined, in a register, another expression */
	}
}

int cfi_rule_from_frame(Dwarf_Frame *frame, int signal, struct unwind_rule *out)
{
	Dwarf_Op mem[3], *o = NULL;
	size_t n = 0;
	int ra;
	int32_t off;

	memset(out, 0, sizeof(*out));
	if (signal) {
		out->cfa_type = UNWIND_CFA_SIGNAL;
		return 0;
	}
	ra = dwarf_frame_info(frame, NULL, NULL, NULL);
	if (ra < 0 || dwarf_frame_register(frame, ra, mem, &o, &n))
		return -EINVAL;
	if (n == 0 && o == mem) {
		out->cfa_type = UNWIND_CFA_STOP;
		return 0;
	}
	if (ra != DWARF_X86_64_RA || !at_cfa(o, n, &off) || off != -8)
		return 0; /* the return address elsewhere (vfork keeps it in rdi) */
	cfa_rule(frame, out);
	if (out->cfa_type == UNWIND_CFA_INVALID) {
		memset(out, 0, sizeof(*out));
		return 0;
	}
	rbp_rule(frame, out);
	return 0;
}
