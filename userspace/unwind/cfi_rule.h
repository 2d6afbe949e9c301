/* cfi_rule — one CFI row (a libdw Dwarf_Frame) reduced to the struct
 * unwind_rule the in-kernel unwinder applies (bpf/unwind.h), x86-64:
 *
 *   return address  "undefined" -> UNWIND_CFA_STOP (outermost frame);
 *                   at CFA - 8 -> as the CFA says; anything else INVALID
 *   CFA             rsp + N / rbp + N (s32) -> UNWIND_CFA_RSP / _RBP;
 *                   the PLT expression -> UNWIND_CFA_PLT, threshold 10/11;
 *                   *(rsp + N) / *(rbp + N) (a realigned stack) ->
 *                   UNWIND_CFA_DEREF_RSP / _DEREF_RBP; anything else
 *                   (other registers, other expressions, undefined) ->
 *                   UNWIND_CFA_INVALID
 *   rbp             same value (or not mentioned) -> UNWIND_RBP_SAME;
 *                   saved at CFA + N -> UNWIND_RBP_AT_CFA; saved at
 *                   rbp + N (DW_CFA_expression r6: DW_OP_breg6 N, with a
 *                   realigned stack) -> UNWIND_RBP_AT_RBP; undefined or
 *                   any other rule -> UNWIND_RBP_INVALID
 *
 * A row of a signal FDE is UNWIND_CFA_SIGNAL whatever its rules. Rules
 * that end the walk (INVALID, STOP, SIGNAL) carry no rbp rule: all zero
 * but the type, so they intern to one index each.
 */
#ifndef NUNATAK_UNWIND_CFI_RULE_H
#define NUNATAK_UNWIND_CFI_RULE_H

#include <elfutils/libdw.h>

#include "userspace/unwind/unwind_table.h"

/* DWARF register numbers of x86-64 (System V psABI, figure 3.36) */
#define DWARF_X86_64_RBP 6
#define DWARF_X86_64_RSP 7
#define DWARF_X86_64_RA 16

/* Fills *out from frame (signal: the FDE's CIE says 'S'). 0, or -EINVAL
 * when libdw cannot answer for the frame (*out is then INVALID). */
int cfi_rule_from_frame(Dwarf_Frame *frame, int signal, struct unwind_rule *out);

#endif
